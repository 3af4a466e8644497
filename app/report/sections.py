"""Turn the outputs of each stage into report sections; a section appears only if its files exist."""

from __future__ import annotations

import datetime as _dt
import json
import math
from dataclasses import dataclass
from typing import Sequence

import pandas as pd

from bbsard_audit import __version__
from . import plots
from .document import Details, Figures, Headline, Plot, Report, Section, Table, Text
from bbsard_audit.base.contracts.agreement import Agreement
from bbsard_audit.base.contracts.calibration import Calibration
from bbsard_audit.base.contracts.estimate import STOPPING_BOUND, Estimate as ErrorRate
from bbsard_audit.base.contracts.selftest import Selftest
from bbsard_audit.base.contracts.verdicts import CORRECTED, fingerprint
from bbsard_audit.eval.cleaned import ERRORS_LEFT_METHOD
from bbsard_audit.eval.fragility import SCALED_METHOD
from bbsard_audit.eval.metrics import metric_sort_key  # report order = the metric registry's order
from bbsard_audit.eval.ranking_shift import SIGNIFICANCE, cleaned_counts, order_survives  # one rule with eval's summary line
from bbsard_audit.base.languages import BBSARD, LanguagePair
from bbsard_audit.base.stats import wilson
from bbsard_audit.app.review_figures import ILLUSTRATIVE, REVIEWED, final_verdicts
from .corpus_section import corpus_finding
from .scope_section import add_scope
from .formatting import VISIBLE_ROWS, num, pct, split_list
from .loaders import Workdir, fragility

TOP_RISK = 10
MAX_ROWS = 200
FLAG_COUNT_LABEL = "flags raised on flagged pairs"
"""The one flag count of the terminal (audit, demo) and the report: flags of unflagged pairs are not counted."""


# ---------------------------------------------------------------- formatting

def with_ci(value, low=None, high=None) -> str:
    if low is None or high is None or any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        return num(value)
    return f"{num(value)} [{num(low)}, {num(high)}]"


def frame_table(frame: pd.DataFrame, caption: str, max_rows: int = MAX_ROWS, wide: bool = False,
                visible: int | None = VISIBLE_ROWS) -> Table:
    """Any stage table as a report table, numbers rounded; the first `visible` rows open, the rest
    folded, very long tables cut at `max_rows` (the CSV has them all)."""
    shown = frame.head(max_rows)
    if len(frame) > max_rows:
        caption += f" (first {max_rows} of {len(frame):,} rows; all in the CSV)"
    rows = tuple(tuple(num(v) if not isinstance(v, str) else v for v in row)
                 for row in shown.itertuples(index=False))
    return Table(caption, tuple(map(str, frame.columns)), rows, wide=wide, visible=visible)


# ---------------------------------------------------------------- Audit

def audit_section(wd: Workdir) -> Section:
    sec = Section("audit", "Audit")
    audit = wd.table("audit.csv")
    if audit is not None:
        _audit_overview(sec, wd, audit)
        add_scope(sec, wd)
    queue = wd.table("review_queue.csv")
    if queue is not None:
        sub = sec.sub("Review queue")
        counts = queue["queue"].astype(str).value_counts()
        sub.add(Figures((("pairs queued for review", f"{len(queue):,}"),
                         *((f"queue: {q}", f"{n:,}") for q, n in counts.items()))))
        if "stratum" in queue.columns:
            strata = queue.groupby(["queue", "stratum"], dropna=False).size().reset_index(name="pairs")
            sub.add(frame_table(strata, "Queued pairs per queue and stratum", visible=0))

    selftest, selftest_doc = wd.table("selftest.csv"), wd.document("selftest.json")
    if selftest is not None or selftest_doc is not None:
        sub = sec.sub("Self-test: recall on injected errors")
        sub.add(Text("Synthetic errors of known types are injected into Dutch translations and the audit is "
                     "run on them: recall is the share it flags, the false-flag rate is measured on "
                     "untouched pairs."))
        if selftest is not None:
            recall = pd.to_numeric(selftest["recall"], errors="coerce")
            sub.add(frame_table(selftest, "Recall per injected error type", visible=0))
            sub.add(Plot("Self-test recall per error type",
                         "Bar chart of recall per error type: " + ", ".join(
                             f"{t} {num(r)}" for t, r in zip(selftest["error_type"], recall)),
                         plots.horizontal_bars(selftest["error_type"].astype(str).tolist(),
                                               recall.fillna(0).tolist(), "recall (share of injected errors flagged)",
                                               xlim=(0, 1.12), annotate=[num(r, 2) for r in recall])))
        if selftest_doc is not None:
            sub.add(_selftest_summary(selftest_doc))
    return sec


def _audit_overview(sec: Section, wd: Workdir, audit: pd.DataFrame) -> None:
    """The audit's figures, flags by type, the risk histogram and the top-risk pairs."""
    flagged = audit["flagged"]
    risk = audit["risk"]
    items = [("pairs audited", f"{len(audit):,}"), ("flagged", pct(int(flagged.sum()), len(audit))),
             ("median risk", num(float(risk.median())))]
    if "split" in audit.columns:
        items += [(f"{split} pairs", f"{n:,}") for split, n in audit["split"].value_counts().sort_index().items()]
    if "severity" in audit.columns:
        # per group, so each line sums to its pairs: low severity lies below the flag threshold by default
        sev = audit["severity"].fillna("none").astype(str)
        for label, group in (("flagged pairs by severity", sev[flagged]),
                             ("unflagged pairs by severity", sev[~flagged & (sev != "none")])):
            counts = group.value_counts()
            listed = [f"{s} {int(counts[s]):,}" for s in ("high", "medium", "low", "none") if s in counts]
            if listed:
                items.append((label, ", ".join(listed)))
    unavailable = (wd.sidecars.get("audit.meta.json") or {}).get("checks_unavailable") or []
    items += [("checks not run", "; ".join(map(str, unavailable)))] if unavailable else []
    by_type = flags_on_flagged(audit)
    sec.add(Figures((*items, (FLAG_COUNT_LABEL, f"{int(by_type.sum()):,}"))))
    if len(by_type):
        sub = sec.sub("Flagged pairs by type", key="audit-flags")
        sub.add(Table(f"{FLAG_COUNT_LABEL.capitalize()}, per flag (a pair can carry several; flags on "
                      "unflagged pairs are not counted)", ("flag", "pairs", "share of flagged"),
                      tuple((f, f"{n:,}", f"{100 * n / max(int(flagged.sum()), 1):.1f}%")
                            for f, n in by_type.items()), visible=0))
        sub.add(Plot("Flagged pairs per flag type", "Bar chart of the number of flagged pairs per flag type: "
                     + ", ".join(f"{f} {n}" for f, n in by_type.items()),
                     plots.horizontal_bars(list(by_type.index), by_type.tolist(), "flagged pairs",
                                           integer=True)))
    sub = sub if len(by_type) else sec.sub("Risk distribution")
    sub.add(Plot("Audit risk of every pair (flagged pairs in orange)",
                 f"Histogram of risk scores for {len(audit)} pairs, {int(flagged.sum())} flagged",
                 plots.risk_histogram(risk, flagged)))

    top = audit.assign(_risk=risk).sort_values("_risk", ascending=False, kind="stable").head(TOP_RISK)
    layout = wd.layout  # the audit's pair: question_<source>, question_<target>
    rows = tuple((str(r["id"]), str(r.get("split", "")), num(r["_risk"]), str(r.get("severity", "") or ""),
                  str(r[layout.question_src]), str(r[layout.question_tgt]), _text(r.get("backtranslation")),
                  "\n".join(split_list(r.get("reasons"), " | ")) or "–")
                 for _, r in top.iterrows())
    sec.sub("Top-risk pairs", key="audit-top").add(Table(
        f"The {len(top)} highest-risk pairs, side by side", ("id", "split", "risk", "severity",
                                                             *layout.pair.names, "back-translation", "reasons"),
        rows, wide=True, visible=1))


