import sys
import types

import pytest

from xferbench.analyze.model import link_peak
from xferbench.measure.machine import fingerprint

from fakes import FakeBackend


class NVMLError(Exception):
    pass


def fake_pynvml(links: int = 18) -> types.ModuleType:
    """Just enough of nvidia-ml-py to answer like one H200 SXM."""
    nvml = types.ModuleType("pynvml")
    nvml.NVMLError = NVMLError
    nvml.NVML_CLOCK_MEM = 2
    nvml.NVML_NVLINK_MAX_LINKS = 18
    nvml.calls = []
    nvml.nvmlInit = lambda: nvml.calls.append("init")
    nvml.nvmlShutdown = lambda: nvml.calls.append("shutdown")
    nvml.nvmlSystemGetDriverVersion = lambda: b"570.86.15"
    nvml.nvmlDeviceGetHandleByPciBusId = lambda bus: (_ for _ in ()).throw(NVMLError("no such bus"))
    nvml.nvmlDeviceGetHandleByIndex = lambda index: f"gpu{index}"
    nvml.nvmlDeviceGetCurrPcieLinkGeneration = lambda h: 1  # idle GPUs drop to Gen1
    nvml.nvmlDeviceGetCurrPcieLinkWidth = lambda h: 16
    nvml.nvmlDeviceGetMaxPcieLinkGeneration = lambda h: 5
    nvml.nvmlDeviceGetMaxPcieLinkWidth = lambda h: 16
    nvml.nvmlDeviceGetMemoryBusWidth = lambda h: 6144
    nvml.nvmlDeviceGetMaxClockInfo = lambda h, kind: 3201

    def state(handle, link):
        if link >= links:
            raise NVMLError("not supported")
        return 1
    nvml.nvmlDeviceGetNvLinkState = state
    nvml.nvmlDeviceGetNvLinkVersion = lambda h, link: 4
    return nvml


def test_without_nvml_links_are_unknown(monkeypatch):
    """No nvidia-ml-py: the fingerprint says so and leaves link facts empty."""
    monkeypatch.setitem(sys.modules, "pynvml", None)
    info = fingerprint(FakeBackend(gpus=2, peer=False))
    assert info["nvml"] is False and info["driver"] is None
    assert [d["name"] for d in info["devices"]] == ["Fake GPU 0", "Fake GPU 1"]
    assert info["devices"][0]["pcie_generation"] is None
    assert info["peer_access"] == [[False, False], [False, False]]


def test_with_nvml_link_facts_and_peaks(monkeypatch):
    """With NVML: driver, PCIe (current and max), NVLink links and version, memory peak."""
    nvml = fake_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    info = fingerprint(FakeBackend(gpus=1))
    device = info["devices"][0]
    assert info["driver"] == "570.86.15" and info["nvml"] is True
    assert (device["pcie_generation"], device["pcie_max_generation"], device["pcie_max_width"]) == (1, 5, 16)
    assert (device["nvlink_links"], device["nvlink_version"]) == (18, 4)
    assert device["memory_peak_gbps"] == pytest.approx(2 * 3201e6 * 6144 / 8 / 1e9)
    assert nvml.calls == ["init", "shutdown"]
    machine_info = {"xferbench": info}
    assert link_peak(machine_info, "h2d", "cpu", "cuda:0") == (pytest.approx(63.008), "PCIe Gen5 x16")
    assert link_peak(machine_info, "peer", "cuda:0", "cuda:1")[0] == 450.0
    assert link_peak(machine_info, "d2d", "cuda:0", "cuda:0")[0] == pytest.approx(4917, rel=0.001)
