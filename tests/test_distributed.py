"""The distributed family: cases, bus factors, device ownership, timing of every rank, the 2-rank world."""

import json
import os
import socket
import subprocess
import sys
import time
from argparse import Namespace
from pathlib import Path

import pytest
import torch

from xferbench.analyze.load.results import load
from xferbench.measure import distributed
from xferbench.measure.cases import Skipped
from xferbench.measure.distributed import (
    PROFILES,
    DistCase,
    DistributedError,
    World,
    build_dist_cases,
    bus_factor,
    calls_for,
    pytest_world,
)
from xferbench.measure.distributed import torchrun as torchrun_module
from xferbench.measure.distributed import world as world_module
from xferbench.measure.distributed.operations import (
    bytes_needed,
    cases_for,
    moved,
    pairs,
    planned_cases,
    plateau_sizes,
    scan_sizes,
)
from xferbench.measure.distributed.pytest_world import record
from xferbench.measure.distributed.torchrun import Launch, launched
from xferbench.measure.distributed.world import Timed, join, node_labels, rank_device, timed_rounds
from xferbench.ratios import Drift, unpaired

import faulty_rank
from faulty_rank import FAULT_ENV, SLOW_RANK_ENV, running_world

ROOT = Path(__file__).resolve().parents[1]
QUICK = PROFILES["quick"]


class Stats:
    def __init__(self) -> None:
        self.data: list[float] = []

    def update(self, duration: float) -> None:
        self.data.append(duration)


class RecordingBenchmark:
    """pytest-benchmark's fixture as the world uses it: extra_info, group, and its own stats record."""

    def __init__(self, disabled: bool = False) -> None:
        self.extra_info: dict = {}
        self.group = None
        self.disabled = disabled
        self.recorded: list[tuple[int, Stats]] = []

    def _make_stats(self, iterations: int) -> Stats:
        stats = Stats()
        self.recorded.append((iterations, stats))
        return stats


class TestBusBandwidth:
    @pytest.mark.parametrize(("op", "n", "factor"), [
        ("all_reduce", 2, 1.0), ("all_reduce", 4, 1.5), ("all_reduce", 8, 1.75), ("overlap", 4, 1.5),
        ("all_gather", 4, 0.75), ("reduce_scatter", 8, 0.875), ("all_to_all", 4, 0.75), ("broadcast", 8, 1.0),
        ("send_recv", 2, 1.0),
    ])
    def test_nccl_tests_factors(self, op, n, factor):
        """busbw = algbw x 2(n-1)/n (all_reduce), (n-1)/n (all_gather, reduce_scatter, all_to_all), 1 otherwise."""
        assert bus_factor(op, n) == pytest.approx(factor)

    def test_results_compute_algbw_and_busbw(self, tmp_path):
        """Hand-fed: 1 GB all_reduce in 0.1 s over 4 ranks is 10 GB/s algbw, 15 GB/s busbw; a
        ping-pong of 1 GB in 0.2 s carries it both ways: 10 GB/s one way."""
        def bench(case: DistCase, median: float) -> dict:
            stats = {k: median for k in ("min", "max", "mean", "median", "q1", "q3")} | {
                "iqr": 0.0, "stddev": 0.0, "rounds": 3, "iterations": 1, "data": [median] * 3}
            return {"name": case.id, "extra_info": case.extra_info(), "stats": stats}
        data = {"machine_info": {}, "benchmarks": [bench(DistCase("all_reduce", 10**9, "nccl", 4, "cuda"), 0.1),
                                                   bench(DistCase("send_recv", 10**9, "nccl", 4, "cuda"), 0.2)]}
        path = tmp_path / "d.json"
        path.write_text(json.dumps(data))
        frame = load([path]).frame.set_index("op")
        assert frame.loc["all_reduce", "bandwidth_gbps"] == pytest.approx(10.0)
        assert frame.loc["all_reduce", "busbw_gbps"] == pytest.approx(15.0)
        assert frame.loc["send_recv", "bandwidth_gbps"] == pytest.approx(10.0)
        assert frame.loc["all_reduce", "path"] == "all_reduce nccl x4"


