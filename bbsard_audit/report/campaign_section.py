"""The report's Campaign section: what a (simulated) review campaign found per pair reviewed, with
learning and without, and the rules it learned.

Where campaigns are found: `campaign simulate --out DIR` writes `campaign_curve.csv` and
its sidecar `campaign_curve.meta.json` into DIR. The section reads every such folder in the work folder itself, its
direct subfolders and `campaign/*` (e.g. `W/campaign/learning` and `W/campaign/static`); each run
is labelled "learning" or "static" from its meta (`learning: true|false`), plus the folder name
when two runs share a label.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..contracts.campaign import CAMPAIGN_CURVE
from ..contracts.learned import LEARNED_RULES
from ..contracts.sidecar import read_sidecar
from ..io import sidecar_path
from .document import Plot, Section, Table, Text
from .plots import MARKERS, OKABE_ITO, STYLE, _png, plt
from .sections import frame_table, num

RULES_SHOWN = ["fr", "rejected", "accepted", "source", "round", "n_other_flagged"]
RULE_HEADERS = {"fr": "French term", "rejected": "translation's rendering (rejected)",
                "accepted": "expert's rendering", "source": "learned from", "round": "round",
                "n_other_flagged": "other pairs flagged"}


@dataclass
class CampaignRun:
    label: str
    folder: Path
    curve: pd.DataFrame
    meta: dict
    rules: pd.DataFrame | None


def load_campaigns(root: str | Path) -> list[CampaignRun]:
    """Every simulated campaign under `root` (see the module doc); a malformed file -> InputError."""
    root = Path(root)
    folders = [root, *sorted(p for p in root.iterdir() if p.is_dir()),
               *sorted(p for p in (root / "campaign").glob("*") if p.is_dir())] if root.is_dir() else []
    runs: list[CampaignRun] = []
    for folder in dict.fromkeys(folders):
        path = folder / "campaign_curve.csv"
        if not path.is_file():
            continue
        curve = CAMPAIGN_CURVE.read(path)
        meta_path = sidecar_path(path)  # campaign_curve.meta.json
        meta = read_sidecar(meta_path) if meta_path.is_file() else {}
        rules_path = folder / "learned_rules.csv"
        rules = LEARNED_RULES.read(rules_path) if rules_path.is_file() else None
        label = "learning" if meta.get("learning", rules is not None) else "static"
        runs.append(CampaignRun(label, folder, curve, meta, rules))
    labels = [r.label for r in runs]
    for r in runs:
        if labels.count(r.label) > 1:
            r.label = f"{r.label} ({r.folder.name})"
    return runs


def found_curve(runs: list[CampaignRun]) -> bytes:
    """Legal errors found against pairs reviewed, one line per campaign run."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6, 3))
        for i, run in enumerate(runs):
            ax.plot(run.curve["reviewed"], run.curve["found_legal"], marker=MARKERS[i % len(MARKERS)],
                    color=OKABE_ITO[i % len(OKABE_ITO)], label=run.label, markersize=4)
        ax.set_xlabel("pairs reviewed (control sample included)")
        ax.set_ylabel("legally inaccurate pairs found")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.legend(frameon=False)
        return _png(fig)


def campaign_section(root: str | Path) -> Section | None:
    """The Campaign section of the report for a work folder, or None when it holds no campaign."""
    runs = load_campaigns(root)
    if not runs:
        return None
    section = Section("campaign", "Campaign")
    section.add(Text("A simulated review campaign: after a random control sample, experts (an oracle "
                     "file) review the riskiest unreviewed pairs batch by batch; with learning, each "
                     "batch's corrections become glossary rules and the audit re-ranks before the next."))
    section.add(Plot("Legal errors found per pair reviewed",
                     "Line chart of legally inaccurate pairs found against pairs reviewed, per campaign run: "
                     + "; ".join(f"{r.label}: {int(r.curve['found_legal'].iloc[-1])} found after "
                                 f"{int(r.curve['reviewed'].iloc[-1])} reviewed" for r in runs),
                     found_curve(runs)))
    rows = tuple((r.label, str(int(r.curve["reviewed"].iloc[-1])), str(int(r.curve["round"].iloc[-1])),
                  str(int(r.curve["found_legal"].iloc[-1])),
                  str(int(r.curve["found_minor"].iloc[-1])) if "found_minor" in r.curve else "–",
                  _estimate(r.curve.iloc[-1]), str(r.meta.get("batch", "–")), str(r.meta.get("seed", "–")))
                 for r in runs)
    section.add(Table("Where each campaign ended", ("run", "reviewed", "rounds", "legal found", "minor found",
                                                    "estimated share legal [95% CI]", "batch", "seed"), rows))
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


def _estimate(row: pd.Series) -> str:
    if "estimate" not in row or pd.isna(row["estimate"]):
        return "–"
    return f"{num(row['estimate'])} [{num(row['ci_low'])}, {num(row['ci_high'])}]"
