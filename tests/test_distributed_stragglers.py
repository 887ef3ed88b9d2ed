"""A rank late into every call of a round: each rank times each of its calls, and the late one's are the short ones
(the others wait for it inside the collective), so it is named with its host where the round times cannot tell."""

import json

import pytest

from xferbench.analyze.load.results import load
from xferbench.analyze.report.distributed import distributed_findings
from xferbench.measure.distributed import DistCase
from xferbench.measure.distributed.timing import NcclCallTimer
from xferbench.measure.distributed.world import CallTimer, CudaCallTimer, timed_rounds

import faulty_rank


def test_each_call_is_timed_and_shared_after_each_round(monkeypatch):
    """This rank spends 1 s inside each call and sleeps 2 s before each (the tests' late rank): its round takes
    3 s a call, its time inside the calls 1 s; both are shared with every rank after each round."""
    now = [0.0]
    monkeypatch.setattr(faulty_rank.time, "sleep", lambda seconds: now.__setitem__(0, now[0] + seconds))

    def call() -> None:
        now[0] += 1.0

    timer = CallTimer(clock=lambda: now[0])
    timer.around = faulty_rank.late(2.0, timer.around)  # as the late rank's call timer ("RANK:SECONDS:call")
    times = timed_rounds(call, rounds=2, iterations=4, warmup=1, gather=lambda mine: [mine, mine / 2],
                         clock=lambda: now[0], timer=timer)
    assert times == [[3.0, 3.0], [1.5, 1.5]]
    assert timer.per_rank() == [[1.0, 1.0], [0.5, 0.5]]


def test_the_timer_brackets_only_the_call():
    now = [0.0]
    timer = CallTimer(clock=lambda: now[0])
    now[0] = 5.0  # time outside a call is not counted
    timer.around(lambda: now.__setitem__(0, now[0] + 0.25))
    timer.around(lambda: now.__setitem__(0, now[0] + 0.25))
    assert timer.take() == 0.5 and timer.take() == 0.0


def test_a_gpu_call_is_bracketed_by_events_made_once_and_reused():
    made = []

    class Event:
        def __init__(self, enable_timing: bool) -> None:
            assert enable_timing
            made.append(self)
            self.at = 0.0

        def record(self) -> None:
            self.at = len(made) * 1.0  # a distinct time each

        def elapsed_time(self, end) -> float:
            return 2.0  # ms

    timer = CudaCallTimer(type("Cuda", (), {"Event": Event}))
    for _ in range(2):
        for _ in range(3):
            timer.around(lambda: None)
        assert timer.take() == pytest.approx(0.006)
    assert len(made) == 6  # 3 pairs, made in the first round only


@pytest.mark.parametrize(("text", "expected"), [("1:0.002:call", {0: (0.0, "call"), 1: (0.002, "call")}),
                                                ("1:0.002:inside", {0: (0.0, "inside"), 1: (0.002, "inside")}),
                                                ("1:0.1", {0: (0.0, ""), 1: (0.1, "")})])
def test_the_tests_late_rank(monkeypatch, text, expected):
    monkeypatch.setenv(faulty_rank.SLOW_RANK_ENV, text)
    assert {r: faulty_rank.slow_rank_delay(r) for r in expected} == expected


def test_a_bad_late_rank_setting_is_one_line(monkeypatch):
    monkeypatch.setenv(faulty_rank.SLOW_RANK_ENV, "1:0.1:often")
    with pytest.raises(ValueError, match=r"write it as RANK:SECONDS\[:call\|:inside\]"):
        faulty_rank.slow_rank_delay(1)


def _run(tmp_path, rank_seconds, rank_call_seconds=None, op="all_reduce", backend="gloo"):
    """A 4-rank all_reduce (or ``op``) as torchrun writes it."""
    stats = {k: 0.003 for k in ("min", "max", "mean", "median", "q1", "q3")} | {
        "iqr": 0.0, "stddev": 0.0, "rounds": 4, "iterations": 4, "data": [0.003] * 4}
    info = DistCase(op, 4, backend, 4, device="cuda" if backend == "nccl" else "cpu").extra_info() | {
        "rank_seconds": rank_seconds, "rank_hosts": ["node0", "node0", "node1", "node1"], "verified": True,
        "rank_mean_seconds": [0.003] * 4}
    if rank_call_seconds is not None:
        info["rank_call_seconds"] = rank_call_seconds
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"machine_info": {}, "benchmarks": [{"name": "x", "extra_info": info, "stats": stats}]}))
    return load([path]).frame


def test_a_rank_late_into_every_call_is_named_with_its_host(tmp_path):
    """The issue's case: rank 1 sleeps 2 ms before every all_reduce; every rank's round took 3.3 ms a call alike,
    but inside the calls rank 1 spent 0.7 ms and the others 2.7 ms (they waited for it there)."""
    rounds = [[0.0033, 0.0034, 0.0033, 0.0033]] * 4
    inside = [[0.0027, 0.0028, 0.0027, 0.0027], [0.0007, 0.0007, 0.0008, 0.0007],
              [0.0027, 0.0027, 0.0028, 0.0027], [0.0028, 0.0027, 0.0027, 0.0027]]
    findings = distributed_findings(_run(tmp_path, rounds, inside))
    assert any(f.startswith("Rank 1 on node0 arrived late at the collective in 1 of 1") for f in findings), findings


