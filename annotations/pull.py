"""Annotations out of Label Studio (API or a JSON export file) into verdicts.csv, additively.

Pull never loses an annotation: the new export is merged with the previous annotations_raw.csv
(docs/annotations.md, "Pull"). Merge rules, in order:

1. One identity per annotator: the email when known (the API's user list, also for earlier rows,
   a `completed_by` object in a file export, or the same annotation seen with both an id and an
   email), else
   `user:<id>` (older files' `user-<id>` is read as the same). Names are compared case- and
   space-insensitively (" Alice@X.org" is "alice@x.org"): stored lower-cased, trimmed, NFC.
2. One row per Label Studio annotation (same question, task, annotation id and creation time,
   whether it came from the API, a file export or the previous raw file): its newest version.
3. One row per (question, annotator): the annotator's newest annotation of that question.

"Newest" compares parsed times (`updated_at`, else `created_at`; timezone offsets and fractions
honoured, a naive time is UTC); a missing time never beats a present one, and a tie keeps this
pull. Times are written normalised (UTC, microseconds, `Z`) so their text order is their time
order. The files are written only after the whole export was read, and as one set (one
transaction, bbsard_audit.base.transactions): a pull killed at any instant leaves the previous files or
the new ones, never a raw file ahead of its verdicts. A previous annotations_raw.csv or error_spans.csv
edited since pull wrote it is merged like any other (its sidecar then no longer describes it),
and the CLI keeps the edited version under a name of its own before replacing it.

An annotation with two or more choices in a single-choice control (verdict, gold_labels_apply) is
a conflict, never read as its first choice: it gives no raw row, `choice_conflicts` lists it, and
its question is unresolved in verdicts.csv (empty verdict) until the annotator fixes it. Texts
(corrections, names) are stored in NFC (bbsard_audit.base.untrusted).

An annotation whose typed text (a correction, a span note) no CSV cell could hold and read back (a
NUL, a lone surrogate, longer than `MAX_CELL`) is refused the same way, alone: `refused_annotations`
lists it, it is kept verbatim (ASCII-escaped JSON) in annotations_refused.json, its question is
unresolved, and every other annotation is pulled; once fixed in Label Studio, the next pull takes it.
An annotation on a task without a question id (added to the project by hand) counts for no question; it
is kept there too (`foreign_annotations`, id null), never dropped without a word.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from bbsard_audit.base.contracts.audit import Layout
from bbsard_audit.base.contracts.error_spans import error_spans_spec
from bbsard_audit.base.contracts.files import read_text
from bbsard_audit.base.contracts.table import cell_problem, parse_id
from bbsard_audit.base.contracts.verdicts import (CORRECTED, GOLD_LABELS_APPLY, RAW_COLUMNS, VERDICTS, canonical_name,
                                             raw_spec, read_raw, utc_time, verdicts_spec)
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.untrusted import load_json, nfc
from bbsard_audit.base.io import changed_since_written, write_sidecar, write_text

from .adjudication import AdjudicationRule, adjudicate
from .spans import SPANS_FILE, merge_spans, spans_from_export
from .tasks import EXTERNAL_ID, task_layout

RAW_FILE = "annotations_raw.csv"
REFUSED_FILE = "annotations_refused.json"
# Label Studio stores a Choice's alias; the displayed value is accepted too (older configs, imports).
CHOICES = {
    "verdict": {**{v: v for v in VERDICTS}, "Correct": "correct",
                "Minor issue (legal meaning preserved)": "minor", "Legally inaccurate": "legal"},
    "gold_labels_apply": {**{v: v for v in GOLD_LABELS_APPLY}, "Yes": "yes", "No": "no", "Unsure": "unsure"},
}
_ID_ONLY = re.compile(r"user[:-](\d+)")


# ---------------------------------------------------------------- values

def user_identity(completed_by: object, users: dict[int, str]) -> str:
    """The annotator's stable name: email when known (canonical_name), else `user:<id>`."""
    uid, email = completed_by, None
    if isinstance(completed_by, dict):
        uid, email = completed_by.get("id"), completed_by.get("email")
    if isinstance(uid, str) and uid.strip().isdigit():
        uid = int(uid)
    email = email or users.get(uid)  # type: ignore[arg-type]
    if email and str(email).strip() and not _ID_ONLY.fullmatch(canonical_name(email)):
        return canonical_name(email)
    if isinstance(uid, int) and not isinstance(uid, bool):
        return f"user:{uid}"
    raise ValueError(f"annotator {completed_by!r} is neither a user id nor a user object")


