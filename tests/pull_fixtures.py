"""Label Studio tasks and annotations as its export holds them, and `annotate pull --from-file` through
the CLI; shared by the pull tests and the newcomer's path."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from bbsard_audit.annotations.simulate import annotation_result
from bbsard_audit.app.cli import app
from bbsard_audit.base.contracts.audit import Layout

runner = CliRunner()

def task(qid: int, annotations: list[dict], task_id: int | None = None) -> dict:
    return {"id": task_id or qid * 10, "data": {"question_id": qid}, "annotations": annotations}


def ann(ann_id, who, verdict="correct", updated="2026-01-02T10:00:00Z", created="2026-01-02T09:00:00Z",
        gold="yes", result=None):
    return {"id": ann_id, "completed_by": who, "was_cancelled": False, "created_at": created,
            "updated_at": updated, "result": result if result is not None else annotation_result(verdict, gold_labels_apply=gold, layout=Layout())}


def pull_file(tmp_path, tasks, name="export.json"):
    """`annotate pull --from-file` through the CLI, as a reviewer would run it."""
    export = tmp_path / name
    export.write_text(json.dumps(tasks))
    return runner.invoke(app, ["annotate", "pull", "--from-file", str(export), "--out", str(tmp_path / "verdicts.csv")])

