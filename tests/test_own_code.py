"""A user's own code timed with the public ``xfer_identity`` fixture is tracked by compare, history and the report;
a plain pytest-benchmark test is left out with a one-line note, never silently."""

import json
from pathlib import Path

import pytest
import torch  # noqa: F401  loaded before pytester's in-process runs, which unload what they import

import xferbench.analyze.gate.compare  # and the analysis side, which the run's summary imports too
import xferbench.analyze.report.page
import xferbench.measure.session.plugin  # noqa: F401
from xferbench.cli import main

CONFTEST = """
pytest_plugins = ("xferbench.measure.session.plugin",)
from fakes import FakeBackend

def pytest_xfer_make_backend(config):
    return FakeBackend(gpus=0)
"""

OWN = """
def test_my_loader(benchmark, xfer_identity):
    payload = bytearray(64 * 1024)
    xfer_identity("my_loader", nbytes=len(payload), src="cpu", method="bytes")
    benchmark(bytes, payload)

def test_plain(benchmark):
    benchmark(sum, range(100))
"""


@pytest.fixture
def own_run(pytester: pytest.Pytester) -> Path:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_own=OWN)
    result = pytester.runpytest("--benchmark-only", "--benchmark-json=run.json", "--benchmark-max-time=0.01")
    result.assert_outcomes(passed=2)
    return pytester.path / "run.json"


def test_own_code_is_tracked_and_plain_benchmarks_get_a_note(own_run: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    info = next(b["extra_info"] for b in json.loads(own_run.read_text())["benchmarks"] if b["name"] == "test_my_loader")
    identity = {k: v for k, v in info.items() if k not in ("shape", "host_rss_bytes")}
    assert identity == {"xfer_schema": 1, "op": "my_loader", "method": "bytes", "src": "cpu", "dst": "cpu",
                        "nbytes": 65536, "dtype": "uint8", "host_memory": None,
                        "non_blocking": False, "variant": None, "world_size": None, "backend": None}
    assert main(["compare", str(own_run), str(own_run)]) == 0
    captured = capsys.readouterr()
    assert "my_loader bytes uint8 cpu  64 KiB" in captured.out
    note = [line for line in captured.err.splitlines() if "without an xferbench identity" in line]
    assert note and "1 benchmark(s)" in note[0] and "xfer_identity" in note[0]
    assert main(["report", str(own_run), "-o", str(tmp_path / "r.html")]) == 0
    assert "my_loader" in (tmp_path / "r.html").read_text()


def test_a_bad_identity_fails_the_test_in_one_line(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_bad="""
def test_bad(benchmark, xfer_identity):
    xfer_identity("mine", nbytes=-1, src="cpu")
    benchmark(int)
""")
    result = pytester.runpytest("--benchmark-only")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*xfer_identity: field 'nbytes' must be a whole number >= 0*"])