def _user_id(annotator: str) -> int | None:
    match = _ID_ONLY.fullmatch(annotator)
    return int(match.group(1)) if match else None


# ---------------------------------------------------------------- Label Studio export -> raw rows

def annotation_row(task: dict, annotation: dict, users: dict[int, str], layout: Layout) -> dict | None:
    """One annotations_raw.csv row from one Label Studio annotation (None: cancelled or no verdict).

    The only place an annotation's result is read: anything else taken from it (e.g. error spans)
    belongs here. Raises ValueError naming the offending value; the caller adds where it was.
    """
    if annotation.get("was_cancelled") or _refusal(annotation):
        return None
    fields = {"verdict": "", CORRECTED: "", "gold_labels_apply": ""}
    for region in annotation.get("result") or []:
        name, value = region.get("from_name"), region.get("value") or {}
        if name in CHOICES and value.get("choices"):
            for choice in value["choices"]:
                if not isinstance(choice, str) or choice not in CHOICES[name]:
                    raise ValueError(f"annotation {annotation.get('id')}: unknown {name} choice {choice!r} "
                                     f"(expected one of {', '.join(dict.fromkeys(CHOICES[name].values()))})")
            fields[name] = CHOICES[name][value["choices"][0]]  # the only one: more is a conflict (below)
        elif name == layout.corrected and value.get("text"):  # the config's corrected_<target> control
            text = value["text"]
            fields[CORRECTED] = nfc((text[0] if isinstance(text, list) else str(text)).strip())
    if not fields["verdict"] or _conflicting_controls(annotation):
        return None
    times = {}
    for key in ("created_at", "updated_at"):
        try:
            times[key] = utc_time(annotation.get(key))
        except ValueError as exc:
            raise ValueError(f"annotation {annotation.get('id')}: {key} {exc}") from None
    return {"id": _question_id(task, layout), "task_id": task.get("id"), "annotation_id": annotation.get("id"),
            "annotator": user_identity(annotation.get("completed_by"), users), **fields, **times}


def _conflicting_controls(annotation: dict) -> list[str]:
    """The single-choice controls to which this annotation gives two or more choices (in one region
    or across regions)."""
    chosen: dict[str, set] = {}
    for region in annotation.get("result") or []:
        name, value = region.get("from_name"), region.get("value") or {}
        if name in CHOICES and isinstance(value.get("choices"), list):
            chosen.setdefault(name, set()).update(map(str, value["choices"]))
    return sorted(name for name, values in chosen.items() if len({CHOICES[name].get(v, v) for v in values}) > 1)


def _refusal(annotation: dict) -> str | None:
    """Why a text the annotator typed (any region's text: a correction, a span note) cannot be stored, else None."""
    for region in annotation.get("result") or []:
        value = region.get("value") if isinstance(region, dict) else None
        texts = value.get("text") if isinstance(value, dict) else None
        for text in texts if isinstance(texts, list) else [texts]:
            problem = cell_problem(text) if isinstance(text, str) else None
            if problem:
                return f"{region.get('from_name')} {problem}"
    return None


def refused_annotations(tasks: list[dict]) -> list[dict]:
    """Submitted annotations `_refusal` refuses: task_id, id (the question), annotation_id, reason,
    and the annotation itself, verbatim. Their questions stay unresolved (`unresolve`)."""
    layout = task_layout(tasks)
    return [{"task_id": task.get("id"), "id": _question_id(task, layout), "annotation_id": ann.get("id"),
             "reason": reason, "annotation": ann}
            for task in tasks if isinstance(task.get("data"), dict) and task["data"].get(EXTERNAL_ID) is not None
            for ann in task.get("annotations") or []
            if isinstance(ann, dict) and not ann.get("was_cancelled") and (reason := _refusal(ann))]


