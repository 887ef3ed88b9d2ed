"""The test-only slowdown hook, and the gate catching it in a real run."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from xferbench.analyze.gate.compare import busy
from xferbench.analyze.load.results import load
from xferbench.cli import main
from xferbench.measure import injected_slowdown
from xferbench.measure.injected_slowdown import slowdown_for, slowed

ROOT = Path(__file__).parent.parent


@pytest.mark.parametrize(("spec", "op", "nbytes", "factor"), [
    ("", "host", 2**26, 1.0),
    ("host=2", "host", 4, 2.0),
    ("host@8MiB=1.5", "host", 8 * 2**20, 1.5),
    ("host@8MiB=1.5", "host", 8 * 2**20 - 1, 1.0),
    ("host@8MiB=1.5", "h2d", 2**26, 1.0),
    ("h2d=3, host@1KiB=1.25", "host", 2**20, 1.25),
    ("h2d=3, host@1KiB=1.25", "h2d", 4, 3.0),
])
def test_which_cases_are_slowed(spec, op, nbytes, factor):
    assert slowdown_for(op, nbytes, spec) == factor


def test_reads_the_environment(monkeypatch):
    monkeypatch.setenv(injected_slowdown.ENV, "d2h=4")
    assert slowdown_for("d2h", 1) == 4.0
    monkeypatch.delenv(injected_slowdown.ENV)
    assert slowdown_for("d2h", 1) == 1.0


def test_slowed_call_takes_factor_times_as_long(monkeypatch):
    """On a fake clock: a call of 10 ticks, slowed 1.5x, returns at tick 15 with the call's result."""
    ticks = iter(range(1000))
    now = {"t": 0}

    def clock():
        now["t"] = next(ticks)
        return now["t"]

    monkeypatch.setattr(injected_slowdown.time, "perf_counter", clock)

    def call():
        for _ in range(9):
            clock()
        return "done"

    assert slowed(call, 1.0) is call
    assert slowed(call, 1.5)() == "done"
    assert now["t"] == 15


@pytest.mark.slow
def test_gate_catches_a_slowdown_injected_into_a_real_run(tmp_path):
    """A real run of the 8 MiB host copy, then the same run with that path made 20x slower through the hook:
    compare flags exactly that case and exits 1 (on a machine busier than its cores: "can't tell", exit 0).
    One run each way, so the slowdown must exceed what a busy shared machine does to one run (up to ~8x was
    seen here): the statistics of smaller slowdowns are tested on runs whose truth is known (test_compare, test_ab)."""
    runs = []
    for name, spec in (("base", ""), ("slow", "host@8MiB=20")):
        out = tmp_path / f"{name}.json"
        env = {**os.environ, injected_slowdown.ENV: spec, "PYTHONPATH": str(ROOT / "src")}
        proc = subprocess.run([sys.executable, "-m", "pytest", str(ROOT / "bench" / "test_host.py"), "--benchmark-only",
                               "-q", "-p", "no:cacheprovider", "-k", "copy_ and not single_thread", "--xfer-sizes=8MiB",
                               "--benchmark-max-time=0.2", f"--benchmark-json={out}"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout[-2000:]
        runs.append(out)
    report = tmp_path / "c.json"
    code = main(["compare", str(runs[0]), str(runs[1]), "--json", str(report)])
    cases = json.loads(report.read_text())["cases"]
    if any(busy(load([run])) for run in runs):
        # A side ran with more load than cores, judged on an assumed spread: compare may not call it (exit 0); where
        # that load also put a side's rounds on the scheduler's ticks, that is the reason given (a run at load 4.4)
        (case,) = [c for c in cases if (c["path"], c["nbytes"]) == ("host pageable copy_ cpu", 8 * 2**20)]
        assert code == 0 and case["verdict"] == "can't tell"
        assert case["why"] == "a side ran on a busy machine" or case["why"].endswith("rounds waited for the CPU")
        return
    assert code == 1
    flagged = [c for c in cases if c["verdict"] == "regression"]
    assert [(c["path"], c["nbytes"]) for c in flagged] == [("host pageable copy_ cpu", 8 * 2**20)]