def flags_on_flagged(audit: pd.DataFrame) -> pd.Series:
    """Pairs per flag, over flagged pairs only (the count labelled FLAG_COUNT_LABEL everywhere)."""
    flags = audit.loc[audit["flagged"].astype(bool), "flags"].map(lambda v: split_list(v, ";")).explode().dropna()
    return flags.value_counts()


def _selftest_summary(doc: Selftest) -> Table:
    rows = [(v.name, num(v.value)) for v in doc.named_values()]
    rows += [("back-translation", doc.backtranslation_mode), ("note", doc.note)]
    return Table("Self-test summary (selftest.json)", ("measure", "value"), tuple(rows), visible=3)


def _text(value) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


# ---------------------------------------------------------------- Review campaign

def review_section(wd: Workdir) -> Section:
    sec = Section("review", "Review campaign")
    verdicts, raw = wd.table("verdicts.csv"), wd.table("annotations_raw.csv")
    if verdicts is not None:
        figures = wd.figures  # one definition of reviewed (REVIEWED) for every section and the Findings
        verdict = final_verdicts(verdicts)["verdict"].astype(str).str.strip().str.lower()
        items = [("pairs reviewed" + (" (illustrative verdicts)" if figures.illustrative else ""), figures.reviewed_text)]
        if figures.progress_text is not None:
            items.append(("queued pairs reviewed", figures.progress_text))
        for v in ("correct", "minor", "legal"):
            items.append((f"verdict {v} (share of reviewed)", pct(int((verdict == v).sum()), len(verdict))))
        corrected = CORRECTED
        if corrected in verdicts.columns:
            items.append((f"with a corrected {wd.layout.pair.names[1]} text",
                          f"{int(verdicts[corrected].fillna('').astype(str).str.strip().ne('').sum()):,}"))
        sec.add(Figures(tuple(items)))
        sec.add(Text(f"Reviewed means {REVIEWED}; every count of reviewed pairs in this report means that."
                     + (f" These verdicts are illustrative: each is {ILLUSTRATIVE}." if figures.illustrative else "")))
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
        sub.add(_agreement_table(agreement))
    disagreements = wd.table("disagreements.csv")
    if disagreements is not None:
        sub = sec.sub("Disagreements") if agreement is None else sec.subsections[-1]
        sub.add(Text(f"{len(disagreements):,} pair(s) on which annotators disagree (to adjudicate)."))
        if len(disagreements):
            sub.add(frame_table(disagreements, "Disagreements", wide=True, visible=0))  # the count says it

    estimate = wd.document("estimate.json")
    if estimate is not None:
        sub = sec.sub("Estimated error rate of the whole split", key="review-estimate")
        for block in _estimate_blocks(estimate, wd):
            sub.add(block)

    _calibration_subsection(sec, wd, verdicts)
    return sec


def _calibration_subsection(sec: Section, wd: Workdir, verdicts: pd.DataFrame | None) -> None:
    """The audit against the expert verdicts: the flags, the combined risk (calibration.json), each
    signal (calibration.csv)."""
    calibration, calibration_csv = wd.document("calibration.json"), wd.table("calibration.csv")
    audit = wd.table("audit.csv")
    if calibration is not None or calibration_csv is not None or (audit is not None and verdicts is not None):
        sub = sec.sub("Calibration: the audit against the experts")
        if audit is not None and verdicts is not None:
            sub.add(_calibration_table(audit, verdicts))
        if calibration is not None:
            sub.add(Text("The combined risk score against the expert verdicts (calibration.json):"))
            sub.add(_calibration_figures(calibration))
        if calibration_csv is not None:
            shown = [c for c in ("signal", "kind", "roc_auc", "precision", "recall", "suggested_threshold",
                                 "precision_at_suggested", "recall_at_suggested", "n_raised")
                     if c in calibration_csv.columns] or list(calibration_csv.columns)
            ranked = calibration_csv.sort_values("roc_auc", ascending=False, kind="stable") \
                if "roc_auc" in calibration_csv.columns else calibration_csv
            sub.add(frame_table(ranked[shown], "Per-signal precision / recall / ROC-AUC against the expert verdicts, "
                                               "with suggested thresholds (calibration.csv)", visible=0))


def _calibration_figures(calibration: Calibration) -> Figures:
    """The combined risk score against the expert verdicts (calibration.json)."""
    return Figures(tuple((k.replace("_", " "), num(v)) for k, v in vars(calibration.combined).items())
                   + (("positive class", calibration.positive), ("verdicts matched", num(calibration.n_matched))))


def _agreement_table(doc: Agreement) -> Table | Text:
    """Kappa per annotator pair and alpha over everyone (agreement.json)."""
    if not doc.scores:
        return Text("agreement.json holds no statistic (fewer than two annotations per pair).")
    rows = tuple((x.name.replace("_", " "), " & ".join(x.annotators) or "all", num(x.value),
                  _interval(x.ci_low, x.ci_high), num(x.n_items)) for x in doc.scores)
    extra = [f"{num(doc.n_items_with_2plus_annotations)} items with 2+ annotations"]
    if doc.n_disagreements is not None:
        extra.append(f"{num(doc.n_disagreements)} disagreements")
    return Table("Cohen's kappa (per annotator pair) and Krippendorff's alpha (all annotators), on the three "
                 f"verdicts and on legal-vs-not, with bootstrap 95% CIs; {', '.join(extra)}",
                 ("statistic", "annotators", "value", "95% CI", "items"), rows)