FOREIGN = "its task carries no question_id (a task bbsard-audit did not push): not a question of the campaign"


def foreign_annotations(tasks: list[dict]) -> list[dict]:
    """Submitted annotations on tasks without a question id (a task added to the project by hand): no
    question to count them for, so they are kept verbatim in annotations_refused.json (id None) instead of
    being dropped without a word."""
    return [{"task_id": task.get("id"), "id": None, "annotation_id": ann.get("id"), "reason": FOREIGN,
             "annotation": ann}
            for task in tasks if not isinstance(task.get("data"), dict) or task["data"].get(EXTERNAL_ID) is None
            for ann in task.get("annotations") or []
            if isinstance(ann, dict) and not ann.get("was_cancelled")]


def keep_refused(path: Path, refused: list[dict]) -> None:
    """annotations_refused.json: the earlier refused annotations plus this pull's (one per annotation
    version), ASCII-escaped JSON, which holds any text; never shortened."""
    kept: list = []
    if path.exists():
        try:
            kept = load_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"not readable JSON ({exc}); move it away to pull", file=str(path)) from None
        if not isinstance(kept, list):
            raise InputError("not a list of refused annotations; move it away to pull", file=str(path))
    def key(entry: dict) -> str:
        return json.dumps(entry, sort_keys=True, default=str)
    seen = {key(e) for e in kept}
    new = [e for e in refused if key(e) not in seen]
    if new:
        write_text(path, json.dumps(kept + new, indent=1, ensure_ascii=True, default=str) + "\n")


def choice_conflicts(tasks: list[dict]) -> pd.DataFrame:
    """Submitted annotations with several choices in a single-choice control: id, task_id,
    annotation_id, controls (`;`-joined). Their questions stay unresolved (`unresolve`)."""
    layout = task_layout(tasks)
    rows = [{"id": _question_id(task, layout), "task_id": task.get("id"), "annotation_id": ann.get("id"),
             "controls": ";".join(controls)}
            for task in tasks if isinstance(task.get("data"), dict) and task["data"].get(EXTERNAL_ID) is not None
            for ann in task.get("annotations") or []
            if not ann.get("was_cancelled") and (controls := _conflicting_controls(ann))]
    return pd.DataFrame(rows, columns=["id", "task_id", "annotation_id", "controls"])


def unresolve(verdicts: pd.DataFrame, conflicts: pd.DataFrame) -> pd.DataFrame:
    """verdicts.csv rows with the questions of `conflicts` unresolved (empty verdict), never first-wins;
    a question whose only annotations conflict gets a row too (n_annotations counts raw rows only)."""
    if conflicts.empty:
        return verdicts
    ids = sorted(set(conflicts["id"]))
    extra = pd.DataFrame({"id": [i for i in ids if i not in set(verdicts["id"])]})
    out = pd.concat([verdicts, extra.assign(n_annotations=0, annotators="")], ignore_index=True)
    hit = out["id"].isin(ids)
    out.loc[hit, ["verdict", "gold_labels_apply", "agreement_status", "adjudicated_by"]] = ["", "", "unresolved", ""]
    out[CORRECTED] = out[CORRECTED].fillna("")
    return out.astype({"n_annotations": int}).sort_values("id").reset_index(drop=True)


def _question_id(task: dict, layout: Layout) -> int | str:
    qid = task["data"][EXTERNAL_ID]
    try:  # plain ASCII digits, as every id column of the contracts (or the audit's string ids)
        return parse_id(qid, strings=layout.string_ids)
    except ValueError as exc:
        raise ValueError(f"question_id {exc}") from None


