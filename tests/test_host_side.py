"""measure/host_side.py: a host<->device case bound, every thread of it, to its GPU's NUMA node, and where each of its
host buffers landed read back (fakes: injected node lookups and page readers; the simulated 2-socket spec, whose
nodes this machine's CPUs stand for)."""

import os
from pathlib import Path

import pytest
import torch

from xferbench.measure import host_side, transfers
from xferbench.measure.cases import Case
from xferbench.measure.hardware.numa import bound_to
from xferbench.measure.simulate import SimBackend, load_spec
from xferbench.measure.transfers import Buffers, run_case

from fakes import FakeBackend, FakeBenchmark

ROOT = Path(__file__).resolve().parents[1]
TWO_SOCKETS = ROOT / "examples" / "sim-8gpu-nvswitch-2socket.toml"
ONE_NODE = ROOT / "examples" / "sim-4gpu-pcie4.toml"  # no numa_nodes: one node
H2D = Case("h2d", "copy_", "cpu", "cuda:0", (256,), host_memory="pinned")
D2H_COPY = Case("d2h", "copy_", "cuda:0", "cpu", (256,), host_memory="pageable")
ALLOWED = os.sched_getaffinity(0)


def threads_cpus() -> dict[int, str]:
    """Every thread of this process with the CPUs it may run on, as the kernel shows them (Cpus_allowed_list)."""
    found = {}
    for status in Path("/proc/self/task").glob("*/status"):
        try:
            line = next(line for line in status.read_text().splitlines() if line.startswith("Cpus_allowed_list"))
        except (OSError, StopIteration):  # the thread ended meanwhile
            continue
        found[int(status.parent.name)] = line.split(":")[1].strip()
    return found


class NodeOfGPU(FakeBackend):
    """A fake whose GPUs' NUMA nodes are known (GPU i's node has the CPUs ``cpus[i]``) and whose buffers' pages sit
    where ``pages`` says (pages per node); the addresses asked are kept."""

    def __init__(self, cpus: dict[int, set[int]], pages: dict[int, int] | None = None, **kwargs):
        super().__init__(gpus=len(cpus), **kwargs)
        self.cpus, self.pages, self.asked = cpus, pages or {0: 4}, []

    def gpu_local_cpus(self, device: str) -> set[int]:
        return self.cpus[int(device.split(":")[1])]

    def page_nodes(self, address: int, nbytes: int) -> dict[int, int]:
        self.asked.append((address, nbytes))
        return self.pages

    def tensor_device(self, device: str) -> str:
        return "cpu"  # no CUDA here: the GPU's tensors live on the host, and the call still moves them


@pytest.fixture(autouse=True)
def _fresh():
    host_side._last_bound[0] = None
    torch.ones(2**20).add_(1)  # torch's intra-op threads started, so binding them is seen
    yield
    host_side._last_bound[0] = None


