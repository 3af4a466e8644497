"""Self-test: inject typed, meaning-changing errors into real Dutch translations and measure how
many the audit flags (recall per error type), how many untouched pairs it flags (false-flag rate),
and how well risk separates the two (ROC-AUC).

Back-translations: a corrupted Dutch question has no entry in a precomputed back-translation file,
and scoring the original's back-translation against it would hide the error. So with a *file*
the self-test runs BT-free for every row (originals and copies alike: the figures describe the
audit without BT, which is its weaker form); with a live `--translator`, every row, corrupted or
not, is back-translated and BT counts. The JSON says which mode ran.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from bbsard_audit.base import languages
from bbsard_audit.base.dataset import load_dataset
from bbsard_audit.base.languages import BBSARD
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.contracts.selftest import Selftest
from bbsard_audit.base.io import finite, write_csv, write_sidecar

from .checks import institutions, regions, roles
from .backtranslation import FileTranslator, get_translator
from .calibration import roc_auc
from bbsard_audit.base.embeddings import default_cache_dir, get_embedder
from .glossary import Glossary, glossary_sources
from .options import SelftestOptions
from .pipeline import AuditEngine, default_backtranslations
from .risk import RiskConfig
from .signal_cache import SignalCache

WORD = r"(?<![\w-]){}(?![\w-])"
TARGET = "nl"
"""The self-test corrupts Dutch translations; its Dutch words are the nl pack's `selftest` section."""


@cache
def _words() -> dict:
    return languages.get(TARGET).section("selftest")



def _sub_once(pattern: str, repl: str, text: str) -> str | None:
    out, n = re.subn(pattern, repl, text, count=1, flags=re.IGNORECASE)
    return out if n and out != text else None


def _keep_case(found: str, word: str) -> str:
    return word[:1].upper() + word[1:] if found[:1].isupper() else word


def _swap_in_list(text: str, names: Sequence[str], rng: np.random.Generator) -> str | None:
    """Replace the first name of `names` found in `text` by another one of the list."""
    names = [n for n in names if n]
    for name in sorted(names, key=len, reverse=True):
        match = re.search(WORD.format(re.escape(name)), text, flags=re.IGNORECASE)
        if match:
            others = [o for o in names if o.lower() != name.lower() and o.lower() not in name.lower()
                      and name.lower() not in o.lower()]
            if not others:
                return None
            new = others[int(rng.integers(len(others)))]
            return text[:match.start()] + new + text[match.end():]
    return None


def _swap_pairs(text: str, pairs: Sequence[tuple[str, str]], both_ways: bool) -> str | None:
    """Replace the first word found among `pairs` (a -> b, and b -> a when `both_ways`)."""
    directed = [(a, b) for a, b in pairs] + ([(b, a) for a, b in pairs] if both_ways else [])
    for old, new in sorted(directed, key=lambda p: -len(p[0])):
        match = re.search(WORD.format(re.escape(old)), text, flags=re.IGNORECASE)
        if match:
            return text[:match.start()] + _keep_case(match.group(0), new) + text[match.end():]
    return None


