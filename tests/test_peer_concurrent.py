"""Copies between GPUs at once (peer_bidir, peer_all) on the simulated machine: the price model with known
costs in and the same figures out, and whole runs of bench/test_concurrent.py whose rows read the spec
back. No GPU: the real CUDA calls are tested on stand-ins in test_concurrent.py."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from xferbench.analyze.load.results import load
from xferbench.cli import main
from xferbench.measure.families.concurrent import Concurrent
from xferbench.measure.families.peer_copies import peer_copy_caps
from xferbench.measure.families.registry import SCENARIO_FAMILIES
from xferbench.measure.simulate import CLOCK, PATHS, SimBackend, SpecError, load_spec, parse_spec

ROOT = Path(__file__).resolve().parents[1]
MiB = 2**20
US = 1e-6
L, S, ALPHA, GBPS = 4.0 * US, 5.0 * US, 2.0 * US, 10.0  # launch, synchronize, the peer path's cost


def spec(**extra):
    data = {"gpus": 4, "sync_us": 5.0, "dispatch_ns": 400, "launch_us": 4.0,
            "paths": {p: {"alpha_us": 2.0, "GBps": GBPS} for p in PATHS}} | extra
    return parse_spec(data)


def copy_s(nbytes, gbps=GBPS):
    return ALPHA + nbytes / (gbps * 1e9)


def synced(legs, gpus=2, launch=L, sync=S):
    """One call's seconds: ``legs`` ((source index, device seconds)) launched one after the other, each starting
    at its launch on its source's stream, then GPUs 0..gpus-1 synchronized in turn."""
    now = len(legs) * launch
    for gpu in range(gpus):
        now = max([now] + [(i + 1) * launch + seconds for i, (src, seconds) in enumerate(legs) if src == gpu]) + sync
    return now


def elapsed(machine, case):
    backend = SimBackend(machine)
    indices = [int(gpu.split(":")[1]) for gpu in case.gpus]
    prepared = SCENARIO_FAMILIES[case.op].prepared(case, backend, lambda: [backend.synchronize(i) for i in indices])
    start = CLOCK.now
    prepared.target()
    return CLOCK.now - start


def bidir(variant, a="cuda:0", b="cuda:1", size=MiB):
    src, dst = (b, a) if variant == "other_way" else (a, b)
    return Concurrent("peer_bidir", variant, src, dst, size, (a, b))


def ring(gpus=3, size=MiB):
    return Concurrent("peer_all", "ring", "all:cuda", "all:cuda", size, tuple(f"cuda:{i}" for i in range(gpus)))


class TestLinkShares:
    @pytest.mark.parametrize(("legs", "duplex", "shared", "caps"), [
        ([("a", "b")], True, None, [300.0]),  # alone: the path's bandwidth
        ([("a", "b"), ("b", "a")], True, None, [300.0, 300.0]),  # duplex: each direction its own
        ([("a", "b"), ("b", "a")], False, None, [150.0, 150.0]),  # half-duplex: both share the link
        ([("a", "b"), ("b", "c"), ("c", "a")], True, None, [300.0] * 3),  # a ring sends and receives one each
        ([("a", "b"), ("b", "c"), ("c", "a")], False, None, [150.0] * 3),
        ([("a", "b"), ("a", "c")], True, None, [150.0, 150.0]),  # one GPU sending two: its link is shared
        ([("b", "a"), ("c", "a"), ("d", "a")], True, None, [100.0] * 3),  # three into one
        ([("a", "b"), ("b", "c"), ("c", "a")], True, 450.0, [150.0] * 3),  # a switch all of them share
        ([("a", "b")], True, 1000.0, [300.0]),  # a share above the path changes nothing
    ])
    def test_each_copy_gets_its_share(self, legs, duplex, shared, caps):
        assert peer_copy_caps(legs, 300.0, duplex, shared) == pytest.approx(caps)


