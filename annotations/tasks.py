"""Label Studio tasks from the audit's review queue (docs/formats.md contracts).

Each task carries the question id as its stable external id (`data.question_id`), everything a
reviewer needs to judge the Dutch text, and the audit's verdict guess as a prediction
(model_version = audit version, score = risk) so reviewers see it pre-filled and can sort by it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from bbsard_audit.contracts.audit import AUDIT, QUEUE
from bbsard_audit.contracts.sidecar import read_sidecar
from bbsard_audit.dataset import Dataset
from bbsard_audit.io import sidecar_path

AUDIT_COLUMNS = ["id", "split", "question_fr", "question_nl", "backtranslation", "risk", "severity",
                 "flagged", "flags", "reasons"]
QUEUE_COLUMNS = AUDIT_COLUMNS + ["queue", "stratum"]
LABEL_CONFIG = Path(__file__).with_name("labeling_config.xml")
EXTERNAL_ID = "question_id"


def read_audit(path: str | Path, columns: list[str] = AUDIT_COLUMNS) -> pd.DataFrame:
    """audit.csv, or review_queue.csv when `columns` holds `queue`, through its contract
    (bbsard_audit.contracts.audit: ids unique integers, risk in [0, 1], flagged boolean, ...)."""
    return (QUEUE if "queue" in columns else AUDIT).read(path)


def audit_version(audit_path: str | Path) -> str:
    """The model_version of predictions: the audit's tool version (+ config hash if recorded)."""
    meta = sidecar_path(audit_path)
    if not meta.is_file():
        return "audit"
    record = read_sidecar(meta)
    parts = [f"audit-{record.get('tool_version', 'unknown')}"]
    if record.get("config_hash"):
        parts.append(str(record["config_hash"])[:8])
    return "+".join(parts)


def verdict_guess(severity: str, flagged: bool) -> str:
    """The audit's guess shown pre-filled: high severity -> legal, other flags -> minor."""
    if not flagged:
        return "correct"
    return "legal" if severity == "high" else "minor"


def _gold(article_ids, dataset: Dataset | None) -> str:
    if not article_ids:
        return "(gold articles not loaded: push with --dataset to show them)"
    meta = dataset.corpus.meta if dataset is not None and dataset.corpus is not None else {}
    titles = []
    for aid in article_ids:
        info = meta.get(aid, {})
        title = info.get("reference") or info.get("title") or info.get("code") or ""
        titles.append(f"{aid}: {title}" if title else str(aid))
    return "\n".join(titles)


def build_tasks(queue: pd.DataFrame, *, model_version: str, dataset: Dataset | None = None) -> list[dict]:
    """One Label Studio import task (data + prediction) per queued question."""
    by_id = dataset.by_id() if dataset is not None else {}
    tasks = []
    for row in queue.itertuples(index=False):
        pair = by_id.get(int(row.id))
        reasons = str(row.reasons).replace(" | ", "\n- ")
        summary = (f"risk {row.risk:.2f} ({row.severity}); flags: {row.flags or 'none'}"
                   + (f"\n- {reasons}" if reasons.strip() else ""))
        data = {
            EXTERNAL_ID: int(row.id), "split": row.split, "question_fr": row.question_fr,
            "question_nl": row.question_nl, "backtranslation": row.backtranslation or "(none)",
            "audit_summary": summary, "gold_articles": _gold(pair.article_ids if pair else (), dataset),
            "risk": float(row.risk), "flagged": bool(row.flagged), "flags": row.flags,
            "queue": getattr(row, "queue", ""), "stratum": getattr(row, "stratum", ""),
        }
        guess = verdict_guess(str(row.severity), bool(row.flagged))
        tasks.append({"data": data, "predictions": [{
            "model_version": model_version, "score": float(row.risk),
            "result": [{"from_name": "verdict", "to_name": "question_nl", "type": "choices",
                        "value": {"choices": [guess]}}]}]})
    return tasks
