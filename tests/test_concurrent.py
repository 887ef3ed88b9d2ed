import contextlib
import dataclasses
import os
import shutil
import types
from pathlib import Path

import pytest
import torch  # loaded before pytester's in-process runs, which unload what they import

from xferbench.families import family
from xferbench.measure import timing, transfers
from xferbench.measure.cases import Skipped
from xferbench.measure.families import concurrent, numa_nodes, peer_copies
from xferbench.measure.families.base import Prepared
from xferbench.measure.families.concurrent import Concurrent
from xferbench.measure.families.registry import SCENARIO_FAMILIES, plan, run
from xferbench.measure.hardware.faults import fault_calls
from xferbench.measure.session import run_state
from xferbench.measure.session.run_state import RunState, annotate, family_of
from xferbench.measure.timing import Wedged
from xferbench.measure.transfers import CannotRun

from fakes import FakeBackend, FakeBenchmark

ROOT = Path(__file__).resolve().parents[1]
MiB = 2**20


def ids(planned):
    return [p.id for p in planned if isinstance(p, Concurrent)]


def skips(planned):
    return {p.id: p.reason for p in planned if isinstance(p, Skipped)}


#: The concurrent families: the registry's own kind.
CONCURRENT = sorted(op for op, obj in SCENARIO_FAMILIES.items() if obj.record.kind == "concurrent")


def test_the_concurrent_families_are_the_six_of_concurrent_py():
    assert CONCURRENT == ["all_gpus_host", "bidir", "copy_kind", "numa", "peer_all", "peer_bidir"]


def patch_prepare(monkeypatch, op, prepare):
    """Run ``op``'s cases with ``prepare`` instead of its own (its registered object, replaced for the test)."""
    monkeypatch.setitem(SCENARIO_FAMILIES, op, dataclasses.replace(SCENARIO_FAMILIES[op], prepare=prepare))