class TestPricedCalls:
    """Known costs in, the same per-call seconds out: what the finding then divides."""

    def test_one_way_is_a_launch_a_copy_and_two_synchronizes(self):
        for variant in ("one_way", "other_way"):
            source = 1 if variant == "other_way" else 0
            assert elapsed(spec(), bidir(variant)) == pytest.approx(synced([(source, copy_s(MiB))]))

    def test_duplex_both_ways_take_as_long_as_one_twice_the_bytes(self):
        n = 64 * MiB
        one, both = elapsed(spec(), bidir("one_way", size=n)), elapsed(spec(), bidir("both_ways", size=n))
        assert both == pytest.approx(synced([(0, copy_s(n)), (1, copy_s(n))]))
        assert 2 * n / both / (n / one) == pytest.approx(2.0, rel=0.01)

    def test_half_duplex_both_ways_take_twice_as_long(self):
        half, n = spec(peer_duplex=False), 64 * MiB  # a payload whose fixed costs are negligible
        one, both = elapsed(half, bidir("one_way", size=n)), elapsed(half, bidir("both_ways", size=n))
        assert both == pytest.approx(synced([(0, copy_s(n, GBPS / 2)), (1, copy_s(n, GBPS / 2))]))
        assert 2 * n / both / (n / one) == pytest.approx(1.0, rel=0.01)

    def test_a_ring_on_a_non_blocking_fabric_keeps_every_pair(self):
        assert elapsed(spec(), ring(3)) == pytest.approx(synced([(i, copy_s(MiB)) for i in range(3)], 3))

    def test_a_ring_on_a_shared_switch_gets_the_switch(self):
        assert elapsed(spec(shared_peer_GBps=15.0), ring(3)) == pytest.approx(
            synced([(i, copy_s(MiB, 5.0)) for i in range(3)], 3))

    def test_legs_from_one_gpu_run_at_once(self):
        """Each leg has a stream of its own on its source: two from one GPU overlap rather than queue."""
        backend = SimBackend(spec())
        prepared = SCENARIO_FAMILIES["peer_all"].prepared(ring(4), backend, lambda: None)
        with backend.simulating():
            prepared.target()
        assert sorted(backend.side_streams) == [(0, "peer->cuda:1"), (1, "peer->cuda:2"), (2, "peer->cuda:3"),
                                                (3, "peer->cuda:0")]


class TestSyncRule:
    """A peer family's calls end polling an event on each GPU with a deadline (its copies can hang), the other
    families' with a plain synchronize: each row says which, so that only latencies taken alike are compared."""

    @pytest.mark.parametrize(("case", "rule"), [
        (bidir("both_ways"), "event_poll"),
        (ring(), "event_poll"),
        (Concurrent("bidir", "h2d+d2h", "cpu", "cuda:0", MiB, ("cuda:0",)), "synchronize"),
    ], ids=lambda v: getattr(v, "id", str(v)))
    def test_every_row_records_its_rule(self, case, rule):
        from xferbench.measure.families.registry import run

        from fakes import FakeBenchmark

        info = run(case, FakeBenchmark(calls=1), SimBackend(spec()))
        assert info["sync_rule"] == rule


class TestSpecKeys:
    def test_defaults_are_duplex_and_non_blocking(self):
        machine = spec()
        assert (machine.peer_duplex, machine.shared_peer_GBps) == (True, None)

    @pytest.mark.parametrize(("key", "value", "message"), [
        ("peer_duplex", "yes", "peer_duplex must be true or false, got 'yes'"),
        ("shared_peer_GBps", 0, "shared_peer_GBps must be > 0, got 0.0"),
        ("shared_peer_GBps", -1.0, "shared_peer_GBps must be a finite number >= 0, got -1.0"),
    ])
    def test_bad_values_name_the_key(self, key, value, message):
        with pytest.raises(SpecError, match="^" + re.escape(message) + "$"):
            spec(**{key: value})

    def test_the_examples_model_their_fabric(self):
        assert load_spec(ROOT / "examples" / "sim-4gpu-pcie4.toml").shared_peer_GBps == 40.0
        nvswitch = load_spec(ROOT / "examples" / "sim-8gpu-nvswitch-2socket.toml")
        assert (nvswitch.peer_duplex, nvswitch.shared_peer_GBps) == (True, None)


# --- whole runs: the findings read the spec back ---------------------------------------------------------

def run_bench(spec_path, out, *args):
    """bench/test_concurrent.py's peer families on the simulated machine, in a subprocess as a user runs it."""
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "bench/test_concurrent.py", "--benchmark-only", "-q", "-p", "no:cacheprovider",
         f"--xfer-simulate={spec_path}", f"--benchmark-json={out}", "-k", "peer_bidir or peer_all", "-rs", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def spec_gbps(machine, legs, size=256 * MiB):
    """What the spec implies for one call of ``legs`` ((source, destination) GPUs): bytes over its priced seconds."""
    cost = machine.paths["peer"]
    caps = peer_copy_caps(legs, cost.GBps, machine.peer_duplex, machine.shared_peer_GBps)
    gpus = sorted({gpu for leg in legs for gpu in leg}, key=lambda gpu: int(gpu.split(":")[1]))
    seconds = synced([(gpus.index(src), cost.capped(cap).seconds(size)) for (src, _), cap in zip(legs, caps, strict=True)],
                     len(gpus), machine.launch_us * US, machine.sync_us * US)
    return len(legs) * size / seconds / 1e9


