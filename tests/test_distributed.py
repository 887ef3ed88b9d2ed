import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from xferbench.analyze.results import load
from xferbench.measure import distributed
from xferbench.measure.cases import Skipped
from xferbench.measure.distributed import (
    DistCase,
    DistributedError,
    World,
    build_dist_cases,
    bus_factor,
    calls_for,
    measure,
)

from fakes import FakeBenchmark

ROOT = Path(__file__).resolve().parents[1]


class TestBusBandwidth:
    @pytest.mark.parametrize(("op", "n", "factor"), [
        ("all_reduce", 2, 1.0), ("all_reduce", 4, 1.5), ("all_reduce", 8, 1.75),
        ("all_gather", 4, 0.75), ("reduce_scatter", 8, 0.875), ("broadcast", 8, 1.0), ("send_recv", 2, 1.0),
    ])
    def test_nccl_tests_factors(self, op, n, factor):
        """busbw = algbw x 2(n-1)/n (all_reduce), (n-1)/n (all_gather, reduce_scatter), 1 otherwise."""
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
        cases = build_dist_cases(["cpu"], "auto", "quick")
        assert {c.backend for c in cases} == {"gloo"} and len(cases) == 4 * 6
        assert cases[0].id == "send_recv-4B-float32-gloo-x2"

    def test_nccl_needs_a_gpu_per_rank(self):
        assert build_dist_cases(["cpu", "cuda:0"], "nccl", "quick") == [
            Skipped("nccl-needs-gpus", "nccl needs one GPU per rank: 2 ranks, 1 GPU(s)")]
        assert {c.backend for c in build_dist_cases(["cpu", "cuda:0", "cuda:1"], "auto", "quick")} == {"nccl"}

    def test_sizes_override(self):
        assert {c.nbytes for c in build_dist_cases(["cpu"], "gloo", "quick", sizes=[1024, (2, 3)])} == {1024}

    def test_contract(self):
        info = DistCase("all_gather", 1024, "gloo", 2).extra_info()
        assert info["world_size"] == 2 and info["backend"] == "gloo" and info["op"] == "all_gather"
        assert info["xfer_schema"] == 1 and info["bus_factor"] == 0.5


def test_measure_with_a_fake_clock():
    """Per-call time is a round's time over its iterations, made the slowest rank's."""
    ticks = iter(range(0, 1000, 2))  # each reading 2 s after the last
    calls = []
    times = measure(lambda: calls.append(1), rounds=3, iterations=4, warmup=2, clock=lambda: next(ticks),
                    slowest=lambda t: t * 10)
    assert times == [5.0, 5.0, 5.0]  # (2 s x 10) / 4
    assert len(calls) == 2 + 3 * 4


def test_calls_for_small_and_large():
    assert calls_for(4) == 100 and calls_for(2**20) == 1 and calls_for(2**14) == 64