def _interval(low, high) -> str:
    return "–" if low is None or high is None else f"[{num(low)}, {num(high)}]"


def stale_estimate(doc: ErrorRate | None, wd: Workdir) -> str:
    """One sentence when estimate.json was computed from other final verdicts than the report's verdicts.csv
    (its recorded count + sha256, contracts/estimate.py `VerdictsUsed`); empty when it matches or is not recorded."""
    verdicts = wd.table("verdicts.csv")
    if not isinstance(doc, ErrorRate) or verdicts is None:
        return ""
    final = final_verdicts(verdicts)
    n, sha = fingerprint(zip(final["id"], final["verdict"]))
    if not doc.stale((n, sha)):
        return ""
    return (f"Stale estimate: {wd.named('estimate.json')} was computed from {doc.verdicts.final:,} final verdict(s), "
            f"{wd.named('verdicts.csv')} now holds {n:,} other ones; its figures are not the current review's "
            "(re-run `annotate estimate`)")


def _estimate_blocks(doc: ErrorRate, wd: Workdir) -> list:
    """The split's estimated share of legally inaccurate pairs, by stratum (estimate.json)."""
    items = [("estimated share legally inaccurate", with_ci(doc.share_legal, doc.ci_low, doc.ci_high)),
             ("scope", wd.figures.legal_rate.named),
             ("confidence level", f"{100 * doc.level:g}%"),
             ("expected inaccurate pairs", f"{num(doc.expected_legal_pairs, 1)} of {num(doc.population)}")]
    if doc.errors_left is not None:
        items.append(("legal errors left", doc.errors_left.sentence(doc.level)))
        if doc.errors_left.stopping_bound is not None:
            items.append(("stopping bound", STOPPING_BOUND))
    stale = stale_estimate(doc, wd)
    blocks: list = [Text(stale + ".")] if stale else []
    blocks.append(Figures(tuple(items)))
    if doc.strata and doc.design_rates:
        blocks.append(Table("By batch: the share judged legal among the pairs each batch drew, a design rate (the "
                            "draws favour likely errors), not the split's rate, which is the estimate above",
                            ("batch", "pool pairs", "drawn", "legal", "share legal among drawn (design rate)"),
                            tuple((x.name, num(x.population), num(x.reviewed), num(x.legal), num(x.rate))
                                  for x in doc.strata), visible=VISIBLE_ROWS))
    elif doc.strata:
        blocks.append(Table("By stratum (rate and Wilson CI on its rate sample: the reviewed pairs that stand for the stratum, "
                            "its control pairs or every reviewed pair of the census risk queue; not every reviewed pair)",
                            ("stratum", "pairs", "rate sample", "legal", "rate", "95% CI"),
                            tuple((x.name, num(x.population), num(x.reviewed), num(x.legal), num(x.rate),
                                   _interval(x.wilson_low, x.wilson_high)) for x in doc.strata),
                            visible=VISIBLE_ROWS))
    blocks.append(Text(f"Method: {doc.method}."))
    if doc.assumptions:
        blocks.append(Details(f"{len(doc.assumptions)} assumption(s) of the estimate",
                              tuple(Text(f"Assumption: {note}.") for note in doc.assumptions)))
    return blocks


def _calibration_table(audit: pd.DataFrame, verdicts: pd.DataFrame) -> Table:
    """Precision and recall of the audit's `flagged` against expert verdicts on the reviewed pairs."""
    final = verdicts[verdicts["verdict"] != ""]  # an unresolved disagreement is no verdict yet
    joined = final[["id", "verdict"]].merge(audit[["id", "flagged"]], on="id", how="inner")
    flagged = joined["flagged"].to_numpy(dtype=bool)
    verdict = joined["verdict"].to_numpy()
    rows = []
    for label, positive in (("legally inaccurate (legal)", verdict == "legal"),
                            ("any issue (minor or legal)", verdict != "correct")):
        tp = int((flagged & positive).sum())
        p, (pl, ph) = tp / flagged.sum() if flagged.sum() else math.nan, wilson(tp, int(flagged.sum()))
        r, (rl, rh) = tp / positive.sum() if positive.sum() else math.nan, wilson(tp, int(positive.sum()))
        rows.append((label, str(len(joined)), str(int(positive.sum())), str(int(flagged.sum())),
                     with_ci(p, pl, ph), with_ci(r, rl, rh)))
    return Table("Audit flags vs expert verdicts on reviewed pairs (Wilson 95% CIs). The review queue "
                 "over-samples flagged pairs, so precision here is not the population precision.",
                 ("expert positive =", "reviewed", "positives", "flagged", "precision", "recall"),
                 tuple(rows))


# ---------------------------------------------------------------- Evaluation

def evaluation_section(wd: Workdir) -> Section:
    sec = Section("evaluation", "Evaluation")
    if wd.table("cleaned.csv") is not None:
        _cleaned_subsection(sec.sub("Conclusions on the cleaned benchmark", key="evaluation-cleaned"), wd)
    frag = fragility(wd)
    if frag is not None:
        _fragility_subsection(sec.sub("Fragile conclusions", key="evaluation-fragility"), frag, wd)
    metrics, shift = wd.table("metrics.csv"), wd.table("ranking_shift.csv")
    if metrics is not None:
        _metrics_subsections(sec, wd, metrics, shift)
    null = wd.table("null_model.csv")
    _shift_subsection(sec, shift, null)
    pairwise = wd.table("pairwise.csv")
    if pairwise is not None:
        _pairwise_subsection(sec, pairwise)
    gap = wd.table("fr_nl_gap.csv")
    if gap is not None:
        _gap_subsection(sec, wd, gap)
    return sec


