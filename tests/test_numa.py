"""NUMA placement (measure/hardware/numa.py, measure/families/numa_nodes.py, families/numa/): the nodes' CPUs and SLIT
distances from a sysfs tree, a buffer's pages read back, a whole process bound and let go, the remote node chosen
by distance, and what the numa family records and says."""

import os
import threading
from pathlib import Path
from typing import ClassVar

import pandas as pd
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from test_host_side import threads_cpus
from xferbench.families import FAMILIES
from xferbench.families.numa import run as numa_run
from xferbench.measure.families import concurrent
from xferbench.measure.families.base import Priced
from xferbench.measure.families.concurrent import Concurrent
from xferbench.measure.families.numa_nodes import numa_cpus
from xferbench.measure.hardware import numa
from xferbench.measure.simulate import SimBackend, load_spec

ROOT = Path(__file__).resolve().parents[1]
MiB = 2**20


def sysfs(tmp_path: Path, nodes: dict[int, str], distances: dict[int, str]) -> Path:
    """A /sys/devices/system/node with each node's cpulist and its SLIT row."""
    for node, cpus in nodes.items():
        (tmp_path / f"node{node}").mkdir()
        (tmp_path / f"node{node}" / "cpulist").write_text(f"{cpus}\n")
        (tmp_path / f"node{node}" / "distance").write_text(f"{distances[node]}\n")
    return tmp_path


class TestSysfs:
    def test_each_nodes_cpus_and_the_distance_between_two(self, tmp_path):
        root = sysfs(tmp_path, {0: "0-3", 1: "4-7", 2: "8-9"}, {0: "10 21 32", 1: "21 10 21", 2: "32 21 10"})
        assert numa.node_cpus(root) == {0: {0, 1, 2, 3}, 1: {4, 5, 6, 7}, 2: {8, 9}}
        assert [numa.distance(0, b, root) for b in (0, 1, 2)] == [10, 21, 32]
        assert numa.distance(0, 5, root) is None and numa.distance(7, 0, root) is None


class TestRemoteNode:
    NODES: ClassVar = {0: set(range(0, 8)), 1: set(range(8, 16)), 2: set(range(16, 24))}

    @staticmethod
    def far(a, b):
        return {(1, 0): 21, (1, 2): 32}.get((a, b))

    def test_local_and_the_farthest_other_node(self):
        """A sibling sub-node at 21 is passed over for the one at 32: a misplaced buffer's worst case."""
        local = self.NODES[1]
        assert numa_cpus(local, set(range(24)), "local", self.NODES, self.far) == (1, 1, local)
        assert numa_cpus(local, set(range(24)), "remote", self.NODES, self.far) == (1, 2, self.NODES[2])
        assert numa_cpus(local, set(range(16)), "remote", self.NODES, self.far) == (1, 0, self.NODES[0])

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


