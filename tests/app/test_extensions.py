"""One module lists every extension point (app/extensions.py), and what it lists is what is registered."""

from __future__ import annotations

import importlib
from pathlib import Path

from bbsard_audit.app.extensions import POINTS, table
from bbsard_audit.audit.checks import CHECKS
from bbsard_audit.audit.corpus.checks import CHECKS as DOC_CHECKS
from bbsard_audit.eval import metrics

ARCHITECTURE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def test_every_point_lists_what_its_registry_holds():
    by_kind = {p.kind: p.registered() for p in POINTS}
    assert by_kind["question check"] == [c.name for c in CHECKS]
    assert by_kind["document check"] == [c.name for c in DOC_CHECKS]
    assert by_kind["metric"] == list(metrics.kinds())
    assert {"sample", "csv", "hf", "manifest"} <= set(by_kind["dataset source"])
    assert {"fr", "nl", "en", "de"} <= set(by_kind["language pack"])
    assert "bt_cosine" in by_kind["signal"] and "numbers" not in by_kind["signal"]
    for module in by_kind["command group"]:
        assert callable(importlib.import_module(module).register)


def test_every_point_has_a_protocol_and_an_example_that_exists():
    root = Path(__file__).resolve().parents[2]
    assert len({p.kind for p in POINTS}) == len(POINTS) >= 9
    for point in POINTS:
        assert (root / point.example.split()[0]).is_file(), point.example
        assert point.kind in table()


def test_the_architecture_page_points_to_the_one_module():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    assert "app/extensions.py" in text
