"""The report's Simulated campaign subsection (of the Review campaign section): what a simulated review campaign (`bbsard_audit.app.simulation`) found per pair reviewed, with
learning and without, and the rules it learned.

Where campaigns are found: `campaign simulate --out DIR` writes `campaign_curve.csv`,
`campaign_seeds.csv` (every seed's curve) and its sidecar `campaign_curve.meta.json` into DIR. The section reads every such folder in the work folder itself, its
direct subfolders and `campaign/*` (e.g. `W/campaign/learning` and `W/campaign/static`); each run
is labelled "learning" or "static" from its meta (`learning: true|false`), plus the folder name
when two runs share a label.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bbsard_audit.base.contracts.simulation import CAMPAIGN_CURVE, CAMPAIGN_SEEDS
from bbsard_audit.base.contracts.learned import LEARNED_RULES
from bbsard_audit.base.contracts.sidecar import read_sidecar
from bbsard_audit.base.io import sidecar_path
from .document import Plot, Section, Table, Text
from .plots import MARKERS, OKABE_ITO, STYLE, _png, plt
from .sections import frame_table, num
from bbsard_audit.app.review_figures import population_label

RULES_SHOWN = ["fr", "rejected", "accepted", "source", "round", "n_other_flagged"]
RULE_HEADERS = {"fr": "French term", "rejected": "translation's rendering (rejected)",
                "accepted": "expert's rendering", "source": "learned from", "round": "round",
                "n_other_flagged": "other pairs flagged"}


@dataclass
class SimulationRun:
    label: str
    folder: Path
    curve: pd.DataFrame
    meta: dict
    rules: pd.DataFrame | None
    seeds: pd.DataFrame | None = None
    """Every seed's curve (campaign_seeds.csv), when the run wrote one."""

    def found(self) -> pd.DataFrame:
        """Legal errors found per pairs reviewed: mean, min and max over the seeds (one seed: its curve)."""
        curves = self.seeds if self.seeds is not None and len(self.seeds) else self.curve.assign(seed=0)
        by = curves.groupby("reviewed")["found_legal"]
        return pd.DataFrame({"mean": by.mean(), "low": by.min(), "high": by.max(), "n": by.size()}).reset_index()

    @property
    def n_seeds(self) -> int:
        return int(self.seeds["seed"].nunique()) if self.seeds is not None and len(self.seeds) else 1


def load_simulations(root: str | Path) -> list[SimulationRun]:
    """Every simulated campaign under `root` (see the module doc); a malformed file -> InputError."""
    root = Path(root)
    folders = [root, *sorted(p for p in root.iterdir() if p.is_dir()),
               *sorted(p for p in (root / "campaign").glob("*") if p.is_dir())] if root.is_dir() else []
    runs: list[SimulationRun] = []
    for folder in dict.fromkeys(folders):
        path = folder / "campaign_curve.csv"
        if not path.is_file():
            continue
        curve = CAMPAIGN_CURVE.read(path)
        meta_path = sidecar_path(path)  # campaign_curve.meta.json
        meta = read_sidecar(meta_path) if meta_path.is_file() else {}
        rules_path = folder / "learned_rules.csv"
        rules = LEARNED_RULES.read(rules_path) if rules_path.is_file() else None
        seeds_path = folder / "campaign_seeds.csv"
        seeds = CAMPAIGN_SEEDS.read(seeds_path) if seeds_path.is_file() else None
        label = "learning" if meta.get("learning", rules is not None) else "static"
        runs.append(SimulationRun(label, folder, curve, meta, rules, seeds))
    labels = [r.label for r in runs]
    for r in runs:
        if labels.count(r.label) > 1:
            r.label = f"{r.label} ({r.folder.name})"
    return runs


LINESTYLES = ("-", "--", ":", "-.")