class TestCases:
    def test_gloo_on_cpu(self):
        """Per size: 2 ping-pongs each way round and the ring (send_recv), 5 collectives (all_gather and reduce_scatter
        out of place and in place), overlap in flight and one by one."""
        cases = build_dist_cases(["cpu"], "auto", [4, 1024])
        assert {c.backend for c in cases} == {"gloo"} and len(cases) == 2 * 14
        assert {(c.op, c.variant) for c in cases if c.variant not in (None, "in_flight", "one_by_one")} == {
            ("send_recv", "ring"), ("all_gather", "in_place"), ("reduce_scatter", "in_place")}
        assert [c.id for c in cases[:2]] == ["send_recv-4B-float32-gloo-x2", "send_recv-4B-float32-gloo-x2-r1r0"]
        assert {c.op for c in cases} == set(distributed.DIST_OPS) >= {"all_to_all", "overlap"}

    def test_nccl_needs_a_gpu_per_rank(self):
        assert build_dist_cases(["cpu", "cuda:0"], "nccl", [4]) == [
            Skipped("nccl-needs-gpus", "nccl needs one GPU per rank: 2 ranks, 1 GPU(s)")]
        assert {c.backend for c in build_dist_cases(["cpu", "cuda:0", "cuda:1"], "auto", [4])} == {"nccl"}

    def test_a_case_is_labelled_with_the_bytes_it_moves(self):
        """16 ranks cannot all_gather 4 B: each sends a whole element, 64 B move (item 11)."""
        cases = {(c.op, c.variant): c for c in cases_for(16, ["a"] * 16, "gloo", "cpu", [4])}
        assert cases[("all_gather", None)].nbytes == 64 and cases[("all_to_all", None)].nbytes == 64
        assert cases[("all_reduce", None)].nbytes == 4 and cases[("overlap", "in_flight")].nbytes == 16
        assert cases[("all_gather", None)].id == "all_gather-64B-float32-gloo-x16"
        for case in cases.values():  # what the buffers hold is what the label says
            if case.op in ("all_gather", "all_to_all"):
                assert max(1, case.numel // 16) * 16 * 4 == case.nbytes
        assert moved("all_reduce", 6, 2) == 4 and moved("all_gather", 2**20, 8) == 2**20

    def test_shapes_are_not_distributed_sizes(self):
        assert {c.nbytes for c in build_dist_cases(["cpu"], "gloo", [1024, (2, 3)])} == {1024}

    def test_contract(self):
        info = DistCase("all_gather", 1024, "gloo", 2).extra_info()
        assert info["world_size"] == 2 and info["backend"] == "gloo" and info["op"] == "all_gather"
        assert info["xfer_schema"] == 1 and info["bus_factor"] == 0.5
        p2p = DistCase("send_recv", 1024, "gloo", 4, pair=(2, 0), crosses="inter-node").extra_info()
        assert (p2p["src"], p2p["dst"], p2p["crosses"], p2p["round_trip"]) == ("rank2:cpu", "rank0:cpu", "inter-node", True)

    def test_the_old_two_rank_ping_pong_keeps_its_identity(self):
        """A run from before keeps matching in compare: rank 0 -> rank 1 has no new identity field."""
        info = DistCase("send_recv", 1024, "gloo", 2, crosses="intra-node").extra_info()
        assert (info["src"], info["dst"], info["variant"]) == ("rank0:cpu", "rank1:cpu", None)


class TestPairs:
    def test_two_nodes_of_two(self):
        """Rank 0 with the next rank of its node, and with the first rank of the other node, each way round."""
        assert pairs(["a", "a", "b", "b"]) == [((0, 1), "intra-node"), ((1, 0), "intra-node"),
                                               ((0, 2), "inter-node"), ((2, 0), "inter-node")]

    def test_one_rank_per_node(self):
        assert pairs(["a", "b", "c"]) == [((0, 1), "inter-node"), ((1, 0), "inter-node"),
                                          ((0, 2), "inter-node"), ((2, 0), "inter-node")]

    def test_one_node(self):
        assert pairs(["a"] * 4) == [((0, 1), "intra-node"), ((1, 0), "intra-node")]

    def test_rails_pair_every_local_rank_across_nodes(self):
        """--pairs rails: local rank r of node 0 with local rank r of every other node, each way round (every GPU's
        own NIC), not only rank 0 with each node's first rank (one rail of 8)."""
        assert pairs(["a", "a", "b", "b"], rails=True) == [
            ((0, 1), "intra-node"), ((1, 0), "intra-node"), ((0, 2), "inter-node"), ((2, 0), "inter-node"),
            ((1, 3), "inter-node"), ((3, 1), "inter-node")]
        sixteen = pairs(["a"] * 8 + ["b"] * 8, rails=True)
        assert [pair for pair, crosses in sixteen if crosses == "inter-node"][::2] == [(r, r + 8) for r in range(8)]
        cases = cases_for(16, ["a"] * 8 + ["b"] * 8, "nccl", "cuda", [2**20], rails=True)
        assert sum(c.point_to_point and c.crosses == "inter-node" for c in cases) == 2 * 16  # both p2p ops


class TestLargestSizeScan:
    def test_goes_up_to_what_fits(self):
        """Half of 1000 MiB free: the leanest op (1.25x its payload) fits up to 400 MiB, reached in x4 steps and included."""
        sizes = scan_sizes([4, 1024], 1000 * 2**20, 0.5)
        assert sizes[:3] == [4, 1024, 4096] and sizes[-2:] == [256 * 2**20, 400 * 2**20]

    def test_profile_sizes_beyond_the_fraction_are_dropped(self):
        assert scan_sizes([4, 2**20], 2**20, 0.5) == [4, 419430 - 419430 % 64]

    def test_unknown_free_memory_is_a_skip_with_a_reason(self):
        planned = planned_cases(["cpu"], "gloo", [1024], 0.5, lambda kind: None)
        assert planned[-1] == Skipped("largest-size-scan", "free memory is unknown on this machine, so the scan to "
                                                           "the largest size that fits was skipped")
        assert len(planned) == 15  # the profile's cases still run

    def test_a_case_no_rank_can_hold_is_skipped_not_run(self):
        """Run, it would fail inside the world and break it for every later case."""
        planned = planned_cases(["cpu"], "gloo", [1024, 2**30], None, lambda kind: 4 * 2**30)
        skipped = {p.id: p.reason for p in planned if isinstance(p, Skipped)}
        assert {c.nbytes for c in planned if isinstance(c, DistCase)} == {1024, 2**30}
        assert skipped == {f"{op}{variant}-1GiB-float32-gloo-x2": f"{op} of 1GiB needs {size} per rank; 2 GiB of host "
                                                                    "memory per rank (2 ranks on this node) is available to it"
                           for op, variant, size in [("all_gather", "", "2.6 GiB"), ("reduce_scatter", "", "2.6 GiB"),
                                                     ("all_gather", "-in_place", "2.6 GiB"),
                                                     ("reduce_scatter", "-in_place", "2.6 GiB"),
                                                     ("all_to_all", "", "2.25 GiB"), ("send_recv", "-ring", "2.5 GiB")]}

    @pytest.mark.parametrize(("op", "payloads"), [("all_reduce", 1.0), ("broadcast", 1.0), ("reduce_scatter", 2.5),
                                                  ("all_gather", 2.5), ("all_to_all", 2.0)])
    def test_each_op_is_sized_from_its_own_buffers(self, op, payloads):
        """An op's footprint covers at least its own buffers (what it allocates; the backend's copies add more)."""
        case = DistCase(op, 2**20, "gloo", 2)
        assert bytes_needed(op, case.nbytes) >= payloads * case.nbytes

    def test_a_gpu_world_sweeps_on_to_the_bus_bandwidth_plateau(self):
        """nccl, no --mem-fraction: the profile's sweep goes on in x4 steps to 1 GiB where the leanest op's footprint
        fits the GPU's free memory, each op's own footprint deciding which it runs; gloo keeps the profile's sizes."""
        gpus = ["cuda:0", "cuda:1"]
        planned = planned_cases(gpus, "nccl", [4, 64 * 2**20], None, lambda kind: 80 * 2**30)
        assert sorted({c.nbytes for c in planned if isinstance(c, DistCase) and c.op == "all_reduce"}) == \
            [4, 64 * 2**20, 256 * 2**20, 2**30]
        small = planned_cases(gpus, "nccl", [4, 16 * 2**20], None, lambda kind: 2**29)  # 512 MiB free: 1 GiB won't fit
        assert max(c.nbytes for c in small if isinstance(c, DistCase)) == 256 * 2**20
        assert {p.id for p in small if isinstance(p, Skipped)} == {f"{op}-256MiB-float32-nccl-x2" for op in (
            "all_gather", "reduce_scatter", "all_to_all", "all_gather-in_place", "reduce_scatter-in_place", "send_recv-ring")}
        assert planned_cases(gpus, "nccl", [4], None, lambda kind: None)[-1] == Skipped(
            "plateau-scan", "free GPU memory is unknown, so the sweep stops at the profile's sizes, short of the bus "
                            "bandwidth plateau (1GiB)")
        assert {c.nbytes for c in planned_cases(["cpu"], "gloo", [4, 2**20], None, lambda kind: 80 * 2**30)
                if isinstance(c, DistCase) and c.op == "all_reduce"} == {4, 2**20}
        assert plateau_sizes([4, 100 * 2**20], 80 * 2**30) == [4, 100 * 2**20, 400 * 2**20, 2**30]
        chosen = planned_cases(gpus, "nccl", [4, 64 * 2**20], None, lambda kind: 80 * 2**30, plateau=False)
        assert max(c.nbytes for c in chosen if isinstance(c, DistCase)) == 64 * 2**20  # --xfer-sizes: as given

    def test_planned_cases_ask_for_the_ranks_device_kind(self):
        asked = []
        planned = planned_cases(["cpu"], "gloo", [1024], 0.5, lambda kind: asked.append(kind) or 2**20)
        # 1 MiB of host memory shared by 2 ranks, half of it used, over the leanest op's 1.25x
        assert asked == ["cpu"] and max(c.nbytes for c in planned if isinstance(c, DistCase)) == 209664


class FakeCuda:
    def __init__(self) -> None:
        self.selected: list[str] = []

    def set_device(self, device: torch.device) -> None:
        self.selected.append(str(device))


class FakeDist:
    def __init__(self) -> None:
        self.inits: list[dict] = []

    def init_process_group(self, backend: str, **kwargs: object) -> None:
        self.inits.append({"backend": backend, **kwargs})


class TestDeviceOwnership:
    """Each rank owns its GPU from the first call: two ranks on cuda:0 make NCCL refuse the communicator."""

    def test_each_nccl_rank_selects_its_own_gpu_before_joining(self):
        cuda, dist = FakeCuda(), FakeDist()
        for rank in (0, 1):
            join("nccl", "tcp://127.0.0.1:1", rank, 2, 5.0, rank_device("nccl", rank, gpu_count=2), cuda=cuda, dist=dist)
        assert cuda.selected == ["cuda:0", "cuda:1"]
        assert [str(init["device_id"]) for init in dist.inits] == ["cuda:0", "cuda:1"]

    def test_gloo_ranks_stay_on_the_cpu(self):
        cuda, dist = FakeCuda(), FakeDist()
        join("gloo", "tcp://127.0.0.1:1", 1, 2, 5.0, rank_device("gloo", 1, gpu_count=2), cuda=cuda, dist=dist)
        assert cuda.selected == [] and "device_id" not in dist.inits[0]

    def test_more_ranks_than_gpus_wrap_and_none_is_an_error(self):
        assert rank_device("nccl", 3, gpu_count=2) == "cuda:1"
        with pytest.raises(DistributedError, match="nccl needs a GPU per rank"):
            rank_device("nccl", 0, gpu_count=0)

    def test_the_helper_rank_joins_on_its_own_gpu(self, monkeypatch):
        """A helper of the pytest world (rank 1) joins bound to cuda:1, not the current device."""
        joined, said = [], []

        def fake_join(*args, **kwargs):
            joined.append(args)
            raise RuntimeError("stop here")
        monkeypatch.setattr(pytest_world, "join", fake_join)
        monkeypatch.setattr(pytest_world, "gpu_count", lambda: 2)
        monkeypatch.setattr(pytest_world.socket, "create_connection", lambda address: None)
        monkeypatch.setattr(pytest_world.Channel, "send", lambda self, message: said.append(message))
        args = Namespace(backend="nccl", rank=1, world_size=2, address="127.0.0.1", port=1, timeout=5.0,
                         device=None, coordinator=1)
        assert pytest_world.worker(args) == 2
        assert joined[0][-1] == "cuda:1" and said == [{"rank": 1}, {"error": "stop here"}]

    def test_the_world_puts_its_ranks_on_the_chosen_gpus(self, monkeypatch):
        """--xfer-devices=cpu,cuda:2,cuda:3: rank 0 is told cuda:2, rank 1 cuda:3."""
        spawned = []

        class Exited:
            def __init__(self, command, **kwargs):
                spawned.append(command)

            def poll(self):
                return 3

            wait = kill = lambda self, timeout=None: 3
        world = World("nccl", 1.0, gpus=["cuda:2", "cuda:3"])
        monkeypatch.setattr(pytest_world.subprocess, "Popen", Exited)
        with pytest.raises(DistributedError, match=r"rank\(s\) 0, 1 .* \(rank 0: it exited with code 3; rank 1: it exited"):
            world.start()
        world.close()
        assert world.device == "cuda:2"
        assert [command[command.index("--device") + 1] for command in spawned] == ["cuda:2", "cuda:3"]


class TestTiming:
    def test_every_rank_times_every_round(self):
        """Per-call time is a round's time over its iterations; every rank's is kept, [rank][round]."""
        ticks = iter(range(0, 1000, 2))  # each reading 2 s after the last
        calls = []
        times = timed_rounds(lambda: calls.append(1), rounds=3, iterations=4, warmup=2, clock=lambda: next(ticks),
                             gather=lambda mine: [mine, mine * 3])  # the other rank is 3x slower
        assert times == [[0.5, 0.5, 0.5], [1.5, 1.5, 1.5]]
        assert len(calls) == 2 + 3 * 4

    def test_a_round_is_the_slowest_members(self):
        assert Timed([[1.0, 5.0], [2.0, 3.0], [9.0, 9.0]], (0, 1)).world_seconds == [2.0, 5.0]
        assert Timed([[1.0, 5.0], [2.0, 3.0], [9.0, 9.0]], (0, 1, 2)).world_seconds == [9.0, 9.0]

    def test_the_members_mean_is_kept_beside_the_slowest(self):
        assert Timed([[1.0, 5.0], [2.0, 3.0], [9.0, 9.0]], (0, 1)).mean_seconds == [1.5, 4.0]

    def test_one_sync_a_round_not_one_a_call(self):
        """K calls queue back to back, then the device is synchronized once (nccl-tests' way)."""
        events = []
        timed_rounds(lambda: events.append("call"), rounds=2, iterations=3, warmup=1, gather=lambda mine: [mine],
                     sync=lambda: events.append("sync"))
        assert events == ["call", "sync"] + ["call"] * 3 + ["sync"] + ["call"] * 3 + ["sync"]

    def test_recorded_in_pytest_benchmarks_own_stats(self):
        """pytest-benchmark divides a round's total by its iterations: we hand it totals."""
        bench = RecordingBenchmark()
        record(bench, [0.5, 0.25], iterations=4)
        assert bench.recorded[0][0] == 4 and bench.recorded[0][1].data == [2.0, 1.0]


def test_calls_for_small_and_large():
    """Never one call a round: a large payload still gets 4 calls behind one sync."""
    assert calls_for(4) == 100 and calls_for(2**20) == 4 and calls_for(2**30) == 4 and calls_for(2**14) == 64


@pytest.mark.slow
class TestWorld:
    def test_world_of_two_end_to_end(self, monkeypatch):
        """Every op runs and is checked on both ranks; each round recorded is the slower rank's. Rank 1
        arrives 20 ms late at every round: rank 0 waits for it inside the calls, rank 1 does not."""
        faulty_rank.inject(monkeypatch, **{SLOW_RANK_ENV: "1:0.02"})  # inherited by the helper rank
        world = World("gloo", timeout_s=30)
        world.start()
        try:
            for case in build_dist_cases(["cpu"], "gloo", [256 * 1024]):  # 4 calls a round
                bench = RecordingBenchmark()
                info = world.run(case, bench, QUICK, rounds=3)
                assert info["op"] == case.op and info["world_size"] == 2 and info["verified"] is True
                iterations, stats = bench.recorded[0]
                rank0, rank1 = info["rank_seconds"]
                assert len(rank0) == len(rank1) == 3 and info["rank_hosts"] == [world_module.node_name()] * 2
                slowest = [max(a, b) for a, b in zip(rank0, rank1, strict=True)]
                assert [t / iterations for t in stats.data] == pytest.approx(slowest)
                if not case.point_to_point:  # a collective lines its ranks up: the early one waits
                    assert all(a > b for a, b in zip(rank0, rank1, strict=True))
        finally:
            world.close()
        assert world.helpers == []

    def test_disabled_runs_once_and_records_nothing(self):
        with running_world("gloo", 30) as world:
            bench = RecordingBenchmark(disabled=True)
            info = world.run(DistCase("all_to_all", 64, "gloo", 2), bench, QUICK)
            assert info["verified"] is True and bench.recorded == [] and len(info["rank_seconds"][0]) == 1

    def test_rank_that_never_joins_times_out_with_its_name(self, monkeypatch):
        """A helper that exits before joining ends start() within the bound, naming rank, host and address."""
        # 10 s: the helper must get as far as exiting (importing torch first) before rank 0
        # gives up, or the message says "did not answer" instead of its exit code.
        faulty_rank.inject(monkeypatch, **{FAULT_ENV: "1:exit-early"})
        world = World("gloo", timeout_s=10)
        began = time.monotonic()
        with pytest.raises(DistributedError) as error:
            world.start()
        world.close()
        assert time.monotonic() - began < 10 + 30  # bounded: no hang
        message = str(error.value)
        assert message.startswith(f"rank(s) 1 on {world_module.node_name()} did not join the rendezvous at "
                                  f"tcp://127.0.0.1:{world.port} within 10 s")
        assert "rank 1: it exited with code 3" in message

    def test_rank_that_dies_mid_run(self, monkeypatch):
        """A helper that dies during an op fails that benchmark with a message, and later ones at once."""
        faulty_rank.inject(monkeypatch, **{FAULT_ENV: "1:die-mid-run"})
        world = World("gloo", timeout_s=60)
        world.start()
        try:
            with pytest.raises(DistributedError, match=r"^rank 1 exited with code 4 .*during all_reduce-1MiB-float32-gloo-x2 "
                                                       r"\(on .+, world at tcp://127.0.0.1:\d+\)"):
                world.run(DistCase("all_reduce", 2**20, "gloo", 2), RecordingBenchmark(), QUICK, 3)
            with pytest.raises(DistributedError, match="broke earlier"):
                world.run(DistCase("broadcast", 4, "gloo", 2), RecordingBenchmark(), QUICK, 3)
        finally:
            world.close()

    def test_port_taken_meanwhile_is_retried(self, monkeypatch):
        """If the chosen port is taken before the rendezvous binds it, another is tried."""
        busy = socket.socket()
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        ports = iter([busy.getsockname()[1], pytest_world.free_port()])
        monkeypatch.setattr(pytest_world, "free_port", lambda: next(ports))
        world = World("gloo", timeout_s=20)
        try:
            world.start()
            assert world.port != busy.getsockname()[1]
        finally:
            world.close()
            busy.close()


@pytest.mark.slow
def test_real_fixture_disabled_stays_in_step():
    """With the real pytest-benchmark fixture under --benchmark-disable the helper rank stays in step."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "bench/test_distributed.py", "-q", "-p", "no:cacheprovider", "--benchmark-disable",
         "--xfer-sizes=1KiB", "--xfer-dist-timeout=20", "--xfer-dist-rounds=2"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "14 passed" in proc.stdout  # 11 cases a size, the ring and the in-place all_gather and reduce_scatter


@pytest.mark.slow
def test_real_fixture_records_the_slowest_rank(tmp_path):
    """Through pytest-benchmark itself: the JSON holds every rank's rounds, and its stats are the slower rank's."""
    out = tmp_path / "run.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "bench/test_distributed.py", "-q", "-p", "no:cacheprovider", "-k", "all_reduce",
         "--benchmark-only", f"--benchmark-json={out}", "--xfer-sizes=1KiB", "--xfer-dist-rounds=3"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]
    (bench,) = json.loads(out.read_text())["benchmarks"]
    ranks = bench["extra_info"]["rank_seconds"]
    assert bench["stats"]["data"] == pytest.approx([max(a, b) for a, b in zip(*ranks, strict=True)])
    assert bench["stats"]["rounds"] == 3 and bench["extra_info"]["verified"] is True
    assert "not used" not in proc.stdout  # pytest-benchmark sees its fixture used


class TestChecks:
    """Every op's output is checked after timing; a wrong delivery is an error naming the rank."""

    @pytest.fixture
    def alone(self, tmp_path):
        torch.distributed.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
        yield
        torch.distributed.destroy_process_group()

    @pytest.mark.parametrize("op", [op for op in distributed.DIST_OPS if op not in ("send_recv", "isend_irecv")])
    def test_each_collective_passes_its_check(self, alone, op):
        case = DistCase(op, 64, "gloo", 1, variant="in_flight" if op == "overlap" else None)
        timed = world_module.run_on_rank(case, 0, "cpu", rounds=2, iterations=1, warmup=0)
        assert len(timed.rank_seconds) == 1 and len(timed.rank_seconds[0]) == 2

    @pytest.mark.parametrize("op", ["all_gather", "all_to_all"])
    def test_an_op_that_delivers_nothing_fails_its_check(self, alone, monkeypatch, op):
        real = world_module.operation

        def skipping(case, rank, device):
            made = real(case, rank, device)
            return type(made)(made.reset, lambda: None, made.check)
        monkeypatch.setattr(world_module, "operation", skipping)
        case = DistCase(op, 64, "gloo", 1)
        with pytest.raises(world_module.VerificationError, match=r"rank\(s\) 0 received wrong data"):
            world_module.run_on_rank(case, 0, "cpu", rounds=1, iterations=1, warmup=0)


@pytest.mark.slow
class TestFaults:
    """pytest is no member of the world: whatever a rank does, its cases fail or skip and the session goes on."""

    def test_rank_0_raising_is_named_not_rank_1(self, monkeypatch):
        """Rank 0 raises (as an out-of-memory inside a collective would): it is named, rank 1 is not blamed."""
        faulty_rank.inject(monkeypatch, **{FAULT_ENV: "0:raise"})
        with running_world("gloo", 5) as world:
            with pytest.raises(DistributedError) as error:
                world.run(DistCase("all_reduce", 1024, "gloo", 2), RecordingBenchmark(), QUICK, 2)
        message = str(error.value)
        assert message.startswith("rank 0 raised injected failure of rank 0") and "rank 1" not in message

    def test_out_of_memory_skips_the_case_on_every_rank_and_the_world_goes_on(self, monkeypatch):
        faulty_rank.inject(monkeypatch, **{FAULT_ENV: "1:oom"})
        with running_world("gloo", 10) as world:
            with pytest.raises(world_module.CaseSkipped, match=r"^all_to_all-1KiB-float32-gloo-x2: rank\(s\) 1 ran out of "
                                                              r"memory allocating 2\.25 KiB \(injected: rank 1"):
                world.run(DistCase("all_to_all", 1024, "gloo", 2), RecordingBenchmark(), QUICK, 2)
            assert world.broken is None
            info = world.run(DistCase("all_reduce", 1024, "gloo", 2), RecordingBenchmark(), QUICK, 2)
            assert info["verified"] is True and len(info["rank_seconds"]) == 2

    def test_a_stalled_rank_is_named_within_the_deadline(self, monkeypatch):
        """Rank 1 hangs inside a case: the case fails after the deadline naming it, the later ones at once."""
        faulty_rank.inject(monkeypatch, **{FAULT_ENV: "1:stall"})
        with running_world("gloo", 3) as world:
            began = time.monotonic()
            with pytest.raises(DistributedError, match=r"^rank 1 stopped answering within \d+ s \(rank 0 raised .*"
                                                       r"waiting for it\) during broadcast-4B"):
                world.run(DistCase("broadcast", 4, "gloo", 2), RecordingBenchmark(), QUICK, 2)
            assert time.monotonic() - began < 3 + 2 * pytest_world.GRACE_S + 30  # bounded: no hang
            with pytest.raises(DistributedError, match="broke earlier"):
                world.run(DistCase("broadcast", 4, "gloo", 2), RecordingBenchmark(), QUICK, 2)
            assert world.helpers == []  # both ranks taken down

    @pytest.mark.parametrize("fault", ["1:die-mid-run:1", "1:stall:1"])
    def test_the_pytest_session_goes_on_and_writes_its_json(self, tmp_path, fault):
        """A rank dies or hangs after the first case: the later distributed cases fail, the next module
        still runs, and the JSON holds what was measured."""
        out = tmp_path / "run.json"
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "bench/test_distributed.py", "bench/test_noop.py", "-q", "-p",
             "no:cacheprovider", "-p", "faulty_rank", "-k", "all_reduce or noop", "--benchmark-only",
             f"--benchmark-json={out}", "--xfer-sizes=1KiB,4KiB", "--xfer-dist-rounds=2", "--xfer-dist-timeout=3",
             "--xfer-devices=cpu"],
            cwd=ROOT, capture_output=True, text=True, timeout=300,
            env=os.environ | {FAULT_ENV: fault, "PYTHONPATH": os.pathsep.join([str(faulty_rank.TESTS),
                                                                                os.environ.get("PYTHONPATH", "")])})
        assert proc.returncode == 1, proc.stdout[-3000:]
        names = [bench["name"] for bench in json.loads(out.read_text())["benchmarks"]]
        assert "test_distributed[all_reduce-1KiB-float32-gloo-x2]" in names
        assert any("noop" in name for name in names)  # the module after the broken world ran
        blamed = "rank 1 exited with code 4" if "die" in fault else "rank 1 stopped answering within"
        assert blamed in proc.stdout and "1 failed" in proc.stdout