class TestPlanning:
    def test_every_family_is_registered(self):
        """Each concurrent family is in the registry, so the report shows it."""
        for op in CONCURRENT:
            assert family(op).kind == "concurrent" and family(op).caption

    @pytest.mark.parametrize("op", CONCURRENT)
    def test_cpu_only_skips_with_one_reason(self, op):
        assert skips(plan(op, ["cpu"], "quick")) == {
            f"{op}-no-accelerator": f"{op} needs an accelerator; the devices measured are: cpu"}

    def test_not_cuda_skips(self):
        """Streams are CUDA's: another accelerator gets a reason, not a crash."""
        assert skips(plan("bidir", ["cpu", "xpu:0"], "quick")) == {
            "bidir-needs-cuda": "bidir times copies on CUDA streams; the accelerators here are xpu:0"}

    def test_bidir_each_direction_and_both(self):
        planned = plan("bidir", ["cpu", "cuda:0", "cuda:1"], "quick")
        assert ids(planned) == ["h2d-64MiB-cpu->cuda:0", "d2h-64MiB-cuda:0->cpu", "h2d+d2h-64MiB-cpu->cuda:0",
                                "h2d-64MiB-cpu->cuda:1", "d2h-64MiB-cuda:1->cpu", "h2d+d2h-64MiB-cpu->cuda:1"]
        both = planned[2]
        assert both.nbytes == 2 * 64 * MiB  # the sum of both directions, as the caption says
        assert both.extra_info()["host_memory"] == "pinned" and both.extra_info()["non_blocking"] is True

    def test_all_gpus_needs_two(self):
        assert skips(plan("all_gpus_host", ["cpu", "cuda:0"], "quick")) == {
            "all_gpus_host-needs-two-accelerators": "all_gpus_host loads the host link from every GPU at once; it "
                                                    "needs two or more, found 1 (cuda:0): see bidir and h2d for one GPU"}

    def test_all_gpus_next_to_one(self):
        planned = plan("all_gpus_host", ["cpu", "cuda:0", "cuda:1", "cuda:2"], "quick")
        assert ids(planned) == ["h2d_one-64MiB-cpu->cuda:0", "h2d_all-64MiB-cpu->all:cuda", "d2h_one-64MiB-cuda:0->cpu",
                                "d2h_all-64MiB-all:cuda->cpu"]
        assert [c.nbytes // MiB for c in planned] == [64, 3 * 64, 64, 3 * 64]
        assert planned[1].gpus == ("cuda:0", "cuda:1", "cuda:2")

    def test_copy_kind_without_cpu_keeps_the_device_half(self):
        assert ids(plan("copy_kind", ["cuda:0"], "quick")) == [
            "memcpy-64MiB-cuda:0", "strided-64MiB-cuda:0", "convert-64MiB-cuda:0"]
        assert len(ids(plan("copy_kind", ["cpu", "cuda:0"], "full"))) == 3 * 7

    def test_numa_local_and_remote_each_way(self):
        assert ids(plan("numa", ["cpu", "cuda:0"], "quick")) == [
            "h2d_local-256MiB-cpu->cuda:0", "h2d_remote-256MiB-cpu->cuda:0",
            "d2h_local-256MiB-cuda:0->cpu", "d2h_remote-256MiB-cuda:0->cpu"]

    def test_unknown(self):
        with pytest.raises(ValueError, match="unknown scenario family 'teleport'"):
            plan("teleport", ["cpu"], "quick")


GPUS8 = [f"cuda:{i}" for i in range(8)]


def pairs_of(planned):
    return [(c.src, c.dst) for c in planned if isinstance(c, Concurrent) and c.variant == "both_ways"]


class TestPeerPlanning:
    def test_one_pair_each_way_and_both_ways_at_once(self):
        planned = plan("peer_bidir", ["cpu", "cuda:0", "cuda:1"], "quick")
        assert ids(planned) == ["one_way-256MiB-cuda:0->cuda:1", "other_way-256MiB-cuda:1->cuda:0",
                                "both_ways-256MiB-cuda:0<->cuda:1"]
        one, other, both = planned
        assert (one.legs, other.legs) == ((("cuda:0", "cuda:1"),), (("cuda:1", "cuda:0"),))
        assert both.legs == (("cuda:0", "cuda:1"), ("cuda:1", "cuda:0")) and both.nbytes == 2 * 256 * MiB
        info = both.extra_info()
        assert info["peer_legs"] == ["cuda:0->cuda:1", "cuda:1->cuda:0"] and info["non_blocking"] is True
        assert info["host_memory"] is None and info["nbytes"] == 2 * 256 * MiB

    def test_no_host_needed(self):
        """GPU to GPU: the host is not one of the devices it needs."""
        assert ids(plan("peer_bidir", ["cuda:0", "cuda:1"], "quick"))[-1] == "both_ways-256MiB-cuda:0<->cuda:1"

    @pytest.mark.parametrize(("op", "devices", "reason"), [
        ("peer_bidir", ["cpu", "cuda:0"], "peer_bidir copies between two GPUs both ways at once; it needs 2 or more "
                                          "GPUs, found 1 (cuda:0)"),
        ("peer_all", ["cpu", "cuda:0", "cuda:1"], "peer_all has every GPU copy to the next one at once (a ring); on two "
                                                  "GPUs that is peer_bidir's both_ways; it needs 3 or more GPUs, found 2 "
                                                  "(cuda:0, cuda:1)"),
    ])
    def test_too_few_gpus_is_one_skip_line(self, op, devices, reason):
        planned = plan(op, devices, "quick")
        assert not ids(planned) and list(skips(planned).values()) == [reason]

    def test_every_pair_once_without_a_peer_plan(self):
        assert pairs_of(plan("peer_bidir", ["cuda:0", "cuda:1", "cuda:2"], "quick")) == [
            ("cuda:0", "cuda:1"), ("cuda:0", "cuda:2"), ("cuda:1", "cuda:2")]

    @pytest.mark.parametrize(("mode", "count"), [("one-per-class", 1), ("ring", 8), ("all", 28), (None, 1)])
    def test_the_pairs_the_peer_plan_sweeps_on_8_gpus(self, mode, count):
        """One pair per link class keeps an NVSwitch node to one pair; a ring to its 8 neighbours; all to 28."""
        from xferbench.measure.cases import peer_plan

        classes = {(s, d): "NVSwitch" for s in GPUS8 for d in GPUS8 if s != d}
        pairs = pairs_of(plan("peer_bidir", GPUS8, "quick", peer_plan(GPUS8, classes, mode)))
        assert len(pairs) == count == len(set(pairs))
        assert all(GPUS8.index(a) < GPUS8.index(b) for a, b in pairs)
        if mode == "ring":
            assert ("cuda:0", "cuda:7") in pairs and ("cuda:0", "cuda:2") not in pairs

    def test_sizes_that_define_the_bandwidth(self):
        """Not the peer family's sweep: 256 MiB in quick; 64 MiB to 1 GiB in full (three per pair and way)."""
        assert len(plan("peer_bidir", ["cuda:0", "cuda:1"], "full")) == 3 * 3
        assert ids(plan("peer_all", GPUS8, "full")) == ["ring-256MiB-all:cuda", "ring-1GiB-all:cuda"]

    def test_a_ring_of_every_gpu(self):
        (ring,) = plan("peer_all", ["cpu", *GPUS8[:3]], "quick")
        assert ring.id == "ring-256MiB-all:cuda" and ring.gpus == ("cuda:0", "cuda:1", "cuda:2")
        assert ring.legs == (("cuda:0", "cuda:1"), ("cuda:1", "cuda:2"), ("cuda:2", "cuda:0"))
        assert ring.nbytes == 3 * 256 * MiB and ring.extra_info()["peer_legs"][-1] == "cuda:2->cuda:0"


class TestRun:
    def test_warm_up_time_check_and_contract(self, monkeypatch):
        """Warm-up calls come before timing; every GPU is synchronized, once before the warm-up as a scenario's (what
        preparing enqueued is not the first call's); extra_info is the contract."""
        calls, checked = [], []

        def prepare(c, sync):
            return Prepared(lambda: (calls.append("call"), sync()), check=checked.append, extra={"host_numa_node": 1})
        patch_prepare(monkeypatch, "all_gpus_host", prepare)
        case = Concurrent("all_gpus_host", "h2d_all", "cpu", "all:cuda", MiB, ("cuda:0", "cuda:1"))
        backend, bench = FakeBackend(gpus=2), FakeBenchmark(calls=4)
        info = run(case, bench, backend)
        counted = fault_calls(1e-3)  # calls after timing whose page faults are counted
        assert len(calls) == 3 + 4 + counted and len(checked) == 1
        assert backend.syncs() == [0, 1] * (1 + 7 + counted)
        assert info == case.extra_info() | {"clock": "wall+sync", "host_numa_node": 1, "sync_rule": "synchronize",
                                            "minor_faults_per_call": info["minor_faults_per_call"]}
        assert bench.group == "all_gpus_host cpu->all:cuda"

    def test_unplaceable_numa_is_a_skip_reason(self, monkeypatch):
        def prepare(c, sync):
            raise concurrent.NotPlaceable("no other NUMA node with CPUs this process may use")
        patch_prepare(monkeypatch, "numa", prepare)
        case = Concurrent("numa", "h2d_remote", "cpu", "cuda:0", MiB, ("cuda:0",))
        with pytest.raises(CannotRun, match="no other NUMA node"):
            run(case, FakeBenchmark(), FakeBackend(gpus=1))


    @pytest.mark.parametrize("op", ["peer_bidir", "peer_all"])
    def test_peer_copies_synchronize_with_the_copys_deadline(self, monkeypatch, op):
        """Like a peer case's, a peer family's synchronizes give up at the deadline; the host families' do not."""
        patch_prepare(monkeypatch, op, lambda c, sync: Prepared(sync))
        case = next(c for c in plan(op, GPUS8[:3], "quick") if isinstance(c, Concurrent))
        backend = FakeBackend(gpus=3)
        run(case, FakeBenchmark(calls=1), backend)
        waits = {call for call in backend.calls if call[0] in ("wait", "synchronize")}
        assert waits == {("wait", int(g[-1]), timing.copy_deadline(case.nbytes)) for g in case.gpus}

    def test_a_stuck_peer_copy_fails_and_refuses_its_gpus_to_later_cases(self, monkeypatch):
        """A copy between GPUs that never completes raises Wedged at its deadline instead of hanging the run;
        its GPUs are marked stuck, so the next case on them is skipped with the reason."""
        monkeypatch.setattr(transfers, "_WEDGED", {})
        monkeypatch.setattr(timing, "DEADLINE_FLOOR_S", 0.01)
        patch_prepare(monkeypatch, "peer_bidir", lambda c, sync: Prepared(sync))
        both = plan("peer_bidir", ["cuda:0", "cuda:1"], "quick")[-1]
        backend = FakeBackend(gpus=3, stuck=True)
        with pytest.raises(Wedged, match="cuda:0 still had its copy queued"):
            run(both, FakeBenchmark(calls=1), backend)
        assert transfers._WEDGED == {"cuda:0": both.id, "cuda:1": both.id}
        with pytest.raises(CannotRun, match=f"cuda:1 has a stuck copy from {both.id}"):
            run(Concurrent("bidir", "h2d", "cpu", "cuda:1", MiB, ("cuda:1",)), FakeBenchmark(calls=1), backend)

    @pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without a real CUDA device")
    @pytest.mark.parametrize("op", CONCURRENT)
    def test_without_real_cuda_a_reason_not_a_crash(self, op):
        """A backend that only claims GPUs (a fake, a simulated machine) gets a skip reason from the real paths."""
        case = next(c for c in plan(op, ["cpu", "cuda:0", "cuda:1", "cuda:2"], "quick") if isinstance(c, Concurrent))
        with pytest.raises(CannotRun, match=f"{op} needs real CUDA devices .*; torch sees no CUDA device"):
            run(case, FakeBenchmark(), FakeBackend(gpus=3))


class TestRunState:
    def fake_nvml(self):
        nvml = types.SimpleNamespace(NVMLError=RuntimeError, NVML_CLOCK_SM=1, NVML_CLOCK_MEM=2)
        nvml.nvmlDeviceGetClockInfo = lambda handle, kind: {1: 1755, 2: 2619}[kind]
        nvml.nvmlDeviceGetCurrPcieLinkGeneration = lambda handle: 5
        nvml.nvmlDeviceGetCurrPcieLinkWidth = lambda handle: 16
        return nvml

    def test_gpu_case_gets_clocks_and_link_now(self):
        """After timing, a GPU case records the clocks and PCIe link its GPU is at, and cache residency."""
        state = RunState({"L3": 32 * MiB}, {"cuda:0": 50 * MiB}, self.fake_nvml(), {0: "gpu0"})
        info = {"op": "d2d", "src": "cuda:0", "dst": "cuda:0", "nbytes": 64 * MiB}
        annotate(info, state)
        assert info == {"op": "d2d", "src": "cuda:0", "dst": "cuda:0", "nbytes": 64 * MiB, "cache_resident": False,
                        "sm_clock_mhz": 1755, "memory_clock_mhz": 2619, "pcie_generation_now": 5, "pcie_width_now": 16}

    def test_host_case_gets_residency_only(self):
        state = RunState({"L3": 32 * MiB}, {}, self.fake_nvml(), {0: "gpu0"})
        info = {"op": "host", "src": "cpu", "dst": "cpu", "nbytes": MiB}
        annotate(info, state)
        assert info["cache_resident"] is True and "sm_clock_mhz" not in info

    def test_pinned_cache_emptied_between_families_only(self, monkeypatch):
        """The pinned host cache is given back when the next test is another family, and after the last."""
        emptied = []
        monkeypatch.setattr(run_state, "empty_pinned_cache", lambda: emptied.append(1))
        module = types.SimpleNamespace(__name__="test_h2d")
        a1, a2 = (types.SimpleNamespace(module=module, originalname="test_h2d", name=f"test_h2d[{i}]") for i in (1, 2))
        b = types.SimpleNamespace(module=types.SimpleNamespace(__name__="test_d2h"), originalname="test_d2h", name="x")
        assert family_of(a1) == family_of(a2) != family_of(b)
        for item, nextitem in ((a1, a2), (a2, b), (b, None)):
            run_state.pytest_runtest_teardown(item, nextitem)
        assert len(emptied) == 2


def test_bench_file_collects_with_fake_gpus(pytester):
    """bench/test_concurrent.py parametrizes every family from the machine, with readable ids and skip lines."""
    pytester.makeconftest('pytest_plugins = ("xferbench.measure.session.plugin",)\nfrom fakes import FakeBackend\n\n'
                          'def pytest_xfer_make_backend(config):\n    return FakeBackend(gpus=1)\n')
    shutil.copy(ROOT / "bench" / "test_concurrent.py", pytester.path / "test_concurrent_bench.py")
    result = pytester.runpytest("--collect-only", "-q")
    collected = [line for line in result.outlines if "::" in line]
    # bidir's variants are compared with each other: measured in paired blocks (session/blocks.py)
    assert "test_concurrent_bench.py::test_bidir[h2d+d2h-64MiB-cpu->cuda:0-block1of6]" in collected
    assert "test_concurrent_bench.py::test_copy_kind[convert_nonblocking-64MiB-cpu->cuda:0-block1of6]" in collected
    assert "test_concurrent_bench.py::test_numa[d2h_remote-256MiB-cuda:0->cpu]" in collected
    assert "test_concurrent_bench.py::test_all_gpus_host[all_gpus_host-needs-two-accelerators]" in collected
    assert "test_concurrent_bench.py::test_peer_bidir[peer_bidir-needs-two-accelerators]" in collected
    assert "test_concurrent_bench.py::test_peer_all[peer_all-needs-three-accelerators]" in collected
    assert len(collected) == 3 * 6 + 1 + 7 * 6 + 4 + 1 + 1  # bidir's 3 cases and copy_kind's 7 in 6 blocks each


@pytest.mark.parametrize(("mode", "pairs"), [
    ("ring", ["cuda:0<->cuda:1", "cuda:0<->cuda:3", "cuda:1<->cuda:2", "cuda:2<->cuda:3"]),
    ("all", ["cuda:0<->cuda:1", "cuda:0<->cuda:2", "cuda:0<->cuda:3", "cuda:1<->cuda:2", "cuda:1<->cuda:3",
             "cuda:2<->cuda:3"]),
])
def test_peer_families_follow_the_runs_peer_pairs(pytester, mode, pairs):
    """The session's --xfer-peer-pairs decides which pairs peer_bidir times; peer_all is one ring of every GPU."""
    pytester.makeconftest('pytest_plugins = ("xferbench.measure.session.plugin",)\nfrom fakes import FakeBackend\n\n'
                          'def pytest_xfer_make_backend(config):\n    return FakeBackend(gpus=4)\n')
    shutil.copy(ROOT / "bench" / "test_concurrent.py", pytester.path / "test_concurrent_bench.py")
    result = pytester.runpytest("--collect-only", "-q", f"--xfer-peer-pairs={mode}", "-k", "peer")
    collected = [line.split("[", 1)[1].rstrip("]") for line in result.outlines if "::" in line]
    assert [c.split("-", 2)[2] for c in collected if c.startswith("both_ways")] == pairs
    assert len([c for c in collected if c.startswith(("one_way", "other_way"))]) == 2 * len(pairs)
    assert [c for c in collected if c.startswith("ring")] == ["ring-256MiB-all:cuda"]


STUCK_PEERS_CONFTEST = """
import dataclasses
pytest_plugins = ("xferbench.measure.session.plugin",)
from fakes import FakeBackend
from xferbench.measure import timing
from xferbench.measure.families import registry
from xferbench.measure.families.base import Prepared

timing.DEADLINE_FLOOR_S, timing.DEADLINE_SLOWEST_BPS = 0.01, 1e15  # a hundredth of a second at any size
# The copies themselves need CUDA; what is checked here is what their synchronizes do.
registry.SCENARIO_FAMILIES["peer_bidir"] = dataclasses.replace(
    registry.SCENARIO_FAMILIES["peer_bidir"], prepare=lambda c, sync: Prepared(sync))

def pytest_xfer_make_backend(config):
    return FakeBackend(gpus=2, stuck=True)
"""


def test_a_stuck_copy_between_gpus_fails_in_one_line_and_the_session_goes_on(pytester, monkeypatch):
    """The first peer_bidir case fails at its deadline with a one-line reason; the later ones on its GPUs
    are skipped with the case it came from, and the session ends."""
    monkeypatch.setattr(transfers, "_WEDGED", {})  # the run is in this process: what it marks ends with the test
    monkeypatch.setattr(timing, "DEADLINE_FLOOR_S", timing.DEADLINE_FLOOR_S)
    monkeypatch.setattr(timing, "DEADLINE_SLOWEST_BPS", timing.DEADLINE_SLOWEST_BPS)
    monkeypatch.setitem(SCENARIO_FAMILIES, "peer_bidir", SCENARIO_FAMILIES["peer_bidir"])
    pytester.makeconftest(STUCK_PEERS_CONFTEST)
    shutil.copy(ROOT / "bench" / "test_concurrent.py", pytester.path / "test_concurrent_bench.py")
    result = pytester.runpytest("-k", "peer_bidir", "--benchmark-max-time=0.001", "-p", "no:cacheprovider", "-rs")
    outcomes = result.parseoutcomes()
    assert (outcomes["failed"], outcomes["skipped"], outcomes.get("passed", 0)) == (1, 2, 0)
    result.stdout.re_match_lines([r"one_way-256MiB-cuda:0->cuda:1: cuda:0 still had its copy queued after 0 s: "
                                  r"a wedged copy .*later cases on it are skipped$"])
    assert result.stdout.str().count("has a stuck copy from one_way-256MiB-cuda:0->cuda:1") == 2


class TestHostBuffersNearTheirGpu:
    """all_gpus_host allocates each GPU's pinned buffer from a thread on that GPU's node (item 9)."""

    def test_allocated_on_the_gpus_own_cpus(self):
        allowed = os.sched_getaffinity(0)
        if len(allowed) < 2:
            pytest.skip("needs two CPUs to tell a binding from none")
        mine = {max(allowed)}
        seen = []
        assert numa_nodes.near(mine, lambda: seen.append(os.sched_getaffinity(0)) or "buffer") == "buffer"
        assert seen == [mine] and os.sched_getaffinity(0) == allowed  # bound while allocating, then restored

    def test_an_unknown_node_allocates_where_it_runs(self):
        seen = []
        numa_nodes.near(None, lambda: seen.append(os.sched_getaffinity(0)))
        assert seen == [os.sched_getaffinity(0)]


class TestPeerCopiesOnCpuStandIns:
    """prepare_peer's real calls, on CPU tensors standing in for GPUs: every leg on a stream of its own on its
    source, every copy queued before the synchronize, and a check that sees a copy that did not land."""

    @pytest.fixture
    def stand_in(self, monkeypatch):
        entered = []

        @contextlib.contextmanager
        def stream(which):
            entered.append(which)
            yield

        monkeypatch.setattr(peer_copies, "require_cuda", lambda c: None)
        monkeypatch.setattr(peer_copies, "pattern", lambda shape, device, pinned=False: _cpu_pattern(shape))
        monkeypatch.setattr(peer_copies, "streamed", lambda device: f"stream on {device}")
        monkeypatch.setattr(torch.cuda, "stream", stream)
        monkeypatch.setattr(torch.cuda, "can_device_access_peer", lambda a, b: (a, b) != (2, 0))
        return entered

    def test_each_leg_on_its_own_streams_then_one_synchronize(self, stand_in):
        ring = Concurrent("peer_all", "ring", "all:cuda", "all:cuda", 4 * ROW_BYTES, ("cuda:0", "cuda:1", "cuda:2"))
        synced = []
        prepared = peer_copies.prepare_peer(ring, lambda: synced.append(len(stand_in)))
        assert prepared.extra == {"peer_access": False}  # cuda:2 cannot reach cuda:0 directly
        stand_in.clear()
        synced.clear()
        prepared.target()
        assert stand_in == ["stream on cuda:0", "stream on cuda:1", "stream on cuda:2"]
        assert synced == [3]  # one synchronize, after every copy was queued
        prepared.check(None)

    def test_the_check_sees_a_copy_that_did_not_land(self, stand_in, monkeypatch):
        both = Concurrent("peer_bidir", "both_ways", "cuda:0", "cuda:1", 4 * ROW_BYTES, ("cuda:0", "cuda:1"))
        prepared = peer_copies.prepare_peer(both, lambda: None)
        prepared.target()
        prepared.check(None)
        monkeypatch.setattr(torch.Tensor, "copy_", lambda self, src, non_blocking=False: self)
        with pytest.raises(AssertionError, match="cuda:0->cuda:1: the destination does not hold the source's values"):
            prepared.check(None)


ROW_BYTES = concurrent.ROW * 4


def _cpu_pattern(shape):
    from xferbench.measure.transfers import pattern

    return pattern(shape, torch.float32, "cpu")


def test_a_spec_with_one_numa_node_skips_the_remote_case_with_a_line(pytester, tmp_path):
    """A simulated spec without numa_nodes (one node, the documented default) runs: numa's remote cases are
    skipped with a line saying the machine has one node, its local ones priced (the estimate prices every case)."""
    spec = tmp_path / "one-node.toml"
    spec.write_text("\n".join(line for line in (ROOT / "examples" / "sim-2gpu-pcie5-nvlink.toml").read_text()
                              .splitlines() if not line.startswith("numa_nodes")))
    pytester.makeconftest('pytest_plugins = ("xferbench.measure.session.plugin",)')
    shutil.copy(ROOT / "bench" / "test_concurrent.py", pytester.path / "test_concurrent_bench.py")
    result = pytester.runpytest("--benchmark-only", f"--xfer-simulate={spec}", "-k", "test_numa and cuda:0",
                                "-p", "no:cacheprovider", "-rs")
    assert "INTERNALERROR" not in result.stdout.str()
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines(["*d2h_remote*no other NUMA node: the simulated machine has one*"])
