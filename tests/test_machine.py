import sys
import types

import pytest
import torch

from xferbench.analyze.model import link_peak
from xferbench.measure.hardware import machine
from xferbench.measure.hardware.machine import (
    cache_resident,
    cpu_list,
    fingerprint,
    gpu_local_cpus,
    host_cache_bytes,
    parse_cpu_list,
)

from fakes import FakeBackend


class NVMLError(Exception):
    pass


BUS = "0000:18:00.0"


def props(index: int = 0, bus: int = 0x18, uuid: str | None = None, capability: tuple[int, int] = (9, 0),
          ) -> types.SimpleNamespace:
    """torch's device properties of one H200, as far as the fingerprint reads them."""
    return types.SimpleNamespace(total_memory=150_000_000_000, L2_cache_size=60 * 2**20, pci_domain_id=0,
                                 pci_bus_id=bus, pci_device_id=0, uuid=uuid, major=capability[0], minor=capability[1])


def to_switch(handle, link):
    return "switch"


def fake_pynvml(links: int = 18, version: int = 6, arch: int = 9, buses: tuple[str, ...] = (BUS,),
                uuids: tuple[str, ...] = (), remote=to_switch) -> types.ModuleType:
    """Just enough of nvidia-ml-py to answer like one H200 SXM, found only by PCI address or UUID."""
    nvml = types.ModuleType("pynvml")
    nvml.NVMLError = NVMLError
    nvml.NVML_CLOCK_SM = 1
    nvml.NVML_CLOCK_MEM = 2
    nvml.NVML_NVLINK_MAX_LINKS = 18
    nvml.calls = []
    nvml.nvmlInit = lambda: nvml.calls.append("init")
    nvml.nvmlShutdown = lambda: nvml.calls.append("shutdown")
    nvml.nvmlSystemGetDriverVersion = lambda: b"570.86.15"

    def by_bus(bus):
        if bus not in buses:
            raise NVMLError("no such bus")
        return f"gpu@{bus}"

    def by_uuid(uuid):
        if uuid not in uuids:
            raise NVMLError("no such uuid")
        return f"gpu@{uuid.decode()}"
    nvml.nvmlDeviceGetHandleByPciBusId = by_bus
    nvml.nvmlDeviceGetHandleByUUID = by_uuid
    nvml.nvmlDeviceGetHandleByIndex = lambda index: pytest.fail("NVML's index is not torch's: never match on it")
    nvml.nvmlDeviceGetCurrPcieLinkGeneration = lambda h: 1  # idle GPUs drop to Gen1
    nvml.nvmlDeviceGetCurrPcieLinkWidth = lambda h: 16
    nvml.nvmlDeviceGetMaxPcieLinkGeneration = lambda h: 5
    nvml.nvmlDeviceGetMaxPcieLinkWidth = lambda h: 16
    nvml.nvmlDeviceGetMemoryBusWidth = lambda h: 6144
    nvml.nvmlDeviceGetMaxClockInfo = lambda h, kind: {1: 1980, 2: 3201}[kind]
    nvml.nvmlDeviceGetClockInfo = lambda h, kind: {1: 1755, 2: 2619}[kind]
    nvml.nvmlDeviceGetArchitecture = lambda h: arch
    nvml.nvmlDeviceGetNumaNodeId = lambda h: 1
    nvml.nvmlDeviceGetCpuAffinity = lambda h, words: [0xFF00] + [0] * (words - 1)  # CPUs 8-15

    def state(handle, link):
        if link >= links:
            raise NVMLError("not supported")
        return 1
    nvml.nvmlDeviceGetNvLinkState = state
    nvml.nvmlDeviceGetNvLinkVersion = lambda h, link: version
    # What each link joins (``remote(handle, link)``): "switch", or the far GPU's bus id as NVML writes it.
    nvml.nvmlDeviceGetNvLinkRemoteDeviceType = lambda h, link: 2 if remote(h, link) == "switch" else 0
    nvml.nvmlDeviceGetNvLinkRemotePciInfo = lambda h, link: types.SimpleNamespace(busId=remote(h, link).encode())
    return nvml