class TestLaunch:
    """Who a rank is: torchrun's variables, or SLURM's under a plain srun (item 4), else one line."""

    def test_torchrun(self):
        launch = launched({"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4", "GROUP_RANK": "1"})
        assert launch == Launch(5, 8, 1, 4, "1")

    def test_srun_without_torchrun_takes_each_ranks_own_gpu(self):
        env = {"SLURM_PROCID": "6", "SLURM_NTASKS": "8", "SLURM_LOCALID": "2", "SLURM_TASKS_PER_NODE": "4(x2)",
               "SLURM_NODEID": "1", "MASTER_ADDR": "node0", "MASTER_PORT": "29500"}
        launch = launched(env)
        assert launch == Launch(6, 8, 2, 4, "1") and rank_device("nccl", launch.local_rank, 4) == "cuda:2"

    @pytest.mark.parametrize(("missing", "words"), [
        ("SLURM_LOCALID", "SLURM_LOCALID is unset"), ("MASTER_ADDR", "MASTER_ADDR is unset"),
        ("SLURM_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE or SLURM_TASKS_PER_NODE is unset")])
    def test_srun_without_what_it_needs_is_refused_in_one_line(self, missing, words):
        env = {"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_LOCALID": "0", "SLURM_TASKS_PER_NODE": "2",
               "MASTER_ADDR": "a", "MASTER_PORT": "1"}
        del env[missing]
        with pytest.raises(DistributedError, match=f"^started by srun without torchrun, and {words}") as error:
            launched(env)
        assert "\n" not in str(error.value)

    def test_containers_with_one_host_name_are_told_apart_by_the_launchers_node_number(self):
        """16 ranks in containers all named "box": GROUP_RANK makes them 2 nodes; real host names stay as they are."""
        same = node_labels([("box", "0"), ("box", "0"), ("box", "1"), ("box", "1")], [None] * 4)
        assert [host for host, _ in same] == ["box#0", "box#0", "box#1", "box#1"]
        apart = node_labels([("a", "0"), ("b", "1")], [None] * 2)
        assert [host for host, _ in apart] == ["a", "b"]

    def test_error_exits_leave_the_process_group(self, monkeypatch, tmp_path):
        """A rank that fails after joining destroys its group, so its peers learn at once (item 6)."""
        def failing(args):
            torch.distributed.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
            raise DistributedError("a failure after joining")
        monkeypatch.setattr(torchrun_module, "run", failing)
        assert torchrun_module.main([]) == 2
        assert not torch.distributed.is_initialized()

    def test_device_id_only_where_torch_takes_it(self):
        """torch < 2.3 has no device_id=: the GPU is still selected, the keyword left out."""
        inits = []

        class OldDist:
            def init_process_group(self, backend, init_method=None, rank=-1, world_size=-1, timeout=None):
                inits.append(backend)
        cuda = FakeCuda()
        join("nccl", "tcp://127.0.0.1:1", 0, 2, 5.0, "cuda:1", cuda=cuda, dist=OldDist())
        assert cuda.selected == ["cuda:1"] and inits == ["nccl"]