def check_tasks(tasks: list, origin: str) -> None:
    """Every task, annotation and result region of an export has the shape Label Studio gives it (objects
    and lists where they belong): one line naming the task, never an AttributeError deep in a reader."""
    def shape(value, kind, what: str, position: int, task: dict) -> None:
        if not isinstance(value, kind):
            expected = "an object" if kind is dict else "a list"
            raise InputError(f"task {task.get('id')}: {what} must be {expected}, not {type(value).__name__}",
                             file=origin, row=position)

    for position, task in enumerate(tasks, start=1):
        shape(task, dict, "a task", position, {})
        if "data" in task:
            shape(task["data"], dict, "data", position, task)
        shape(task.get("annotations", []), list, "annotations", position, task)
        for ann in task.get("annotations", []):
            shape(ann, dict, "an annotation", position, task)
            shape(ann.get("result", []), list, f"annotation {ann.get('id')}: result", position, task)
            for region in ann.get("result", []):
                shape(region, dict, f"annotation {ann.get('id')}: a result region", position, task)
                shape(region.get("value", {}), dict, f"annotation {ann.get('id')}: a region's value", position, task)


def raw_from_export(tasks: list[dict], users: dict[int, str] | None = None, *,
                    origin: str = "Label Studio export") -> pd.DataFrame:
    """One row per submitted (not cancelled) annotation of a task carrying a question id.

    `origin` (the export file, or the project for the API) names where a bad value came from.
    """
    check_tasks(tasks, origin)
    layout = task_layout(tasks)
    known = dict(users or {})
    for task in tasks:  # a user object anywhere in the export names that user id everywhere
        for ann in task.get("annotations") or []:
            who = ann.get("completed_by")
            if isinstance(who, dict) and who.get("email") and isinstance(who.get("id"), int):
                known.setdefault(who["id"], who["email"])
    rows = []
    for position, task in enumerate(tasks, start=1):
        if not isinstance(task.get("data"), dict) or task["data"].get(EXTERNAL_ID) is None:
            continue
        for ann in task.get("annotations") or []:
            try:
                row = annotation_row(task, ann, known, layout)
            except ValueError as exc:
                raise InputError(f"task {task.get('id')}: {exc}", file=origin, row=position) from None
            if row is not None:
                rows.append(row)
    return pd.DataFrame(rows, columns=RAW_COLUMNS)


def read_export_file(path: str | Path) -> list[dict]:
    """The tasks of a Label Studio JSON export, read as every contract reads (a FIFO, NUL bytes or Latin-1
    bytes are one line; a BOM is dropped)."""
    path = Path(path)
    try:
        tasks = load_json(read_text(path))
    except ValueError as exc:
        raise InputError(f"cannot read Label Studio JSON export: {exc}", file=str(path)) from None
    if not isinstance(tasks, list) or not all(isinstance(t, dict) for t in tasks):
        raise InputError("not a Label Studio JSON export (expected a list of tasks)", file=str(path))
    return tasks


# ---------------------------------------------------------------- files (bbsard_audit.base.contracts.verdicts)

def read_previous(path: Path, layout: Layout, spans: bool = False) -> pd.DataFrame | None:
    """The previous annotations_raw.csv (or error_spans.csv, `spans`) through its contract; none on a
    first pull. A version changed since pull wrote it holds annotations too: it is read with every
    rule but its sidecar's row count (which counts pull's version), never refused."""
    if not path.exists():
        return None if spans else read_raw(path, missing_ok=True, layout=layout)
    spec = error_spans_spec(layout) if spans else raw_spec(layout)
    return spec.read(path, edited=changed_since_written(path)).rename(columns={layout.corrected: CORRECTED})


def write_raw(path: Path, raw: pd.DataFrame, *, source: dict, n_in_this_pull: int, layout: Layout) -> None:
    record = raw_spec(layout).write_file(path, raw.rename(columns={CORRECTED: layout.corrected}))
    write_sidecar(path, files=[record], source=source, n_annotations=len(raw), n_in_this_pull=n_in_this_pull,
                  **layout.meta())


def write_verdicts(path: Path, verdicts: pd.DataFrame, *, source: dict, rule: AdjudicationRule,
                   n_annotations: int, layout: Layout) -> None:
    record = verdicts_spec(layout).write_file(path, verdicts.rename(columns={CORRECTED: layout.corrected}))
    write_sidecar(path, files=[record], source=source,
                  adjudication=rule.describe(), n_questions=len(verdicts), n_annotations=n_annotations,
                  status_counts=verdicts["agreement_status"].value_counts().to_dict(), **layout.meta())