@pytest.mark.slow
class TestRunsReadTheSpecBack:
    def test_two_gpus_duplex_both_ways_reach_twice_one_way(self, tmp_path):
        """The example's NVLink is duplex: both ways at once reach twice one way; peer_all needs a third GPU and
        says so."""
        example = ROOT / "examples" / "sim-2gpu-pcie5-nvlink.toml"
        out = tmp_path / "run.json"
        output = run_bench(example, out)
        assert "peer_all has every GPU copy to the next one at once (a ring)" in output
        frame = load([out]).frame
        assert sorted(frame["variant"]) == ["both_ways", "one_way", "other_way"]
        assert set(frame["clock"]) == {"simulated"} and frame["peer_access"].all()
        machine = load_spec(example)
        # (cuda:1 to cuda:0 is a synchronize quicker: cuda:0's, done first, overlaps the copy)
        there, back = spec_gbps(machine, [("cuda:0", "cuda:1")]), spec_gbps(machine, [("cuda:1", "cuda:0")])
        both = spec_gbps(machine, [("cuda:0", "cuda:1"), ("cuda:1", "cuda:0")])
        got = dict(zip(frame["variant"], frame["bandwidth_gbps"], strict=True))
        assert (got["one_way"], got["other_way"], got["both_ways"]) == pytest.approx((there, back, both), rel=1e-4)
        assert both / back > 1.5  # duplex: near twice the faster way alone

    def test_half_duplex_link_is_shared_both_ways(self, tmp_path):
        text = (ROOT / "examples" / "sim-2gpu-pcie5-nvlink.toml").read_text().replace(
            "duplex = true", "duplex = true\npeer_duplex = false")
        half = tmp_path / "half.toml"
        half.write_text(text)
        out = tmp_path / "run.json"
        run_bench(half, out)
        frame = load([out]).frame
        got = dict(zip(frame["variant"], frame["bandwidth_gbps"], strict=True))
        assert got["both_ways"] / max(got["one_way"], got["other_way"]) == pytest.approx(1.0, abs=0.02)

    @pytest.mark.parametrize(("example", "full_speed"), [
        ("sim-8gpu-nvswitch-2socket.toml", True),
        ("sim-4gpu-pcie4.toml", False),
    ])
    def test_ring_against_the_sum_of_its_pairs(self, tmp_path, example, full_speed):
        """The default peer plan sweeps one pair (every simulated pair is one link class): the ring against that
        pair's one-way figure times its legs. NVSwitch keeps every pair; a shared PCIe switch halves them."""
        out = tmp_path / "run.json"
        run_bench(ROOT / "examples" / example, out)
        frame = load([out]).frame
        machine = load_spec(ROOT / "examples" / example)
        gpus = [f"cuda:{i}" for i in range(machine.gpus)]
        legs = [(gpu, gpus[(i + 1) % len(gpus)]) for i, gpu in enumerate(gpus)]
        assert len(frame[frame["op"] == "peer_bidir"]) == 3  # one pair: one-per-class
        ring_gbps, alone = spec_gbps(machine, legs), len(legs) * spec_gbps(machine, [legs[0]])
        ring_row = frame.loc[frame["op"] == "peer_all", "bandwidth_gbps"].max()  # every copy's bytes summed
        one_way = frame.loc[frame["variant"] == "one_way", "bandwidth_gbps"].max()
        ratio = ring_row / (len(legs) * one_way)
        assert ratio == pytest.approx(ring_gbps / alone, abs=0.02)  # the 8-GPU example's 1% noise
        assert (ratio >= 0.75) == full_speed
        assert main(["report", str(out), "-o", str(tmp_path / "report.html")]) == 0
        html = (tmp_path / "report.html").read_text()
        sections = {chunk.split('"', 1)[0]: chunk.split("<h2 ", 1)[0] for chunk in html.split('<h2 id="section-')[1:]}
        for op in ("peer_bidir", "peer_all"):  # a drawn figure each
            assert "<svg" in sections[op] and "data-missing" not in sections[op], op
        assert json.loads(out.read_text())["machine_info"]["xferbench"]["peer_plan"]["mode"] == "one-per-class"
