"""`bbsard-audit release`: a cleaned bBSARD built from expert verdicts, in the loader's own layouts.

Outputs (built in the command's scratch folder inside the release folder, then each renamed into
place as one transaction, see `bbsard_audit.base.transactions`; only this command's own earlier files
there are replaced or removed, anything else in the folder is left alone):
the CSV layout `load_dataset` reads, with a `verification` column; `CHANGELOG.csv`; a dataset card
`README.md` (its YAML `configs` make the folder loadable by `datasets` and pushable to the hub);
and `hf/<config>/` (`DatasetDict.save_to_disk`, configs corpus/train/test, splits fr/nl).
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import os
import re
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from bbsard_audit.base.dataset import QUESTION_COLUMNS, SPLITS, Dataset, QuestionPair, sample_dir
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.contracts.agreement import Agreement
from bbsard_audit.base.contracts.audit import Layout
from bbsard_audit.base.contracts.changelog import changelog_spec
from bbsard_audit.base.contracts.estimate import Estimate
from bbsard_audit.base.contracts.sidecar import read_sidecar
from bbsard_audit.base.contracts.verdicts import Verdict, Verdicts, read_raw
from bbsard_audit.app.review_figures import ILLUSTRATIVE, Figure, ReviewFigures, recorded_split, verdicts_illustrative
from bbsard_audit.annotations.adaptive import CAMPAIGN_FILE as CAMPAIGN_MARK
from bbsard_audit.base.languages import BBSARD, LanguagePair
from bbsard_audit.base.untrusted import visible
from bbsard_audit.base.io import OutputGuard, guard_outputs, sidecar_path, write_csv, write_sidecar, write_text

POLICIES = ("exclude", "keep-marked")
STATUSES = ("verified", "corrected", "unverified", "flagged-unverified", "excluded")
REVIEWED_STATUSES = ("verified", "corrected", "excluded")
"""The standings of a pair with a final expert verdict (removed pairs are counted as `excluded`)."""
STATUS_MEANING = {
    "verified": "reviewed by experts and judged correct (or a minor issue, with --keep-minor)",
    "corrected": "the Dutch question was replaced by the experts' correction",
    "unverified": "not reviewed, and not flagged by the audit",
    "flagged-unverified": "not reviewed, but flagged as suspect by the audit",
    "excluded": "judged legally inaccurate and not corrected: to be left out of evaluation "
                "(present only with --policy keep-marked; with --policy exclude the pair is removed)",
}


@dataclass(frozen=True)
class ReleasePolicy:
    """What to do with pairs the experts found wrong but did not correct."""

    legal: str = "exclude"
    """`exclude` drops legally inaccurate, uncorrected pairs; `keep-marked` keeps them marked `excluded`."""
    keep_minor: bool = True
    """Uncorrected minor-issue pairs count as verified; without it they are treated like legal ones."""

    def __post_init__(self):
        if self.legal not in POLICIES:
            raise InputError(f"unknown policy {self.legal!r}; use {' or '.join(POLICIES)}")


@dataclass(frozen=True)
class Decision:
    pair: QuestionPair
    status: str
    new_target: str
    verdict: Verdict | None
    date: str = ""
    """When the verdict was given (its latest annotation, else the verdicts' sidecar, else today)."""

    @property
    def kept(self) -> bool:
        return self.status != "excluded" or self._marked

    _marked: bool = False


@dataclass
class ReleaseSummary:
    out: Path
    policy: ReleasePolicy
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    """split -> verification status -> pairs (removed pairs counted as `excluded`)."""
    changes: int = 0
    removed: int = 0
    warnings: list[str] = field(default_factory=list)
    """What the terminal must say besides the counts (no pair reviewed, a review file not found)."""
    illustrative: bool = False
    """The verdicts are illustrative (their sidecar says so): every count of reviewed pairs says it."""

    @property
    def verdict_kind(self) -> str:
        """`a final expert verdict`, or review_figures.ILLUSTRATIVE."""
        return ILLUSTRATIVE if self.illustrative else "a final expert verdict"

    @property
    def total(self) -> int:
        return sum(sum(c.values()) for c in self.counts.values())

    @property
    def verified(self) -> int:
        """Pairs the release ships as expert-checked: `verified` or `corrected`."""
        return sum(c.get(s, 0) for c in self.counts.values() for s in ("verified", "corrected"))

    @property
    def reviewed(self) -> int:
        """Pairs with a final expert verdict (review_figures.REVIEWED), removed ones included."""
        return sum(c.get(s, 0) for c in self.counts.values() for s in REVIEWED_STATUSES)


def dated_verdicts(path: str | Path, dataset: Dataset, annotations: str | Path | None = None
                   ) -> tuple[Verdicts, dict[int, str]]:
    """Final expert verdicts (an unresolved disagreement is no verdict yet, so its pair stays
    unverified), every id a question of `dataset`, and the date of each."""
    path = Path(path)
    layout = Layout(dataset.pair, dataset.string_ids)
    verdicts = Verdicts.read(path, dataset.by_id(), where=f"the dataset ({dataset.source})", layout=layout)
    dates = _annotation_dates(Path(annotations) if annotations else path.with_name("annotations_raw.csv"), layout)
    fallback = _sidecar_date(path)
    return verdicts, {qid: dates.get(qid, fallback) for qid in verdicts.by_id}


def _annotation_dates(path: Path, layout: Layout) -> dict[int | str, str]:
    """Latest annotation time per question, when the raw annotations sit next to the verdicts."""
    if not path.is_file():
        return {}
    raw = read_raw(path, layout=layout)
    stamps = pd.to_datetime(raw["updated_at"].where(raw["updated_at"] != "", raw["created_at"]),
                            errors="coerce", utc=True, format="ISO8601")
    latest = stamps.groupby(raw["id"]).max().dropna()
    return {i if layout.string_ids else int(i): ts.date().isoformat() for i, ts in latest.items()}


def _sidecar_date(path: Path) -> str:
    meta = sidecar_path(path)
    if meta.is_file():
        created = str(read_sidecar(meta)["created"])
        if created:
            return created[:10]
    return _dt.date.today().isoformat()


def _audited(audit: str | Path | None) -> tuple[set[int | str], dict[int | str, str]]:
    """audit.csv's flagged ids, and the target text of each pair as audited (what the experts were shown)."""
    if audit is None:
        return set(), {}
    layout = Layout.of(audit)
    frame = layout.audit.read(audit)
    column = f"question_{layout.pair.target}"
    texts = dict(zip(frame["id"], frame[column])) if column in frame.columns else {}
    return set(frame.loc[frame["flagged"], "id"]), texts


def _reviewed_another_text(pair: QuestionPair, verdict: Verdict | None, audited: dict) -> bool:
    """The verdict was given on another target text than the one the dataset holds now (re-translated
    since the audit), and the dataset's is not the experts' correction either: it verifies nothing here."""
    shown = audited.get(pair.id)
    return (verdict is not None and isinstance(shown, str) and visible(shown).strip() != visible(pair.target).strip()
            and visible(verdict.corrected_target).strip() != visible(pair.target).strip())


def decide(pair: QuestionPair, verdict: Verdict | None, flagged: bool, policy: ReleasePolicy,
           date: str = "") -> Decision:
    """The verification status of one pair and the Dutch question the release ships."""
    if verdict is None:
        return Decision(pair, "flagged-unverified" if flagged else "unverified", pair.target, None)
    if verdict.corrected_target and verdict.corrected_target != pair.target:
        return Decision(pair, "corrected", verdict.corrected_target, verdict, date)
    if verdict.verdict == "correct" or (verdict.verdict == "minor" and policy.keep_minor):
        return Decision(pair, "verified", pair.target, verdict, date)
    return Decision(pair, "excluded", pair.target, verdict, date, _marked=policy.legal == "keep-marked")


@dataclass(frozen=True)
class ReviewInputs:
    """The review files a release reads besides the dataset (`build_release`'s arguments)."""

    verdicts: str | Path
    audit: str | Path | None = None
    """audit.csv: its unreviewed flagged pairs become `flagged-unverified`."""
    annotations: str | Path | None = None
    """annotations_raw.csv for the CHANGELOG's dates (default: next to the verdicts)."""
    agreement: str | Path | None = None
    """agreement.json for the card (default: found by `review_file`)."""
    estimate: str | Path | None = None
    """estimate.json for the card (default: found by `review_file`)."""


def build_release(dataset: Dataset, verdicts: str | Path, out: str | Path, policy: ReleasePolicy = ReleasePolicy(),
                  *, audit: str | Path | None = None, annotations: str | Path | None = None,
                  agreement: str | Path | None = None, estimate: str | Path | None = None) -> ReleaseSummary:
    """Write the cleaned release of `dataset` to `out`, replacing only an earlier release's own files there."""
    out = Path(out)
    src = _source_dir(dataset)
    given = ReviewInputs(verdicts, audit, annotations, agreement, estimate)
    inputs = [verdicts, audit, annotations, agreement, estimate, *((src / n for n in dataset.files) if src else ())]
    with guard_outputs(out, command="release", inputs=inputs,
                       names=["CHANGELOG.csv", "CHANGELOG.meta.json", "README.md", "hf"]) as guard:
        return _build_release(dataset, given, out, policy, guard)


def _build_release(dataset: Dataset, given: ReviewInputs, out: Path, policy: ReleasePolicy,
                   guard: OutputGuard) -> ReleaseSummary:
    verdicts, audit = given.verdicts, given.audit
    judged, dates = dated_verdicts(verdicts, dataset, given.annotations)
    flagged, audited = _audited(audit)
    stale = {p.id for p in dataset.pairs if _reviewed_another_text(p, judged.by_id.get(p.id), audited)}
    decisions = [decide(p, None if p.id in stale else judged.by_id.get(p.id), p.id in flagged, policy,
                        dates.get(p.id, "")) for p in dataset.pairs]
    summary = ReleaseSummary(out=out, policy=policy, illustrative=verdicts_illustrative(Path(verdicts)))
    for d in decisions:
        summary.counts.setdefault(d.pair.split, Counter())[d.status] += 1
    summary.counts = {s: dict(c) for s, c in summary.counts.items()}
    summary.removed = sum(not d.kept for d in decisions)
    if stale:
        summary.warnings.append(f"{len(stale)} verdict(s) were given on another {dataset.pair.names[1]} text than the "
                                f"dataset's (the audit's question_{dataset.pair.target} differs, e.g. id "
                                f"{sorted(stale, key=str)[0]}): those pairs are released unverified, not verified")
    if decisions and summary.removed == len(decisions):
        raise InputError(f"every pair ({len(decisions):,}) was judged legally inaccurate without a correction and "
                         "would be removed: nothing to release (give --policy keep-marked to publish them marked "
                         "`excluded`)", file=str(verdicts))
    if not summary.reviewed:
        summary.warnings.append(f"no pair has an expert verdict in {Path(verdicts).name}: the release marks every "
                                "pair unverified and its card says no pair is expert-verified")
    found = {name: review_file(name, verdicts, given) for name, given in
             (("agreement.json", given.agreement), ("estimate.json", given.estimate))}
    agreement, estimate = found["agreement.json"].path, found["estimate.json"].path
    docs = {name.removesuffix(".json"): kind.read(f.path) for (name, f), kind in zip(found.items(), (Agreement, Estimate))
            if f.path is not None}
    summary.warnings += [f"{name} not found ({f.looked_local}): the card says it is not available"
                         for name, f in found.items() if f.path is None]
    _refuse_stale(docs.get("estimate"), judged, estimate, verdicts)
    looked = {name.removesuffix(".json"): f.looked for name, f in found.items()}
    rate = ReviewFigures.of(estimate=docs.get("estimate"), split=recorded_split(estimate)).legal_rate

    tmp = guard.scratch()  # inside the release folder, part of the command's transaction
    _write_questions(tmp, decisions, dataset.pair)
    _write_corpus(tmp, dataset)
    layout = Layout(dataset.pair, dataset.string_ids)
    changes = _changelog(decisions, layout)
    summary.changes = len(changes)
    changelog = changelog_spec(layout).write_file(tmp / "CHANGELOG.csv", changes)
    _write_hf(tmp / "hf", tmp, dataset)
    write_text(tmp / "README.md", dataset_card(dataset, summary, docs, [s for s in SPLITS if s in summary.counts],
                                               looked, rate))
    write_sidecar(tmp / "CHANGELOG.csv", files=[changelog], dataset=dataset.provenance(),
                  inputs={"verdicts": str(verdicts), "audit": str(audit) if audit else None,
                          **{k: str(v) for k, v in (("agreement", agreement), ("estimate", estimate)) if v is not None}},
                  policy={"legal_uncorrected": policy.legal, "keep_minor": policy.keep_minor},
                  counts=summary.counts)
    _move_into_place(tmp, out, guard)
    return summary


def _refuse_stale(estimate: Estimate | None, judged: Verdicts, path: Path | None, verdicts: str | Path) -> None:
    """A card never quotes an estimate computed from other verdicts than the release's (the final verdicts
    it records, contracts/estimate.py `Estimate.stale`)."""
    if estimate is not None and estimate.stale(judged.fingerprint):
        raise InputError(f"{Path(str(path)).name} is stale: it was computed from {estimate.verdicts.final:,} final "
                         f"verdict(s), {Path(verdicts).name} now holds {judged.fingerprint[0]:,} other ones; re-run "
                         "`annotate estimate` (or give --estimate the current one)", file=str(path))


@dataclass(frozen=True)
class ReviewFile:
    """Where a campaign file (agreement.json, estimate.json) was found, and where it was looked for."""
    path: Path | None
    looked: str
    """Shareable: folders named relative to the verdicts' folder (the card)."""
    looked_local: str
    """The same with local paths (the terminal)."""


def review_file(name: str, verdicts: str | Path, given: str | Path | None = None) -> ReviewFile:
    """`given`, else `name` next to the verdicts, else in the campaign folder: the one subfolder of the
    verdicts' folder holding campaign.json (as `report` finds it; `annotate agreement --out DIR`
    may put it there while the verdicts were copied next to the work folder)."""
    if given is not None:
        if not Path(given).is_file():
            raise InputError(f"{name} not found", file=str(given))
        return ReviewFile(Path(given), "given", str(given))
    side = Path(verdicts).parent
    campaigns = sorted(p for p in side.iterdir() if p.is_dir() and (p / CAMPAIGN_MARK).is_file()) if side.is_dir() else []
    places = [side, *campaigns] if len(campaigns) == 1 else [side]
    hit = next((p / name for p in places if (p / name).is_file()), None)
    where = "next to the verdicts" + (f" nor in the campaign folder `{campaigns[0].name}/`" if len(campaigns) == 1 else
                                      f" (several campaign folders: {', '.join(p.name for p in campaigns)}; "
                                      "give --" + name.removesuffix(".json") + " FILE)" if campaigns else
                                      " nor in a campaign folder (no subfolder there holds campaign.json)")
    local = " nor ".join(str(p / name) for p in places)
    return ReviewFile(hit, where, f"looked for {local}")


def _move_into_place(tmp: Path, out: Path, guard) -> None:
    """Every name checked first, then this command's stale earlier files removed, then each renamed in."""
    names = sorted(p.name for p in tmp.iterdir())
    for name in names:
        guard.check(out / name)
    for stale in set(guard.previous()) - set(names):  # e.g. the train files of an earlier, bigger release
        guard.remove(stale)
    for name in names:
        guard.move_into(tmp / name, name)


def _question_rows(decisions: list[Decision], split: str, lang: str, pair: LanguagePair) -> pd.DataFrame:
    rows = []
    extra: list[str] = []
    for d in decisions:
        if d.pair.split != split or not d.kept:
            continue
        p = d.pair
        if lang == pair.source:
            row = {"id": p.id, "category": p.category, "subcategory": p.subcategory, "question": p.source,
                   "extra_description": p.extra_description}
        else:  # the target file's own metadata, kept as found (still French in the published bBSARD)
            row = {"id": p.id, **{c: v for c, v in p.target_meta.items() if c != "verification"}, "question": d.new_target}
            extra += [c for c in p.target_meta if c not in QUESTION_COLUMNS and c != "verification" and c not in extra]
        row["article_ids"] = ",".join(map(str, p.article_ids))
        row["verification"] = d.status
        rows.append(row)
    return pd.DataFrame(rows, columns=[*QUESTION_COLUMNS, *extra, "verification"])


def _write_questions(root: Path, decisions: list[Decision], pair: LanguagePair) -> None:
    """questions_<code>_<split>.csv for each language of the pair (the release's file language codes)."""
    for split in SPLITS:
        if any(d.pair.split == split for d in decisions):
            for lang in pair:
                write_csv(root / f"questions_{lang}_{split}.csv", _question_rows(decisions, split, lang, pair),
                          verbatim=True)


def _source_dir(dataset: Dataset) -> Path | None:
    if dataset.source == "sample":
        return sample_dir()
    path = Path(dataset.source)
    return path if path.is_dir() else None


def _write_corpus(root: Path, dataset: Dataset) -> None:
    """Articles unchanged: copied byte for byte from a CSV source, else written from the loaded corpus."""
    if dataset.corpus is None:
        return
    src = _source_dir(dataset)
    for lang in dataset.pair:
        target = root / f"articles_{lang}.csv"
        if src is not None and (src / target.name).is_file():
            shutil.copyfile(src / target.name, target)
        elif (dataset.corpus.source_texts if lang == dataset.pair.source else dataset.corpus.target_texts) is not None:
            meta = pd.DataFrame([dataset.corpus.meta.get(a, {}) for a in dataset.corpus.ids])
            frame = pd.DataFrame({"id": dataset.corpus.ids, "article": dataset.corpus.texts(lang)})
            write_csv(target, pd.concat([frame, meta.drop(columns=["id", "article"], errors="ignore")], axis=1),
                      verbatim=True)


def _changelog(decisions: list[Decision], layout: Layout) -> pd.DataFrame:
    """One row per pair whose target text or standing changed: corrected or excluded (kept or removed),
    under the pair's CHANGELOG.csv columns (`old_<target>`, `new_<target>`)."""
    old, new = f"old_{layout.pair.target}", f"new_{layout.pair.target}"
    rows = [{"id": d.pair.id, "split": d.pair.split, old: d.pair.target,
             new: d.new_target if d.kept else "", "verdict": d.verdict.verdict,
             "annotators": d.verdict.annotators, "date": d.date,
             "verification": d.status if d.kept else "removed", "gold_labels_apply": d.verdict.gold_labels_apply}
            for d in decisions if d.status in ("corrected", "excluded")]
    return pd.DataFrame(rows, columns=changelog_spec(layout).names)


def _write_hf(target: Path, root: Path, dataset: Dataset) -> None:
    """`save_to_disk` per config (corpus/train/test), splits fr/nl, from the CSVs just written."""
    import datasets

    configs: dict[str, dict[str, Path]] = {}
    for split in SPLITS:
        if (root / f"questions_{dataset.pair.source}_{split}.csv").exists():
            configs[split] = {lang: root / f"questions_{lang}_{split}.csv" for lang in dataset.pair}
    if all((root / f"articles_{lang}.csv").exists() for lang in dataset.pair):
        configs["corpus"] = {lang: root / f"articles_{lang}.csv" for lang in dataset.pair}
    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()  # our own progress display is the CLI's
    try:
        for config, files in configs.items():
            dd = datasets.DatasetDict({lang: datasets.Dataset.from_pandas(_typed_ids(path), preserve_index=False)
                                       for lang, path in files.items()})
            dd.save_to_disk(str(target / config))
    finally:
        if bars:
            datasets.enable_progress_bars()


def _typed_ids(path: Path) -> pd.DataFrame:
    """A written CSV with its ids as integers, or as strings when they are string ids (BEIR's `MED-10`)."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    return frame.astype({"id": "int64"}) if frame["id"].str.fullmatch("[0-9]+").all() else frame


# ---------------------------------------------------------------- dataset card

CITATION = """```bibtex
@inproceedings{lotfi-etal-2025-bilingual,
  title     = {Bilingual {BSARD}: Extending Statutory Article Retrieval to {D}utch},
  author    = {Lotfi, Ehsan and Banar, Nikolay and Yuzbashyan, Nerses and Daelemans, Walter},
  booktitle = {Proceedings of the 1st Regulatory NLP Workshop (RegNLP 2025), co-located with COLING 2025},
  year      = {2025},
  address   = {Abu Dhabi, UAE}
}

@inproceedings{louis-spanakis-2022-statutory,
  title     = {A Statutory Article Retrieval Dataset in {F}rench},
  author    = {Louis, Antoine and Spanakis, Gerasimos},
  booktitle = {Proceedings of the 60th Annual Meeting of the Association for Computational Linguistics (ACL 2022)},
  year      = {2022},
  pages     = {6789--6803},
  doi       = {10.18653/v1/2022.acl-long.468}
}
```"""


def _verification_claim(summary: ReleaseSummary, name: str, target: str) -> tuple[str, str, str]:
    """(pretty name, title, sentence): what the card may claim about dataset `name`'s `target`-language
    questions, from how many pairs were reviewed."""
    n, total = summary.reviewed, summary.total
    if n == 0:
        return (f"{name} ({target} not expert-verified)", f"{name}: no {target} question expert-verified yet",
                f"**No pair has an expert verdict**: all {total:,} pairs are `unverified` or `flagged-unverified`, "
                "so this release is the source data with a `verification` column, not an expert-verified dataset.")
    share = f"{n:,} of {total:,} pairs ({100 * n / max(total, 1):.1f}%)"
    kind = summary.verdict_kind
    sentence = (f"{share} were reviewed ({kind}); the other {total - n:,} are not reviewed and "
                "are marked `unverified` or `flagged-unverified`." if n < total else
                f"Every pair ({total:,}) was reviewed ({kind}).")
    if summary.illustrative:
        sentence += (" **These verdicts are illustrative** (the sample's stand-ins for a review): no pair of this "
                     "release was reviewed by an expert.")
    good, kept = summary.verified, total - summary.removed
    if good == 0:  # reviewed, and none judged correct: nothing here is expert-verified
        return (f"{name} ({target} not expert-verified)", f"{name}: no {target} question expert-verified",
                sentence + " None of them was judged correct or corrected.")
    if n < total or good < kept:  # not all reviewed, or some shipped pairs marked excluded (keep-marked)
        part, whole = (n, total) if n < total else (good, kept)
        return (f"{name} ({target} partly expert-verified, {part:,} of {whole:,} pairs)",
                f"{name} with {target} questions partly expert-verified ({part:,} of {whole:,} pairs)", sentence)
    return f"{name} (expert-verified {target})", f"{name} with expert-verified {target} questions", sentence


_PLAIN_YAML = re.compile(r"[A-Za-z][A-Za-z0-9 (),.+\-]*")


def yaml_text(text: str) -> str:
    """A YAML scalar that reads back as `text` and never starts another key: plain when it is only
    letters, digits and simple punctuation, else double-quoted (JSON's escaping is YAML's)."""
    return text if _PLAIN_YAML.fullmatch(text) and not text.endswith(" ") else json.dumps(text)


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#|~!])")


def md_text(text: str) -> str:
    """Outside text as inline Markdown that shows as written: one line, HTML-escaped (no tag, no
    entity), every Markdown punctuation backslash-escaped (no link, image, code span or emphasis)."""
    one_line = " ".join(str(text).split())
    return _MD_SPECIAL.sub(r"\\\1", html.escape(one_line, quote=True))


def md_code(text: str) -> str:
    """Outside text as one Markdown code span it cannot leave: one line, fenced with more backticks
    than its longest run, padded so a backtick at either end stays inside."""
    one_line = " ".join(str(text).split())
    fence = "`" * (max((len(r) for r in re.findall("`+", one_line)), default=0) + 1)
    return f"{fence} {one_line} {fence}" if "`" in one_line else f"{fence}{one_line}{fence}"


def _fenced(text: str, info: str = "") -> str:
    """A fenced block holding `text` verbatim: its fence longer than any backtick run inside."""
    fence = "`" * max(3, max((len(r) for r in re.findall("`+", text)), default=0) + 1)
    return f"{fence}{info}\n{text.strip()}\n{fence}"


def _is_bbsard(dataset: Dataset) -> bool:
    """bBSARD itself (its CSV folder, hub copy or the sample), not another benchmark in a manifest."""
    return dataset.name is None and dataset.pair == BBSARD


def dataset_card(dataset: Dataset, summary: ReleaseSummary, docs: dict, splits: list[str],
                 looked: dict[str, str] | None = None, rate: Figure | None = None) -> str:
    """The card; every statement of verification follows `summary` (how many pairs were reviewed), and a
    review file not found says where it was looked for (`looked`, shareable wording); `rate`: the
    estimate's legal-error rate with its scope (review_figures). It names the dataset released:
    bBSARD's description, licence and citation only for bBSARD; another benchmark (a manifest) by its
    own name, with the licence and citation its manifest gives, else "not recorded". Outside text
    (names, revisions, citations) is escaped for the YAML front matter, Markdown and HTML."""
    langs = dataset.pair
    target_name = langs.names[1]
    bbsard = _is_bbsard(dataset)
    name = "bBSARD" if bbsard else dataset.source_id
    pretty, title, claim = _verification_claim(summary, name, target_name)
    if summary.illustrative:  # no expert reviewed anything: the name and title never say expert-verified
        pretty, title = (t.replace("expert-verified", "verified by illustrative verdicts, no expert review")
                         for t in (pretty, title))
    licence_id = "cc-by-nc-sa-4.0" if bbsard else (dataset.license or "unknown")
    header = _front_matter(dataset, splits, pretty, licence_id)
    count_rows = "\n".join(f"| {s} | " + " | ".join(str(summary.counts.get(s, {}).get(st, 0)) for st in STATUSES)
                           + f" | {sum(summary.counts.get(s, {}).values())} |" for s in splits)
    statuses = "\n".join(f"- `{s}`: {m}" for s, m in STATUS_MEANING.items())
    stats_text = _review_quality(summary, docs, looked, rate)
    about, licence, citation = _about(dataset, name, licence_id)
    hf_note = ", as on `clips/bBSARD`" if bbsard else ""
    return f"""{header}
# {md_text(title)}

{about}

{claim}

Made by `bbsard-audit release` from {md_code(dataset.source_id)} (revision {md_code(dataset.revision or "none")}).

## Verification status

| split | {' | '.join(STATUSES)} | total |
|---|{'---|' * len(STATUSES)}---|
{count_rows}

{statuses}

## Policy

{_policy(summary)} `CHANGELOG.csv` lists every changed pair (id, split, old and new {target_name}, verdict,
annotators, date). The {target_name} files' metadata columns (category, subcategory, extra_description) are
kept as found in the source.

## Review quality

{stats_text}

## Layout

- `questions_{{{langs[0]},{langs[1]}}}_{{train,test}}.csv` (`id, category, subcategory, question, extra_description,
  article_ids, verification`), `articles_{{{langs[0]},{langs[1]}}}.csv` (`id, article, ...`) when the corpus was loaded;
- `hf/<config>/` — the same data saved with `datasets` (`load_from_disk`), configs `corpus`, `train`,
  `test`, splits `{langs[0]}` and `{langs[1]}`{hf_note};
- read back with `bbsard-audit validate --dataset <this folder>` or `--dataset hf:<this folder>/hf`.

## Licence

{licence}

## Citation

{citation}
"""


def _policy(summary: ReleaseSummary) -> str:
    """What the release did with legally inaccurate and minor-issue pairs left uncorrected."""
    policy = summary.policy
    removed = ("Legally inaccurate translations without a correction are **removed** from the question files "
               f"({summary.removed} pair(s)); they are listed in `CHANGELOG.csv`." if policy.legal == "exclude" else
               "Legally inaccurate translations without a correction are **kept and marked** "
               "`verification = excluded`; filter them out for evaluation.")
    minor = ("Uncorrected pairs with only a minor issue count as `verified`." if policy.keep_minor else
             "Uncorrected pairs with a minor issue are treated like legally inaccurate ones.")
    return f"{removed} {minor}"


def _front_matter(dataset: Dataset, splits: list[str], pretty: str, licence_id: str) -> str:
    """The card's YAML front matter: licence, languages, name and the configs' data files."""
    langs = dataset.pair
    configs = [(s, {lang: f"questions_{lang}_{s}.csv" for lang in langs}) for s in splits]
    if dataset.corpus is not None:
        configs.insert(0, ("corpus", {lang: f"articles_{lang}.csv" for lang in langs}))
    yaml = "\n".join(f"- config_name: {c}\n  data_files:\n" + "".join(
        f"  - split: {lang}\n    path: {path}\n" for lang, path in files.items()) for c, files in configs)
    return (f"---\nlicense: {licence_id}\nlanguage:\n- {langs[0]}\n- {langs[1]}\ntask_categories:\n- text-retrieval\n"
            f"pretty_name: {yaml_text(pretty)}\nconfigs:\n{yaml}---\n")


def _review_quality(summary: ReleaseSummary, docs: dict, looked: dict[str, str] | None, rate: Figure | None) -> str:
    """Agreement and the estimate with their CIs, or where each file was looked for."""
    stats = []
    for doc, heading in (("agreement", "Inter-annotator agreement"), ("estimate", "Estimated error rate")):
        found = docs[doc].named_values() if doc in docs else []
        if found:
            scope = "" if doc == "agreement" or rate is None else f", {rate.named}; per stratum: over its reviewed pairs"
            left = docs[doc].errors_left if doc == "estimate" else None
            stats.append(f"**{heading}** (`{doc}.json`{scope}):\n\n| measure | value | 95% CI |\n|---|---|---|\n" + "\n".join(
                f"| {e.name} | {e.value:.3g} | " + (f"[{e.ci_low:.3g}, {e.ci_high:.3g}]" if e.ci_low is not None else "–")
                + " |" for e in found[:20]) + (f"\n\nLegal errors left: {left.sentence(docs[doc].level)}."
                                                if left is not None else "")
                + ("\n\nFrom illustrative verdicts, not a real expert review." if summary.illustrative else ""))
        else:
            where = (looked or {}).get(doc, "next to the verdicts")
            stats.append(f"**{heading}**: not available (no `{doc}.json` {where}).")
    return "\n\n".join(stats)


def _about(dataset: Dataset, name: str, licence_id: str) -> tuple[str, str, str]:
    """(about, licence, citation): bBSARD's own, or another benchmark's from its manifest."""
    source_name, target_name = dataset.pair.names
    shown = md_text(name)
    if _is_bbsard(dataset):
        about = """A cleaned release of bBSARD (bilingual Belgian Statutory Article Retrieval Dataset): the French
questions of BSARD with their Dutch machine translations, for review by legal experts. Dutch questions
inherit the French relevance labels, so a mistranslated legal term silently corrupts the Dutch
benchmark; this release replaces Dutch questions by the experts' corrections where given and marks
every pair with a `verification` status."""
        licence, citation = "CC BY-NC-SA 4.0, as bBSARD and BSARD.", CITATION
    else:
        about = (f"A cleaned release of {shown}: its {source_name} questions with their {target_name} "
                 f"translations, for review by experts. The {target_name} questions inherit the {source_name} "
                 f"relevance labels; this release replaces {target_name} questions by the experts' corrections "
                 "where given and marks every pair with a `verification` status.")
        licence = (f"`{licence_id}`, as recorded in the dataset's manifest." if dataset.license else
                   "Not recorded: the dataset's manifest names no licence. Check the licences of its source and "
                   "target benchmarks before sharing this release.")
        citation = (_fenced(dataset.citation, "bibtex") if dataset.citation else
                    "Not recorded: the dataset's manifest gives no citation.")
    return about, licence, citation


def push_to_hub(release: Path, repo: str) -> str:
    """Upload the release's own files (CSV layout + card; the card's YAML configs define the splits),
    never anything else the folder holds (the verdicts, notes, the ownership manifest)."""
    token = os.environ.get("HF_TOKEN")
    if not token:
        raise InputError("--push-to-hub needs a Hugging Face token in the HF_TOKEN environment variable")
    files = [name for name in OutputGuard(Path(release), "release").previous() if name != "hf"]
    if not files:
        raise InputError("no release written by `bbsard-audit release` here", file=str(release))
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    try:
        api.create_repo(repo, repo_type="dataset", exist_ok=True, private=True)
        info = api.upload_folder(folder_path=str(release), repo_id=repo, repo_type="dataset",
                                 allow_patterns=files, commit_message="bbsard-audit release")
    except Exception as exc:  # network, auth, permissions: one line, never the token
        raise InputError(f"push to {repo} failed: {type(exc).__name__}") from None
    return str(getattr(info, "oid", "") or repo)