def pair(info: dict) -> dict:
    """A fingerprint of one GPU as two alike (cuda:0 and cuda:1), for peer roofs."""
    first = info["devices"][0]
    return {"xferbench": {**info, "devices": [first, {**first, "device": "cuda:1", "pci_bus_id": "0000:3a:00.0"}]}}


@pytest.fixture
def h200(monkeypatch):
    """One H200 as torch describes it (device properties), whose memory_info must not be asked."""
    monkeypatch.setattr(machine, "cuda_properties", lambda backend, index: props(index))

    class NoContextBackend(FakeBackend):
        def memory_info(self, index):
            raise AssertionError("mem_get_info creates a CUDA context on every GPU; use device properties")
    return NoContextBackend(gpus=1)


def test_without_nvml_links_are_unknown(monkeypatch):
    """No nvidia-ml-py: the fingerprint says so and leaves link facts empty."""
    monkeypatch.setitem(sys.modules, "pynvml", None)
    info = fingerprint(FakeBackend(gpus=2, peer=False))
    assert info["nvml"] is False and info["driver"] is None
    assert [d["name"] for d in info["devices"]] == ["Fake GPU 0", "Fake GPU 1"]
    assert info["devices"][0]["pcie_generation"] is None
    assert info["peer_access"] == [[False, False], [False, False]]


def test_with_nvml_link_facts_and_peaks(monkeypatch, h200):
    """With NVML: driver, PCIe (current and max), NVLink links and generation, NUMA, memory peak."""
    nvml = fake_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    monkeypatch.setattr(machine, "_process_cpus", lambda: {8, 9})
    info = fingerprint(h200)
    device = info["devices"][0]
    assert info["driver"] == "570.86.15" and info["nvml"] is True
    assert (device["pcie_generation"], device["pcie_max_generation"], device["pcie_max_width"]) == (1, 5, 16)
    assert (device["nvlink_links"], device["nvlink_version"]) == (18, "4.0")
    assert device["memory_peak_gbps"] == pytest.approx(2 * 3201e6 * 6144 / 8 / 1e9)
    assert (device["memory_bytes"], device["l2_cache_bytes"], device["pci_bus_id"]) == (150_000_000_000, 60 * 2**20, BUS)
    assert (device["numa_node"], device["cpu_affinity"], device["host_numa_local"]) == (1, "8-15", True)
    assert (device["sm_clock_max_mhz"], device["memory_clock_max_mhz"]) == (1980, 3201)
    assert nvml.calls == ["init", "shutdown"]
    machine_info = {"xferbench": info}
    assert link_peak(machine_info, "h2d", "cpu", "cuda:0") == (pytest.approx(63.008), "PCIe Gen5 x16")
    assert device["nvlink_remote"] == {"nvswitch": 18}
    assert link_peak(pair(info), "peer", "cuda:0", "cuda:1") == (450.0, "NVLink 4.0 x18 links (via NVSwitch)")


def test_same_device_copy_is_held_against_half_the_memory_peak(monkeypatch, h200):
    """A copy reads and writes each byte: bytes counted once reach at most half the HBM peak."""
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    peak, name = link_peak({"xferbench": fingerprint(h200)}, "d2d", "cuda:0", "cuda:0")
    assert peak == pytest.approx(4917 / 2, rel=0.001)
    assert "shared by a copy's read and write: 2,458 each" in name


def test_process_outside_the_gpus_node_is_stated(monkeypatch, h200):
    """A process allowed on CPUs of another node may place host buffers there: the fingerprint says so."""
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    monkeypatch.setattr(machine, "_process_cpus", lambda: set(range(16)))
    assert fingerprint(h200)["devices"][0]["host_numa_local"] is False