PICKY_CONFTEST = """
pytest_plugins = ("xferbench.measure.session.plugin",)
from fakes import FakeBackend

class Picky(FakeBackend):
    def memory_info(self, index):
        assert index in (2, 3), f"asked GPU {index}, outside --xfer-devices"
        return 2**20, 2**30

def pytest_xfer_make_backend(config):
    return Picky(gpus=4)
"""


def test_the_world_sizes_its_sweep_from_its_own_gpus(pytester):
    """--xfer-devices=cpu,cuda:2,cuda:3: free memory is read from GPUs 2 and 3, never 0 and 1 (item 5)."""
    pytester.makeconftest(PICKY_CONFTEST)
    pytester.makepyfile(test_dist="def test_distributed(xfer_dist_case, xfer_dist):\n    xfer_dist(xfer_dist_case)\n")
    pytester.syspathinsert(str(ROOT / "tests"))
    result = pytester.runpytest("--collect-only", "-q", "--xfer-devices=cpu,cuda:2,cuda:3", "--xfer-sizes=1KiB,1MiB",
                                "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()[-2000:]
    assert "all_reduce-1KiB-float32-nccl-x2" in result.stdout.str()


def test_peer_access_is_labelled_a_capability():
    """The fingerprint records cudaDeviceCanAccessPeer: the report must not call it "enabled" (item 13)."""
    from xferbench.machine_facts import machine_table

    rows = dict(machine_table({"xferbench": {"peer_access": [[False, True], [True, False]]}}))
    (label,) = [key for key in rows if key.startswith("peer access")]
    assert "capability" in label and rows[label] == "0->1: yes; 1->0: yes"


@pytest.mark.parametrize(("backend", "words"), [
    ("nccl", "on nccl both queue on the same NCCL stream, so this cannot show overlap"),
    ("gloo", "overlap buys 2× here.")])
def test_overlap_on_nccl_is_not_read_as_overlap(tmp_path, backend, words):
    """nccl runs both variants on one stream, the host blocked by neither: the ratio says nothing there (item 12)."""
    from xferbench.analyze.report.distributed import distributed_findings

    def bench(variant: str, median: float) -> dict:
        case = DistCase("overlap", 2**20, backend, 2, "cuda" if backend == "nccl" else "cpu", variant=variant)
        stats = {k: median for k in ("min", "max", "mean", "median", "q1", "q3")} | {
            "iqr": 0.0, "stddev": 0.0, "rounds": 3, "iterations": 1, "data": [median] * 3}
        return {"name": case.id, "extra_info": case.extra_info(), "stats": stats}
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"machine_info": {}, "benchmarks": [bench("in_flight", 0.1), bench("one_by_one", 0.2)]}))
    # a run that drifts not at all: the judge of a view whose evidence shows no drift
    judge = lambda a, b: unpaired((a["median_s"], 0.0, 3), (b["median_s"], 0.0, 3), Drift(0.0, 1))  # noqa: E731
    (finding,) = [f for f in distributed_findings(load([path]).frame, judge) if f.startswith("Four all_reduces")]
    assert words in finding


