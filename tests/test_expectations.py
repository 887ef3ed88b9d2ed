import json

import pytest

from xferbench.analyze.expectations import check
from xferbench.analyze.results import load
from xferbench.cli import main
from xferbench.measure.cases import Case

MiB = 2**20
MACHINE = {"xferbench": {"devices": [{"device": "cuda:0", "name": "GPU", "pcie_max_generation": 5,
                                      "pcie_max_width": 16}]}}


def bench(case: Case, seconds: float, device_seconds: float | None = None) -> dict:
    stats = {k: seconds for k in ("min", "max", "mean", "median", "q1", "q3")} | {
        "iqr": 0.0, "stddev": 0.0, "rounds": 5, "iterations": 1, "data": [seconds] * 5}
    info = case.extra_info() | {"clock": "wall+sync", "device_seconds": device_seconds}
    return {"name": case.id, "extra_info": info, "stats": stats}


def gpu_run(tmp_path, *, pinned_s=0.0025, pageable_d2h_s=0.02, d2d_s=0.0001, noop_methods=("to", "cuda"),
            device_s=0.002):
    """A hand-fed 64 MiB GPU run: times in seconds for each path."""
    size = (16 * MiB,)  # float32 elements: 64 MiB
    cases = [
        bench(Case("h2d", "copy_", "cpu", "cuda:0", size, host_memory="pinned"), pinned_s, device_s),
        bench(Case("h2d", "to", "cpu", "cuda:0", size, host_memory="pageable"), 0.006, 0.0023),
        bench(Case("d2h", "cpu", "cuda:0", "cpu", size, host_memory="pageable"), pageable_d2h_s, 0.0024),
        bench(Case("d2h", "copy_", "cuda:0", "cpu", size, host_memory="pinned"), 0.0026, 0.0025),
        bench(Case("d2d", "copy_", "cuda:0", "cuda:0", size), d2d_s, d2d_s * 0.9),
        bench(Case("noop", "to", "cpu", "cpu", (1,)), 3e-7),
        bench(Case("noop", "cpu", "cpu", "cpu", (1,)), 2e-7),
    ] + [bench(Case("noop", m, "cuda:0", "cuda:0", (1,)), 1e-6) for m in noop_methods]
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps({"machine_info": MACHINE, "benchmarks": cases}))
    return path


def verdicts(path):
    return {v.name: (v.status, v.detail) for v in check(load([path]))}


def test_all_held_with_figures(tmp_path):
    """A run that shows every expectation: each held, with its figures; efficiency as a figure."""
    result = verdicts(gpu_run(tmp_path))
    assert result["pinned host-to-device beats pageable at 64 MiB and above"] == (
        "held", "64 MiB -> cuda:0: pinned 26.8 GB/s, pageable 11.2 GB/s")
    assert result["same-device copies beat host-to-device by at least 10x"] == (
        "held", "at 64 MiB: d2d 671.1 GB/s, best h2d 26.8 GB/s (25.0x)")
    assert result["device-to-host into pageable memory is the slowest path at large sizes"][0] == "held"
    assert result["every no-op returned the same object"] == ("held", "4 no-op benchmarks passed their identity check")
    assert result["device time never exceeds wall time"][0] == "held"
    assert result["pinned host-to-device bandwidth against the link's theoretical peak"] == (
        "figure", "best 26.8 GB/s (h2d pinned copy_ cpu->cuda:0, 64 MiB) = 43% of PCIe Gen5 x16's 63 GB/s")


@pytest.mark.parametrize(("change", "name"), [
    ({"pinned_s": 0.01}, "pinned host-to-device beats pageable at 64 MiB and above"),
    ({"d2d_s": 0.001}, "same-device copies beat host-to-device by at least 10x"),
    ({"pageable_d2h_s": 0.003}, "device-to-host into pageable memory is the slowest path at large sizes"),
    ({"noop_methods": ("to",)}, "every no-op returned the same object"),
    ({"device_s": 0.003}, "device time never exceeds wall time"),
])
def test_each_can_fail(tmp_path, change, name):
    """Each expectation turns 'not held' when the run contradicts it, and the command exits 1."""
    path = gpu_run(tmp_path, **change)
    assert verdicts(path)[name][0] == "not held"
    assert main(["check", str(path)]) == 1


def test_cpu_run_is_not_measured(capsys):
    """On the CPU sample the GPU expectations are 'not measured', and the command exits 0."""
    from pathlib import Path

    assert main(["check", str(Path(__file__).parent / "data" / "cpu-sample.json")]) == 0
    assert capsys.readouterr().out.count("not measured") == 10


