"""Error spans: the audit's evidence spans as a Label Studio prediction, reviewers' spans back out.

The labelling config has one `Labels` control per text (`fr_spans` on `question_fr`, `nl_spans`
on `question_nl` for bBSARD; `<code>_spans` on `question_<code>` for another pair's codes) with the
MQM-style categories, and a per-region note (`fr_note`, `nl_note`); a span's `side` is the code.
The audit's spans are the task's prediction, so reviewers start from them and confirm, delete or
add spans; every span an annotator submits becomes one row of error_spans.csv.

Offsets: audit.csv, error_spans.csv and Label Studio's Text regions all count characters as code
points (Python str offsets), not UTF-16 code units: a span after an emoji is highlighted on the
right words in Label Studio's UI with the Python offsets, one position off with UTF-16 ones
(tests/annotations/test_annotations_spans.py checks it in a real browser).

Offsets index the stored (NFC) text. Label Studio shows the NFC text push sent, so its offsets
already do; an export made from decomposed (NFD) text has its offsets remapped to the NFC text,
and a span that would cut a composed character in two is refused (one line).
"""

from __future__ import annotations

from typing import Iterable

import pandas as pd

from bbsard_audit.base.contracts.audit import SPAN_CATEGORIES as CATEGORIES, Layout
from bbsard_audit.base.contracts.error_spans import ERROR_SPANS
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.untrusted import nfc


def controls(codes: Iterable[str]) -> dict[str, tuple[str, str, str]]:
    """side (a language code of the pair) -> (Labels control, Text object = task data field, per-region note control)."""
    return {c: (f"{c}_spans", f"question_{c}", f"{c}_note") for c in codes}


SPAN_COLUMNS = ERROR_SPANS.names
SPANS_FILE = "error_spans.csv"


def prediction_result(spans: list[dict], texts: dict[str, str], *, prefix: str = "audit") -> list[dict]:
    """Label Studio result items for spans: one `labels` region per span, plus its
    per-region note (a `textarea` item with the region's id) when the span has a `note`. The same
    words and category raised by two flags (e.g. term_missing and term_rejected) are one region.
    `texts`: {language code: question} for the pair's two sides."""
    out, seen, sides = [], set(), controls(texts)
    for k, s in enumerate(spans):
        key = (s["side"], s["start"], s["end"], s["category"])
        if key in seen:
            continue
        seen.add(key)
        control, obj, note = sides[s["side"]]
        text = texts[s["side"]]
        offsets = {"start": s["start"], "end": s["end"]}
        region = f"{prefix}-{s['side']}-{k}"
        out.append({"id": region, "from_name": control, "to_name": obj, "type": "labels",
                    "value": {**offsets, "text": text[s["start"]:s["end"]], "labels": [s["category"]]}})
        if s.get("note"):
            out.append({"id": region, "from_name": note, "to_name": obj, "type": "textarea",
                        "value": {**offsets, "text": [s["note"]]}})
    return out


def spans_from_result(result: list[dict], texts: dict[str, str], *, id: object = None,
                      file: str | None = None) -> list[dict]:
    """The spans one annotation submitted on `texts` ({language code: question} for the pair's two
    sides): dicts with side, start, end, text, category, note.

    A region whose offsets fall outside its text, whose text does not match, or whose label is
    not a category is an InputError (one line): the export does not belong to this config/data.
    """
    sides = controls(texts)
    labels = {control: side for side, (control, _, _) in sides.items()}
    notes_from = {note for _, _, note in sides.values()}
    notes = {}
    for item in result or []:
        if item.get("from_name") in notes_from and item.get("id") is not None:
            note = (item.get("value") or {}).get("text") or ""
            notes[item["id"]] = nfc((note[0] if isinstance(note, list) and note else str(note or "")).strip())
    stored = {side: nfc(text) for side, text in texts.items()}
    rows = []
    for item in result or []:
        side = labels.get(item.get("from_name"))
        if side is None:
            continue
        value = item.get("value") or {}
        text = texts.get(side) or ""
        start, end = value.get("start"), value.get("end")
        if not (isinstance(start, int) and isinstance(end, int)):
            raise InputError(f"{side} span without integer start/end: {value}", file=file, id=id)
        if not 0 <= start < end <= len(text):
            raise InputError(f"{side} span {value['start']}..{value['end']} is outside question_{side} "
                             f"({len(text)} characters)", file=file, id=id)
        if "text" in value and value["text"] != text[start:end]:
            raise InputError(f"{side} span text {value['text']!r} is not question_{side}[{start}:{end}] "
                             f"{text[start:end]!r}", file=file, id=id)
        cats = value.get("labels") or []
        if len(cats) != 1 or cats[0] not in CATEGORIES:
            raise InputError(f"{side} span label {cats} is not one of {', '.join(CATEGORIES)}", file=file, id=id)
        target = stored.get(side) or ""
        if target != text:
            start, end = _nfc_offsets(text, start, end, target, side, file=file, id=id)
        rows.append({"side": side, "start": start, "end": end, "text": target[start:end], "category": cats[0],
                     "note": notes.get(item.get("id"), "")})
    return rows