def test_the_cross_rank_mean_is_shown_beside_the_slowest_rank(tmp_path):
    """Each round's time is the slowest rank's; the ranks' mean (nccl-tests' default) is stated and drawn beside it
    (item 8): 1 MiB all_reduce, slowest rank 2 ms a call, the ranks' mean 1 ms."""
    import matplotlib.pyplot as plt

    from xferbench.analyze.report.distributed import bandwidth_plot, distributed_findings

    case = DistCase("all_reduce", 2**20, "gloo", 2, "cpu")
    stats = {k: 2e-3 for k in ("min", "max", "mean", "median", "q1", "q3")} | {
        "iqr": 0.0, "stddev": 0.0, "rounds": 3, "iterations": 1, "data": [2e-3] * 3}
    info = case.extra_info() | {"rank_mean_seconds": [1e-3, 1e-3, 1.1e-3]}
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"machine_info": {}, "benchmarks": [{"name": case.id, "extra_info": info, "stats": stats}]}))
    frame = load([path]).frame
    (finding,) = [f for f in distributed_findings(frame) if f.startswith("all_reduce")]
    assert finding == ("all_reduce of 1 MiB reached 0.524 GB/s bus bandwidth by the slowest rank's time, "
                       "1.05 GB/s by the ranks' mean (nccl-tests' default).")
    figure = bandwidth_plot(frame)
    left = figure.axes[0]
    # the slowest rank's line, its markers (each its own hover), the mean's dashed line
    assert [line.get_linestyle() for line in left.get_lines()] == ["-", "None", "--"]
    assert left.get_lines()[2].get_ydata()[0] == pytest.approx(2**20 / 1e-3 / 1e9)
    plt.close(figure)