def found_curve(runs: list[SimulationRun]) -> bytes:
    """Legal errors found against pairs reviewed, one line per campaign run (the mean over its seeds,
    with the min-max band of the seeds). Runs differ in colour, marker and line style and are
    shifted apart by a fraction of a review, so two runs that coincide stay both visible."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6, 3))
        span = max((float(r.curve["reviewed"].max()) for r in runs), default=1.0)
        for i, run in enumerate(runs):
            found = run.found()
            x = found["reviewed"].to_numpy(float) + (i - (len(runs) - 1) / 2) * 0.006 * span
            color = OKABE_ITO[i % len(OKABE_ITO)]
            if run.n_seeds > 1:
                ax.fill_between(x, found["low"], found["high"], color=color, alpha=0.18, linewidth=0,
                                label=f"{run.label}: range over {run.n_seeds} seeds")
            ax.plot(x, found["mean"], marker=MARKERS[i % len(MARKERS)], linestyle=LINESTYLES[i % len(LINESTYLES)],
                    color=color, markerfacecolor="none" if i % 2 else color, markersize=5 - i % 2,
                    label=run.label + (" (mean)" if run.n_seeds > 1 else ""))
        ax.set_xlabel("pairs reviewed (control sample included)")
        ax.set_ylabel("legally inaccurate pairs found")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.legend(frameon=False)
        return _png(fig)


def _ended(run: SimulationRun) -> str:
    """Legal errors found at the end: the count, or mean and range over the seeds."""
    last = run.found().iloc[-1]
    if run.n_seeds == 1:
        return str(int(last["mean"]))
    return f"{last['mean']:.1f} ({int(last['low'])}–{int(last['high'])} over {run.n_seeds} seeds)"


def simulation_section(root: str | Path) -> Section | None:
    """The Simulated campaign subsection of the report for a work folder, or None when it holds no campaign."""
    runs = load_simulations(root)
    if not runs:
        return None
    section = Section("campaign", "Simulated campaign")
    section.add(Text("A simulated review campaign: after a random control sample, experts (an oracle "
                     "file) review the riskiest unreviewed pairs batch by batch; with learning, each "
                     "batch's corrections become glossary rules and the ranking is refitted on the "
                     "verdicts before the next. With several seeds (control samples), each line is the "
                     "mean over the seeds and the shaded band their range."))
    section.add(Plot("Legal errors found per pair reviewed",
                     "Line chart of legally inaccurate pairs found against pairs reviewed, per campaign run: "
                     + "; ".join(f"{r.label}: {_ended(r)} found after "
                                 f"{int(r.curve['reviewed'].iloc[-1])} reviewed" for r in runs),
                     found_curve(runs)))
    rows = tuple((r.label, str(int(r.curve["reviewed"].iloc[-1])), str(int(r.curve["round"].iloc[-1])),
                  _ended(r),
                  str(int(r.curve["found_minor"].iloc[-1])) if "found_minor" in r.curve else "–",
                  _estimate(r.curve.iloc[-1]), str(r.meta.get("batch", "–")), _seeds(r))
                 for r in runs)
    section.add(Table("Where each campaign ended. " + _estimate_scope(runs), (
        "run", "reviewed", "rounds", "legal found", "minor found", "simulated legal-error rate [95% CI]", "batch",
        "seed"), rows))
    for run in runs:
        section.add(_narrowing(run))
    for run in runs:
        if run.rules is None:
            continue
        sub = section.sub(f"Rules learned ({run.label})")
        if run.rules.empty:
            sub.add(Text("No correction could be tied to a French term, so no rule was learned."))
            continue
        shown = run.rules[[c for c in RULES_SHOWN if c in run.rules.columns]].sort_values(
            ["n_other_flagged", "round"], ascending=[False, True], kind="mergesort").rename(columns=RULE_HEADERS)
        sub.add(frame_table(shown, "Each rule with the review it was learned from and how many other pairs "
                                   "it flags at the end of the campaign"))
    return section


def _estimate_scope(runs: list[SimulationRun]) -> str:
    """What the simulated rate is over, so it is never read as estimate.json's (the real review's)."""
    over = "; ".join(dict.fromkeys(
        population_label(int(r.meta["n_pairs"]), r.meta.get("split")) if "n_pairs" in r.meta else "the simulated split"
        for r in runs))
    oracle = "; ".join(dict.fromkeys(
        f"{c['oracle_rows']:,} oracle verdicts" + (f", {c['unknown']:,} asked pair(s) without one left out"
                                                   if c.get("unknown") else "")
        for r in runs if isinstance(c := r.meta.get("oracle_coverage"), dict)))
    return (f"The simulated legal-error rate is each simulated campaign's own estimate over {over}, from the "
            f"`reviewed` pairs it reviewed with the oracle's verdicts{f' ({oracle})' if oracle else ''}: a replay, "
            "not the review's estimate (estimate.json).")


def _seeds(run: SimulationRun) -> str:
    seeds = run.meta.get("seeds") or [run.meta.get("seed", "–")]
    return str(seeds[0]) if len(seeds) == 1 else f"{seeds[0]}–{seeds[-1]}"


def _estimate(row: pd.Series) -> str:
    if "estimate" not in row or pd.isna(row["estimate"]):
        return "–"
    return f"{num(row['estimate'])} [{num(row['ci_low'])}, {num(row['ci_high'])}]"


def _narrowing(run: SimulationRun) -> Table:
    """The estimate batch by batch (first seed): the interval narrows as reviews arrive; the stopping
    bound (a confidence sequence, design `draw`) is what a stopping decision may use after any batch."""
    bound = "cs_low" in run.curve.columns and run.curve["cs_low"].notna().any()
    rows = tuple((str(int(r["round"])), str(int(r["reviewed"])), str(int(r["found_legal"])), _estimate(r),
                  f"[{num(r['cs_low'])}, {num(r['cs_high'])}]" if bound and not pd.isna(r["cs_low"]) else "–")
                 for _, r in run.curve.iterrows())
    design = run.meta.get("design", "ranked")
    return Table(f"{run.label}: the estimate after each batch (first seed; design {design}, scope: the simulated "
                 "split's pairs)", ("batch", "reviewed", "legal found", "estimated share legal [95% CI]",
                                    "stopping bound"), rows)
