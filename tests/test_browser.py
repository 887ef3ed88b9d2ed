"""The generated report in a real browser: headless Chromium through Selenium.

.ci/run installs Debian's chromium and chromium-driver and sets
XFERBENCH_REQUIRE_BROWSER=1, so there a missing browser fails instead of skipping.
"""

import os
import shutil
from pathlib import Path

import pytest

from xferbench.analyze.load.results import load
from xferbench.analyze.report.page import write_report

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = Path(__file__).parent / "data" / "cpu-sample.json"
SIMULATED = Path(__file__).parent / "data" / "sim-2gpu.json"
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


def _open(browser, page: Path) -> list[list]:
    """Open a report; every inline SVG figure with its size on the page and its number of hover titles."""
    browser.get(page.as_uri())
    return browser.execute_script(
        "return [...document.querySelectorAll('div.plot')].map(d => { const s = d.querySelector('svg'); "
        "const r = s ? s.getBoundingClientRect() : {width: 0, height: 0}; "
        "return [d.dataset.plot, r.width, r.height, d.querySelectorAll('title').length]; })")


def _network_requests(browser) -> list[str]:
    """Every resource the page fetched besides itself (the Resource Timing API sees images, fonts, styles)."""
    return browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)")


def _screenshot(browser, name: str) -> None:
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1280, min(height, 16000))
    SCREENSHOT.parent.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(SCREENSHOT.with_name(name)))


@pytest.mark.browser
def test_cpu_run_every_figure_renders_and_console_is_clean(browser, tmp_path):
    page = write_report(load([SAMPLE]), tmp_path / "index.html")
    figures = _open(browser, page)
    assert {f[0] for f in figures} == {"bandwidth-host", "ladder", "cost", "create", "noop", "module_to", "forward", "placement",
                                       "distributed"}
    for key, width, height, titles in figures:
        assert width > 300 and height > 100 and titles > 0, key
    assert _network_requests(browser) == []
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []
    _screenshot(browser, "report-screenshot.png")


@pytest.mark.browser
def test_simulated_gpu_run_draws_every_gpu_section(browser, tmp_path):
    """A simulated 2-GPU run (tests/data/sim-2gpu.json): every GPU figure is drawn, the banner is on top."""
    page = write_report(load([SIMULATED]), tmp_path / "index.html")
    figures = _open(browser, page)
    drawn = {f[0] for f in figures}
    assert {"bandwidth-h2d", "bandwidth-d2h", "bandwidth-d2d", "bandwidth-peer", "matrix", "overhead"} <= drawn
    # The GPU scenarios and the concurrent families, priced by the simulator, are drawn too.
    assert {"sync_stall", "pin_memory", "cuda_vs_to", "placement", "bidir", "all_gpus_host", "copy_kind", "numa"} <= drawn
    for key, width, height, titles in figures:
        assert width > 300 and height > 100 and titles > 0, key
    # Only what this run cannot show may be missing: inter-node figures need torchrun over two nodes, and a
    # rank-lag chart of two ranks is symmetric by construction (each lags their median alike).
    missing = browser.execute_script("return [...document.querySelectorAll('[data-missing]')].map(d => d.dataset.missing)")
    assert set(missing) <= {"distributed-links", "distributed-ranks"}
    assert browser.execute_script("return document.getElementById('simulated').getBoundingClientRect().top") < 400
    assert _network_requests(browser) == []
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []
    _screenshot(browser, "report-simulated-screenshot.png")


@pytest.mark.browser
@pytest.mark.slow
def test_the_h200_reports_page_is_at_most_12000_px_tall_at_1280_px(browser, tmp_path):
    """Issue 23's bound on the real H200 sample's page, as built by the current code, in a 1280 px wide window."""
    page = write_report(load([ROOT / "reports" / "samples" / "h200" / "full.json.gz"]), tmp_path / "index.html")
    figures = _open(browser, page)
    assert {"bandwidth-d2h", "ladder", "pin_memory"} <= {f[0] for f in figures}
    assert browser.execute_script("return document.documentElement.scrollWidth") <= 1280
    assert browser.execute_script("return document.documentElement.scrollHeight") <= 12000


@pytest.mark.browser
def test_the_trace_section_draws_a_bar_per_step_and_its_table(browser, tmp_path):
    """``report --trace``: the simulated step's trace priced with a run of its spec, a section of the page."""
    from step_trace import write_step_trace
    from xferbench.analyze.report.trace_section import section
    from xferbench.analyze.trace.pricing import price
    from xferbench.analyze.view import RunView
    from xferbench.measure.simulate import load_spec

    trace = write_step_trace(load_spec(ROOT / "examples" / "sim-2gpu-pcie5-nvlink.toml"), tmp_path / "step.json")
    view = RunView.of(load([SIMULATED]))
    page = write_report(view, tmp_path / "index.html", extra_sections=[section(price(trace, view))])
    figures = {f[0]: f for f in _open(browser, page)}
    assert figures["trace-steps"][1] > 300 and figures["trace-steps"][3] == 4  # one step, four parts
    rows = browser.execute_script("return document.querySelectorAll('#trace-copies tr').length")
    assert rows == 4  # the header and three groups
    assert browser.execute_script("return document.getElementById('section-trace').textContent") == \
        "Your trace's copies, priced"
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