def _metrics_subsections(sec: Section, wd: Workdir, metrics: pd.DataFrame, shift: pd.DataFrame | None) -> None:
    """Metrics, full vs verified (table and forest plot), then the system ranks from one subset to another."""
    metrics = metrics.copy()
    metrics["value"] = pd.to_numeric(metrics["value"], errors="coerce")
    names = sorted(set(metrics["metric"].astype(str)), key=metric_sort_key)
    subsets = list(dict.fromkeys(metrics["subset"].astype(str)))
    sec.add(Figures((("systems", str(metrics["system"].nunique())),
                     ("subsets", ", ".join(subsets)),
                     *((f"queries ({s})", _queries(metrics, s)) for s in subsets))))
    rows = []
    shallow = _beyond_depth(wd)
    for system in sorted(set(metrics["system"].astype(str))):
        for name in names:
            part = metrics[(metrics["system"].astype(str) == system) & (metrics["metric"].astype(str) == name)]
            cells = []
            mark = DEPTH_MARK if name in shallow.get(system, ((), 0))[0] else ""
            for subset in subsets:
                hit = part[part["subset"].astype(str) == subset]
                cells.append("–" if hit.empty else with_ci(hit["value"].iloc[0], hit.get("ci_low", pd.Series([None])).iloc[0],
                                                              hit.get("ci_high", pd.Series([None])).iloc[0]) + mark)
            rows.append((system, name, *cells))
    sub = sec.sub("Metrics, full vs verified")
    headline = next((m for m in HEADLINE_METRICS if m in names), names[0])
    rows.sort(key=lambda r: r[1] != headline)  # the headline metric open, the rest folded
    depth_note = "; ".join(f"{system} ranks at most {depth} per query ({', '.join(cut)})"
                           for system, (cut, depth) in sorted(shallow.items()))
    sub.add(Table(f"Value [bootstrap 95% CI] per system, metric and subset ({headline} first)"
                  + (f". {DEPTH_MARK.strip()} a cut-off deeper than the system's run, whose value is the metric at "
                     f"the run's depth (documents ranked): {depth_note}" if shallow else ""),
                  ("system", "metric", *subsets), tuple(rows),
                  visible=sum(r[1] == headline for r in rows)))
    ordered = metrics.assign(_k=metrics["metric"].map(metric_sort_key)).sort_values("_k", kind="stable")
    sub.add(Details("Figure: every metric's 95% CI per system and subset (forest plot)", (
        Plot("Confidence intervals per system and subset", "Forest plot of each metric's value with "
             "its 95% CI per system, one colour per subset", plots.forest_plot(ordered)),)))
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
        sub.add(Text(f"{len(moved)} system/metric rank change(s) between {pair[0]} and {pair[1]} "
                     "(ranks from metrics.csv; tied systems share the better rank)."))
        if len(moved):
            sub.add(frame_table(moved.rename(columns={"rank_a": f"rank {pair[0]}", "rank_b": f"rank {pair[1]}"}),
                                "Rank changes", visible=0))


def _shift_subsection(sec: Section, shift: pd.DataFrame | None, null: pd.DataFrame | None) -> None:
    """Kendall tau between the subsets' system orders, and the random-removal null."""
    if shift is not None or null is not None:
        sub = sec.sub("Ranking shift: Kendall tau and the random-removal null", key="evaluation-shift")
    if shift is not None:
        shown = [c for c in ("metric", "subset_a", "subset_b", "kendall_tau", "tau_ap", "n_flips", "n_flips_significant",
                             "n_queries_a", "n_queries_b") if c in shift.columns]
        extra = [c for c in shift.columns if c not in shown and c not in ("rank_changes", "flips", "n_systems",
                                                                          "order_a", "order_b")]
        shift = _verified_first(shift, "subset_b")
        sub.add(frame_table(shift[shown + extra], "Kendall tau-b / tau-AP between the system orders on two subsets, "
                                                  "per metric, with the number of flipped system pairs "
                                                  "(significant: Holm-corrected paired test; the orders themselves are in "
                                                  "ranking_shift.csv)", visible=0))
    if null is not None:
        sub.add(Text("Null model: the same number of questions removed at random many times. Where the observed "
                     "change falls in that distribution says whether verification moved the rankings more than "
                     "removing any questions would (percentile and p-value of the observed value)."))
        if "subset" in null.columns:
            null = _verified_first(null, "subset")
        if "statistic" in null.columns:
            stat = null["statistic"].astype(str)
            taus = null[stat.isin(["kendall_tau", "tau_ap"])]
            deltas = null[~stat.isin(["kendall_tau", "tau_ap"])]
            drop = [c for c in ("draws",) if c in null.columns]
            if len(taus):
                sub.add(frame_table(taus.drop(columns=drop + [c for c in ("system",) if c in taus.columns]),
                                    "Observed Kendall tau / tau-AP vs the random-removal null (95% null interval)",
                                    visible=0))  # the Findings quote it: folded, the report stays conclusions-first
            if len(deltas):
                sub.add(frame_table(deltas.drop(columns=drop), "Observed metric change per system vs the "
                                                               "random-removal null", visible=0))
        else:
            sub.add(frame_table(null, "Observed change vs the random-removal null"))


def _pairwise_subsection(sec: Section, pairwise: pd.DataFrame) -> None:
    sub = sec.sub("Flipped system pairs")
    flips = pairwise[pairwise["flips_vs_full"].astype(bool)] if "flips_vs_full" in pairwise.columns else pairwise
    flips = flips.sort_values("p_holm", kind="stable") if "p_holm" in flips.columns else flips
    sub.add(Text(f"{len(flips):,} system pair(s) whose order on a subset differs from the full set; "
                 "p-values from a paired test on that subset, Holm-corrected (sorted by `p_holm`)."))
    if len(flips):
        sub.add(frame_table(flips.drop(columns=["flips_vs_full"], errors="ignore"),
                            "System pairs whose order flips, with paired-test p-values"))


def _gap_subsection(sec: Section, wd: Workdir, gap: pd.DataFrame) -> None:
    source, target = wd.layout.pair.names
    sub = sec.sub(f"{source} − {target} gap by verdict")
    sub.add(Text(f"Per system, the {source} score minus the {target} score on the same questions: a gap that "
                 "grows on pairs the experts judged inaccurate points at translation damage."))
    sub.add(_gap_table(gap, wd.layout.pair))
    plot = _gap_plot(gap, wd.layout.pair)
    if plot is not None:
        sub.add(plot)


SUBSET_ORDER = ("full", "verified", "corrected", "flagged", "unflagged")


DEPTH_MARK = " †"
"""Marks a metric cell whose cut-off is deeper than the system's run (eval.meta.json `run_depth`)."""


def _beyond_depth(wd: Workdir) -> dict[str, tuple[tuple[str, ...], int]]:
    """System -> (metrics cut deeper than its run, the run's depth), from the eval's sidecar."""
    meta = wd.sidecars.get("metrics.meta.json") or wd.sidecars.get("eval.meta.json") or {}
    return {str(s): (tuple(d["beyond_depth"]), int(d["depth"])) for s, d in (meta.get("run_depth") or {}).items()
            if d.get("beyond_depth")}


