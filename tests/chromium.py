"""Open a report in a real headless Chromium (Debian chromium + chromium-driver) through selenium."""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path


CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser"),
                             shutil.which("google-chrome")) if p), None)
CHROMEDRIVER = shutil.which("chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--window-size=1280,2000",
         "--disable-crash-reporter", "--disable-breakpad")  # else crashpad writes ~/.config/chromium/Crash Reports


@dataclass
class PageVisit:
    text: str
    console_errors: list[str]
    requests: list[str]
    resources: list[str]
    sections: list[str]
    images_loaded: int
    images_total: int
    screenshot: Path
    height: int
    """document height in CSS px at the window width"""
    anchors_ok: bool
    """every in-page link (href="#x") has a target element"""
    marked: list[str]
    """text of every highlighted span (<mark>), open or folded"""


def require_chromium() -> None:
    """Skip without selenium or Chromium; under CI=true (which installs both) fail instead."""
    from conftest import missing, need  # not at import: `python tests/chromium.py` runs without pytest

    need("selenium", "selenium not installed (pip install -e .[test])")
    if CHROMIUM is None or CHROMEDRIVER is None:
        missing("chromium and chromedriver not found (apt-get install chromium chromium-driver)")


def visit(html: Path, screenshot: Path, width: int = 1280) -> PageVisit:
    """Load `html` from disk at `width` px; collect console errors, every network request, the page
    height and a full-page screenshot."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    with tempfile.TemporaryDirectory(prefix="bbsard-chromium-") as profile:
        for flag in (*FLAGS, f"--user-data-dir={profile}"):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
        driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
        try:
            driver.set_page_load_timeout(30)
            driver.get_log("performance")  # drain the browser's own start-up (new-tab page) traffic
            driver.get(html.resolve().as_uri())
            driver.set_window_size(width, 2000)
            height = driver.execute_script("return document.documentElement.scrollHeight")
            driver.set_window_size(width, min(max(height, 800), 16000))
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            driver.save_screenshot(str(screenshot))
            text = driver.find_element("tag name", "body").text
            resources = driver.execute_script(
                "return performance.getEntriesByType('resource').map(e => e.name)")
            sections = driver.execute_script(
                "return Array.from(document.querySelectorAll('main > section > h2')).map(h => h.textContent)")
            images = driver.execute_script(
                "const i = Array.from(document.images); return [i.filter(x => x.complete && x.naturalWidth > 0).length, i.length]")
            anchors_ok = driver.execute_script(
                "return Array.from(document.querySelectorAll('a[href^=\"#\"]'))"
                ".every(a => document.getElementById(a.getAttribute('href').slice(1)) !== null)")
            marked = driver.execute_script(
                "return Array.from(document.querySelectorAll('mark')).map(m => m.textContent)")
            console = [e["message"] for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
            requests = []
            for entry in driver.get_log("performance"):
                message = json.loads(entry["message"])["message"]
                if (message["method"] == "Network.requestWillBeSent"
                        and message["params"].get("documentURL") == html.resolve().as_uri()):
                    requests.append(message["params"]["request"]["url"])
        finally:
            driver.quit()
    return PageVisit(text, console, requests, resources, sections, images[0], images[1], screenshot, height,
                     anchors_ok, marked)


def external(requests: list[str], html: Path) -> list[str]:
    """Requests other than the report file itself and its inline data: images."""
    own = html.resolve().as_uri()
    return [u for u in requests if u != own and not u.startswith("data:")]


if __name__ == "__main__":  # python tests/chromium.py REPORT.html OUT.png: the README's screenshot
    import sys

    from PIL import Image

    page = visit(Path(sys.argv[1]), Path(sys.argv[2]), width=1400)
    assert not page.console_errors, page.console_errors
    top = Image.open(page.screenshot).crop((0, 0, 1400, 1000)).resize((1050, 750), Image.LANCZOS)  # the Findings
    top.convert("RGB").quantize(colors=128, method=Image.Quantize.FASTOCTREE).save(page.screenshot, optimize=True)
    print(f"{page.screenshot}: {page.screenshot.stat().st_size:,} bytes")
