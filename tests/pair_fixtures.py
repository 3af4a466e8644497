"""The English -> Dutch string-id benchmark with its back-translations (`en_nl` fixture) and the question
audit run on it; shared by the language-pair tests (tests/app) and the string-id campaign (tests/annotations)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from benchmark_files import EN_NL, beir_pair, jsonl
from bbsard_audit.app.cli import app
from bbsard_audit.base.contracts.audit import Layout

runner = CliRunner()


@pytest.fixture
def en_nl(tmp_path) -> tuple[Path, Path]:
    manifest = beir_pair(tmp_path, EN_NL, "en", "nl", name="toy-en-nl")
    bt = tmp_path / "bt_nl_en.jsonl"
    jsonl(bt, [{"id": r[0], "backtranslation": r[3]} for r in EN_NL])
    return manifest, bt


def run_audit(manifest: Path, bt: Path, out: Path, *extra: str) -> pd.DataFrame:
    res = runner.invoke(app, ["audit", "--dataset", str(manifest), "--split", "test", "--backtranslations", str(bt),
                              "--out", str(out), *extra])
    assert res.exit_code == 0, res.output
    return Layout.of(out / "audit.csv").audit.read(out / "audit.csv")