class TestWorld:
    def test_world_of_two_end_to_end(self):
        """A gloo world of 2 on loopback runs every op and keeps the helper in step."""
        world = World("gloo", timeout_s=30)
        world.start()
        try:
            for op in distributed.DIST_OPS:
                bench = FakeBenchmark()
                info = world.run(DistCase(op, 4096, "gloo", 2), bench, rounds=3)
                assert info["op"] == op and info["world_size"] == 2
        finally:
            world.close()
        assert world.helper is None

    def test_rank_that_never_joins_times_out_with_its_name(self):
        """A helper that exits before joining ends start() within the bound, naming rank and address."""
        world = World("gloo", timeout_s=3, fault="exit-early")
        began = time.monotonic()
        with pytest.raises(DistributedError) as error:
            world.start()
        world.close()
        assert time.monotonic() - began < 3 + 30  # bounded: no hang
        message = str(error.value)
        assert message.startswith(f"rank 1 did not join the rendezvous at tcp://127.0.0.1:{world.port} within 3 s")
        assert "it exited with code 3" in message

    def test_rank_that_dies_mid_run(self):
        """A helper that dies during an op fails that benchmark with a message, and later ones at once."""
        world = World("gloo", timeout_s=5, fault="die-mid-run")
        world.start()
        try:
            with pytest.raises(DistributedError, match=r"rank 1 (exited with code 4|stopped answering) during "
                                                       r"all_reduce-1MiB-float32-gloo-x2 at tcp://127.0.0.1:\d+"):
                world.run(DistCase("all_reduce", 2**20, "gloo", 2), FakeBenchmark(), rounds=3)
            with pytest.raises(DistributedError, match="broke earlier"):
                world.run(DistCase("broadcast", 4, "gloo", 2), FakeBenchmark(), rounds=3)
        finally:
            world.close()

    def test_port_taken_meanwhile_is_retried(self, monkeypatch):
        """If the chosen port is taken before the rendezvous binds it, another is tried."""
        busy = socket.socket()
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        ports = iter([busy.getsockname()[1], distributed.free_port()])
        monkeypatch.setattr(distributed, "free_port", lambda: next(ports))
        world = World("gloo", timeout_s=20)
        try:
            world.start()
            assert world.port != busy.getsockname()[1]
        finally:
            world.close()
            busy.close()


def test_torchrun_writes_loadable_json(tmp_path):
    """torchrun -m xferbench.distributed writes pytest-benchmark JSON that the report loads."""
    out = tmp_path / "dist.json"
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nnodes=1", "--nproc-per-node=2", "--master-addr=127.0.0.1",
         "--master-port", str(distributed.free_port()), "-m", "xferbench.distributed", "--out", str(out),
         "--sizes", "1KiB", "--rounds", "3", "--timeout", "30"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    frame = load([out]).frame
    assert sorted(frame["op"]) == sorted(distributed.DIST_OPS)
    assert set(frame["world_size"]) == {2} and set(frame["backend"]) == {"gloo"}
    assert (frame["busbw_gbps"] > 0).all()


def test_not_under_torchrun_is_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "xferbench.distributed", "--out", str(tmp_path / "x.json")],
                          capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"} | {"PYTHONPATH": str(ROOT / "src")})
    assert proc.returncode == 2
    assert proc.stderr.startswith("xferbench.distributed: not started by torchrun (RANK is unset)")


class TestPedanticCalls:
    """The helper must mirror exactly as many calls as pytest-benchmark makes."""

    @pytest.mark.parametrize(("attrs", "iterations", "expected"), [
        ({}, 1, (2 + 5) * 1),
        ({}, 10, (2 + 5) * 10 + 1),
        ({"disabled": True}, 10, 1),
        ({"cprofile": True, "cprofile_loops": None}, 10, 71 + 10),
        ({"cprofile": True, "cprofile_loops": 3}, 1, 7 + 3),
    ])
    def test_counts(self, attrs, iterations, expected):
        bench = type("Bench", (), attrs)()
        assert distributed.pedantic_calls(bench, rounds=5, iterations=iterations, warmup=2) == expected

    @pytest.mark.parametrize("iterations", [1, 7])
    def test_matches_the_fake(self, iterations):
        """FakeBenchmark.pedantic (which copies pytest-benchmark's loop) makes that many calls."""
        calls = []
        FakeBenchmark().pedantic(lambda: calls.append(1), rounds=5, warmup_rounds=2, iterations=iterations)
        assert len(calls) == distributed.pedantic_calls(FakeBenchmark(), 5, iterations, 2)


@pytest.mark.parametrize("flag", ["--benchmark-disable", "--benchmark-cprofile=cumtime"])
def test_real_fixture_modes_stay_in_step(flag):
    """With the real pytest-benchmark fixture in these modes the helper rank stays in step."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "bench/test_distributed.py", "-q", "-p", "no:cacheprovider", flag,
         "--xfer-sizes=1KiB", "--xfer-dist-timeout=20"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "6 passed" in proc.stdout
