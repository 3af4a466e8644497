"""Annotations out of Label Studio (API or a JSON export file) into verdicts.csv, additively.

Pull never loses an annotation: the new export is merged with the previous annotations_raw.csv,
keyed by (question id, annotator) with the most recently updated annotation winning, so tasks
deleted in the UI or a reset server keep their earlier annotations. Both files are written
atomically, raw file first, and only after the whole export was read.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from bbsard_audit.contracts.sidecar import write_sidecar
from bbsard_audit.contracts.verdicts import RAW, RAW_COLUMNS, VERDICTS_CSV, read_raw
from bbsard_audit.errors import InputError

from .adjudication import AdjudicationRule, adjudicate
from .tasks import EXTERNAL_ID

RAW_FILE = "annotations_raw.csv"
# Label Studio stores a Choice's alias; the displayed value is accepted too (older configs, imports).
_CHOICES = {"correct": "correct", "minor": "minor", "legal": "legal",
            "Correct": "correct", "Minor issue (legal meaning preserved)": "minor",
            "Legally inaccurate": "legal", "yes": "yes", "no": "no", "unsure": "unsure",
            "Yes": "yes", "No": "no", "Unsure": "unsure"}


def _annotator(completed_by, users: dict[int, str]) -> str:
    if isinstance(completed_by, dict):
        return completed_by.get("email") or f"user-{completed_by.get('id')}"
    return users.get(completed_by, f"user-{completed_by}")


def _result(result: list[dict]) -> dict[str, str]:
    out = {"verdict": "", "corrected_nl": "", "gold_labels_apply": ""}
    for region in result or []:
        name, value = region.get("from_name"), region.get("value", {})
        if name in ("verdict", "gold_labels_apply") and value.get("choices"):
            out[name] = _CHOICES.get(value["choices"][0], value["choices"][0])
        elif name == "corrected_nl" and value.get("text"):
            text = value["text"]
            out[name] = (text[0] if isinstance(text, list) else str(text)).strip()
    return out


def raw_from_export(tasks: list[dict], users: dict[int, str] | None = None) -> pd.DataFrame:
    """One row per submitted (not cancelled) annotation of a task carrying a question id."""
    users = users or {}
    rows = []
    for task in tasks:
        qid = task.get("data", {}).get(EXTERNAL_ID)
        if qid is None:
            continue
        for ann in task.get("annotations", []):
            if ann.get("was_cancelled"):
                continue
            fields = _result(ann.get("result"))
            if not fields["verdict"]:
                continue
            rows.append({"id": int(qid), "task_id": task.get("id"), "annotation_id": ann.get("id"),
                         "annotator": _annotator(ann.get("completed_by"), users), **fields,
                         "created_at": ann.get("created_at", ""), "updated_at": ann.get("updated_at", "")})
    return pd.DataFrame(rows, columns=RAW_COLUMNS)


def read_export_file(path: str | Path) -> list[dict]:
    path = Path(path)
    try:
        tasks = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read Label Studio JSON export: {exc}", file=str(path)) from None
    if not isinstance(tasks, list) or not all(isinstance(t, dict) for t in tasks):
        raise InputError("not a Label Studio JSON export (expected a list of tasks)", file=str(path))
    return tasks


def merge_raw(previous: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """Union keyed by (id, annotator); the later `updated_at` wins, a tie keeps the new pull."""
    both = pd.concat([previous.assign(_new=0), new.astype({"id": int}).assign(_new=1)], ignore_index=True)
    both = both.astype({c: str for c in RAW_COLUMNS if c != "id"})
    both = both.sort_values(["id", "annotator", "updated_at", "_new"])
    merged = both.drop_duplicates(["id", "annotator"], keep="last").drop(columns="_new")
    return merged[RAW_COLUMNS].reset_index(drop=True)


def pull(tasks: list[dict], out: str | Path, *, users: dict[int, str] | None = None,
         rule: AdjudicationRule, source: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Write annotations_raw.csv and verdicts.csv (+ sidecars) next to `out`; return both."""
    out = Path(out)
    raw_path = out.with_name(RAW_FILE)
    new = raw_from_export(tasks, users)
    raw = merge_raw(read_raw(raw_path, missing_ok=True), new)
    verdicts = adjudicate(raw, rule)
    write_sidecar(raw_path, files=[RAW.write_file(raw_path, raw)], source=source, n_annotations=len(raw), n_in_this_pull=len(new))
    write_sidecar(out, files=[VERDICTS_CSV.write_file(out, verdicts)], source=source, adjudication=rule.describe(), n_questions=len(verdicts),
                  n_annotations=len(raw), status_counts=verdicts["agreement_status"].value_counts().to_dict())
    return raw, verdicts
