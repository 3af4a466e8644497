"""Label Studio tasks from the audit's review queue (docs/formats.md contracts).

Each task carries the question id as its stable external id (`data.question_id`), everything a
reviewer needs to judge the Dutch text, and the audit's verdict guess and evidence spans as a
prediction (model_version = audit version, score = risk) so reviewers see them pre-filled, can sort
by risk and confirm, delete or add spans. An audit.csv without a `spans` column has no spans.
"""

from __future__ import annotations

from pathlib import Path


import pandas as pd

from bbsard_audit.base.contracts.audit import Layout
from bbsard_audit.base.contracts.sidecar import read_sidecar
from bbsard_audit.base.dataset import Dataset
from bbsard_audit.base.io import sidecar_path
from bbsard_audit.base.languages import UNRECORDED, LanguagePair

from .spans import prediction_result

AUDIT_COLUMNS = ["id", "split", "question_{source}", "question_{target}", "backtranslation", "risk", "severity",
                 "flagged", "flags", "reasons"]
"""The audit columns tasks use, sides by role (the `Layout` names them: question_fr, question_nl for bBSARD)."""
QUEUE_COLUMNS = AUDIT_COLUMNS + ["queue", "stratum"]
LABEL_CONFIG = Path(__file__).with_name("labeling_config.xml")
EXTERNAL_ID = "question_id"
PAIR_FIELD = "languages"
"""Task data field naming the pair (`en-nl`) of a task that is not fr -> nl (absent: fr -> nl)."""
IDS_FIELD = "ids"
"""Task data field `string` on a task whose question id is a string id (absent: an integer, as ever)."""
ROLE_FIELDS = ("@source@", "@target@", "@source_name@", "@target_name@")
"""labeling_config.xml is a role template: `label_config` fills these with the pair's codes and names
(`question_@source@` is `question_fr` for bBSARD, `@target_name@` is `Dutch`)."""


def read_audit(path: str | Path, columns: list[str] = AUDIT_COLUMNS) -> pd.DataFrame:
    """audit.csv, or review_queue.csv when `columns` holds `queue`, through its contract for the pair
    and id kind its sidecar records (bbsard_audit.base.contracts.audit: ids unique, risk in [0, 1], flagged
    boolean, spans whose text is the question's at their offsets, ...); without a `spans` column every
    pair has none."""
    layout = Layout.of(path)
    frame = (layout.queue if "queue" in columns else layout.audit).read(path)
    return frame if "spans" in frame.columns else frame.assign(spans=[[] for _ in range(len(frame))])


def label_config(layout: Layout) -> str:
    """The labelling config for the audit's pair: the role template with the pair's codes
    (`question_fr`, `nl_spans`, `corrected_nl` for bBSARD) and language names."""
    text = LABEL_CONFIG.read_text(encoding="utf-8")
    for field, value in zip(ROLE_FIELDS, (*layout.pair, *layout.pair.names)):
        text = text.replace(field, value)
    return text


def task_layout(tasks: list[dict]) -> Layout:
    """The layout pushed tasks were built for: their `languages` field (absent: fr -> nl) and `ids`
    field (`string`; absent: integer ids, so a task with `question_id` "12a" is refused as ever)."""
    data = [t["data"] for t in tasks if isinstance(t.get("data"), dict) and t["data"].get(EXTERNAL_ID) is not None]
    named = {str(d.get(PAIR_FIELD)) for d in data if d.get(PAIR_FIELD)}
    pair = LanguagePair.parse(sorted(named)[0]) if named else UNRECORDED  # tasks pushed before pairs
    return Layout(pair, any(d.get(IDS_FIELD) == "string" for d in data))


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


def build_tasks(queue: pd.DataFrame, *, model_version: str, layout: Layout,
                dataset: Dataset | None = None) -> list[dict]:
    """One Label Studio import task (data + prediction) per queued question; its texts under the
    pair's language-coded names (`question_fr`, `question_nl` for bBSARD)."""
    by_id = dataset.by_id() if dataset is not None else {}
    src, tgt = layout.question_src, layout.question_tgt
    tasks = []
    for row in queue.to_dict("records"):
        qid = row["id"] if layout.string_ids else int(row["id"])
        pair = by_id.get(qid)
        reasons = str(row["reasons"]).replace(" | ", "\n- ")
        summary = (f"risk {row['risk']:.2f} ({row['severity']}); flags: {row['flags'] or 'none'}"
                   + (f"\n- {reasons}" if reasons.strip() else ""))
        data = {
            EXTERNAL_ID: qid, "split": row["split"], src: row[src],
            tgt: row[tgt], "backtranslation": row["backtranslation"] or "(none)",
            "audit_summary": summary, "gold_articles": _gold(pair.article_ids if pair else (), dataset),
            "risk": float(row["risk"]), "flagged": bool(row["flagged"]), "flags": row["flags"],
            "queue": row.get("queue", ""), "stratum": row.get("stratum", ""),
        }
        if not layout.pair.implicit:  # such tasks stay as they were before pairs
            data[PAIR_FIELD] = "-".join(layout.pair)
        if layout.string_ids:
            data[IDS_FIELD] = "string"
        guess = verdict_guess(str(row["severity"]), bool(row["flagged"]))
        spans = prediction_result(row["spans"], dict(zip(layout.pair, (row[src], row[tgt]))))
        tasks.append({"data": data, "predictions": [{
            "model_version": model_version, "score": float(row["risk"]),
            "result": [{"from_name": "verdict", "to_name": tgt, "type": "choices",
                        "value": {"choices": [guess]}}, *spans]}]})
    return tasks