class TestPlacedOnTheGPUsNode:
    @pytest.mark.parametrize(("pages", "said"), [({0: 4}, {"host_placement": "gpu_node", "host_numa_node": 0}),
                                                 ({0: 3, 1: 1}, {"host_placement": "spilled", "host_numa_node": 0}),
                                                 ({1: 4}, {"host_placement": "spilled", "host_numa_node": 1})])
    def test_every_thread_runs_on_its_gpus_node_and_the_buffer_says_where_it_landed(self, pages, said):
        """Inside, every thread of the process (torch's pool too) may run only on the GPU's node's CPUs; the buffer's
        pages read back give the node holding most, and "spilled" where any sits off the GPU's node (this machine's
        node 0, which holds its CPUs); outside, every thread's CPUs are as before."""
        before = threads_cpus()
        cpu = min(ALLOWED)
        src = torch.ones(256)
        with host_side.near_gpu(H2D, NodeOfGPU({0: {cpu}}, pages)) as landed:
            inside = threads_cpus()
            info = landed(Buffers(src=src, dst=None))
        assert len(inside) > 1 and set(inside.values()) == {str(cpu)}
        assert info == said
        assert {task: cpus for task, cpus in threads_cpus().items() if task in before} == before

    def test_a_d2h_copy_reads_its_destination_an_allocating_call_its_fresh_result(self):
        dst, fresh = torch.zeros(256), torch.zeros(512)
        backend = NodeOfGPU({0: set(ALLOWED)})
        with host_side.near_gpu(D2H_COPY, backend) as landed:
            assert landed(Buffers(src=None, dst=dst), fresh) == {"host_placement": "gpu_node", "host_numa_node": 0}
        allocating = Case("d2h", "cpu", "cuda:0", "cpu", (256,), host_memory="pageable")
        with host_side.near_gpu(allocating, backend) as landed:
            assert landed(Buffers(src=torch.ones(1), dst=None), fresh)["host_numa_node"] == 0
            assert landed(Buffers(src=torch.ones(1), dst=None)) == {"host_placement": "gpu_node"}  # no result: no read
        assert backend.asked == [(dst.data_ptr(), dst.nbytes), (fresh.data_ptr(), fresh.nbytes)]

    @pytest.mark.parametrize("cpus", [set(), {4096}], ids=["node unknown", "node off limits"])
    def test_where_the_node_cannot_be_had_the_case_runs_where_it_runs_and_says_so(self, cpus):
        src = torch.ones(256)
        with host_side.near_gpu(H2D, NodeOfGPU({0: cpus})) as landed:
            assert os.sched_getaffinity(0) == ALLOWED
            assert landed(Buffers(src=src, dst=None)) == {"host_placement": "unbound", "host_numa_node": 0}

    def test_a_fake_gpu_without_a_node_lookup_is_left_where_it_runs(self):
        """No CUDA here: the GPU's node is unknown, never a crash."""
        with host_side.near_gpu(H2D, FakeBackend(gpus=1)) as landed:
            assert landed(Buffers(src=torch.ones(4), dst=None))["host_placement"] == "unbound"

    def test_a_change_of_node_empties_the_host_cache_once(self):
        """A pinned block cached from a case on another node would be handed back: the cache is emptied when
        the node changes, not between cases of one node, and never once a copy is stuck."""
        first, second = sorted(ALLOWED)[:1], sorted(ALLOWED)[-1:]
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
        backend = NodeOfGPU({0: {min(ALLOWED)}})
        for case in (Case("d2d", "copy_", "cuda:0", "cuda:0", (4,)), Case("host", "clone", "cpu", "cpu", (4,))):
            with host_side.near_gpu(case, backend) as landed:
                assert os.sched_getaffinity(0) == ALLOWED and landed(None) == {}

    def test_run_case_records_the_placement_of_a_fresh_result(self):
        """Through the timed path: an allocating d2h call's own result (one made while bound) is read back."""
        backend = NodeOfGPU({0: set(ALLOWED)})
        case = Case("d2h", "cpu", "cuda:0", "cpu", (256,), host_memory="pageable")
        info = run_case(case, FakeBenchmark(calls=2), backend)
        assert (info["host_placement"], info["host_numa_node"]) == ("gpu_node", 0)
        assert [nbytes for _, nbytes in backend.asked] == [case.nbytes]


class Watching(FakeBenchmark):
    """Reads every thread's CPUs while the case's calls run."""

    def __call__(self, fn):
        self.cpus = set(threads_cpus().values())
        return super().__call__(fn)


