"""Turn the outputs of each stage into report sections; a section appears only if its files exist."""

from __future__ import annotations

import datetime as _dt
import json
import math
import re

import numpy as np
import pandas as pd

from .. import __version__
from . import plots
from .document import Figures, Plot, Report, Section, Table, Text
from .loaders import Estimate, Workdir, find_estimates

TOP_RISK = 10
MAX_ROWS = 40
METRIC_ORDER = ("recall", "map", "mrr", "ndcg")


# ---------------------------------------------------------------- formatting

def num(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        if float(value).is_integer() and abs(value) >= 1000:
            return f"{int(value):,}"
        if value != 0 and abs(value) < 10 ** -digits:
            return f"{value:.1e}"
        return f"{value:.{digits}f}"
    return str(value)


def pct(part: int, whole: int) -> str:
    return f"{part:,} ({100 * part / whole:.1f}%)" if whole else f"{part:,}"


def with_ci(value, low=None, high=None) -> str:
    if low is None or high is None or any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        return num(value)
    return f"{num(value)} [{num(low)}, {num(high)}]"


def as_bool(column: pd.Series) -> pd.Series:
    if column.dtype == bool:
        return column
    return column.astype(str).str.strip().str.lower().isin(("true", "1", "yes", "y", "t"))


def split_list(value, sep: str) -> list[str]:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    return [part.strip() for part in str(value).split(sep) if part.strip()]


def frame_table(frame: pd.DataFrame, caption: str, max_rows: int = MAX_ROWS, wide: bool = False) -> Table:
    """Any stage table as a report table, numbers rounded, long tables cut (the CSV has the rest)."""
    shown = frame.head(max_rows)
    if len(frame) > max_rows:
        caption += f" (first {max_rows} of {len(frame):,} rows; all in the CSV)"
    rows = tuple(tuple(num(v) if not isinstance(v, str) else v for v in row)
                 for row in shown.itertuples(index=False))
    return Table(caption, tuple(map(str, frame.columns)), rows, wide=wide)


def estimates_table(estimates: list[Estimate], caption: str) -> Table:
    rows = tuple((e.name.replace("_", " "), num(e.value),
                  f"[{num(e.ci_low)}, {num(e.ci_high)}]" if e.ci_low is not None else "–",
                  num(e.n) if e.n is not None else "–") for e in estimates)
    return Table(caption, ("measure", "value", "95% CI", "n"), rows)


def wilson(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float, float]:
    """Proportion with its Wilson score interval (sound for small n and for 0 or 1)."""
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return p, max(0.0, centre - half), min(1.0, centre + half)


def metric_sort_key(name: str) -> tuple:
    base, _, k = str(name).partition("@")
    order = METRIC_ORDER.index(base) if base in METRIC_ORDER else len(METRIC_ORDER)
    return order, base, int(k) if k.isdigit() else 0


# ---------------------------------------------------------------- Audit

def audit_section(wd: Workdir) -> Section:
    sec = Section("audit", "Audit")
    audit = wd.table("audit.csv")
    if audit is not None:
        flagged = as_bool(audit["flagged"])
        risk = pd.to_numeric(audit["risk"], errors="coerce").fillna(0.0)
        items = [("pairs audited", f"{len(audit):,}"), ("flagged", pct(int(flagged.sum()), len(audit))),
                 ("median risk", num(float(risk.median())))]
        if "split" in audit.columns:
            items += [(f"{split} pairs", f"{n:,}") for split, n in audit["split"].value_counts().sort_index().items()]
        if "severity" in audit.columns:
            sev = audit["severity"].fillna("none").astype(str).value_counts()
            items += [(f"severity {s}", f"{int(sev[s]):,}") for s in ("high", "medium", "low") if s in sev]
        sec.add(Figures(tuple(items)))

        flags = audit.loc[flagged, "flags"].map(lambda v: split_list(v, ";")).explode().dropna()
        by_type = flags.value_counts()
        if len(by_type):
            sub = sec.sub("Flagged pairs by type")
            sub.add(Table("Flags raised (a pair can carry several)", ("flag", "pairs", "share of flagged"),
                          tuple((f, f"{n:,}", f"{100 * n / max(int(flagged.sum()), 1):.1f}%")
                                for f, n in by_type.items())))
            sub.add(Plot("Flagged pairs per flag type", "Bar chart of the number of flagged pairs per flag type: "
                         + ", ".join(f"{f} {n}" for f, n in by_type.items()),
                         plots.horizontal_bars(list(by_type.index), by_type.tolist(), "flagged pairs")))
        sub = sec.sub("Risk distribution")
        sub.add(Plot("Audit risk of every pair (flagged pairs in orange)",
                     f"Histogram of risk scores for {len(audit)} pairs, {int(flagged.sum())} flagged",
                     plots.risk_histogram(risk, flagged)))

        top = audit.assign(_risk=risk).sort_values("_risk", ascending=False, kind="stable").head(TOP_RISK)
        rows = tuple((str(r["id"]), str(r.get("split", "")), num(r["_risk"]), str(r.get("severity", "") or ""),
                      str(r["question_fr"]), str(r["question_nl"]), _text(r.get("backtranslation")),
                      "\n".join(split_list(r.get("reasons"), " | ")) or "–")
                     for _, r in top.iterrows())
        sec.sub("Top-risk pairs").add(Table(
            f"The {len(top)} highest-risk pairs, side by side", ("id", "split", "risk", "severity", "French",
                                                                 "Dutch", "back-translation", "reasons"),
            rows, wide=True))

    queue = wd.table("review_queue.csv")
    if queue is not None:
        sub = sec.sub("Review queue")
        counts = queue["queue"].astype(str).value_counts()
        sub.add(Figures((("pairs queued for review", f"{len(queue):,}"),
                         *((f"queue: {q}", f"{n:,}") for q, n in counts.items()))))
        if "stratum" in queue.columns:
            strata = queue.groupby(["queue", "stratum"], dropna=False).size().reset_index(name="pairs")
            sub.add(frame_table(strata, "Queued pairs per queue and stratum"))

    selftest, selftest_doc = wd.table("selftest.csv"), wd.document("selftest.json")
    if selftest is not None or selftest_doc is not None:
        sub = sec.sub("Self-test: recall on injected errors")
        sub.add(Text("Synthetic errors of known types are injected into Dutch translations and the audit is "
                     "run on them: recall is the share it flags, the false-flag rate is measured on "
                     "untouched pairs."))
        if selftest is not None:
            recall = pd.to_numeric(selftest["recall"], errors="coerce")
            sub.add(frame_table(selftest, "Recall per injected error type"))
            sub.add(Plot("Self-test recall per error type",
                         "Bar chart of recall per error type: " + ", ".join(
                             f"{t} {num(r)}" for t, r in zip(selftest["error_type"], recall)),
                         plots.horizontal_bars(selftest["error_type"].astype(str).tolist(),
                                               recall.fillna(0).tolist(), "recall (share of injected errors flagged)",
                                               xlim=(0, 1.12), annotate=[num(r, 2) for r in recall])))
        if selftest_doc is not None:
            found = [e for e in find_estimates(selftest_doc)
                     if selftest is None or not str(e.name).startswith(("recall", "per_type", "by_type"))]
            if found:
                sub.add(estimates_table(found, "Self-test summary"))
    return sec


def _text(value) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


# ---------------------------------------------------------------- Review campaign

def review_section(wd: Workdir) -> Section:
    sec = Section("review", "Review campaign")
    verdicts, raw, queue = wd.table("verdicts.csv"), wd.table("annotations_raw.csv"), wd.table("review_queue.csv")
    if verdicts is not None:
        verdict = verdicts["verdict"].astype(str).str.strip().str.lower()
        items = [("pairs reviewed", f"{len(verdicts):,}")]
        if queue is not None:
            done = int(queue["id"].isin(verdicts["id"]).sum())
            items.append(("review progress", f"{done:,} of {len(queue):,} queued ({100 * done / max(len(queue), 1):.0f}%)"))
        for v in ("correct", "minor", "legal"):
            items.append((f"verdict {v}", pct(int((verdict == v).sum()), len(verdicts))))
        if "corrected_nl" in verdicts.columns:
            items.append(("with a corrected Dutch text",
                          f"{int(verdicts['corrected_nl'].fillna('').astype(str).str.strip().ne('').sum()):,}"))
        sec.add(Figures(tuple(items)))
        breakdown = [c for c in ("gold_labels_apply", "agreement_status") if c in verdicts.columns]
        for column in breakdown:
            counts = verdicts[column].fillna("–").astype(str).value_counts()
            sec.add(Table(f"Pairs by {column.replace('_', ' ')}", (column, "pairs"),
                          tuple((k, f"{n:,}") for k, n in counts.items())))
    if raw is not None:
        per = raw.assign(verdict=raw["verdict"].astype(str)).pivot_table(
            index="annotator", columns="verdict", values="id", aggfunc="count", fill_value=0)
        per.insert(0, "annotations", per.sum(axis=1))
        sec.sub("Annotators").add(frame_table(per.reset_index(), "Annotations per annotator and verdict"))

    agreement = wd.document("agreement.json")
    if agreement is not None:
        sub = sec.sub("Agreement between annotators")
        found = find_estimates(agreement)
        sub.add(estimates_table(found, "Cohen's kappa / Krippendorff's alpha with bootstrap 95% CIs")
                if found else Text("agreement.json holds no numbers yet."))
    disagreements = wd.table("disagreements.csv")
    if disagreements is not None:
        sub = sec.sub("Disagreements") if agreement is None else sec.subsections[-1]
        sub.add(Text(f"{len(disagreements):,} pair(s) on which annotators disagree (to adjudicate)."))
        if len(disagreements):
            sub.add(frame_table(disagreements, "Disagreements", max_rows=15, wide=True))

    estimate = wd.document("estimate.json")
    if estimate is not None:
        sub = sec.sub("Estimated error rate of the whole split")
        found = find_estimates(estimate)
        sub.add(estimates_table(found, "Estimated share of legally inaccurate Dutch translations (95% CI), "
                                       "overall and by stratum") if found else
                Text("estimate.json holds no numbers yet."))

    calibration = wd.document("calibration.json")
    audit = wd.table("audit.csv")
    if calibration is not None or (audit is not None and verdicts is not None):
        sub = sec.sub("Calibration: the audit against the experts")
        if audit is not None and verdicts is not None:
            sub.add(_calibration_table(audit, verdicts))
        if calibration is not None:
            found = find_estimates(calibration)
            if found:
                sub.add(estimates_table(found[:MAX_ROWS], "Per-signal and combined precision / recall / ROC-AUC "
                                                          "(calibration.json)"))
    return sec


def _calibration_table(audit: pd.DataFrame, verdicts: pd.DataFrame) -> Table:
    """Precision and recall of the audit's `flagged` against expert verdicts on the reviewed pairs."""
    joined = verdicts[["id", "verdict"]].merge(audit[["id", "flagged"]], on="id", how="inner")
    flagged = as_bool(joined["flagged"]).to_numpy()
    verdict = joined["verdict"].astype(str).str.strip().str.lower().to_numpy()
    rows = []
    for label, positive in (("legally inaccurate (legal)", verdict == "legal"),
                            ("any issue (minor or legal)", verdict != "correct")):
        tp = int((flagged & positive).sum())
        p, pl, ph = wilson(tp, int(flagged.sum()))
        r, rl, rh = wilson(tp, int(positive.sum()))
        rows.append((label, str(len(joined)), str(int(positive.sum())), str(int(flagged.sum())),
                     with_ci(p, pl, ph), with_ci(r, rl, rh)))
    return Table("Audit flags vs expert verdicts on reviewed pairs (Wilson 95% CIs). The review queue "
                 "over-samples flagged pairs, so precision here is not the population precision.",
                 ("expert positive =", "reviewed", "positives", "flagged", "precision", "recall"),
                 tuple(rows))


# ---------------------------------------------------------------- Evaluation

def evaluation_section(wd: Workdir) -> Section:
    sec = Section("evaluation", "Evaluation")
    metrics, shift = wd.table("metrics.csv"), wd.table("ranking_shift.csv")
    if metrics is not None:
        metrics = metrics.copy()
        metrics["value"] = pd.to_numeric(metrics["value"], errors="coerce")
        names = sorted(set(metrics["metric"].astype(str)), key=metric_sort_key)
        subsets = list(dict.fromkeys(metrics["subset"].astype(str)))
        sec.add(Figures((("systems", str(metrics["system"].nunique())),
                         ("subsets", ", ".join(subsets)),
                         *((f"queries ({s})", _queries(metrics, s)) for s in subsets))))
        rows = []
        for system in sorted(set(metrics["system"].astype(str))):
            for name in names:
                part = metrics[(metrics["system"].astype(str) == system) & (metrics["metric"].astype(str) == name)]
                cells = []
                for subset in subsets:
                    hit = part[part["subset"].astype(str) == subset]
                    cells.append("–" if hit.empty else with_ci(hit["value"].iloc[0], hit.get("ci_low", pd.Series([None])).iloc[0],
                                                                  hit.get("ci_high", pd.Series([None])).iloc[0]))
                rows.append((system, name, *cells))
        sub = sec.sub("Metrics, full vs verified")
        sub.add(Table("Value [bootstrap 95% CI] per system, metric and subset", ("system", "metric", *subsets),
                      tuple(rows)))
        ordered = metrics.assign(_k=metrics["metric"].map(metric_sort_key)).sort_values("_k", kind="stable")
        sub.add(Plot("Confidence intervals per system and subset", "Forest plot of each metric's value with "
                     "its 95% CI per system, one colour per subset", plots.forest_plot(ordered)))
        pair = _subset_pair(subsets, shift)
        if pair:
            ranks = _ranks(metrics, names, *pair)
            sub = sec.sub(f"System ranks from {pair[0]} to {pair[1]}")
            sub.add(Plot(f"Slope chart of system ranks on {pair[0]} (left) and {pair[1]} (right), per metric",
                         "Slope chart: " + "; ".join(f"{r.metric} {r.system} {r.rank_a}→{r.rank_b}"
                                                     for r in ranks.itertuples() if r.rank_a != r.rank_b)
                         if (ranks["rank_a"] != ranks["rank_b"]).any() else "Slope chart: no rank changes",
                         plots.slope_chart(ranks, *pair)))
            moved = ranks[ranks["rank_a"] != ranks["rank_b"]]
            sub.add(Text(f"{len(moved)} system/metric rank change(s) between {pair[0]} and {pair[1]}."))
            if len(moved):
                sub.add(frame_table(moved.rename(columns={"rank_a": f"rank {pair[0]}", "rank_b": f"rank {pair[1]}"}),
                                    "Rank changes"))
    if shift is not None:
        sub = sec.sub("Ranking shift (Kendall tau) and the random-removal null")
        sub.add(frame_table(shift, "Kendall tau-b / tau-AP between subsets per metric, with the number of "
                                   "flipped system pairs"))
    null = wd.table("null_model.csv")
    if null is not None:
        sub = sec.subsections[-1] if shift is not None else sec.sub("Random-removal null model")
        sub.add(Text("Null model: the same number of questions removed at random many times; where the "
                     "observed change falls in that distribution says whether verification moved rankings "
                     "more than removing any questions would."))
        sub.add(frame_table(null, "Observed change vs the random-removal null"))
    pairwise = wd.table("pairwise.csv")
    if pairwise is not None:
        sub = sec.sub("Flipped system pairs")
        flip_col = next((c for c in ("flipped", "flip", "order_flipped", "is_flip") if c in pairwise.columns), None)
        flips = pairwise[as_bool(pairwise[flip_col])] if flip_col else pairwise
        p_col = next((c for c in pairwise.columns if re.fullmatch(r"p(_value)?(_holm)?|p_holm|p_adj\w*", str(c))), None)
        if p_col:
            flips = flips.sort_values(p_col, kind="stable")
        sub.add(Text(f"{len(flips):,} system pair(s) change order" + (" between subsets" if flip_col else "")
                     + (f"; p-values from `{p_col}`." if p_col else ".")))
        if len(flips):
            sub.add(frame_table(flips, "System pairs whose order flips, with paired-test p-values"))
    gap = wd.table("fr_nl_gap.csv")
    if gap is not None:
        sub = sec.sub("French − Dutch gap by verdict")
        sub.add(frame_table(gap, "FR − NL metric difference per system and verdict group"))
        plot = _gap_plot(gap)
        if plot is not None:
            sub.add(plot)
    return sec


def _queries(metrics: pd.DataFrame, subset: str) -> str:
    if "n_queries" not in metrics.columns:
        return "–"
    values = pd.to_numeric(metrics.loc[metrics["subset"].astype(str) == subset, "n_queries"], errors="coerce")
    return num(int(values.max())) if values.notna().any() else "–"


def _subset_pair(subsets: list[str], shift: pd.DataFrame | None) -> tuple[str, str] | None:
    if shift is not None and len(shift):
        a, b = str(shift["subset_a"].iloc[0]), str(shift["subset_b"].iloc[0])
        if a in subsets and b in subsets:
            return a, b
    if "full" in subsets and "verified" in subsets:
        return "full", "verified"
    return (subsets[0], subsets[1]) if len(subsets) >= 2 else None


def _ranks(metrics: pd.DataFrame, names: list[str], a: str, b: str) -> pd.DataFrame:
    """Rank of each system per metric on subsets a and b (1 = best; ties share the better rank)."""
    out = []
    for name in names:
        part = metrics[metrics["metric"].astype(str) == name]
        ra = part[part["subset"].astype(str) == a].set_index("system")["value"].rank(ascending=False, method="min")
        rb = part[part["subset"].astype(str) == b].set_index("system")["value"].rank(ascending=False, method="min")
        both = pd.concat([ra.rename("rank_a"), rb.rename("rank_b")], axis=1).dropna()
        for system, row in both.sort_values("rank_a").iterrows():
            out.append((name, str(system), int(row["rank_a"]), int(row["rank_b"])))
    return pd.DataFrame(out, columns=["metric", "system", "rank_a", "rank_b"])


def _gap_plot(gap: pd.DataFrame) -> Plot | None:
    value = next((c for c in ("gap", "mean_gap", "fr_minus_nl", "diff", "delta", "mean_diff", "value")
                  if c in gap.columns), None)
    group = next((c for c in ("verdict", "group", "stratum", "flag", "flagged", "subset") if c in gap.columns), None)
    if value is None or group is None:
        return None
    frame = gap
    metric = None
    if "metric" in gap.columns:
        metric = sorted(set(gap["metric"].astype(str)), key=metric_sort_key)[0]
        frame = gap[gap["metric"].astype(str) == metric]
    low = next((c for c in ("ci_low", "low") if c in frame.columns), None)
    high = next((c for c in ("ci_high", "high") if c in frame.columns), None)
    label = f"FR − NL {metric or value}"
    return Plot(f"French − Dutch difference by {group}" + (f" ({metric})" if metric else ""),
                f"Bar chart of the FR−NL difference per {group} and system",
                plots.grouped_bars(frame, group, "system", value, label, low, high))


# ---------------------------------------------------------------- Provenance

PROVENANCE_KEYS = ("tool_version", "created", "dataset.source", "dataset.revision")


def provenance_section(wd: Workdir) -> Section:
    sec = Section("provenance", "Provenance")
    sec.add(Figures((("report made by", f"bbsard-audit {__version__}"),
                     ("report created", _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")),
                     ("work folder", wd.root.name or str(wd.root)),
                     ("stage outputs found", ", ".join(wd.found) or "none"))))
    if not wd.sidecars:
        sec.add(Text("No provenance sidecars (*.meta.json) in the work folder."))
        return sec
    flat = {name: dict(flatten(doc)) for name, doc in wd.sidecars.items()}
    sec.add(Table("Outputs and the data they were made from",
                  ("sidecar", "output", "tool version", "created", "dataset", "revision"),
                  tuple((name, f.get("output", "–"), f.get("tool_version", "–"), f.get("created", "–"),
                         f.get("dataset.source", "–"), f.get("dataset.revision", "–")) for name, f in flat.items())))
    for name, fields in flat.items():
        rest = [(k, v) for k, v in fields.items()
                if k not in (*PROVENANCE_KEYS, "output", "tool", "python") and not k.startswith("dataset.files_sha256")]
        if rest:
            sec.sub(name).add(Table(f"Models, signatures, config, seeds and timings recorded in {name}",
                                    ("field", "value"), tuple(rest)))
    return sec


def flatten(obj, prefix: str = ""):
    """("a.b", "value") pairs of a nested JSON object; lists of scalars joined, long values cut."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from flatten(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(obj, list) and any(isinstance(v, (dict, list)) for v in obj):
        for i, value in enumerate(obj):
            yield from flatten(value, f"{prefix}[{i}]")
    else:
        text = ", ".join(map(str, obj)) if isinstance(obj, list) else (
            json.dumps(obj) if obj is None or isinstance(obj, bool) else str(obj))
        yield prefix, text if len(text) <= 240 else text[:237] + "…"


# ---------------------------------------------------------------- the whole report

def build(wd: Workdir) -> Report:
    sections = [s for s in (audit_section(wd), review_section(wd), evaluation_section(wd)) if not s.empty]
    sections.append(provenance_section(wd))
    source = _dataset_source(wd)
    return Report(title="bBSARD translation audit report",
                  subtitle=f"Dataset: {source}" if source else "bBSARD (French/Dutch statutory article retrieval)",
                  sections=sections)


def _dataset_source(wd: Workdir) -> str | None:
    for doc in wd.sidecars.values():
        ds = doc.get("dataset")
        if isinstance(ds, dict) and ds.get("source"):
            return f"{ds['source']} (revision {ds.get('revision', 'unknown')})"
    return None
