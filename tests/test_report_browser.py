"""The report in a real headless Chromium: loads offline, no console errors, no network requests."""

from __future__ import annotations

import pytest

from bbsard_audit.report import build_report
from chromium import external, require_chromium, visit
from report_fixtures import write_workdir

pytestmark = pytest.mark.browser


def test_report_renders_in_chromium_without_errors_or_requests(tmp_path):
    require_chromium()
    files = build_report(write_workdir(tmp_path / "work"))
    page = visit(files.html, tmp_path / "report.png")
    assert page.console_errors == []
    assert external(page.requests, files.html) == []
    assert page.resources == []  # nothing fetched besides the document itself
    assert page.sections == ["Findings", "Audit", "Review campaign", "Evaluation", "Provenance"]
    assert page.anchors_ok  # every Findings link lands on its section
    assert page.images_total >= 6 and page.images_loaded == page.images_total
    assert page.screenshot.stat().st_size > 20_000
    text = page.text
    for needle in ("pairs audited\n30", "6 (20.0%)", "0.620", "[0.410, 0.800]", "0.083 [0.031, 0.172]",
                   "0.302 [0.252, 0.352]", "recall@100"):
        assert needle in text, needle
    assert "SECRET" not in text
    html = files.html.read_text()  # provenance is collapsed: its records are in the page, closed
    assert "stricter verdict wins" in html and "stricter verdict wins" not in text and "SECRET" not in html
    # folded rows (recall@100 of the metrics table) stay in the page but closed until opened
    assert "0.604 [0.554, 0.654]" not in text and "0.604 [0.554, 0.654]" in files.html.read_text()


def test_injected_external_resource_is_blocked_and_detected(tmp_path):
    """The check above can fail: an <img> pointing at the network is caught (and blocked by the CSP)."""
    require_chromium()
    files = build_report(write_workdir(tmp_path / "work", review=False, evaluation=False))
    html = files.html.read_text().replace("</main>", '<img src="http://127.0.0.1:9/x.png" alt="x"></main>')
    files.html.write_text(html)
    page = visit(files.html, tmp_path / "bad.png")
    assert any("127.0.0.1:9" in e for e in page.console_errors), page.console_errors