@pytest.mark.parametrize(("device_s", "status"), [(0.0025 * 1.04, "held"), (0.0025 * 1.06, "not held")])
def test_device_time_within_a_stated_tolerance_of_wall(tmp_path, device_s, status):
    """Device and wall medians come from different calls: 4% above wall is noise, 6% is not; the detail says so."""
    state, detail = verdicts(gpu_run(tmp_path, device_s=device_s))["device time never exceeds wall time"]
    assert state == status
    assert "by more than 5%" in detail and "different calls" in detail
    assert detail.startswith("0 of" if status == "held" else "1 of")


def concurrent_run(tmp_path):
    """A hand-fed two-GPU run of the concurrent families at 64 MiB per payload, with run-time clocks."""
    from xferbench.measure.concurrent import Concurrent

    gpus = ("cuda:0", "cuda:1")
    timed = [
        (Concurrent("bidir", "h2d", "cpu", "cuda:0", 64 * MiB, gpus[:1]), 0.0025),
        (Concurrent("bidir", "d2h", "cuda:0", "cpu", 64 * MiB, gpus[:1]), 0.003),
        (Concurrent("bidir", "h2d+d2h", "cpu", "cuda:0", 64 * MiB, gpus[:1]), 0.0028),  # 128 MiB summed
        (Concurrent("all_gpus_host", "h2d_one", "cpu", "cuda:0", 64 * MiB, gpus[:1]), 0.0025),
        (Concurrent("all_gpus_host", "h2d_all", "cpu", "all:cuda", 64 * MiB, gpus), 0.004),
        (Concurrent("copy_kind", "memcpy", "cpu", "cuda:0", 64 * MiB, gpus[:1]), 0.0025),
        (Concurrent("copy_kind", "strided", "cpu", "cuda:0", 64 * MiB, gpus[:1]), 0.01),
        (Concurrent("copy_kind", "convert", "cpu", "cuda:0", 64 * MiB, gpus[:1]), 0.005),
        (Concurrent("numa", "h2d_local", "cpu", "cuda:0", 64 * MiB, gpus[:1]), 0.0025),
        (Concurrent("numa", "h2d_remote", "cpu", "cuda:0", 64 * MiB, gpus[:1]), 0.0035),
    ]
    benches = []
    for case, seconds in timed:
        stats = {k: seconds for k in ("min", "max", "mean", "median", "q1", "q3")} | {
            "iqr": 0.0, "stddev": 0.0, "rounds": 5, "iterations": 1, "data": [seconds] * 5}
        info = case.extra_info() | {"clock": "wall+sync", "sm_clock_mhz": 1755, "memory_clock_mhz": 2619,
                                    "pcie_generation_now": 5, "pcie_width_now": 16}
        benches.append({"name": case.id, "extra_info": info, "stats": stats})
    benches[0]["extra_info"] |= {"sm_clock_mhz": 1410, "pcie_generation_now": 1}
    machine = {"xferbench": {"devices": [{"device": "cuda:0", "sm_clock_max_mhz": 1980}]}}
    path = tmp_path / "concurrent.json"
    path.write_text(json.dumps({"machine_info": machine, "benchmarks": benches}))
    return path


def test_concurrent_families_as_figures(tmp_path):
    """Each concurrent family is summed up against its reference variant, with the figures a user compares."""
    result = verdicts(concurrent_run(tmp_path))
    assert result["both directions at once against one (bidir)"] == (
        "figure", "64 MiB each way: h2d+d2h 47.9 GB/s summed = 1.79x the faster direction alone (h2d 26.8, d2h 22.4)")
    assert result["every GPU and the host at once against one GPU (all_gpus_host)"] == (
        "figure", "64 MiB per GPU: h2d: all at once 33.6 GB/s summed = 1.25x one GPU's 26.8")
    assert result["kernel and staged copies against one DMA / memcpy (copy_kind)"] == (
        "figure", "at 64 MiB: cpu->cuda:0: memcpy 26.8 GB/s, strided 0.25x, convert 0.50x")
    assert result["host buffer on another NUMA node against the GPU's own (numa)"] == (
        "figure", "h2d: remote 19.2 GB/s = 0.71x local 26.8")
    assert result["GPU clocks and PCIe link while measuring"] == (
        "figure", "SM clock 1410-1755 MHz (max 1980), memory clock 2619-2619 MHz over 10 cases; "
                  "PCIe right after timing: Gen1 x16 in 1, Gen5 x16 in 9")
    assert main(["check", str(concurrent_run(tmp_path))]) == 0  # figures never fail a run
