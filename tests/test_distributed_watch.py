"""A world that hangs the way NCCL hangs (no error, the host waiting in synchronize) still names the rank it waits
for and writes the JSON of what finished: each rank's heartbeat in the store and its host-side deadline per step."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from xferbench.analyze.load.results import load
from xferbench.measure.distributed import free_port
from xferbench.measure.distributed.watch import STALE_BEATS, WRITTEN, Watch, culprits
from xferbench.measure.distributed.world import NODE_ENV

import faulty_rank
from faulty_rank import FAULT_ENV, HANG_ENV, TESTS
from processes import kill_tree


class FakeStore:
    """The rendezvous store as the watch uses it: counters, strings, a wait for a key."""

    def __init__(self, beats: dict[int, list[int]] | None = None, steps: dict[int, int] | None = None) -> None:
        self.values: dict[str, object] = {f"xferbench/step/{r}": str(s) for r, s in (steps or {}).items()}
        self.beats = {r: iter(b) for r, b in (beats or {}).items()}  # successive reads of each rank's beat

    def add(self, key: str, amount: int) -> int:
        rank = int(key.rsplit("/", 1)[1])
        if amount == 0 and rank in self.beats:
            return next(self.beats[rank])
        self.values[key] = int(self.values.get(key, 0)) + amount  # type: ignore[call-overload]
        return int(self.values[key])  # type: ignore[call-overload]

    def set(self, key: str, value: str) -> None:
        self.values[key] = value

    def get(self, key: str) -> bytes:
        return str(self.values[key]).encode()

    def check(self, keys: list[str]) -> bool:
        return all(key in self.values for key in keys)

    def wait(self, keys: list[str], timeout: object) -> None:
        if not self.check(keys):
            raise RuntimeError("wait timeout")


class TestCulprits:
    def test_a_rank_whose_beat_stopped_is_dead(self):
        assert culprits([5, 5, 4], [8, 8, 4], [7, 7, 6]) == ("dead", [2])

    def test_a_rank_that_beats_but_is_behind_is_what_the_others_wait_for(self):
        assert culprits([5, 5, 5], [8, 8, 8], [9, 8, 9]) == ("behind", [1])

    def test_every_rank_at_one_step_is_a_hung_collective(self):
        assert culprits([5, 5], [8, 8], [9, 9]) == ("stuck", [])


class TestWatch:
    def test_rank_0_names_the_silent_rank_once_its_deadline_passed(self, monkeypatch):
        monkeypatch.setattr("xferbench.measure.distributed.watch.time.sleep", lambda s: None)
        now = [0.0]
        store = FakeStore(beats={0: [3, 6], 1: [3, 6], 2: [2, 2]}, steps={0: 4, 1: 4, 2: 3})
        lines: list[str] = []
        watch = Watch(store, 0, 3, ["n0", "n0", "n1"], lambda w, line: lines.append(line), clock=lambda: now[0])
        watch.begin("all_reduce-1KiB", 5.0)
        assert not watch.overran()
        now[0] = 6.0
        assert watch.overran()
        assert watch.verdict() == (f"rank 2 on n1 stopped answering during all_reduce-1KiB (no heartbeat for "
                                   f"{STALE_BEATS} s)")

    def test_a_step_made_resets_the_deadline_and_between_cases_there_is_none(self):
        now = [0.0]
        watch = Watch(FakeStore(), 1, 2, ["a", "b"], lambda w, line: None, clock=lambda: now[0])
        assert not watch.overran()  # no case yet
        watch.begin("x", 5.0)
        now[0] = 4.0
        watch.step()
        now[0] = 8.0
        assert not watch.overran()
        assert watch.own_line() == "rank 1 on b: no progress during x for 5 s (a peer died or hung; rank 0 names it)"

    def test_the_thread_beats_and_gives_up_once(self):
        store = FakeStore()
        given: list[str] = []
        watch = Watch(store, 1, 2, ["a", "b"], lambda w, line: given.append(line), beat_s=0.01)
        watch.begin("x", 0.0)
        watch.start()
        watch._thread.join(timeout=60)  # it gives up at its first beat past the deadline, and ends
        assert given == [watch.own_line()] and int(store.values["xferbench/beat/1"]) >= 2  # type: ignore[call-overload]
        assert not watch.wait_written(0.0)
        store.set(WRITTEN, "1")
        assert watch.wait_written(0.0)


def start_ranks(tmp_path: Path, size: int, args: list[str], env: dict[str, str]) -> list[subprocess.Popen[str]]:
    """``size`` ranks started as torchrun would start them, without torchrun (no agent ends the others when one
    dies, as on another node); rank r on node r, with the faults ``env`` names (tests/faulty_rank.py)."""
    port = free_port()
    procs = []
    path = {"PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    for rank in range(size):
        ranks = {"RANK": str(rank), "WORLD_SIZE": str(size), "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
                 "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), NODE_ENV: f"node{rank}"}
        procs.append(subprocess.Popen([sys.executable, "-m", "faulty_rank", *args], cwd=tmp_path, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      env=os.environ | ranks | path | env))
    return procs


def finish(procs: list[subprocess.Popen[str]]) -> list[tuple[int | None, str]]:
    out = []
    try:
        for proc in procs:
            text, _ = proc.communicate(timeout=300)  # a hang guard only: the deadline below is seconds
            out.append((proc.returncode, text))
    finally:
        for proc in procs:
            if proc.poll() is None:
                kill_tree(proc.pid)
                proc.wait()
    return out


@pytest.mark.slow
class TestHungWorld:
    def test_a_killed_rank_in_an_nccl_like_hang_is_named_and_the_json_kept(self, tmp_path):
        """Rank 2 dies at the 4th case; its peers' collectives hang instead of raising (NCCL's way). The process
        group's timeout is 30 s past the step's deadline: rank 0 names rank 2 and writes the 3 finished cases first."""
        out = tmp_path / "run.json"
        procs = start_ranks(tmp_path, 3, ["--sizes", "1KiB", "--rounds", "2", "--timeout", "4", "--out", str(out)],
                            {HANG_ENV: "1", FAULT_ENV: "2:die-mid-run:3"})
        (code0, text0), (code1, text1), (code2, _) = finish(procs)
        assert (code0, code1, code2) == (2, 2, 4), text0 + text1
        named = [line for line in text0.splitlines() if "stopped answering" in line]
        assert named and named[-1].startswith("xferbench.distributed: rank 2 on node2 stopped answering during ")
        assert "no heartbeat" in named[-1] and "watchdog" not in text0.lower()
        assert f"xferbench.distributed: wrote {out} (3 benchmarks" in text0
        assert len(load([out]).frame) == 3
        assert json.loads(out.read_text())["machine_info"]["xferbench"]["notes"][-1] in named[-1]
        assert "no progress during" in text1  # rank 1 waited for rank 0's JSON, then said why it ended

    def test_a_rank_stuck_before_the_collective_is_named_alive_but_behind(self, tmp_path):
        out = tmp_path / "run.json"
        procs = start_ranks(tmp_path, 2, ["--sizes", "1KiB", "--rounds", "2", "--timeout", "4", "--out", str(out)],
                            {FAULT_ENV: "1:stall:2"})
        (code0, text0), (code1, _) = finish(procs)
        assert (code0, code1) == (2, 2), text0
        assert ("xferbench.distributed: rank 1 on node1 stopped making progress during " in text0), text0
        assert len(load([out]).frame) == 2


@pytest.mark.slow
def test_a_hung_helper_is_found_within_a_step_not_the_whole_case(monkeypatch):
    """The pytest world: rank 1 hangs before a 16 MiB all_reduce of 30 rounds, and rank 0's collective hangs rather
    than raise (NCCL's way). The coordinator gives up one step's deadline after the last step any rank made, not
    after all 123 calls' (which grows to an hour at 1 GiB)."""
    from test_distributed import RecordingBenchmark
    from xferbench.measure.distributed import DistCase, DistributedError
    from xferbench.measure.distributed.options import PROFILES
    from xferbench.measure.distributed.pytest_world import GRACE_S
    from xferbench.measure.distributed.world import call_deadline, step_deadline

    faulty_rank.inject(monkeypatch, **{HANG_ENV: "1", FAULT_ENV: "1:stall"})
    case = DistCase("all_reduce", 16 * 2**20, "gloo", 2)
    step = step_deadline(3, case, 4, 2) + GRACE_S
    whole = call_deadline(3, case, 2 + 30 * 4 + 1) + GRACE_S
    assert step < whole - 10  # the old deadline would say so in its message
    with faulty_rank.running_world("gloo", 3) as world:
        with pytest.raises(DistributedError, match=rf"stopped answering within {step:.0f} s\b"):
            world.run(case, RecordingBenchmark(), PROFILES["full"], 30)