def _nfc_offsets(text: str, start: int, end: int, stored: str, side: str, *, file, id) -> tuple[int, int]:
    """Offsets in a non-NFC `text` -> the same span in its NFC form `stored`."""
    before, inside = nfc(text[:start]), nfc(text[start:end])
    if before + inside + nfc(text[end:]) != stored:
        raise InputError(f"{side} span {start}..{end} cuts a character of question_{side} in two (the export's "
                         "text is not in Unicode NFC)", file=file, id=id)
    return len(before), len(before) + len(inside)


def spans_from_export(tasks: list[dict], external_id: str, *, layout: Layout,
                      file: str | None = None) -> pd.DataFrame:
    """The spans of every submitted annotation with a verdict (the annotations pull counts) of a
    task carrying `data[external_id]`: error_spans.csv columns but `annotator`, + `annotation_id`
    (the merge names the annotator as annotations_raw.csv does)."""
    rows = []
    for task in tasks:
        data = task.get("data", {})
        qid = data.get(external_id)
        if qid is None:
            continue
        texts = {side: str(data.get(obj) or "") for side, (_, obj, _) in controls(layout.pair).items()}
        for ann in task.get("annotations", []):
            result = ann.get("result") or []
            if ann.get("was_cancelled") or not any(r.get("from_name") == "verdict" for r in result):
                continue
            rows += [{"id": str(qid) if layout.string_ids else int(qid), "annotation_id": str(ann.get("id")), **span}
                     for span in spans_from_result(result, texts, id=qid, file=file)]
    return pd.DataFrame(rows, columns=["id", "annotation_id", *SPAN_COLUMNS[2:]])


def merge_spans(previous: pd.DataFrame | None, new: pd.DataFrame, new_raw: pd.DataFrame,
                raw: pd.DataFrame, id_type: type = int) -> pd.DataFrame:
    """The spans of the annotation that won pull's merge for each (id, annotator).

    `new_raw` is this pull's annotations, `raw` the merged annotations_raw.csv. Annotations are
    matched by (question id, annotation id), and named as in `raw`: an (id, annotator) whose winner
    is one of this pull's annotations takes its spans (possibly none: the reviewer deleted them
    all); the others keep their earlier spans.
    """
    key = ["id", "annotation_id"]
    won = raw[[*key, "annotator"]].astype(str).merge(new_raw[key].astype(str).drop_duplicates(), on=key)
    won_keys = set(zip(won["id"], won["annotator"]))
    fresh = new.astype({"id": str, "annotation_id": str}).merge(won, on=key)
    frames = [fresh.astype({"id": id_type})[SPAN_COLUMNS]]
    if previous is not None and len(previous):
        keep = [(str(i), a) not in won_keys for i, a in zip(previous["id"], previous["annotator"])]
        frames.insert(0, previous.loc[keep, SPAN_COLUMNS])
    merged = pd.concat(frames, ignore_index=True).astype({"id": id_type, "start": int, "end": int})
    return merged.sort_values(["id", "annotator", "side", "start", "end"]).reset_index(drop=True)
