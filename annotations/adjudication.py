"""From several annotations of one question to one verdict, by a rule kept in a TOML config.

`agreement_status` is single | agreed | adjudicated | unresolved, and `adjudicated_by` says how
(`majority` or `rule:<name>`). A disagreement resolves by a third (or later) annotation giving a strict majority, else by the
configured rule: `stricter` (the more severe verdict wins: legal > minor > correct), `lenient`
(the milder wins) or `none` (left unresolved for a human adjudicator). The rule actually used is
recorded in verdicts.csv's sidecar via `AdjudicationRule.describe()`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from bbsard_audit.base.config import check_against, read_toml
from bbsard_audit.base.errors import InputError

from bbsard_audit.base.contracts.audit import Layout
from bbsard_audit.base.contracts.verdicts import CORRECTED, FRAME_VERDICT_COLUMNS, SEVERITY, check_known

GOLD_STRICTNESS = {"yes": 0, "": 0, "unsure": 1, "no": 2}
RULES = ("stricter", "lenient", "none")
DEFAULT_CONFIG = Path(__file__).with_name("adjudication.toml")
VERDICT_COLUMNS = FRAME_VERDICT_COLUMNS


@dataclass(frozen=True)
class AdjudicationRule:
    rule: str = "stricter"
    third_annotation_resolves: bool = True

    @classmethod
    def load(cls, path: str | Path | None = None) -> "AdjudicationRule":
        """The shipped rule, overridden by `path`: unknown keys, wrong kinds and bad rules are one line."""
        defaults = read_toml(DEFAULT_CONFIG, "adjudication config")
        path = Path(path) if path else DEFAULT_CONFIG
        data = read_toml(path, "adjudication config")
        check_against(data, defaults, file=str(path))
        rule = cls(**{**defaults["adjudication"], **data.get("adjudication", {})})
        if rule.rule not in RULES:
            raise InputError(f"adjudication rule {rule.rule!r} is not one of {', '.join(RULES)}",
                             file=str(path))
        return rule

    def describe(self) -> dict:
        """The rule as the sidecars record it; the corrected text's key is the record format's (`Layout()`:
        `corrected_nl`) whatever the pair, as these records always wrote it."""
        return asdict(self) | {"severity_order": "correct < minor < legal",
                               "gold_labels_apply": "stricter of the winning annotations (no > unsure > yes)",
                               Layout().corrected: "latest non-empty text among the winning annotations"}

    def resolve(self, verdicts: list[str]) -> tuple[str, str, str]:
        """(final verdict or '', agreement_status, adjudicated_by) for one question's verdicts."""
        if len(verdicts) == 1:
            return verdicts[0], "single", ""
        if len(set(verdicts)) == 1:
            return verdicts[0], "agreed", ""
        if self.third_annotation_resolves and len(verdicts) >= 3:
            values, counts = np.unique(verdicts, return_counts=True)
            if counts.max() * 2 > len(verdicts):
                return str(values[counts.argmax()]), "adjudicated", "majority"
        if self.rule == "none":
            return "", "unresolved", ""
        pick = max if self.rule == "stricter" else min
        return pick(verdicts, key=SEVERITY.__getitem__), "adjudicated", f"rule:{self.rule}"


def adjudicate(raw: pd.DataFrame, rule: AdjudicationRule) -> pd.DataFrame:
    """One verdicts.csv row per question from annotations_raw rows (verdicts checked by the raw contract)."""
    check_known(raw["verdict"])
    raw = raw.sort_values(["id", "updated_at", "annotation_id"])
    rows = []
    for qid, group in raw.groupby("id", sort=True):
        verdict, status, how = rule.resolve(group["verdict"].tolist())
        winners = group[group["verdict"] == verdict] if verdict else group.iloc[0:0]
        gold = winners["gold_labels_apply"].fillna("")
        texts = [t for t in winners[CORRECTED].fillna("") if t.strip()]
        rows.append({
            "id": qid if isinstance(qid, str) else int(qid), "verdict": verdict,  # a string id as it is
            CORRECTED: texts[-1] if texts else "",
            "gold_labels_apply": max(gold, key=GOLD_STRICTNESS.__getitem__) if len(gold) else "",
            "n_annotations": len(group),
            "annotators": ";".join(sorted(group["annotator"].unique())),
            "agreement_status": status, "adjudicated_by": how,
        })
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def disagreements(raw: pd.DataFrame, rule: AdjudicationRule) -> pd.DataFrame:
    """Questions whose annotators disagree: each annotator's verdict and the adjudicated outcome."""
    check_known(raw["verdict"])
    n_distinct = raw.groupby("id")["verdict"].nunique()
    split = raw[raw["id"].isin(n_distinct[n_distinct > 1].index)]
    outcome = adjudicate(split, rule)[["id", "verdict", "agreement_status", "adjudicated_by"]]
    if split.empty:
        return outcome
    wide = split.pivot_table(index="id", columns="annotator", values="verdict", aggfunc="last")
    return wide.add_prefix("verdict:").reset_index().merge(outcome, on="id", how="left")