def _three_ranks(rank: int, store: str, results: str) -> None:
    """One rank of a 3-rank gloo world: the ring and the in-place variants, each timed and checked; then a ring
    whose ranks receive from the wrong neighbour, which its check must refuse."""
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=3)
    found = {}
    cases = [DistCase("send_recv", 4096, "gloo", 3, variant="ring"),
             DistCase("all_gather", 4096 * 3, "gloo", 3, variant="in_place"),
             DistCase("reduce_scatter", 4096 * 3, "gloo", 3, variant="in_place"),
             DistCase("all_gather", 4096 * 3, "gloo", 3), DistCase("reduce_scatter", 4096 * 3, "gloo", 3)]
    for case in cases:
        timed = world_module.run_on_rank(case, rank, "cpu", rounds=2, iterations=2, warmup=1, watched=False)
        found[case.id] = [len(seconds) for seconds in timed.rank_seconds]

    def backwards(case, rank, device):  # every rank sends to the one before: rank r receives from r + 1
        made = distributed.operations.operation(case, rank, device)
        return type(made)(made.reset, lambda: _backwards_ring(case, rank), made.check)

    def _backwards_ring(case, rank):
        send, recv = torch.full((case.numel,), rank + 1.0), torch.zeros(case.numel)
        for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, send, (rank - 1) % 3),
                                            dist.P2POp(dist.irecv, recv, (rank + 1) % 3)]):
            work.wait()

    world_module.operation = backwards  # what this rank builds from now on
    try:
        world_module.run_on_rank(cases[0], rank, "cpu", rounds=1, iterations=1, warmup=0, watched=False)
        found["wrong"] = "not refused"
    except world_module.VerificationError as error:
        found["wrong"] = str(error)
    dist.destroy_process_group()
    Path(results, f"{rank}.json").write_text(json.dumps(found))


