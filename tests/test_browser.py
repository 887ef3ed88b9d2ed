"""The generated report in a real browser: headless Chromium through Selenium.

.ci/run installs Debian's chromium and chromium-driver and sets
XFERBENCH_REQUIRE_BROWSER=1, so there a missing browser fails instead of skipping.
"""

import os
import shutil
from pathlib import Path

import pytest

from xferbench.analyze.report import write_report
from xferbench.analyze.results import load

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = Path(__file__).parent / "data" / "cpu-sample.json"
SCREENSHOT = ROOT / "reports" / "report-screenshot.png"


def _need(thing: str) -> None:
    if os.environ.get("XFERBENCH_REQUIRE_BROWSER"):
        pytest.fail(f"{thing} is required (XFERBENCH_REQUIRE_BROWSER is set) but missing")
    pytest.skip(f"{thing} is not installed")


@pytest.fixture
def browser():
    chromium, chromedriver = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not chromedriver:
        _need("Debian's chromium and chromium-driver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _need("selenium")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-quic", "--window-size=1280,1000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
    yield driver
    driver.quit()


@pytest.mark.browser
def test_every_figure_renders_and_console_is_clean(browser, tmp_path):
    page = write_report(load([SAMPLE]), tmp_path / "index.html")
    browser.get(page.as_uri())
    figures = browser.execute_script(
        "return [...document.querySelectorAll('img.plot')].map(i => "
        "[i.dataset.plot, i.complete, i.naturalWidth, i.naturalHeight, i.getBoundingClientRect().width])")
    assert {f[0] for f in figures} == {"bandwidth", "cost", "create", "noop", "module_to", "forward", "placement",
                                           "distributed"}
    for key, complete, natural_w, natural_h, shown_w in figures:
        assert complete and natural_w > 0 and natural_h > 0 and shown_w > 0, key
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1280, min(height, 16000))
    SCREENSHOT.parent.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(SCREENSHOT))
