"""A real box's GPU pairs get link classes from NVML, so the peer plan's default follows the
topology (--xfer-peer-pairs): faked libraries, no GPU."""

import sys
import types

import pytest

from xferbench.measure.cases import peer_plan
from xferbench.measure.hardware import probe
from xferbench.measure.hardware.devices import TorchBackend
from xferbench.measure.hardware.topology import link_classes
from xferbench.measure.session import plugin

from fakes import NO_PERMISSION, FakeBackend, gpu_props, nvml_box

BUSES = [0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB]
EIGHT = [f"cuda:{i}" for i in range(8)]


class Backend(FakeBackend):
    """A fake GPU runtime whose peer access is ``peer(i, j)``, its links read as the real backend reads them."""

    def __init__(self, gpus: int, peer=lambda i, j: True, rocm: bool = False) -> None:
        super().__init__(gpus)
        self.peer_of, self.rocm = peer, rocm

    def can_access_peer(self, src: int, dst: int) -> bool:
        return self.peer_of(src, dst)

    def peer_link_classes(self, gpus):
        return link_classes(self, gpus, self.rocm)


def torch_backend(hip: str | None = None) -> TorchBackend:
    """The real backend's class around a torch that has GPUs (none needed: its link code reads NVML/amdsmi)."""
    backend = TorchBackend.__new__(TorchBackend)
    backend._torch = types.SimpleNamespace(version=types.SimpleNamespace(hip=hip),
                                           cuda=types.SimpleNamespace(can_device_access_peer=lambda i, j: True))
    backend.type = "cuda"
    return backend


@pytest.fixture(autouse=True)
def gpus_at_buses(monkeypatch):
    """torch's properties of GPU i: PCI bus BUSES[i] (what NVML and amdsmi are matched on)."""
    monkeypatch.setattr(probe, "cuda_properties", lambda backend, index: gpu_props(BUSES[index]))


def nvswitch_box() -> types.ModuleType:
    return nvml_box(BUSES, ends=lambda gpu, link: "switch", level=lambda a, b: 50)


def socket(gpu: int) -> int:
    return gpu // 4


def pcie_two_sockets(**kwargs) -> types.ModuleType:
    """Eight PCIe GPUs, two per switch, four per socket: same switch (PIX), across switches of one node
    (NODE), across sockets (SYS)."""
    def level(a: int, b: int) -> int:
        return 10 if a // 2 == b // 2 else 40 if socket(a) == socket(b) else 50
    return nvml_box(BUSES, ends=lambda gpu, link: None, level=level, **kwargs)


def classes_of(backend, gpus=EIGHT):
    return backend.peer_link_classes(list(gpus))