def test_numa_from_sysfs_without_nvml(monkeypatch, h200, tmp_path):
    """No NVML: the GPU's node and CPUs still come from sysfs, and a process on other CPUs is stated."""
    monkeypatch.setitem(sys.modules, "pynvml", None)
    (tmp_path / BUS).mkdir()
    (tmp_path / BUS / "numa_node").write_text("1\n")
    (tmp_path / BUS / "local_cpulist").write_text("8-15\n")
    monkeypatch.setattr(machine, "SYSFS_PCI", tmp_path)
    monkeypatch.setattr(machine, "_process_cpus", lambda: {0, 8})
    device = fingerprint(h200)["devices"][0]
    assert (device["numa_node"], device["cpu_affinity"], device["host_numa_local"]) == (1, "8-15", False)


# nvmlNvlinkVersion_t (nvml.h): the enum, then the generation and the per-direction peak of 18 links.
@pytest.mark.parametrize(("enum", "generation", "peak"), [
    (1, "1.0", 18 * 20.0), (2, "2.0", 18 * 25.0), (3, "2.2", 18 * 25.0), (4, "3.0", 18 * 25.0),
    (5, "3.1", 18 * 14.0625), (6, "4.0", 450.0), (7, "5.0", 18 * 50.0), (8, "6.0", None), (0, None, None),
])
def test_nvlink_generation_by_enum(monkeypatch, h200, enum, generation, peak):
    """Each NVML version code maps to its NVLink generation and that generation's link speed."""
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(version=enum, arch=10))
    info = pair(fingerprint(h200))
    assert info["xferbench"]["devices"][0]["nvlink_version"] == generation
    found = link_peak(info, "peer", "cuda:0", "cuda:1")
    assert (found and found[0]) == (peak and pytest.approx(peak))
    if found:
        assert found[1] == f"NVLink {generation} x18 links (via NVSwitch)"


def test_a_bare_generation_number_reads_as_that_generation():
    """A simulated machine's spec writes nvlink_version = 4: NVLink 4.0, 25 GB/s per link, every pair alike."""
    devices = [{"device": f"cuda:{i}", "nvlink_links": 18, "nvlink_version": 4} for i in range(2)]
    info = {"xferbench": {"devices": devices, "simulated": {"name": "spec"}}}
    assert link_peak(info, "peer", "cuda:0", "cuda:1") == (450.0, "NVLink 4.0 x18 links (the simulated spec's, every pair)")
    del info["xferbench"]["simulated"]  # a real run's fingerprint without the pair's links: unknown
    assert link_peak(info, "peer", "cuda:0", "cuda:1") is None


#: Four GPUs joined as a V100 hybrid cube mesh is, in part: 0-1 by one link, 0-3 by two, 0-2 by none.
MESH = {"0000:18:00.0": ["0000:3a:00.0", "0000:5d:00.0", "0000:5d:00.0"],
        "0000:3a:00.0": ["0000:18:00.0"], "0000:4b:00.0": [], "0000:5d:00.0": ["0000:18:00.0", "0000:18:00.0"]}


def test_the_peer_roof_counts_the_links_between_the_pair(monkeypatch):
    """Each pair is held against its own links (NVLink remote PCI info), not all of the source GPU's; a pair
    with none (it crosses PCIe) has no NVLink roof: unknown."""
    buses = tuple(MESH)
    monkeypatch.setattr(machine, "cuda_properties", lambda b, i: props(bus=int(buses[i][5:7], 16), capability=(7, 0)))
    ends = {f"gpu@{bus}": ["00000000:" + far[5:].upper() for far in fars] for bus, fars in MESH.items()}
    nvml = fake_pynvml(version=2, buses=buses, remote=lambda h, link: ends[h][link])
    nvml.nvmlDeviceGetNvLinkState = lambda h, link: 1 if link < len(ends[h]) else (_ for _ in ()).throw(NVMLError())
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    info = {"xferbench": fingerprint(FakeBackend(gpus=4))}
    assert info["xferbench"]["devices"][0]["nvlink_remote"] == {"0000:3a:00.0": 1, "0000:5d:00.0": 2}
    assert link_peak(info, "peer", "cuda:0", "cuda:3") == (50.0, "NVLink 2.0 x2 links (to cuda:3)")
    assert link_peak(info, "peer", "cuda:0", "cuda:1") == (25.0, "NVLink 2.0 x1 links (to cuda:1)")
    assert link_peak(info, "peer", "cuda:0", "cuda:2") is None
    assert link_peak(info, "peer", "cuda:2", "cuda:0") is None


