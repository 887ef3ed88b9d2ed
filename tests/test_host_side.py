"""measure/host_side.py: a host<->device case's host buffers placed on its GPU's NUMA node (fakes: injected node
lookups and numa_maps; the simulated 2-socket spec)."""

import os
from pathlib import Path

import pytest
import torch

from xferbench.measure import host_side, transfers
from xferbench.measure.cases import Case
from xferbench.measure.simulate import SimBackend, load_spec
from xferbench.measure.transfers import Buffers, run_case

from fakes import FakeBackend, FakeBenchmark

ROOT = Path(__file__).resolve().parents[1]
TWO_SOCKETS = ROOT / "examples" / "sim-8gpu-nvswitch-2socket.toml"
ONE_NODE = ROOT / "examples" / "sim-4gpu-pcie4.toml"  # no numa_nodes: one node
H2D = Case("h2d", "copy_", "cpu", "cuda:0", (256,), host_memory="pinned")
D2H_COPY = Case("d2h", "copy_", "cuda:0", "cpu", (256,), host_memory="pageable")


class NodeOfGPU(FakeBackend):
    """A fake whose GPUs' NUMA nodes are known: GPU i's node has the CPUs ``cpus[i]``."""

    def __init__(self, cpus: dict[int, set[int]], **kwargs):
        super().__init__(gpus=len(cpus), **kwargs)
        self.cpus = cpus

    def gpu_local_cpus(self, device: str) -> set[int]:
        return self.cpus[int(device.split(":")[1])]

    def tensor_device(self, device: str) -> str:
        return "cpu"  # no CUDA here: the GPU's tensors live on the host, and the call still moves them


def maps_for(tensor: torch.Tensor, node: int) -> str:
    """A /proc/self/numa_maps with the mapping that holds ``tensor`` on ``node``."""
    start = tensor.data_ptr() & ~0xFFF
    return f"{0x1000:x} default anon=1 N0=1\n{start:x} bind:{node} anon=4 dirty=4 N{node}=4\n"


@pytest.fixture(autouse=True)
def _fresh():
    host_side._last_bound[0] = None
    yield
    host_side._last_bound[0] = None


class TestPlacedOnTheGPUsNode:
    def test_a_case_runs_on_its_gpus_cpus_and_says_where_its_buffer_landed(self):
        """Inside, the thread runs on the GPU's node's CPUs (its first touches land there); the node read back
        from numa_maps is recorded; outside, the affinity is as before."""
        before = os.sched_getaffinity(0)
        cpu = min(before)
        src = torch.ones(256)
        with host_side.near_gpu(H2D, NodeOfGPU({0: {cpu}}), maps=lambda: maps_for(src, 1)) as landed:
            assert os.sched_getaffinity(0) == {cpu}
            info = landed(Buffers(src=src, dst=None))
        assert os.sched_getaffinity(0) == before
        assert info == {"host_placement": "gpu_node", "host_numa_node": 1}

    def test_a_d2h_copy_records_its_destination_an_allocating_call_only_its_placement(self):
        dst = torch.zeros(256)
        backend = NodeOfGPU({0: set(os.sched_getaffinity(0))})
        with host_side.near_gpu(D2H_COPY, backend, maps=lambda: maps_for(dst, 0)) as landed:
            assert landed(Buffers(src=None, dst=dst)) == {"host_placement": "gpu_node", "host_numa_node": 0}
        allocating = Case("d2h", "cpu", "cuda:0", "cpu", (256,), host_memory="pageable")
        with host_side.near_gpu(allocating, backend, maps=lambda: maps_for(dst, 0)) as landed:
            assert landed(Buffers(src=torch.ones(1), dst=None)) == {"host_placement": "gpu_node"}

    @pytest.mark.parametrize("cpus", [set(), {4096}], ids=["node unknown", "node off limits"])
    def test_where_the_node_cannot_be_had_the_case_runs_where_it_runs_and_says_so(self, cpus):
        before = os.sched_getaffinity(0)
        src = torch.ones(256)
        with host_side.near_gpu(H2D, NodeOfGPU({0: cpus}), maps=lambda: maps_for(src, 0)) as landed:
            assert os.sched_getaffinity(0) == before
            assert landed(Buffers(src=src, dst=None))["host_placement"] == "unbound"

    def test_a_fake_gpu_without_a_node_lookup_is_left_where_it_runs(self):
        """No CUDA here: the GPU's node is unknown, never a crash."""
        with host_side.near_gpu(H2D, FakeBackend(gpus=1)) as landed:
            assert landed(Buffers(src=torch.ones(4), dst=None))["host_placement"] == "unbound"

    def test_a_change_of_node_empties_the_host_cache_once(self):
        """A pinned block cached from a case on another node would be handed back: the cache is emptied when
        the node changes, not between cases of one node, and never once a copy is stuck."""
        first, second = sorted(os.sched_getaffinity(0))[:1], sorted(os.sched_getaffinity(0))[-1:]
        backend = NodeOfGPU({0: set(first), 1: set(second)})
        on_gpu1 = Case("h2d", "copy_", "cpu", "cuda:1", (256,), host_memory="pinned")
        for case in (H2D, H2D, on_gpu1, on_gpu1):
            with host_side.near_gpu(case, backend):
                pass
        emptied = backend.calls.count(("empty_host_cache",))
        assert emptied == (1 if first != second else 0)
        with host_side.near_gpu(H2D, backend, wedged=True):
            pass
        assert backend.calls.count(("empty_host_cache",)) == emptied

    def test_cases_that_are_not_host_device_moves_are_untouched(self):
        before = os.sched_getaffinity(0)
        backend = NodeOfGPU({0: {min(before)}})
        for case in (Case("d2d", "copy_", "cuda:0", "cuda:0", (4,)), Case("host", "clone", "cpu", "cpu", (4,))):
            with host_side.near_gpu(case, backend) as landed:
                assert os.sched_getaffinity(0) == before and landed(None) == {}

    def test_run_case_records_the_placement(self):
        """Through the timed path: the row carries where its source landed."""
        backend = NodeOfGPU({0: set(os.sched_getaffinity(0))})
        info = run_case(Case("h2d", "copy_", "cpu", "cuda:0", (256,), host_memory="pageable"), FakeBenchmark(calls=2),
                        backend)
        assert info["host_placement"] == "gpu_node" and isinstance(info.get("host_numa_node", 0), int)


class TestSimulatedSockets:
    def test_the_two_socket_spec_places_each_gpus_buffers_on_its_node(self):
        """GPUs 0-3 on node 0, 4-7 on node 1; priced local, so the figures are those of the spec's paths."""
        backend = SimBackend(load_spec(TWO_SOCKETS))
        transfers._KEPT.clear()
        for gpu, node in ((0, 0), (3, 0), (4, 1), (7, 1)):
            for case in (Case("h2d", "copy_", "cpu", f"cuda:{gpu}", (256,), host_memory="pinned"),
                         Case("d2h", "cpu", f"cuda:{gpu}", "cpu", (256,), host_memory="pageable")):
                info = run_case(case, FakeBenchmark(calls=2), backend)
                assert (info["host_numa_node"], info["host_placement"]) == (node, "gpu_node"), case.id
        transfers._KEPT.clear()

    def test_a_spec_of_one_node_records_nothing(self):
        backend = SimBackend(load_spec(ONE_NODE))
        assert backend.host_numa_node("cuda:1") is None
        info = run_case(H2D, FakeBenchmark(calls=2), backend)
        transfers._KEPT.clear()
        assert "host_numa_node" not in info and "host_placement" not in info