@pytest.mark.slow  # three processes import torch and meet: about 10 s
def test_the_ring_and_in_place_variants_on_three_gloo_ranks(tmp_path):
    """nccl-tests' sendrecv_perf (each rank sends to the next, receives from the one before) and the in-place
    collectives, on a 3-rank world (two ranks would make the next and the one before the same): every rank times
    every round and holds what the op must deliver."""
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); from test_distributed import _three_ranks; "
            "_three_ranks(int(sys.argv[1]), sys.argv[2], sys.argv[3])")
    env = os.environ | {"PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    ranks = [subprocess.Popen([sys.executable, "-c", code, str(rank), str(tmp_path / "store"), str(tmp_path)], env=env)
             for rank in range(3)]
    assert [rank.wait(timeout=300) for rank in ranks] == [0, 0, 0]
    found = [json.loads((tmp_path / f"{rank}.json").read_text()) for rank in range(3)]
    assert found[0] == found[1] == found[2]
    assert found[0].pop("wrong") == "send_recv-ring-4KiB-float32-gloo-x3: rank(s) 0, 1, 2 received wrong data"
    assert found[0] == {case: [2, 2, 2] for case in (
        "send_recv-ring-4KiB-float32-gloo-x3", "all_gather-in_place-12KiB-float32-gloo-x3",
        "reduce_scatter-in_place-12KiB-float32-gloo-x3", "all_gather-12KiB-float32-gloo-x3",
        "reduce_scatter-12KiB-float32-gloo-x3")}