def _cleaned_subsection(sub: Section, wd: Workdir) -> None:
    """cleaned.csv and rank_sets.csv of `eval --campaign`: each system on the benchmark without its legal
    errors, estimated from the campaign's draws, and what `verified` is beside it."""
    table = wd.table("cleaned.csv")
    meta = (wd.sidecars.get("cleaned.meta.json") or {}).get("cleaned") or {}
    names = sorted(set(table["metric"].astype(str)), key=metric_sort_key)
    headline = next((m for m in HEADLINE_METRICS if m in names), names[0])
    first = table.iloc[0]
    verified = _queries(wd.table("metrics.csv"), "verified") if wd.table("metrics.csv") is not None else None
    sub.add(Text(
        f"The cleaned benchmark is every judged question whose translation is not a legal error, reviewed or not. "
        f"{int(first['reviewed']):,} of {int(first['reviewed'] + first['unreviewed']):,} judged questions have a "
        "verdict; the others are estimated from the campaign's probability draws (each reviewed pair weighted by "
        "its inclusion probability) and p_error (prediction-powered ratio estimator, 95% intervals, "
        "cleaned.meta.json gives the method and assumptions). `verified` "
        + (f"({verified} questions) " if verified and verified != "–" else "")
        + "holds only the reviewed questions with a verdict in --keep: after a probability draw it over-represents "
          "the risky pairs the draws favoured and leaves out every unreviewed one, so it is not the cleaned "
          "benchmark." + (" Rows NAME.corrected: the built-in run re-retrieved on the experts' corrections, on "
                          "the corrected benchmark (every judged question, legal errors corrected)."
                          if table["system"].astype(str).str.endswith(".corrected").any() else "")
        + (" " + " ".join(a for a in meta.get("assumptions", []) if "p_error alone" in a))))
    rows = []
    for r in table.sort_values("metric", key=lambda m: m.map(metric_sort_key), kind="stable").itertuples():
        rows.append((str(r.system), str(r.metric), num(r.full), with_ci(r.cleaned, r.ci_low, r.ci_high),
                     with_ci(r.change, r.change_low, r.change_high)))
    rows.sort(key=lambda row: row[1] != headline)
    sub.add(Table(f"Each system on the full and on the cleaned benchmark [95% CI] ({headline} first; cleaned.csv)",
                  ("system", "metric", "full", "cleaned", "cleaned − full"), tuple(rows),
                  visible=sum(row[1] == headline for row in rows)))
    ranks = wd.table("rank_sets.csv")
    if ranks is not None:
        ordered = ranks.sort_values(["metric", "rank"], key=lambda c: c.map(metric_sort_key) if c.name == "metric"
                                    else c, kind="stable")
        rows = tuple((str(r.metric), str(r.system), str(int(r.rank)),
                      str(int(r.rank_low)) if r.rank_low == r.rank_high else f"{int(r.rank_low)}–{int(r.rank_high)}")
                     for r in ordered.itertuples())
        rows = tuple(sorted(rows, key=lambda row: row[0] != headline))
        pairs = wd.table("cleaned_pairs.csv")
        counts = "" if pairs is None else "; full-set conclusions on the cleaned benchmark: " + ", ".join(
            f"{int((pairs['conclusion'] == c).sum())} {c}" for c in ("holds", "tied", "flips"))
        sub.add(Table(f"Rank on the cleaned benchmark and simultaneous 95% rank set per metric (rank_sets.csv{counts})",
                      ("metric", "system", "rank", "rank set"), rows, visible=sum(row[0] == headline for row in rows)))


def _fragility_subsection(sub: Section, frag: pd.DataFrame, wd: Workdir) -> None:
    """Every pairwise conclusion, the ones removing the fewest questions could undo first; with a campaign
    (cleaned_pairs.csv), the bound is the campaign's estimate behind cleaned.csv and each conclusion's
    fate on the cleaned benchmark is shown beside it."""
    has_bound = "robust" in frag.columns and frag["robust"].notna().any()
    campaign = _campaign_bound(wd)
    source = ("the campaign's estimate behind cleaned.csv, the same one as the cleaned benchmark's" if campaign
              else "estimate.json's errors left, scaled to the judged questions not reviewed")
    sub.add(Text("A conclusion \"a beats b\" on the full set is fragile when removing a few judged questions "
                 "undoes it: `removal fragility` is the fewest questions whose removal leaves a no longer ahead "
                 "(docs/metrics.md)." + (" It is robust when that number exceeds the upper bound on legally "
                                         "inaccurate questions expected among the judged questions not reviewed "
                                         f"({source})." if has_bound else "")))
    pairs = wd.table("cleaned_pairs.csv")
    fate = {} if pairs is None else {(str(r.metric), str(r.system_a), str(r.system_b)): str(r.conclusion)
                                     for r in pairs.itertuples()}
    order = frag.assign(is_robust=frag["robust"].fillna(False).astype(bool)) if has_bound else frag.assign(is_robust=False)
    order = order.sort_values(["is_robust", "removal_fragility"], kind="stable")
    rows = tuple((str(r.metric), str(r.system_a), str(r.system_b), num(r.delta),
                  num(getattr(r, "p_value", float("nan"))), f"{int(r.removal_fragility):,} of {int(r.n_queries):,}",
                  *((num(r.expected_errors_unverified_high, 1), num(bool(r.is_robust))) if has_bound else ()),
                  *((fate.get((str(r.metric), str(r.system_a), str(r.system_b)), "–"),) if fate else ()))
                 for r in order.itertuples())
    columns = ("metric", "a (ahead)", "b", "Δ mean", "p (paired)", "undone by removing",
               *(("expected errors, upper bound", "robust") if has_bound else ()),
               *(("on the cleaned benchmark",) if fate else ()))
    sub.add(Table("Pairwise conclusions on the full set, most fragile first (fragility.csv)", columns, rows,
                  visible=VISIBLE_ROWS))


def _campaign_bound(wd: Workdir) -> bool:
    """The fragility's bound came from the campaign's estimate behind cleaned.csv (eval --campaign)."""
    exposure = (wd.sidecars.get("fragility.meta.json") or {}).get("fragility") or {}
    return str(exposure.get("method", "")).startswith(ERRORS_LEFT_METHOD[:40])