class TestNvidia:
    def test_nvswitch_box_is_one_class_and_defaults_to_one_pair_per_class(self, monkeypatch):
        monkeypatch.setitem(sys.modules, "pynvml", nvswitch_box())
        classes = classes_of(torch_backend())
        assert set(classes.values()) == {"NVLink 4.0 x18 via NVSwitch"} and len(classes) == 56
        plan = peer_plan(EIGHT, classes)
        assert plan.mode == "one-per-class" and len(plan.swept) == 1
        assert "every pair's link is known (NVLink 4.0 x18 via NVSwitch)" in plan.reason

    def test_the_plugin_plans_a_real_box_from_its_topology(self, monkeypatch):
        """What pytest_configure asks: the real backend's classes choose the default (before: every pair)."""
        monkeypatch.setitem(sys.modules, "pynvml", nvswitch_box())
        config = types.SimpleNamespace(getoption=lambda name: None)
        assert plugin._peer_plan(config, torch_backend(), ["cpu", *EIGHT]).mode == "one-per-class"

    def test_pcie_box_on_two_sockets_has_three_classes(self, monkeypatch):
        monkeypatch.setitem(sys.modules, "pynvml", pcie_two_sockets())
        classes = classes_of(Backend(8))
        assert classes["cuda:0", "cuda:1"] == "PCIe same switch (PIX)"
        assert classes["cuda:0", "cuda:2"] == "PCIe across host bridges of one NUMA node (NODE)"
        assert classes["cuda:0", "cuda:4"] == "PCIe across sockets (SYS)"
        plan = peer_plan(EIGHT, classes)
        assert plan.mode == "one-per-class"
        assert plan.swept == {("cuda:0", "cuda:1"), ("cuda:0", "cuda:2"), ("cuda:0", "cuda:4")}

    def test_pairs_without_peer_access_are_a_class_of_their_own(self, monkeypatch):
        """A pair torch copies through host memory costs what the host path costs, not what its switch allows."""
        monkeypatch.setitem(sys.modules, "pynvml", pcie_two_sockets())
        classes = classes_of(Backend(8, peer=lambda i, j: socket(i) == socket(j)))
        assert classes["cuda:0", "cuda:4"] == "PCIe across sockets (SYS), no peer access"
        assert classes["cuda:0", "cuda:1"] == "PCIe same switch (PIX)"

    def test_direct_nvlinks_count_per_pair(self, monkeypatch):
        """Four GPUs in a ring of NVLink bridges: each joined to its neighbours by 4 links, the others over PCIe."""
        def ends(gpu, link):
            return str((gpu + (1 if link < 4 else -1)) % 4) if link < 8 else None
        monkeypatch.setitem(sys.modules, "pynvml", nvml_box(BUSES[:4], ends=ends, level=lambda a, b: 30, version=4))
        classes = classes_of(Backend(4), EIGHT[:4])
        assert classes["cuda:0", "cuda:1"] == classes["cuda:0", "cuda:3"] == "NVLink 3.0 x4 direct"
        assert classes["cuda:0", "cuda:2"] == "PCIe across host bridge (PHB)"

    def test_nvswitch_links_an_older_driver_names_by_address_are_unknown_not_pcie(self, monkeypatch):
        """Without the far end's device type every link goes to "a PCI address" (the NVSwitch's): no link
        joins the pair by that map, yet NVML's NVLink peer status says one does: unknown, never PCIe."""
        nvml = nvml_box(BUSES, ends=lambda gpu, link: "switch", level=lambda a, b: 50, switch_type=False)
        monkeypatch.setitem(sys.modules, "pynvml", nvml)
        classes = classes_of(Backend(8))
        assert set(classes.values()) == {None}
        assert "NVML does not say which NVLinks join cuda:0 and cuda:1" in peer_plan(EIGHT, classes).reason

    def test_an_nvml_failure_makes_its_pair_unknown_and_every_pair_swept(self, monkeypatch):
        """NO_PERMISSION on one pair's topology query: that pair unknown, never a crash; the plan says why."""
        def denied(a, b):
            return NO_PERMISSION if {a, b} == {0, 5} else None
        monkeypatch.setitem(sys.modules, "pynvml", pcie_two_sockets(ancestor_error=denied))
        classes = classes_of(Backend(8))
        assert classes["cuda:0", "cuda:5"] is None and classes["cuda:5", "cuda:0"] is None
        assert classes["cuda:0", "cuda:4"] == "PCIe across sockets (SYS)"
        plan = peer_plan(EIGHT, classes)
        assert plan.mode == "all" and len(plan.swept) == 56
        assert plan.reason == ("default: the link of 2 of 56 GPU pairs is unknown (cuda:0->cuda:5: "
                               "nvmlDeviceGetTopologyCommonAncestor: Insufficient Permissions), every pair swept")

    def test_nvlinks_nvml_may_not_read_are_unknown_not_absent(self, monkeypatch):
        """NO_PERMISSION on the first NVLink query is not "no NVLink": the pairs are unknown."""
        nvml = pcie_two_sockets(state_error=NO_PERMISSION)
        monkeypatch.setitem(sys.modules, "pynvml", nvml)
        classes = classes_of(Backend(8))
        # The fingerprint's nvlink_remote is unknown (None) too, so the peer roof is not known rather than "no NVLink".
        assert probe.nvlinks(nvml, 0) == (0, None, None)
        assert probe.nvlinks(pcie_two_sockets(), 0) == (0, None, {})
        assert set(classes.values()) == {None}
        assert "NVML cannot tell where the NVLinks of cuda:0 go" in peer_plan(EIGHT, classes).reason

    def test_without_nvml_every_pair_is_unknown(self, monkeypatch):
        monkeypatch.setitem(sys.modules, "pynvml", None)
        classes = classes_of(Backend(8))
        assert set(classes.values()) == {None}
        assert "no NVML" in peer_plan(EIGHT, classes).reason

    def test_a_gpu_nvml_does_not_know_is_unknown(self, monkeypatch):
        monkeypatch.setitem(sys.modules, "pynvml", nvml_box(BUSES[:2], ends=lambda gpu, link: "switch", level=lambda a, b: 50))
        classes = classes_of(Backend(3), EIGHT[:3])
        assert classes["cuda:0", "cuda:1"] == "NVLink 4.0 x18 via NVSwitch" and classes["cuda:0", "cuda:2"] is None


class TestRocm:
    def test_every_pair_is_unknown_and_swept(self):
        """No library's links are read on ROCm: every pair unknown, with why, so the plan sweeps them all."""
        classes = classes_of(torch_backend(hip="6.2"))
        assert set(classes.values()) == {None}
        plan = peer_plan(EIGHT, classes)
        assert plan.mode != "one-per-class" and "the links of ROCm GPUs are not read" in plan.reason