def test_round_times_alone_still_name_a_rank_late_before_the_round(tmp_path):
    """An older run (no per-call times): the round times are read as before."""
    rounds = [[1.1, 1.12, 1.1, 1.11], [1.11, 1.1, 1.12, 1.1], [1.0, 1.01, 1.0, 1.0], [1.1, 1.11, 1.1, 1.12]]
    findings = distributed_findings(_run(tmp_path, rounds))
    assert any(f.startswith("Rank 2 on node1 arrived late") for f in findings), findings


class _Event:
    def __init__(self, enable_timing: bool) -> None:
        pass

    def record(self) -> None:
        pass

    def elapsed_time(self, end) -> float:
        return 2.5  # ms: the current stream's pair brackets a slow launch's idle stream too


class _Work:
    def __init__(self, ms: float | None) -> None:
        self.ms = ms

    def _get_duration(self) -> float:
        if self.ms is None:
            raise RuntimeError("enable timing with TORCH_NCCL_ENABLE_TIMING")  # as torch says it
        return self.ms


def test_on_nccl_a_call_is_timed_by_its_collective_on_nccl_stream():
    """The rank slow inside its own call launches late: its kernel, on NCCL's stream, is the short one (0.5 ms),
    though its current stream's event pair, idle while its host slept, brackets as much as its peers' (2.5 ms)."""
    timer = NcclCallTimer(type("Cuda", (), {"Event": _Event}))
    for _ in range(4):
        timer.around(lambda: _Work(0.5))
    assert timer.take() == pytest.approx(0.002)
    timer.around(lambda: _Work(None))  # timing off (or an older torch): the event pair
    assert timer.take() == pytest.approx(0.0025)
    timer.around(lambda: None)  # a call without a handle
    assert timer.take() == pytest.approx(0.0025)


def test_the_tests_slow_launch_sleeps_inside_the_call(monkeypatch):
    """"RANK:SECONDS:inside": the late rank's every call sleeps first, inside the call its timer brackets."""
    slept = []
    monkeypatch.setattr(faulty_rank.time, "sleep", slept.append)
    calls = []
    slowed = faulty_rank.late(0.002, lambda buf, async_op=False: calls.append((buf, async_op)))
    slowed("buf", async_op=True)
    assert slept == [0.002] and calls == [("buf", True)]


def test_on_nccl_the_rank_slow_inside_its_call_is_named_by_its_device_time(tmp_path):
    """NCCL, rank 2 slow inside each all_reduce (a 2 ms late launch): every rank's round and host call took as long,
    but rank 2's kernel ran 0.3 ms, its peers' 2.3 ms (they waited for it on the device)."""
    rounds = [[0.0026, 0.0026, 0.0027, 0.0026]] * 4
    device = [[0.0023, 0.0023, 0.0024, 0.0023], [0.0023, 0.0024, 0.0023, 0.0023],
              [0.0003, 0.0003, 0.0004, 0.0003], [0.0024, 0.0023, 0.0023, 0.0023]]
    findings = distributed_findings(_run(tmp_path, rounds, device, backend="nccl"))
    assert any(f.startswith("Rank 2 on node1 arrived late at the collective in 1 of 1") for f in findings), findings
    assert not any("can't tell" in f for f in findings), findings


def test_on_gloo_a_rank_slow_inside_its_call_is_said_to_be_beyond_telling(tmp_path):
    """Rank 2 sleeps 2 ms inside each of its gloo calls: every rank's host call holds the delay alike (measured on
    a 2x2 loopback world, 256 KiB: 4-8 ms a call for all, round by round). Nobody is named; the report says why."""
    inside = [[0.0080, 0.0064, 0.0069, 0.0041], [0.0079, 0.0059, 0.0067, 0.0042],
              [0.0080, 0.0064, 0.0067, 0.0041], [0.0081, 0.0063, 0.0067, 0.0041]]
    findings = distributed_findings(_run(tmp_path, inside, inside))
    assert not any("arrived late" in f or "slowest in" in f for f in findings), findings
    assert any(f.startswith("On gloo each rank's call is timed by its host") and "can't be told" in f
               for f in findings), findings


def test_a_clean_broadcast_names_nobody(tmp_path):
    """Broadcast's ranks differ by construction: the root returns once it has sent, a receiver near it sooner
    than one far; neither is a late rank."""
    rounds = [[0.0010, 0.0010, 0.0010, 0.0010]] * 4
    root_first = [[0.0002] * 4, [0.0009] * 4, [0.0010] * 4, [0.0011] * 4]
    near_first = [[0.0010] * 4, [0.0009] * 4, [0.0007] * 4, [0.0010] * 4]
    for inside in (root_first, near_first):
        findings = distributed_findings(_run(tmp_path, rounds, inside, op="broadcast"))
        assert any(f.startswith("No rank arrived consistently late") for f in findings), findings


def test_a_receiver_the_broadcast_waited_for_is_named(tmp_path):
    """A receiver late by far more than a call: the others waited for it longer than the call itself takes."""
    rounds = [[0.026] * 4] * 4
    inside = [[0.026] * 4, [0.026] * 4, [0.001] * 4, [0.026] * 4]
    findings = distributed_findings(_run(tmp_path, rounds, inside, op="broadcast"))
    assert any(f.startswith("Rank 2 on node1 arrived late at the collective in 1 of 1") for f in findings), findings
