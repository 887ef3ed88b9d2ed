"""A rank late into every call of a round: each rank times each of its calls, and the late one's are the short ones
(the others wait for it inside the collective), so it is named with its host where the round times cannot tell."""

import json

import pytest

from xferbench.analyze.load.results import load
from xferbench.analyze.report.distributed import distributed_findings
from xferbench.measure.distributed import DistCase, DistributedError
from xferbench.measure.distributed import world as world_module
from xferbench.measure.distributed.world import CallTimer, CudaCallTimer, timed_rounds


def test_each_call_is_timed_and_shared_after_each_round(monkeypatch):
    """This rank spends 1 s inside each call and sleeps 2 s before each (the test-only late rank): its round takes
    3 s a call, its time inside the calls 1 s; both are shared with every rank after each round."""
    now = [0.0]
    monkeypatch.setattr(world_module.time, "sleep", lambda seconds: now.__setitem__(0, now[0] + seconds))

    def call() -> None:
        now[0] += 1.0

    timer = CallTimer(clock=lambda: now[0])
    times = timed_rounds(call, rounds=2, iterations=4, warmup=1, gather=lambda mine: [mine, mine / 2],
                         clock=lambda: now[0], timer=timer, delay=2.0, delay_each_call=True)
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


@pytest.mark.parametrize(("text", "expected"), [("1:0.002:call", {0: (0.0, True), 1: (0.002, True)}),
                                                ("1:0.1", {0: (0.0, False), 1: (0.1, False)})])
def test_the_test_only_late_rank(monkeypatch, text, expected):
    monkeypatch.setenv(world_module.SLOW_RANK_ENV, text)
    assert {r: world_module.slow_rank_delay(r) for r in expected} == expected


def test_a_bad_late_rank_setting_is_one_line(monkeypatch):
    monkeypatch.setenv(world_module.SLOW_RANK_ENV, "1:0.1:often")
    with pytest.raises(DistributedError, match=r"write it as RANK:SECONDS\[:call\]"):
        world_module.slow_rank_delay(1)


def _run(tmp_path, rank_seconds, rank_call_seconds=None):
    """A 4-rank all_reduce as torchrun writes it."""
    stats = {k: 0.003 for k in ("min", "max", "mean", "median", "q1", "q3")} | {
        "iqr": 0.0, "stddev": 0.0, "rounds": 4, "iterations": 4, "data": [0.003] * 4}
    info = DistCase("all_reduce", 4, "gloo", 4).extra_info() | {
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