def _verified_first(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """Full vs verified is the question the report answers first; other subsets follow."""
    rank = frame[column].astype(str).map(lambda v: SUBSET_ORDER.index(v) if v in SUBSET_ORDER else len(SUBSET_ORDER))
    return frame.assign(_order=rank).sort_values("_order", kind="stable").drop(columns="_order")


def _queries(metrics: pd.DataFrame, subset: str) -> str:
    if "n_queries" not in metrics.columns:
        return "–"
    values = pd.to_numeric(metrics.loc[metrics["subset"].astype(str) == subset, "n_queries"], errors="coerce")
    return num(int(values.max())) if values.notna().any() else "–"


def _subset_pair(subsets: list[str], shift: pd.DataFrame | None) -> tuple[str, str] | None:
    if "full" in subsets and "verified" in subsets:
        return "full", "verified"
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


def _gap_table(gap: pd.DataFrame, pair: LanguagePair) -> Table:
    """One row per system and group, one column per metric: `gap [ci_low, ci_high]`."""
    rows = gap[gap["level"] != "question"]
    names = sorted(set(rows["metric"]), key=metric_sort_key)
    keys = ["system", "level", "group", "n_queries"]
    out = []
    for key, part in rows.groupby(keys, sort=False):
        by_metric = part.set_index("metric")
        out.append((*map(str, key), *(with_ci(by_metric.at[m, "gap"], by_metric.at[m, "ci_low"], by_metric.at[m, "ci_high"])
                                      if m in by_metric.index else "–" for m in names)))
    return Table(f"{_minus(pair)} difference (bootstrap 95% CI) per system and question group; positive = "
                 f"{pair.names[0]} retrieves better", (*keys, *names), tuple(out), visible=0)


HEADLINE_METRICS = ("ndcg@10", "map@100", "mrr@100")


def _minus(pair: LanguagePair, spaced: bool = True) -> str:
    """`FR − NL`: the gap's sides by code, source first."""
    return (" − " if spaced else "−").join(code.upper() for code in pair)


def _gap_plot(gap: pd.DataFrame, pair: LanguagePair) -> Plot | None:
    """Source − target gap per verdict (else flag) group and system, for the headline metric."""
    level = next((lv for lv in ("verdict", "flag") if (gap["level"] == lv).any()), None)
    if level is None:
        return None
    frame = gap[gap["level"] == level].drop(columns=[level], errors="ignore").rename(columns={"group": level})
    present = sorted(set(frame["metric"]), key=metric_sort_key)
    metric = next((m for m in HEADLINE_METRICS if m in present), present[0])
    frame = frame[frame["metric"] == metric]
    source, target = pair.names
    return Plot(f"{source} − {target} difference by {level} ({metric}, 95% CI)",
                f"Bar chart of the {_minus(pair, spaced=False)} difference per {level} and system for {metric}",
                plots.grouped_bars(frame, level, "system", "gap", f"{_minus(pair)} {metric}", "ci_low", "ci_high"))


# ---------------------------------------------------------------- Provenance

PROVENANCE_KEYS = ("tool_version", "created", "dataset.source", "dataset.revision")
PROVENANCE_ROWS = 60


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
    by_stage: dict[str, list[str]] = {}
    for name in flat:
        by_stage.setdefault(sidecar_stage(name), []).append(name)
    for stage in sorted(by_stage, key=lambda st: STAGES.index(st) if st in STAGES else len(STAGES)):
        names = by_stage[stage]
        blocks: list = [Table("Outputs and the data they were made from",
                              ("sidecar", "output", "tool version", "created", "dataset", "revision"),
                              tuple((n, flat[n].get("output", "–"), flat[n].get("tool_version", "–"),
                                     flat[n].get("created", "–"), flat[n].get("dataset.source", "–"),
                                     flat[n].get("dataset.revision", "–")) for n in names))]
        shown: dict[str, list[str]] = {}  # the eval stage writes the same record next to each of its tables
        for name in names:
            rest = [(k, v) for k, v in flat[name].items()
                    if k not in (*PROVENANCE_KEYS, "output", "tool", "python", "table")
                    and not k.startswith("dataset.files_sha256")]
            if rest:
                shown.setdefault(json.dumps(rest), []).append(name)
        for key, holders in shown.items():
            rest = json.loads(key)
            caption = f"Models, signatures, config, seeds and timings recorded in {', '.join(holders)}"
            if len(rest) > PROVENANCE_ROWS:
                caption += f" (first {PROVENANCE_ROWS} of {len(rest)} fields; all in the file)"
            blocks.append(Table(caption, ("field", "value"), tuple(map(tuple, rest[:PROVENANCE_ROWS]))))
        n_fields = sum(len(flat[n]) for n in names)
        sec.sub(stage.capitalize(), key=f"provenance-{stage}").add(Details(
            f"{len(names)} sidecar(s), {n_fields:,} recorded fields: {', '.join(names)}", tuple(blocks)))
    return sec


STAGES = ("dataset", "audit", "review", "eval", "release", "other")
_STAGE_OF = {"dataset": "dataset", "audit": "audit", "review_queue": "audit", "selftest": "audit",
             "corpus_audit": "audit", "corpus_review_queue": "audit",
             "calibration": "audit", "verdicts": "review", "annotations_raw": "review", "agreement": "review",
             "disagreements": "review", "estimate": "review", "error_spans": "review", "eval": "eval",
             "metrics": "eval", "ranking_shift": "eval", "pairwise": "eval", "per_query": "eval",
             "null_model": "eval", "fr_nl_gap": "eval", "fragility": "eval", "release": "release"}


def sidecar_stage(name: str) -> str:
    """The pipeline stage that wrote a sidecar, from its output name (`metrics.meta.json` -> eval)."""
    return _STAGE_OF.get(name.split(".")[0], "other")


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


# ---------------------------------------------------------------- Findings


UNINFORMATIVE_WIDTH = 0.5
"""A random-removal null interval of Kendall tau this wide (a quarter of tau's range [-1, 1]) says that
removing questions at random already moves the order that much: the test cannot tell (docs/metrics.md)."""
FRAGILE_SHARE = 0.05
"""Without an estimate, a conclusion is called fragile when removing <= 5% of the judged questions undoes it."""


def findings_section(wd: Workdir, sections: list[Section]) -> Section:
    """The answers a reader came for, in sentences with numbers and CIs, each linking to its evidence."""
    sec = Section("findings", "Findings")
    anchors = {s.key: s.title for top in sections for s in (top, *top.subsections)}

    def say(text: str, *keys: str) -> None:
        key = next((k for k in keys if k in anchors), None)
        if text and key is not None:
            sec.add(Headline(text, key, anchors[key]))

    audit = wd.table("audit.csv")
    if audit is not None:
        flagged = int(audit["flagged"].astype(bool).sum())
        by_type = flags_on_flagged(audit)
        kinds = ", ".join(f"`{f}` ({n:,} pair{'s' if n != 1 else ''})" for f, n in by_type.head(3).items())
        say(f"{flagged:,} of {len(audit):,} translations ({100 * flagged / max(len(audit), 1):.1f}%) are flagged "
            "as suspect" + (f"; the most frequent flags are {kinds}; {int(by_type.sum()):,} "
                            f"{FLAG_COUNT_LABEL} in all." if kinds else "."), "audit-flags", "audit")
    say(corpus_finding(wd), "corpus-questions", "corpus")
    say(_estimate_finding(wd), "review-estimate", "review")
    say(_cleaned_finding(wd), "evaluation-cleaned", "evaluation")
    for text in _shift_findings(wd):
        say(text, "evaluation-shift", "evaluation")
    text = _fragility_finding(fragility(wd), (wd.sidecars.get("fragility.meta.json") or {}).get("fragility") or {},
                              wd.document("estimate.json"))
    if text:
        say(text, "evaluation-fragility", "evaluation")
    return sec


def _cleaned_finding(wd: Workdir) -> str:
    """The evaluation's first answer when a campaign was given: the headline metric on the cleaned
    benchmark (cleaned.csv), who ranks first with its rank set (rank_sets.csv), and how many full-set
    conclusions hold, tie or flip there (cleaned_pairs.csv)."""
    table = wd.table("cleaned.csv")
    if table is None or not len(table):
        return ""
    plain = table[~table["system"].astype(str).str.endswith(".corrected")]
    names = sorted(set(plain["metric"].astype(str)), key=metric_sort_key)
    metric = next((m for m in HEADLINE_METRICS if m in names), names[0])
    rows = plain[plain["metric"].astype(str) == metric]
    moved = rows.loc[rows["change"].abs().idxmax()]
    first = table.iloc[0]
    text = (f"On the cleaned benchmark (every judged question without a legal error, estimated from "
            f"{int(first['reviewed']):,} of {int(first['reviewed'] + first['unreviewed']):,} judged questions "
            f"reviewed; cleaned.csv), the largest {metric} change is {moved['system']}'s: "
            f"{with_ci(moved['change'], moved['change_low'], moved['change_high'])}")
    ranks = wd.table("rank_sets.csv")
    top = None if ranks is None else ranks[(ranks["metric"].astype(str) == metric) & (ranks["rank"] == 1)]
    if top is not None and len(top):
        r = top.iloc[0]
        text += (f"; {r['system']} ranks first (simultaneous 95% rank set {int(r['rank_low'])}"
                 + (f"–{int(r['rank_high'])}" if r["rank_high"] != r["rank_low"] else "") + ", rank_sets.csv)")
    pairs = wd.table("cleaned_pairs.csv")
    if pairs is not None and len(pairs):
        text += f"; of {len(pairs):,} full-set conclusions (every metric), {cleaned_counts(pairs)} on the cleaned benchmark"
    return text + "."


def _estimate_finding(wd: Workdir) -> str:
    """The legal-error rate over its population (estimate.json), and the share of the reviewed pairs
    judged legal over those pairs only: two figures, each named with its scope (wd.figures)."""
    doc, figures = wd.document("estimate.json"), wd.figures
    share = figures.reviewed_legal_share
    among = (f"{figures.reviewed_legal:,} of the {figures.reviewed:,} reviewed pairs ({figures.verdict_kind}) were "
             f"judged legally inaccurate: {100 * share.value:.1f}%, Wilson {share.interval}, {share.scope}"
             if share is not None else "")
    if isinstance(doc, ErrorRate):
        rate = figures.legal_rate
        stale = stale_estimate(doc, wd)
        left = f"; legal errors left: {doc.errors_left.sentence(doc.level)}" if doc.errors_left is not None else ""
        return ((f"{stale}. " if stale else "")
                + f"An estimated {rate.percent()} of the translations are legally inaccurate, about "
                f"{doc.expected_legal_pairs:.0f} pairs ({rate.named}){left}" + (f"; {among}." if among else "."))
    if among:
        return f"{among[0].upper()}{among[1:]}; `annotate estimate` gives the split's rate."
    return ""


@dataclass(frozen=True)
class _Shift:
    """The full -> subset ranking shift of one headline metric, as the Findings tell it."""
    metric: str
    tau: float
    flips: int
    significant: int
    null: tuple[float, float, float, float] | None  # (low, high, n_removed, p) of the random-removal null
    n_kept: int | None = None  # questions in the subset (the verified ones)

    @property
    def survives(self) -> bool:
        return order_survives(self.significant, None if self.null is None else self.null[3])

    @property
    def uninformative(self) -> bool:
        return self.null is not None and self.null[1] - self.null[0] >= UNINFORMATIVE_WIDTH


def _shift_findings(wd: Workdir) -> list[str]:
    """Does the system order on the full set survive on the verified subset (else the unflagged one)?
    One sentence when every headline metric keeps its order untouched, else one per metric."""
    shift, null = wd.table("ranking_shift.csv"), wd.table("null_model.csv")
    if shift is None or not len(shift):
        return []
    subsets = list(dict.fromkeys(shift["subset_b"].astype(str)))
    target = next((s for s in ("verified", "unflagged") if s in subsets), subsets[0])
    verb = "verification" if target == "verified" else f"keeping only the {target} questions"
    rows = shift[shift["subset_b"].astype(str) == target]
    present = sorted(set(rows["metric"].astype(str)), key=metric_sort_key)
    shifts = [_metric_shift(rows, null, target, m) for m in [m for m in HEADLINE_METRICS if m in present] or present[:1]]
    kept = next((s.n_kept for s in shifts if s.n_kept is not None), None)
    if target == "verified" and kept is not None:
        verb_n = f"verification ({num(kept)} verified question{'s' if kept != 1 else ''}: {_verified_scope(wd, kept)})"
    else:
        verb_n = verb
    if any(s.uninformative for s in shifts):
        wide = [s for s in shifts if s.uninformative]
        ranges = ", ".join(f"[{num(s.null[0], 2)}, {num(s.null[1], 2)}] on {s.metric}" for s in wide)
        taus = ", ".join(f"{num(s.tau, 2)} on {s.metric}" for s in shifts)
        who = f"verified questions ({num(kept)})" if target == "verified" and kept is not None else f"{target} questions"
        return [f"Kendall τ between the system orders on the full set and after {verb_n} is {taus}, but removing "
                f"questions at random already gives τ anywhere in {ranges} (95% range): too few {who} to tell "
                f"whether {verb} changes the system order."]
    if len(shifts) > 1 and all(s.survives and s.flips == 0 for s in shifts):
        taus = [f"{num(s.tau, 2)} on {s.metric}" for s in shifts]
        nulls = {s.null[2] for s in shifts if s.null is not None}
        within = (f", each within the 95% range of removing {num(nulls.pop())} questions at random (p ≥ {SIGNIFICANCE:g})"
                  if len(nulls) == 1 and all(s.null is not None for s in shifts) else "")
        return [f"The system order survives {verb} on every headline metric: Kendall τ between the orders on the "
                f"full set and after {verb_n} is {', '.join(taus[:-1])} and {taus[-1]}{within}; no system pair swaps places."]
    out = []
    for s in shifts:
        text = f"{s.metric}: Kendall τ between the system orders on the full set and after {verb_n} is {num(s.tau, 2)}"
        if s.null is not None:
            low, high, removed, p = s.null
            text += (f" ({'within' if p >= SIGNIFICANCE else 'below'} the 95% range [{num(low, 2)}, {num(high, 2)}] "
                     f"of removing {num(removed)} questions at random, p = {num(p, 2)})")
        text += f"; {s.flips} system pair(s) swap places, {s.significant} significantly"
        out.append(text + (f": the order survives {verb}." if s.survives else f": the order does not survive {verb}."))
    return out


def _verified_scope(wd: Workdir, kept: int) -> str:
    """What a verified question is (eval's `keep`), beside the count of reviewed pairs it is drawn from
    (when the report's verdicts.csv can be the eval's: no more verified than reviewed)."""
    keep = (wd.sidecars.get("ranking_shift.meta.json") or wd.sidecars.get("eval.meta.json") or {}).get("keep")
    judged = " or ".join(keep) if keep else "correct or minor"
    reviewed = wd.figures.reviewed
    return f"evaluated, reviewed and judged {judged}" + (f", of the {reviewed:,} reviewed pairs"
                                                          if reviewed and kept <= reviewed else "")


def _metric_shift(rows: pd.DataFrame, null: pd.DataFrame | None, target: str, metric: str) -> _Shift:
    row = rows[rows["metric"].astype(str) == metric].iloc[0]
    hit = None
    if null is not None and {"statistic", "subset", "observed", "null_low", "null_high", "p_value"} <= set(null.columns):
        hit = null[(null["metric"].astype(str) == metric) & (null["subset"].astype(str) == target)
                   & (null["statistic"].astype(str) == "kendall_tau")]
    h = hit.iloc[0] if hit is not None and len(hit) else None
    kept = _count(row, "n_queries_b") or (None if h is None else _count(h, "n_kept")) or None
    return _Shift(metric, float(row["kendall_tau"]), _count(row, "n_flips"), _count(row, "n_flips_significant"),
                  None if h is None else (float(h["null_low"]), float(h["null_high"]), h.get("n_removed"),
                                          float(h["p_value"])), kept)


def _count(row: pd.Series, key: str) -> int:
    value = pd.to_numeric(row.get(key), errors="coerce")
    return 0 if pd.isna(value) else int(value)


def _fragility_finding(frag: pd.DataFrame | None, exposure: dict, estimate: ErrorRate | None = None) -> str:
    if frag is None or not len(frag):
        return ""
    total = len(frag)
    first = frag.iloc[0]
    worst = (f"the most fragile, {first['metric']} {first['system_a']} > {first['system_b']} "
             f"(Δ {num(float(first['delta']))}, p = {num(float(first.get('p_value', float('nan'))), 2)}), is undone "
             f"by removing {int(first['removal_fragility']):,} of {int(first['n_queries']):,} questions")
    if "robust" in frag.columns and frag["robust"].notna().any():
        fragile = int((~frag["robust"].fillna(True).astype(bool)).sum())
        bound = float(frag["expected_errors_unverified_high"].dropna().iloc[0])
        expected = float(frag["expected_errors_unverified"].dropna().iloc[0])
        among = (f"the {exposure['unverified_judged_queries']:,} judged questions not reviewed"
                 if "unverified_judged_queries" in exposure else "the judged questions not reviewed")
        left = estimate.errors_left if isinstance(estimate, ErrorRate) else None
        if str(exposure.get("method", "")).startswith(ERRORS_LEFT_METHOD[:40]):
            among += " (the campaign's estimate behind cleaned.csv)"
        elif left is not None and str(exposure.get("method", "")).startswith(SCALED_METHOD[:40]):
            among += (f" (estimate.json's {left.unreviewed:,} unreviewed pairs, the same figures)"
                      if exposure.get("unverified_judged_queries") == left.unreviewed else
                      f" (a sub-population, scaled from estimate.json's {left.expected:.1f} expected among its "
                      f"{left.unreviewed:,} unreviewed pairs)")
        return (f"{fragile:,} of {total:,} pairwise conclusions (system a beats b on a metric) are fragile: removing "
                f"no more questions than the legally inaccurate ones expected among {among} (expected "
                f"{expected:.1f}, upper bound {bound:.1f}) could undo them; {worst}.")
    n = int(frag["n_queries"].max())
    limit = max(1, math.floor(FRAGILE_SHARE * n))
    fragile = int((frag["removal_fragility"] <= limit).sum())
    return (f"{fragile:,} of {total:,} pairwise conclusions (system a beats b on a metric) are undone by removing at "
            f"most {limit:,} of {n:,} judged questions ({100 * FRAGILE_SHARE:g}%); {worst}.")


# ---------------------------------------------------------------- the whole report

def build(wd: Workdir, extra: Sequence[Section] = (), simulated: Section | None = None) -> Report:
    """The report's sections in reading order; `extra` (e.g. the Corpus section) goes before Provenance;
    a `simulated` campaign is a subsection of the one Review campaign section (alone there when no
    review files are present)."""
    review = review_section(wd)
    if simulated is not None:
        review.subsections.append(simulated)
    sections = [s for s in (audit_section(wd), review, evaluation_section(wd), *extra) if not s.empty]
    sections.append(provenance_section(wd))
    findings = findings_section(wd, sections)
    if not findings.empty:
        sections.insert(0, findings)
    dataset = _dataset(wd)
    source = f"{dataset['source']} (revision {dataset.get('revision', 'unknown')})" if dataset else None
    return Report(title=_title(dataset),
                  subtitle=f"Dataset: {source}" if source else "Dataset: not named by any sidecar",
                  sections=sections)


def _dataset(wd: Workdir) -> dict | None:
    for doc in wd.sidecars.values():
        ds = doc.get("dataset")
        if isinstance(ds, dict) and ds.get("source"):
            return ds
    return None


def _title(dataset: dict | None) -> str:
    """bBSARD's own layouts (sample, CSV folder, hf:, all fr -> nl) keep its name; a manifest's benchmark
    (another pair, or any BEIR pair) is titled by the manifest's name."""
    if dataset is None:
        return "Translation audit report"
    manifest = any(str(name).endswith((".yaml", ".yml")) for name in dataset.get("files_sha256") or {})
    if manifest or LanguagePair.from_sidecar(dataset) != BBSARD:
        return f"{dataset['source']} translation audit report"
    return "bBSARD translation audit report"
