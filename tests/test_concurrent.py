import dataclasses
import os
import shutil
import types
from pathlib import Path
from typing import ClassVar

import pytest
import torch  # loaded before pytester's in-process runs, which unload what they import

from xferbench.families import family
from xferbench.measure import concurrent, run_state
from xferbench.measure.cases import Skipped
from xferbench.measure.concurrent import Concurrent, numa_cpus, numa_node_of
from xferbench.measure.faults import fault_calls
from xferbench.measure.run_state import RunState, annotate, family_of
from xferbench.measure.scenario_families import SCENARIO_FAMILIES, plan, run
from xferbench.measure.scenarios import Prepared
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


def test_the_concurrent_families_are_the_four_of_concurrent_py():
    assert CONCURRENT == ["all_gpus_host", "bidir", "copy_kind", "numa"]


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


class TestRun:
    def test_warm_up_time_check_and_contract(self, monkeypatch):
        """Warm-up calls come before timing; every GPU is synchronized; extra_info is the contract."""
        calls, checked = [], []

        def prepare(c, sync):
            return Prepared(lambda: (calls.append("call"), sync()), check=checked.append, extra={"host_numa_node": 1})
        patch_prepare(monkeypatch, "all_gpus_host", prepare)
        case = Concurrent("all_gpus_host", "h2d_all", "cpu", "all:cuda", MiB, ("cuda:0", "cuda:1"))
        backend, bench = FakeBackend(gpus=2), FakeBenchmark(calls=4)
        info = run(case, bench, backend)
        counted = fault_calls(1e-3)  # calls after timing whose page faults are counted
        assert len(calls) == 3 + 4 + counted and len(checked) == 1
        assert backend.syncs() == [0, 1] * (7 + counted)
        assert info == case.extra_info() | {"clock": "wall+sync", "host_numa_node": 1,
                                            "minor_faults_per_call": info["minor_faults_per_call"]}
        assert bench.group == "all_gpus_host cpu->all:cuda"

    def test_unplaceable_numa_is_a_skip_reason(self, monkeypatch):
        def prepare(c, sync):
            raise concurrent.NotPlaceable("no other NUMA node with CPUs this process may use")
        patch_prepare(monkeypatch, "numa", prepare)
        case = Concurrent("numa", "h2d_remote", "cpu", "cuda:0", MiB, ("cuda:0",))
        with pytest.raises(CannotRun, match="no other NUMA node"):
            run(case, FakeBenchmark(), FakeBackend(gpus=1))


    @pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without a real CUDA device")
    @pytest.mark.parametrize("op", CONCURRENT)
    def test_without_real_cuda_a_reason_not_a_crash(self, op):
        """A backend that only claims GPUs (a fake, a simulated machine) gets a skip reason from the real paths."""
        case = next(c for c in plan(op, ["cpu", "cuda:0", "cuda:1"], "quick") if isinstance(c, Concurrent))
        with pytest.raises(CannotRun, match=f"{op} needs real CUDA devices .*; torch sees no CUDA device"):
            run(case, FakeBenchmark(), FakeBackend(gpus=2))


class TestNuma:
    NODES: ClassVar = {0: set(range(0, 8)), 1: set(range(8, 16))}

    def test_local_and_remote_cpus(self):
        local = self.NODES[1]
        assert numa_cpus(local, set(range(16)), "local", self.NODES) == local
        assert numa_cpus(local, set(range(16)), "remote", self.NODES) == self.NODES[0]

    @pytest.mark.parametrize(("local", "allowed", "where", "reason"), [
        (None, set(range(16)), "local", "NUMA node is unknown"),
        ({8, 9}, {0, 1}, "local", "may not run on any CPU of the GPU's NUMA node"),
        (set(range(16)), set(range(16)), "remote", "the machine has one node here"),
        ({8, 9}, {8, 9}, "remote", "no other NUMA node"),
    ])
    def test_impossible_placements_say_why(self, local, allowed, where, reason):
        nodes = {0: set(range(16))} if local == set(range(16)) else self.NODES
        with pytest.raises(concurrent.NotPlaceable, match=reason):
            numa_cpus(local, allowed, where, nodes)

    def test_node_of_an_address_from_numa_maps(self):
        """The node holding most pages of the mapping that contains the address."""
        maps = ("7f0000000000 default anon=10 dirty=10 N0=10 kernelpagesize_kB=4\n"
                "7f1000000000 default file=/dev/nvidiactl N0=3 N1=65533 kernelpagesize_kB=4\n"
                "7f2000000000 default anon=1 N0=1\n")
        assert numa_node_of(0x7F1000000000 + 4096, maps) == 1
        assert numa_node_of(0x7F0000000100, maps) == 0
        assert numa_node_of(0x1000, maps) is None


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
    pytester.makeconftest('pytest_plugins = ("xferbench.measure.plugin",)\nfrom fakes import FakeBackend\n\n'
                          'def pytest_xfer_make_backend(config):\n    return FakeBackend(gpus=1)\n')
    shutil.copy(ROOT / "bench" / "test_concurrent.py", pytester.path / "test_concurrent_bench.py")
    result = pytester.runpytest("--collect-only", "-q")
    collected = [line for line in result.outlines if "::" in line]
    assert "test_concurrent_bench.py::test_bidir[h2d+d2h-64MiB-cpu->cuda:0]" in collected
    assert "test_concurrent_bench.py::test_copy_kind[convert_nonblocking-64MiB-cpu->cuda:0]" in collected
    assert "test_concurrent_bench.py::test_numa[d2h_remote-256MiB-cuda:0->cpu]" in collected
    assert "test_concurrent_bench.py::test_all_gpus_host[all_gpus_host-needs-two-accelerators]" in collected
    assert len(collected) == 3 + 1 + 7 + 4


class TestHostBuffersNearTheirGpu:
    """all_gpus_host allocates each GPU's pinned buffer from a thread on that GPU's node (item 9)."""

    def test_allocated_on_the_gpus_own_cpus(self):
        allowed = os.sched_getaffinity(0)
        if len(allowed) < 2:
            pytest.skip("needs two CPUs to tell a binding from none")
        mine = {max(allowed)}
        seen = []
        assert concurrent._near(mine, lambda: seen.append(os.sched_getaffinity(0)) or "buffer") == "buffer"
        assert seen == [mine] and os.sched_getaffinity(0) == allowed  # bound while allocating, then restored

    def test_an_unknown_node_allocates_where_it_runs(self):
        seen = []
        concurrent._near(None, lambda: seen.append(os.sched_getaffinity(0)))
        assert seen == [os.sched_getaffinity(0)]