@pytest.mark.skipif(len(ALLOWED) < 2, reason="the simulated nodes need a CPU each")
class TestSimulatedSockets:
    """examples/sim-8gpu-nvswitch-2socket.toml: GPUs 0-3 on node 0, 4-7 on node 1. With this process on two CPUs,
    each node is one CPU."""

    @pytest.fixture
    def backend(self):
        two = set(sorted(ALLOWED)[:2])
        with bound_to(two):
            backend = SimBackend(load_spec(TWO_SOCKETS))
        assert backend.node_cpus == [{min(two)}, {max(two)}]
        transfers._KEPT.clear()
        yield backend
        transfers._KEPT.clear()

    @pytest.mark.parametrize(("gpu", "node"), [(0, 0), (3, 0), (4, 1), (7, 1)])
    def test_a_case_runs_on_one_cpu_with_every_thread_and_finds_its_buffers_on_its_node(self, backend, gpu, node):
        """Each host<->device case, timed, with every thread of the process on its node's one CPU; its source or
        destination found on the GPU's node (the simulated machine places a page on the node of the CPUs the
        thread touching it runs on)."""
        for case in (Case("h2d", "copy_", "cpu", f"cuda:{gpu}", (256,), host_memory="pinned"),
                     Case("d2h", "copy_", f"cuda:{gpu}", "cpu", (256,), host_memory="pageable"),
                     Case("d2h", "cpu", f"cuda:{gpu}", "cpu", (256,), host_memory="pageable")):
            benchmark = Watching(calls=2)
            info = run_case(case, benchmark, backend)
            assert benchmark.cpus == {str(min(backend.node_cpus[node]))}, case.id
            assert info["host_placement"] == "gpu_node", case.id
            assert info.get("host_numa_node", node) == node, case.id  # an allocating call's result: none simulated

    def test_a_buffer_placed_elsewhere_reads_spilled(self, backend, monkeypatch):
        monkeypatch.setattr(backend, "page_nodes", lambda address, nbytes: {0: 3, 1: 1})
        info = run_case(Case("h2d", "copy_", "cpu", "cuda:4", (256,), host_memory="pinned"), FakeBenchmark(calls=2),
                        backend)
        assert (info["host_placement"], info["host_numa_node"]) == ("spilled", 0)

    def test_unbound_pages_spread_over_the_nodes_read_spilled(self, backend):
        """What the binding prevents: a thread that may run on both nodes' CPUs touches pages on both."""
        assert backend.page_nodes(0, 4096) == {0: 1, 1: 1}


def test_a_spec_of_one_node_records_nothing():
    backend = SimBackend(load_spec(ONE_NODE))
    assert backend.host_numa_node("cuda:1") is None and backend.gpu_local_cpus("cuda:1") is None
    info = run_case(H2D, FakeBenchmark(calls=2), backend)
    transfers._KEPT.clear()
    assert "host_numa_node" not in info and "host_placement" not in info


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: its NUMA node and pinned memory")
def test_on_a_gpu_every_thread_runs_on_its_node_and_each_buffer_is_read_back():
    """For real (tools/gpu_reference_run.sh): an h2d source, a d2h destination and a fresh .cpu() result, each case
    timed with every thread on the GPU's node's CPUs, each buffer's node read back from the kernel."""
    from xferbench.measure.hardware.devices import TorchBackend
    from xferbench.measure.hardware.machine import cpu_list
    from xferbench.measure.hardware.numa import node_cpus

    backend = TorchBackend()
    local = host_side.gpu_cpus("cuda:0", backend)
    if not local or not local & ALLOWED:
        pytest.skip("the GPU's NUMA node is unknown here, or this process may not run there")
    node = next(n for n, cpus in node_cpus().items() if cpus & local)
    for case in (Case("h2d", "copy_", "cpu", "cuda:0", (2**20,), host_memory="pinned"),
                 Case("d2h", "copy_", "cuda:0", "cpu", (2**20,), host_memory="pageable"),
                 Case("d2h", "cpu", "cuda:0", "cpu", (2**20,), host_memory="pageable")):
        benchmark = Watching(calls=3)
        info = run_case(case, benchmark, backend)
        assert benchmark.cpus == {cpu_list(local & ALLOWED)}, case.id  # the kernel's own form: 0-15,32-47
        assert (info["host_placement"], info["host_numa_node"]) == ("gpu_node", node), case.id
