"""The report in a real headless Chromium: loads offline, no console errors, no network requests."""

from __future__ import annotations

import pytest

from bbsard_audit.app.report import build_report
from chromium import external, require_chromium, visit
from corpus_fixtures import documents, write_corpus_audit
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


def test_the_corpus_section_renders_with_its_highlights(tmp_path):
    """A work folder holding an audit and a corpus audit: the Corpus section loads offline, its anchors
    resolve and the evidence spans are <mark> elements holding the span texts."""
    require_chromium()
    work = write_workdir(tmp_path / "work", review=False, evaluation=False)
    write_corpus_audit(work)
    files = build_report(work)
    page = visit(files.html, tmp_path / "corpus.png")
    assert page.console_errors == [] and external(page.requests, files.html) == [] and page.resources == []
    assert page.sections == ["Findings", "Audit", "Corpus", "Provenance"]
    assert page.anchors_ok and page.images_loaded == page.images_total
    for needle in ("documents audited\n215", "Artifacts by type", "Examples side by side", "Questions affected",
                   "5 of 215 translated documents (2.3%) are flagged by the corpus audit"):
        assert needle in page.text, needle
    _, nl, _ = documents()
    assert "Hier is de vertaling:" in page.marked and "Ã©" in page.marked and "30" in page.marked
    assert nl["1027"][:60] in "".join(page.marked)  # the untranslated document, highlighted up to the window's end