@pytest.mark.parametrize(("capability", "links", "peak"), [((8, 6), 4, 56.25), ((8, 0), 12, 300.0)])
def test_nvlink_3_1_is_read_by_compute_capability(monkeypatch, capability, links, peak):
    """NVML calls both A100 (sm_80) and GA10x's bridges (sm_86) NVLink "3.1": GA102's x4 links carry 14.0625 GB/s
    each way (four: 56.25 GB/s), A100's 25 GB/s (twelve: 300)."""
    monkeypatch.setattr(machine, "cuda_properties", lambda b, i: props(capability=capability))
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(links=links, version=5, arch=7))
    info = pair(fingerprint(FakeBackend(gpus=1)))
    assert link_peak(info, "peer", "cuda:0", "cuda:1")[0] == pytest.approx(peak)
    del info["xferbench"]["devices"][0]["compute_capability"]
    assert link_peak(info, "peer", "cuda:0", "cuda:1") is None


def test_hopper_reported_as_nvlink5_is_nvlink4(monkeypatch, h200):
    """Some drivers report 5.0 on Hopper, which has NVLink 4: its peak stays 450 GB/s."""
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(version=7, arch=9))
    info = pair(fingerprint(h200))
    assert info["xferbench"]["devices"][0]["nvlink_version"] == "4.0"
    assert link_peak(info, "peer", "cuda:0", "cuda:1")[0] == 450.0


class TestMatchingNvmlToTorch:
    def test_by_uuid_when_the_pci_address_is_unknown(self, monkeypatch):
        """torch gives no PCI address that NVML knows: the UUID still finds the GPU."""
        monkeypatch.setattr(machine, "cuda_properties", lambda b, i: props(bus=0x99, uuid="abc-123"))
        monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(uuids=(b"GPU-abc-123",)))
        assert fingerprint(FakeBackend(gpus=1))["devices"][0]["nvlink_version"] == "4.0"

    def test_unmatched_gpu_is_unknown_not_another_gpus(self, monkeypatch):
        """CUDA_VISIBLE_DEVICES reorders GPUs: with no PCI or UUID match, the facts stay unknown."""
        monkeypatch.setattr(machine, "cuda_properties", lambda b, i: props(bus=0x99))
        monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
        device = fingerprint(FakeBackend(gpus=1))["devices"][0]
        assert (device["pcie_max_generation"], device["nvlink_version"], device["memory_peak_gbps"]) == (None, None, None)

    def test_each_gpu_gets_its_own_handle(self, monkeypatch):
        """Two GPUs listed by torch in the reverse of NVML's order each get their own facts."""
        monkeypatch.setattr(machine, "cuda_properties", lambda b, i: props(bus=(0x18, 0x3A)[1 - i]))
        nvml = fake_pynvml(buses=("0000:18:00.0", "0000:3a:00.0"))
        nvml.nvmlDeviceGetMaxPcieLinkGeneration = lambda h: 5 if h.endswith("18:00.0") else 4
        monkeypatch.setitem(sys.modules, "pynvml", nvml)
        devices = fingerprint(FakeBackend(gpus=2))["devices"]
        assert [d["pcie_max_generation"] for d in devices] == [4, 5]