class ErrorInjector:
    """Typed corruptions of a Dutch question; each returns the corrupted text or None if not applicable."""

    def __init__(self, glossary: Glossary, seed: int, source: str) -> None:
        """`source`: the language of the untouched side, whose glossary terms pick the term swaps
        (the dataset's source: fr for bBSARD; `benchmarks/bench_en_nl.py` corrupts the Dutch of
        English sources)."""
        self.rng = np.random.default_rng(seed)
        self.term_swaps = [(tuple(f.lower() for f in e.triggers(source)), acc.lstrip("="), rej.term.lstrip("="))
                           for e in glossary.entries for acc in e.nl_accepted for rej in e.nl_rejected
                           if rej.kind == "wrong_concept"]
        self.types: dict[str, Callable[[str, str], str | None]] = {
            "term_swap": self.term_swap, "role_swap": self.role_swap, "negation": self.negation,
            "number_change": self.number_change, "region_swap": self.region_swap,
            "institution_swap": self.institution_swap, "clause_omitted": self.clause_omitted,
            "untranslated_fr": self.untranslated_fr,
        }

    def term_swap(self, fr: str, nl: str) -> str | None:
        """A glossary term of the French, rendered right in the Dutch, swapped for a known wrong concept."""
        folded = fr.lower()
        for i in self.rng.permutation(len(self.term_swaps)):
            fr_forms, accepted, rejected = self.term_swaps[i]
            if not any(form in folded for form in fr_forms):
                continue
            match = re.search(WORD.format(re.escape(accepted)), nl, flags=re.IGNORECASE)
            if match:
                return nl[:match.start()] + _keep_case(match.group(0), rejected) + nl[match.end():]
        return None

    def role_swap(self, fr: str, nl: str) -> str | None:
        return _swap_pairs(nl, roles.selftest_swaps(), both_ways=True)

    def negation(self, fr: str, nl: str) -> str | None:
        """Remove the first negator if there is one, else add `niet` after the inverted verb + subject."""
        words = _words()
        for neg in words["negators"]:
            out = _sub_once(WORD.format(neg) + r"\s*", "", nl)
            if out:
                return out
        verbs, determiners, subjects = (set(words[k]) for k in ("finite_verbs", "determiners", "subjects"))
        tokens = nl.split(" ")
        for i, tok in enumerate(tokens[:-1]):
            if tok.lower() in verbs:
                j = i + 1
                if tokens[j].lower() in determiners and j + 1 < len(tokens):
                    j += 1
                if tokens[j].lower() in subjects or tokens[j - 1].lower() in determiners:
                    return " ".join(tokens[:j + 1] + [words["negators"][0]] + tokens[j + 1:])
        return None

    def number_change(self, fr: str, nl: str) -> str | None:
        match = re.search(r"\d+", nl)
        if match:
            value = int(match.group(0))
            new = str(value * 2 if value > 1 else value + 2)
            return nl[:match.start()] + new + nl[match.end():]
        for word, other in _words()["number_changes"].items():
            if word == "een":
                continue  # 'een' is mostly the article
            out = _sub_once(WORD.format(word), other, nl)
            if out:
                return out
        return None

    def region_swap(self, fr: str, nl: str) -> str | None:
        return _swap_in_list(nl, regions.selftest_names(), self.rng)

    def institution_swap(self, fr: str, nl: str) -> str | None:
        return _swap_pairs(nl, institutions.selftest_swaps(), both_ways=False)

    def clause_omitted(self, fr: str, nl: str) -> str | None:
        """Drop a context sentence, else the part before a comma, else the last third of the words."""
        sentences = re.split(r"(?<=[.!?])\s+", nl.strip())
        if len(sentences) >= 2:
            drop = int(np.argmax([len(s) for s in sentences[:-1]]))
            return " ".join(s for i, s in enumerate(sentences) if i != drop)
        if "," in nl:
            head, tail = nl.split(",", 1)
            tail = tail.strip()
            return tail[:1].upper() + tail[1:] if len(tail.split()) >= 3 else head.rstrip() + "?"
        words = nl.rstrip("?").split()
        if len(words) < 8:
            return None
        return " ".join(words[:len(words) - len(words) // 3]) + "?"

    def untranslated_fr(self, fr: str, nl: str) -> str | None:
        """The second half of the question left in French (as when MT gives up on a clause)."""
        nl_words, fr_words = nl.split(), fr.split()
        if len(fr_words) < 6:
            return None
        return " ".join(nl_words[:len(nl_words) // 2] + fr_words[len(fr_words) // 2:])


@dataclass
class SelftestResult:
    pairs: pd.DataFrame
    by_type: pd.DataFrame
    summary: dict


def run_selftest(dataset: str, options: SelftestOptions = SelftestOptions()) -> SelftestResult:
    """Score the split's originals and, per error type, corrupted copies (at most `options.max_per_type`)."""
    split, translator, embedder, cache_dir = options.split, options.translator, options.embedder, options.cache_dir
    backtranslations, max_per_type = options.backtranslations, options.max_per_type
    cfg = options.config if isinstance(options.config, RiskConfig) else RiskConfig.load(options.config)
    ds = load_dataset(dataset, with_corpus=False)
    if ds.pair != BBSARD:  # its corruptions are Dutch words and French glossary terms
        raise InputError(f"the self-test corrupts {BBSARD} pairs only (its error types use the nl pack's "
                         f"selftest words and the glossary's fr/nl terms); this dataset is {ds.pair}")
    originals = ds.select(split)
    if not originals:
        raise InputError(f"split {split!r} of {ds.source} has no question pairs")
    gloss = Glossary.layered(glossary_sources(options.glossary))  # one file or a list of layers
    injector = ErrorInjector(gloss, options.seed, ds.pair.source)
    wanted = list(options.types or injector.types)
    unknown = set(wanted) - set(injector.types)
    if unknown:
        raise InputError(f"unknown error type(s) {', '.join(sorted(unknown))}; known: {', '.join(injector.types)}")
    rows = [{"id": p.id, "error_type": "none", "question_fr": p.source, "question_nl": p.target}
            for p in originals]
    for kind in wanted:  # each type visits the originals in its own seeded order, up to max_per_type
        made = 0
        for i in injector.rng.permutation(len(originals)):
            if max_per_type is not None and made >= max_per_type:
                break
            p = originals[i]
            corrupted = injector.types[kind](p.source, p.target)
            if corrupted and corrupted.strip() != p.target.strip():
                rows.append({"id": p.id, "error_type": kind, "question_fr": p.source, "question_nl": corrupted})
                made += 1
    frame = pd.DataFrame(rows)
    if backtranslations is None and translator is None:
        backtranslations = default_backtranslations(dataset)
    live = get_translator(None, translator, pair=ds.pair) if isinstance(translator, str) else translator
    file_bt = FileTranslator(backtranslations) if backtranslations is not None else None
    bt_mode = ("translator: every row, corrupted or not, back-translated" if live is not None
               else "off: BT-free risk for every row (a file has no back-translation of corrupted text)")
    emb = get_embedder(embedder, cache_dir) if isinstance(embedder, str) else embedder
    engine = AuditEngine(emb, cfg, gloss, SignalCache(Path(cache_dir or default_cache_dir()) / "signals.sqlite"),
                         pair=ds.pair)
    bt = live.translate(frame["question_nl"].tolist(), frame["id"].tolist()) if live is not None else None
    try:
        scored = engine.score(frame["question_fr"].tolist(), frame["question_nl"].tolist(), bt,
                              groups=frame["id"].to_numpy(), reference=(frame["error_type"] == "none").to_numpy())
        with_bt = None
        if file_bt is not None and live is None:  # the real audit's false-flag rate, with the file's BT
            ids = [p.id for p in originals]
            with_bt = engine.score([p.source for p in originals], [p.target for p in originals],
                                   file_bt.translate([p.target for p in originals], ids))
    finally:
        if isinstance(embedder, str):  # ours: stop its worker processes now
            emb.close()
    result = pd.concat([frame, scored], axis=1)
    by_type, summary = _summarise(result, engine.config, bt_mode, ds.provenance(), split, options.seed,
                                  engine.embedder.model_id, live.model_id if live is not None else None)
    if with_bt is not None:
        summary["false_flag_rate_with_file_bt"] = float(with_bt["flagged"].mean())
        summary["backtranslation_file"] = file_bt.model_id
    return SelftestResult(result, by_type, summary)


def _summarise(result: pd.DataFrame, cfg: RiskConfig, bt_mode: str, provenance: dict, split: str, seed: int,
               embedder_id: str, translator_id: str | None) -> tuple[pd.DataFrame, dict]:
    clean = result[result["error_type"] == "none"]
    injected = result[result["error_type"] != "none"]
    rows = []
    for kind, group in injected.groupby("error_type", sort=True):
        y = np.r_[np.zeros(len(clean)), np.ones(len(group))].astype(bool)
        flags = group["flags"].str.split(";").explode()
        rows.append({"error_type": kind, "n": len(group), "recall": float(group["flagged"].mean()),
                     "mean_risk": float(group["risk"].mean()),
                     "roc_auc": roc_auc(y, np.r_[clean["risk"], group["risk"]]),
                     "top_flags": ";".join(flags[flags != ""].value_counts().head(3).index)})
    by_type = pd.DataFrame(rows, columns=["error_type", "n", "recall", "mean_risk", "roc_auc", "top_flags"])
    y = (result["error_type"] != "none").to_numpy()
    summary = {
        "dataset": provenance, "split": split, "seed": seed, "embedder": embedder_id, "translator": translator_id,
        "backtranslation_mode": bt_mode,
        "n_original": len(clean), "n_injected": len(injected),
        "recall_meaning_changing": float(injected["flagged"].mean()) if len(injected) else float("nan"),
        "false_flag_rate": float(clean["flagged"].mean()),
        "roc_auc": roc_auc(y, result["risk"].to_numpy()),
        "recall_by_type": dict(zip(by_type["error_type"], by_type["recall"])),
        "n_by_type": {k: int(v) for k, v in zip(by_type["error_type"], by_type["n"])},
        "flag_threshold": cfg.flag_threshold,
        "note": "all injected types change meaning; the false-flag rate counts every flagged original, "
                "including real GPT-4o errors, so it is an upper bound",
        "config": cfg.to_dict(),
    }
    return by_type, summary


def write_selftest(result: SelftestResult, out: str | Path) -> list[Path]:
    out = Path(out)
    meta = {k: v for k, v in result.summary.items() if k not in ("recall_by_type", "n_by_type")}
    record = Selftest.from_dict(finite({**result.summary, "by_type": result.by_type.to_dict(orient="records")}))
    record.write(out / "selftest.json")
    return [write_csv(out / "selftest.csv", result.by_type), out / "selftest.json",
            write_csv(out / "selftest_pairs.csv", result.pairs),
            write_sidecar(out / "selftest.csv", **meta)]
