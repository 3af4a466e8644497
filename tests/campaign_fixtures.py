"""A review campaign the tests start: a 222-pair audit with its review queue, and the `campaign` fixture
(started campaign + a verdicts writer); shared by the annotations, eval and crash-consistency tests."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from bbsard_audit.annotations.adaptive import Campaign
from bbsard_audit.annotations.tasks import QUEUE_COLUMNS, read_audit
from bbsard_audit.app.cli import app
from bbsard_audit.audit.pipeline import review_queue
from bbsard_audit.base.contracts.audit import AUDIT, QUEUE
from conftest import audit_frame

runner = CliRunner()


def cli(*args):
    return runner.invoke(app, ["annotate", *map(str, args)], catch_exceptions=False)


def start_audit(n: int = 222, seed: int = 0) -> pd.DataFrame:
    """A test split with a 3-pair category (the one a category-stratified control sample missed)."""
    rng = np.random.default_rng(seed)
    risk = np.round(rng.beta(1, 4, n), 4)
    frame = audit_frame(range(1, n + 1), risk >= np.quantile(risk, 0.9)).assign(risk=risk)
    return frame.assign(category=np.where(frame["id"] <= 3, "Protection sociale", "Logement"))


def write_start(folder, frame, budget=10, control=20, seed=0):
    folder.mkdir(parents=True, exist_ok=True)
    queue, _ = review_queue(frame, budget, control, seed=seed)
    AUDIT.write_file(folder / "audit.csv", frame)
    QUEUE.write_file(folder / "review_queue.csv", queue)
    return folder / "audit.csv", folder / "review_queue.csv"



@pytest.fixture
def campaign(tmp_path):
    frame = start_audit()
    frame = frame.assign(p_error=np.round(np.clip(frame["risk"] * 0.8, 0, 1), 4))
    audit, queue = write_start(tmp_path / "run", frame, budget=10, control=14)
    camp = tmp_path / "camp"
    Campaign.start(camp, project="p", audit=read_audit(audit), audit_path=audit,
                   queue=read_audit(queue, QUEUE_COLUMNS), queue_path=queue, seed=3).save()
    truth = dict(zip(frame["id"], frame["risk"] > 0.3))

    def verdicts(ids):
        pd.DataFrame({"id": sorted(ids), "verdict": ["legal" if truth[i] else "correct" for i in sorted(ids)]}) \
            .to_csv(camp / "verdicts.csv", index=False)
    return frame, audit, queue, camp, verdicts