class TestCaches:
    def test_host_caches_from_sysfs(self, tmp_path):
        """cpu0's data and unified caches by level (not the instruction cache), and the last level
        summed over the distinct instances the process's CPUs sit on (two L3 slices here)."""
        for i, (level, kind, size) in enumerate([(1, "Data", "48K"), (1, "Instruction", "32K"),
                                                 (2, "Unified", "2048K"), (3, "Unified", "105M")]):
            folder = tmp_path / "cpu0" / "cache" / f"index{i}"
            folder.mkdir(parents=True)
            (folder / "level").write_text(f"{level}\n")
            (folder / "type").write_text(f"{kind}\n")
            (folder / "size").write_text(f"{size}\n")
        for cpu, shared in ((0, "0-1"), (1, "0-1"), (2, "2-3")):
            folder = tmp_path / f"cpu{cpu}" / "cache" / "index3"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "shared_cpu_list").write_text(f"{shared}\n")
        assert host_cache_bytes(tmp_path, cpus={0, 1, 2}) == {"L1d": 48 * 2**10, "L2": 2 * 2**20, "L3": 105 * 2**20,
                                                              "L3_all": 2 * 105 * 2**20}
        assert host_cache_bytes(tmp_path, cpus={0, 1})["L3_all"] == 105 * 2**20
        assert host_cache_bytes(tmp_path / "missing") is None

    def test_fingerprint_keys(self, monkeypatch, h200):
        """The keys the report reads: host.cache_bytes and each device's l2_cache_bytes."""
        monkeypatch.setitem(sys.modules, "pynvml", None)
        monkeypatch.setattr(machine, "host_cache_bytes", lambda: {"L1d": 1, "L2": 2, "L3": 3})
        info = fingerprint(h200)
        assert info["host"]["cache_bytes"] == {"L1d": 1, "L2": 2, "L3": 3}
        assert info["devices"][0]["l2_cache_bytes"] == 60 * 2**20

    @pytest.mark.parametrize(("op", "src", "dst", "nbytes", "resident"), [
        ("host", "cpu", "cpu", 16 * 2**20, True),       # a copy of 16 MiB reads and writes 32 MiB: a 32 MiB L3
        ("host", "cpu", "cpu", 16 * 2**20 + 4, False),  # (a reading found 256 MiB marked beside a 300 MiB cache)
        ("create", "cpu", "cpu", 32 * 2**20, True),     # creation writes its payload alone
        ("create", "cpu", "cpu", 32 * 2**20 + 4, False),
        ("d2d", "cuda:0", "cuda:0", 25 * 2**20, True),  # 50 MiB touched in a 50 MiB L2
        ("d2d", "cuda:0", "cuda:0", 32 * 2**20, False),
        ("peer", "cuda:0", "cuda:1", 20 * 2**20, True),  # the source's L2
        ("peer", "cuda:0", "cuda:1", 40 * 2**20, False),
        ("create", "cuda:0", "cuda:0", 50 * 2**20, True),
        ("create", "cuda:0", "cuda:0", 64 * 2**20, False),
        ("h2d", "cpu", "cuda:0", 4, None),              # PCIe-bound: no cache applies
        ("d2h", "cuda:0", "cpu", 4, None),
        ("noop", "cpu", "cpu", 4, None),
        ("d2d", "cuda:1", "cuda:1", 4, None),           # its L2 is unknown
    ])
    def test_cache_resident(self, op, src, dst, nbytes, resident):
        """Resident when the bytes it touches fit the cache that serves it; unknown where none applies or is known."""
        info = {"op": op, "src": src, "dst": dst, "nbytes": nbytes}
        assert cache_resident(info, {"L1d": 48 * 2**10, "L3": 32 * 2**20}, {"cuda:0": 50 * 2**20, "cuda:1": None}) \
            is resident