# ---------------------------------------------------------------- merge

def _learned_emails(both: pd.DataFrame) -> dict[str, str]:
    """`user:<id>` -> email, from one annotation seen once with an id and once with an email."""
    ids = both["annotator"].map(_user_id)
    same = both.assign(_uid=ids)[both["annotation_id"] != ""].groupby(
        ["id", "task_id", "annotation_id", "created_at"])
    learned: dict[str, str] = {}
    for _, group in same:
        emails = set(group.loc[group["_uid"].isna(), "annotator"])
        if len(emails) == 1:
            for uid in group["_uid"].dropna():
                learned.setdefault(f"user:{int(uid)}", next(iter(emails)))
    return learned


def merge_raw(previous: pd.DataFrame, new: pd.DataFrame, users: dict[int, str] | None = None,
              id_type: type = int) -> pd.DataFrame:
    """The previous raw rows plus this pull's, merged by the rules of the module docstring; `users`
    (the API's id -> email) also names earlier rows that only had a user id."""
    both = pd.concat([previous.assign(_new=0), new.assign(_new=1)], ignore_index=True)
    both = both.astype({c: str for c in RAW_COLUMNS if c != "id"}).astype({"id": id_type})
    both = both.replace({c: {"None": "", "nan": ""} for c in ("task_id", "annotation_id")})
    both["annotator"] = both["annotator"].map(lambda a: f"user:{_user_id(a)}" if _user_id(a) is not None else a)
    known = {f"user:{uid}": canonical_name(email) for uid, email in (users or {}).items()
             if email and not _ID_ONLY.fullmatch(canonical_name(email))}
    both["annotator"] = both["annotator"].replace({**_learned_emails(both), **known})
    both["_when"] = both["updated_at"].where(both["updated_at"] != "", both["created_at"])
    both["_order"] = range(len(both))
    both = both.sort_values(["_when", "_new", "_order"])  # '' (no time) first: it never beats a time
    same_annotation = both["annotation_id"] != ""
    keyed = both[same_annotation].drop_duplicates(["id", "task_id", "annotation_id", "created_at"], keep="last")
    merged = pd.concat([keyed, both[~same_annotation]]).sort_values(["_when", "_new", "_order"])
    merged = merged.drop_duplicates(["id", "annotator"], keep="last")
    return merged.sort_values(["id", "annotator"])[RAW_COLUMNS].reset_index(drop=True)


def pull(tasks: list[dict], out: str | Path, *, users: dict[int, str] | None = None,
         rule: AdjudicationRule, source: dict, origin: str = "Label Studio export") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Write annotations_raw.csv, error_spans.csv and verdicts.csv (+ sidecars) next to `out`; return raw and verdicts."""
    out = Path(out)
    raw_path, spans_path = out.with_name(RAW_FILE), out.with_name(SPANS_FILE)
    layout = task_layout(tasks)  # the pair and id kind the pushed tasks carry
    id_type = str if layout.string_ids else int
    new = raw_from_export(tasks, users, origin=origin)
    new_spans = spans_from_export(tasks, EXTERNAL_ID, file=source.get("export_file"), layout=layout)
    raw = merge_raw(read_previous(raw_path, layout), new, users, id_type)
    spans = merge_spans(read_previous(spans_path, layout, spans=True), new_spans, new, raw, id_type)
    refused = refused_annotations(tasks)
    keep_refused(out.with_name(REFUSED_FILE), refused + foreign_annotations(tasks))
    verdicts = unresolve(adjudicate(raw, rule), pd.concat([choice_conflicts(tasks), pd.DataFrame(
        {"id": [r["id"] for r in refused]}, dtype=object)], ignore_index=True))
    write_raw(raw_path, raw, source=source, n_in_this_pull=len(new), layout=layout)
    write_sidecar(spans_path, files=[error_spans_spec(layout).write_file(spans_path, spans)], source=source,
                  n_spans=len(spans), **layout.meta())
    write_verdicts(out, verdicts, source=source, rule=rule, n_annotations=len(raw), layout=layout)
    return raw, verdicts