class TestPages:
    MAPS = ("7f0000000000 default anon=10 dirty=10 N0=10 kernelpagesize_kB=4\n"
            "7f1000000000 default file=/dev/nvidiactl N0=3 N1=65533 kernelpagesize_kB=4\n"
            "7f2000000000 default anon=1 N0=1\n")

    def test_node_of_an_address_from_numa_maps(self):
        """The node holding most pages of the mapping that contains the address."""
        assert numa.numa_node_of(0x7F1000000000 + 4096, self.MAPS) == 1
        assert numa.numa_node_of(0x7F0000000100, self.MAPS) == 0
        assert numa.numa_node_of(0x1000, self.MAPS) is None

    @given(st.text(max_size=200), st.integers(min_value=0, max_value=2**64))
    def test_any_numa_maps_text_gives_a_node_or_none(self, maps, address):
        assert numa.numa_node_of(address, maps) is None or numa.numa_node_of(address, maps) >= 0

    def test_a_touched_buffers_pages_are_on_this_machines_nodes(self):
        """Read back page by page (or by its mapping without libnuma): every page of a touched buffer is counted on
        a node of this machine; an untouched one has none to count (libnuma) or its mapping's."""
        size = os.sysconf("SC_PAGE_SIZE")
        buffer = torch.ones(64 * size // 4)  # 64 pages, 65 where it starts inside one
        pages = numa.page_nodes(buffer.data_ptr(), buffer.nbytes)
        assert pages and set(pages) <= set(numa.node_cpus()) | {0}
        if numa._libnuma() is not None:
            assert sum(pages.values()) == 64 + (buffer.data_ptr() % size != 0)


class TestBound:
    def test_every_thread_a_thread_started_inside_too_and_all_back_after(self):
        torch.ones(2**20).add_(1)  # torch's intra-op threads started
        cpu, before = min(os.sched_getaffinity(0)), threads_cpus()
        started = threading.Event()
        stop = threading.Event()

        def inside():
            started.set()
            stop.wait(30)
        with numa.bound_to({cpu}, 0):
            thread = threading.Thread(target=inside)
            thread.start()
            started.wait(30)
            assert set(threads_cpus().values()) == {str(cpu)} and len(threads_cpus()) > 2
        after = threads_cpus()
        stop.set()
        thread.join()
        assert {task: after[task] for task in before if task in after} == before
        assert after[thread.native_id] == before[os.getpid()]  # started bound: given the process's own CPUs back


class TestFamily:
    def test_simulated_local_and_remote_say_their_nodes_and_distance(self):
        backend = SimBackend(load_spec(ROOT / "examples" / "sim-2gpu-pcie5-nvlink.toml"))
        infos = {where: numa_run.price(Concurrent("numa", f"h2d_{where}", "cpu", "cuda:1", MiB, ("cuda:1",)),
                                       Priced(backend), lambda: None).extra for where in ("local", "remote")}
        assert infos == {"local": {"host_numa_node": 1, "host_placement": "gpu_node", "numa_distance": 10},
                         "remote": {"host_numa_node": 0, "host_placement": "remote_node", "numa_distance": 21}}

    def test_a_buffer_with_a_page_elsewhere_is_spilled(self):
        assert numa_run.placed("remote", 0, 1, {1: 9, 0: 1}) == {"host_numa_node": 1, "host_placement": "spilled",
                                                               "numa_distance": numa.distance(0, 1)}

    def test_the_finding_names_the_nodes_and_the_distance_by_the_runs_rule(self):
        def row(variant, median, node, placement, far):
            return {"op": "numa", "variant": variant, "src": "cpu", "dst": "cuda:0", "nbytes": 256 * MiB,
                    "median_s": median, "host_numa_node": node, "host_placement": placement, "numa_distance": far}
        rows = pd.DataFrame([row("h2d_local", 5e-3, 0, "gpu_node", 10), row("h2d_remote", 8e-3, 1, "spilled", 21)])
        rows.attrs["ratio"] = lambda a, b: type("R", (), {"text": lambda self: f"{a['median_s'] / b['median_s']:.2f}x"})()
        assert FAMILIES["numa"].finding(rows) == [
            "h2d cpu->cuda:0 at 256 MiB: the buffer on node 1 (SLIT distance 21; spilled: a page of it sat on another "
            "node) took 1.60x the time of one on the GPU's node 0 (SLIT distance 10)."]
        rows.attrs.clear()  # no comparison rule given: both times, nothing compared
        assert FAMILIES["numa"].finding(rows) == [
            "h2d cpu->cuda:0 at 256 MiB: the buffer on node 1 (SLIT distance 21; spilled: a page of it sat on another "
            "node) took 8 ms, against 5 ms for one on the GPU's node 0 (SLIT distance 10)."]
        rows["numa_distance"] = None  # a run from before distances were recorded
        assert FAMILIES["numa"].finding(rows)[0].startswith("h2d cpu->cuda:0 at 256 MiB: the buffer on node 1 (spilled")