def test_cpu_lists_round_trip(tmp_path):
    assert parse_cpu_list("0-3,8,10-11\n") == {0, 1, 2, 3, 8, 10, 11}
    assert cpu_list({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11"
    (tmp_path / BUS).mkdir()
    (tmp_path / BUS / "local_cpulist").write_text("0-55,112-167\n")
    assert gpu_local_cpus(BUS, tmp_path) == set(range(56)) | set(range(112, 168))
    assert gpu_local_cpus(None, tmp_path) is None


class TestHostAllocationFacts:
    """What explains a fresh host allocation's cost: THP mode, glibc, torch's threads."""

    @pytest.mark.parametrize(("text", "mode"), [("always [madvise] never\n", "madvise"),
                                                ("[always] madvise never\n", "always"), ("garbled\n", None)])
    def test_transparent_hugepage_mode_is_the_bracketed_one(self, tmp_path, text, mode):
        (tmp_path / "enabled").write_text(text)
        assert machine.transparent_hugepage(tmp_path / "enabled") == mode
        assert machine.transparent_hugepage(tmp_path / "missing") is None

    def test_glibc_version_from_confstr_else_libc_ver(self, monkeypatch):
        monkeypatch.setattr(machine.os, "confstr", lambda name: "glibc 2.36", raising=False)
        assert machine.glibc_version() == "2.36"
        monkeypatch.setattr(machine.os, "confstr", lambda name: None, raising=False)
        monkeypatch.setattr(machine.platform, "libc_ver", lambda: ("glibc", "2.31"))
        assert machine.glibc_version() == "2.31"
        monkeypatch.setattr(machine.platform, "libc_ver", lambda: ("", ""))
        assert machine.glibc_version() is None

    def test_in_the_fingerprint(self, monkeypatch):
        import torch

        monkeypatch.setitem(sys.modules, "pynvml", None)
        monkeypatch.setattr(machine, "transparent_hugepage", lambda: "never")
        monkeypatch.setattr(machine, "glibc_version", lambda: "2.99")
        monkeypatch.setattr(torch, "get_num_threads", lambda: 7)
        host = fingerprint(FakeBackend(gpus=0))["host"]
        assert (host["transparent_hugepage"], host["glibc"], host["torch_threads"]) == ("never", "2.99", 7)


class TestRocm:
    def test_the_report_says_not_recorded(self, monkeypatch, h200):
        """On ROCm NVML knows nothing and no other library is read: the driver and PCIe link are not recorded."""
        from xferbench.machine_facts import machine_table

        monkeypatch.setattr(torch.version, "hip", "6.2.41133")
        info = fingerprint(h200)
        assert info["driver"] is None and info["devices"][0]["pcie_max_generation"] is None
        assert dict(machine_table({"xferbench": info}))["driver"] == "not recorded"


def test_all_gpus_clocks_are_read_from_the_gpus_measured():
    """A call on every GPU at once (all:cuda) records the clocks of the GPUs it used (the lowest of them), never
    GPU 0's when GPU 0 was not measured; without the list of GPUs, none."""
    from xferbench.measure.session.run_state import RunState, annotate

    clocks = {"gpu0": 1980, "gpu1": 1410, "gpu2": 1755}
    nvml = types.SimpleNamespace(NVMLError=RuntimeError, NVML_CLOCK_SM=1, NVML_CLOCK_MEM=2,
                                 nvmlDeviceGetClockInfo=lambda h, kind: clocks[h] if kind == 1 else 2619,
                                 nvmlDeviceGetCurrPcieLinkGeneration=lambda h: 5,
                                 nvmlDeviceGetCurrPcieLinkWidth=lambda h: 16 if h != "gpu2" else 8)
    state = RunState(None, {}, nvml, {0: "gpu0", 1: "gpu1", 2: "gpu2"})
    info = {"op": "all_gpus_host", "src": "cpu", "dst": "all:cuda", "nbytes": 2**26}
    annotate(info, state, ("cuda:2",))
    assert (info["sm_clock_mhz"], info["pcie_width_now"]) == (1755, 8)
    annotate(info, state, ("cuda:1", "cuda:2"))
    assert (info["sm_clock_mhz"], info["pcie_width_now"]) == (1410, 8)
    bare = {"op": "all_gpus_host", "src": "all:cuda", "dst": "cpu", "nbytes": 2**26}
    annotate(bare, state)
    assert "sm_clock_mhz" not in bare
    one = {"op": "h2d", "src": "cpu", "dst": "cuda:1", "nbytes": 2**26}
    annotate(one, state)
    assert one["sm_clock_mhz"] == 1410