def test_the_ranks_mean_is_computed_from_each_ranks_times_where_not_recorded(tmp_path):
    """A run that holds each rank's times (rank_seconds) but no rank_mean_seconds: the mean is taken over the ranks
    that take part (a ping-pong's pair, not the idle ranks) and drawn; the caption says "not drawn" only where no
    row holds per-rank times."""
    from xferbench.analyze.report.distributed import MEAN_LINE, NO_MEAN_LINE, mean_rank_busbw, rank_means, section
    from xferbench.analyze.view import RunView

    def bench(case: DistCase, ranks: list[list[float]] | None) -> dict:
        stats = {k: 3e-3 for k in ("min", "max", "mean", "median", "q1", "q3")} | {
            "iqr": 0.0, "stddev": 0.0, "rounds": 3, "iterations": 1, "data": [3e-3] * 3}  # the pair's slower rank
        info = case.extra_info() | ({"rank_seconds": ranks} if ranks else {})
        return {"name": case.id, "extra_info": info, "stats": stats}

    pair = DistCase("send_recv", 2**20, "gloo", 4, "cpu", "float32", (2, 3), None, "intra-node")
    ranks = [[9.0] * 3, [9.0] * 3, [1e-3, 1e-3, 1e-3], [3e-3, 3e-3, 3e-3]]  # ranks 0 and 1 idle: never averaged in
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"machine_info": {}, "benchmarks": [bench(pair, ranks)]}))
    run = load([path])
    (row,) = [row for _, row in run.frame.iterrows()]
    assert rank_means(row) == pytest.approx([2e-3] * 3)
    assert mean_rank_busbw(row) == pytest.approx(row["busbw_gbps"] * 3 / 2)
    assert MEAN_LINE in section(RunView.of(run))["plots"][0].caption
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps({"machine_info": {}, "benchmarks": [bench(DistCase("all_reduce", 2**20, "gloo", 2, "cpu"),
                                                                             None)]}))
    caption = section(RunView.of(load([bare])))["plots"][0].caption
    assert NO_MEAN_LINE in caption and MEAN_LINE not in caption
