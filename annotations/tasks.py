"""Label Studio tasks from the audit's review queue (docs/formats.md contracts).

Each task carries the question id as its stable external id (`data.question_id`), everything a
reviewer needs to judge the Dutch text, and the audit's verdict guess and evidence spans as a
prediction (model_version = audit version, score = risk) so reviewers see them pre-filled, can sort
by risk and confirm, delete or add spans. An audit.csv without a `spans` column has no spans.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from bbsard_audit.dataset import Dataset
from bbsard_audit.errors import InputError
from bbsard_audit.io import sidecar_path

from .spans import parse_spans, prediction_result

AUDIT_COLUMNS = ["id", "split", "question_fr", "question_nl", "backtranslation", "risk", "severity",
                 "flagged", "flags", "reasons"]
QUEUE_COLUMNS = AUDIT_COLUMNS + ["queue", "stratum"]
QUEUES = ("risk", "control")
LABEL_CONFIG = Path(__file__).with_name("labeling_config.xml")
EXTERNAL_ID = "question_id"


def _bad(path: Path, frame: pd.DataFrame, mask: np.ndarray, message: str) -> None:
    if mask.any():
        i = int(np.flatnonzero(mask)[0])
        raise InputError(message, file=str(path), row=i + 2, id=frame["id"].iloc[i])


def read_audit(path: str | Path, columns: list[str] = AUDIT_COLUMNS) -> pd.DataFrame:
    """Read and check an audit.csv-shaped file: ids unique integers, risk in [0, 1], flagged bool."""
    path = Path(path)
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read CSV: {exc}", file=str(path)) from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}", file=str(path))
    ids = pd.to_numeric(frame["id"], errors="coerce")
    _bad(path, frame, (ids.isna() | (ids % 1 != 0)).to_numpy(), "id is not an integer")
    _bad(path, frame, frame["id"].duplicated().to_numpy(), "duplicate id")
    risk = pd.to_numeric(frame["risk"], errors="coerce")
    _bad(path, frame, (risk.isna() | (risk < 0) | (risk > 1)).to_numpy(), "risk is not a number in [0, 1]")
    flagged = frame["flagged"].str.strip().str.lower()
    _bad(path, frame, (~flagged.isin(["true", "false", "1", "0"])).to_numpy(), "flagged is not true/false")
    if "queue" in columns:
        _bad(path, frame, (~frame["queue"].isin(QUEUES)).to_numpy(), "queue is not risk or control")
    frame = frame.assign(id=ids.astype(int), risk=risk.astype(float), flagged=flagged.isin(["true", "1"]))
    return frame.assign(spans=_spans(path, frame))


def _spans(path: Path, frame: pd.DataFrame) -> list[list[dict]]:
    """The `spans` column parsed and checked against each pair's texts ([] without the column)."""
    if "spans" not in frame.columns:
        return [[] for _ in range(len(frame))]
    out = []
    for i, (cell, fr, nl) in enumerate(zip(frame["spans"], frame["question_fr"], frame["question_nl"])):
        try:
            out.append(parse_spans(cell, {"fr": fr, "nl": nl}))
        except ValueError as exc:
            raise InputError(str(exc), file=str(path), row=i + 2, id=frame["id"].iloc[i]) from None
    return out


def audit_version(audit_path: str | Path) -> str:
    """The model_version of predictions: the audit's tool version (+ config hash if recorded)."""
    meta = sidecar_path(audit_path)
    try:
        record = json.loads(Path(meta).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "audit"
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
        spans = prediction_result(row.spans, {"fr": row.question_fr, "nl": row.question_nl})
        tasks.append({"data": data, "predictions": [{
            "model_version": model_version, "score": float(row.risk),
            "result": [{"from_name": "verdict", "to_name": "question_nl", "type": "choices",
                        "value": {"choices": [guess]}}, *spans]}]})
    return tasks
