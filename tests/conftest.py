"""Shared fixtures. Tests that need the real bBSARD files in ../shared skip cleanly without them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("BBSARD_SHARED", REPO.parent / "shared" / "data" / "bbsard"))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared/data/bbsard (or $BBSARD_SHARED); skips the test when it is absent."""
    if not (SHARED / "questions_fr_test.csv").exists():
        pytest.skip(f"real bBSARD data not found at {SHARED} (a fresh clone has no ../shared)")
    return SHARED


@pytest.fixture(scope="session")
def shared_runs(shared_dir) -> Path:
    runs = shared_dir / "runs"
    if not (runs / "qrels_test203.trec").exists():
        pytest.skip(f"shared runs not found at {runs}")
    return runs
