"""The run's estimated time: each planned test's timed budget, and its harness on an idle core stretched by how busy
the machine is now, printed before the first case and read back against the wall clock at the end."""

import gzip
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from xferbench.measure.cases import Case
from xferbench.measure.distributed.operations import DistCase
from xferbench.measure.session.estimate import (
    EVENT_BUDGET_S,
    HARNESS_S,
    HARNESS_S_PER_GB,
    Estimate,
    estimate,
    estimate_lines,
    outcome_lines,
    slowdown_now,
)

ROOT = Path(__file__).resolve().parents[1]
MIB = 2**20
HOST = Case("host", "clone", "cpu", "cpu", (MIB // 4,), host_memory="pageable")  # 1 MiB of float32


class TestPrice:
    def test_a_core_case_is_its_budget_its_harness_and_its_bytes(self):
        found = estimate([(HOST, 1)], 0.25)
        assert (found.budget_s, found.harness_s) == pytest.approx((0.25, HARNESS_S["core"] + HARNESS_S_PER_GB * MIB / 1e9))
        assert found.cases == {"host": 1} and found.seconds == found.budget_s + found.harness_s

    def test_each_block_shares_the_budget_and_pays_its_own_harness(self):
        """A case in 3 blocks: 3 tests of max_time / 3 each, each with its setup and warm-up."""
        found = estimate([(HOST, 3)], 0.25)
        assert (found.budget_s, found.harness_s) == pytest.approx((0.25, 3 * (HARNESS_S["core"] + HARNESS_S_PER_GB * MIB
                                                                                 / 1e9)))
        assert found.cases == {"host": 1}  # one case, in three tests
        on_gpu = Case("h2d", "to", "cpu", "cuda:0", (1,), host_memory="pinned")  # each block times its device too
        assert estimate([(on_gpu, 3)], 0.25).budget_s == pytest.approx(0.25 + 3 * EVENT_BUDGET_S)

    def test_a_distributed_case_times_its_own_rounds(self):
        case = DistCase("all_reduce", 16 * MIB, "gloo", 2)
        found = estimate([(case, 1)], 0.25)
        assert (found.budget_s, found.harness_s) == pytest.approx((0, HARNESS_S["distributed"]
                                                                   + HARNESS_S_PER_GB * 16 * MIB / 1e9))

    def test_a_scenario_has_the_harness_of_its_kind(self):
        scenario = SimpleNamespace(op="module_to", nbytes=0)
        assert estimate([(scenario, 1)], 0.1).seconds == pytest.approx(0.1 + HARNESS_S["family"])

    def test_device_time_windows_on_an_accelerator_but_for_pageable_copies_and_no_ops(self):
        pinned = Case("h2d", "to", "cpu", "cuda:0", (1,), host_memory="pinned")
        pageable = Case("h2d", "to", "cpu", "cuda:0", (1,), host_memory="pageable")
        noop = Case("noop", "to", "cuda:0", "cuda:0", (1,))
        base = 0.1 + HARNESS_S["core"] + HARNESS_S_PER_GB * 4 / 1e9
        assert [estimate([(c, 1)], 0.1).seconds for c in (pinned, pageable, noop)] == pytest.approx(
            [base + EVENT_BUDGET_S, base, base])

    def test_a_busy_machine_stretches_the_harness_not_the_timed_budget(self):
        """pytest-benchmark sets a case's rounds to fill --benchmark-max-time on the machine as it is."""
        found = estimate([(HOST, 1)], 0.25, slowdown=3.0)
        assert found.seconds == pytest.approx(0.25 + 3 * found.harness_s)


class TestSlowdown:
    def test_wall_over_cpu_time_since_the_start(self):
        """A process that got a quarter of a core while it started: its work takes 4x as long."""
        assert slowdown_now((100.0, 1.0), (110.0, 3.5)) == 4.0

    def test_never_below_one_nor_undefined(self):
        assert slowdown_now((0.0, 0.0), (1.0, 2.0)) == 1.0  # threads beside the main one
        assert slowdown_now((0.0, 0.0), (1.0, 0.0)) == 1.0


class TestLines:
    found = Estimate(estimate([(HOST, 1)] * 100, 0.25).cases, 25.0, 10.0, 2.0, False)

    def test_before_the_run(self):
        peers = {"mode": "all", "reason": "default: 2 GPUs", "swept_pairs": ["a"] * 2, "classes": {"x": 1, "y": 2}}
        assert estimate_lines(self.found, peers) == [
            "xferbench: 100 cases planned (host 100)",
            "xferbench: peer pairs all (default: 2 GPUs); swept at every size: 2 of 2 pairs, the others at up to 4 sizes",
            "xferbench: estimated run time 45.0 s (25.0 s timed, 10.0 s of harness on an idle core x2.0 for this "
            "machine's load now)"]

    def test_at_the_end(self):
        assert outcome_lines(self.found, 108.0) == [
            "xferbench: wall clock 1.8 min against 45.0 s estimated (actual / estimate = 2.40)"]

    def test_a_run_that_planned_nothing_says_its_wall_clock(self):
        assert outcome_lines(estimate([], 0.25), 2.0) == ["xferbench: wall clock 2.0 s"]

    def test_a_simulated_run_estimates_nothing(self):
        simulated = Estimate(self.found.cases, 25.0, 10.0, 2.0, True)
        assert estimate_lines(simulated, None)[1:] == [
            "xferbench: no run time estimated: the simulated machine's cases run on its own clock"]
        assert outcome_lines(simulated, 6.0) == ["xferbench: wall clock 6.0 s"]


def test_the_h200_sample_within_one_and_a_half_times():
    """The 512 benchmarks of the real H200 run (reports/samples/h200, --benchmark-max-time 0.15, a 16-core machine at
    rest): the whole reference script took 393 s (log.txt: "done in 393s", cut families and the report included)."""
    from xferbench.families import FAMILIES

    data = json.loads(gzip.open(ROOT / "reports" / "samples" / "h200" / "full.json.gz").read())
    assert "== done in 393s" in (ROOT / "reports" / "samples" / "h200" / "log.txt").read_text()
    planned = []
    for info in (b["extra_info"] for b in data["benchmarks"]):
        if info.get("world_size"):
            planned.append(DistCase(info["op"], info["nbytes"], info["backend"], info["world_size"]))
        elif FAMILIES[info["op"]].kind == "core":
            planned.append(Case(info["op"], info["method"], info["src"], info["dst"], tuple(info["shape"]),
                                info["dtype"], info.get("host_memory"), info.get("non_blocking", False),
                                info.get("variant")))
        else:
            planned.append(SimpleNamespace(op=info["op"], nbytes=info["nbytes"]))
    found = estimate([(case, 1) for case in planned], 0.15)
    assert len(planned) == 512 and 393 / 1.5 <= found.seconds <= 393 * 1.5


CONFTEST = """
pytest_plugins = ("xferbench.measure.session.plugin",)
from fakes import FakeBackend

def pytest_xfer_make_backend(config):
    return FakeBackend(gpus=0)
"""


def test_a_run_says_its_estimate_before_and_its_wall_clock_after(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_bench=(ROOT / "bench" / "test_host.py").read_text())
    result = pytester.runpytest("--benchmark-only", "--benchmark-max-time=0.01", "--xfer-sizes=4B", "-p",
                                "no:cacheprovider")
    out = result.stdout.str()
    assert re.search(r"xferbench: estimated run time [\d.]+ s \([\d.]+ s timed, [\d.]+ s of harness on an idle core "
                     r"x[\d.]+ for this machine's load now\)", out), out[-2000:]
    assert re.search(r"xferbench: wall clock [\d.]+ (s|min) against [\d.]+ (s|min) estimated \(actual / estimate = "
                     r"[\d.]+\)", out), out[-2000:]
