import json

import pytest

from xferbench.analyze.gate.expectations import (
    Verdict,
    all_gpus_scaling,
    bidirectional_duplex,
    check,
    clocks_and_link_at_run_time,
    copy_kind_cost,
    d2h_pageable_slowest,
    device_within_wall,
    noops_same_object,
    numa_penalty,
    peer_duplex,
    peer_ring,
    pinned_beats_pageable,
    pinned_link_efficiency,
    same_device_10x,
)
from xferbench.analyze.load.results import load
from xferbench.cli import main
from xferbench.measure.cases import Case

MiB = 2**20
MACHINE = {"xferbench": {"devices": [{"device": "cuda:0", "name": "GPU", "pcie_max_generation": 5,
                                      "pcie_max_width": 16}]}}


def bench(case: Case, seconds: float, device_seconds: float | None = None) -> dict:
    stats = {k: seconds for k in ("min", "max", "mean", "median", "q1", "q3")} | {
        "iqr": 0.0, "stddev": 0.0, "rounds": 5, "iterations": 1, "data": [seconds] * 5}
    # A blocking copy's device time counts only with a valid method recorded (the profiler's DMA record).
    info = case.extra_info() | {"clock": "wall+sync", "device_seconds": device_seconds, "device_time_method": "profiler"}
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
        "held", "at 64 MiB: d2d 671.1 GB/s, best pinned h2d 26.8 GB/s (25.0x)")
    assert result["device-to-host into pageable memory is the slowest path at large sizes"][0] == "held"
    assert result["every no-op returned the same object"] == ("held", "4 no-op benchmarks passed their identity check")
    assert result["device time never exceeds wall time"][0] == "held"
    assert result["pinned host-to-device bandwidth against the link's theoretical peak"] == (
        "figure", "best 26.8 GB/s (h2d pinned copy_ cpu->cuda:0, 64 MiB) = 43% of PCIe Gen5 x16's 63 GB/s; "
        "pinned copies reach 55-57 GB/s on such a link in practice (docs/design.md section 5)")


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
    assert capsys.readouterr().out.count("not measured") == 12


@pytest.mark.parametrize(("device_s", "status"), [(0.0025 * 1.04, "held"), (0.0025 * 1.06, "not held")])
def test_device_time_within_a_stated_tolerance_of_wall(tmp_path, device_s, status):
    """Device and wall medians come from different calls: 4% above wall is noise, 6% is not; the detail says so."""
    state, detail = verdicts(gpu_run(tmp_path, device_s=device_s))["device time never exceeds wall time"]
    assert state == status
    assert "by more than 5%" in detail and "different calls" in detail
    assert detail.startswith("0 of" if status == "held" else "1 of")


def concurrent_run(tmp_path):
    """A hand-fed two-GPU run of the concurrent families at 64 MiB per payload, with run-time clocks."""
    from xferbench.measure.families.concurrent import Concurrent

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
        "figure", "at 64 MiB, bytes read and written per second: cpu->cuda:0: memcpy 26.8 GB/s, strided 0.25x, "
        "convert 0.38x")
    assert result["host buffer on another NUMA node against the GPU's own (numa)"] == (
        "figure", "h2d: remote 19.2 GB/s = 0.71x local 26.8 (where the buffers landed was not recorded: "
                  "placement unverified)")
    assert result["GPU clocks and PCIe link while measuring"] == (
        "figure", "SM clock 1410-1755 MHz (max 1980), memory clock 2619-2619 MHz over 10 cases; "
                  "PCIe right after timing: Gen1 x16 in 1, Gen5 x16 in 9")
    assert main(["check", str(concurrent_run(tmp_path))]) == 0  # figures never fail a run


def move(op, src, dst, gbps, *, mib=64, memory=None, method="copy_", device_s=None):
    """A benchmark of ``mib`` MiB moved at ``gbps`` GB/s (GB = 1e9 bytes)."""
    case = Case(op, method, src, dst, (mib * MiB // 4,), host_memory=memory)
    return bench(case, case.nbytes / (gbps * 1e9), device_s)


def noop(device, method):
    return bench(Case("noop", method, device, device, (1,)), 1e-6)


def results_of(tmp_path, benchmarks, machine=MACHINE):
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"machine_info": machine, "benchmarks": benchmarks}))
    return load([path])


NAMES = ["pinned host-to-device beats pageable at 64 MiB and above",
         "same-device copies beat host-to-device by at least 10x",
         "device-to-host into pageable memory is the slowest path at large sizes",
         "every no-op returned the same object",
         "device time never exceeds wall time",
         "pinned host-to-device bandwidth against the link's theoretical peak",
         "both directions at once against one (bidir)",
         "every GPU and the host at once against one GPU (all_gpus_host)",
         "kernel and staged copies against one DMA / memcpy (copy_kind)",
         "host buffer on another NUMA node against the GPU's own (numa)",
         "GPU to GPU both ways at once against one way (peer_bidir)",
         "every GPU to the next at once against the sum of one way (peer_all)",
         "GPU clocks and PCIe link while measuring"]


class TestNotMeasuredSaysWhy:
    def test_each_expectation_names_what_is_missing(self, tmp_path):
        """A run without GPU paths gets 'not measured' for every check, each saying which benchmarks it needs."""
        results = results_of(tmp_path, [move("host", "cpu", "cpu", 10.0, memory="pageable")])
        assert [(v.name, v.status, v.detail) for v in check(results)] == [
            (NAMES[0], "not measured", "no host-to-device case of 64 MiB or more"),
            (NAMES[1], "not measured", "needs d2d and h2d at a common size"),
            (NAMES[2], "not measured", "needs d2h into pageable memory next to other device paths"),
            (NAMES[3], "not measured", "no no-op benchmarks"),
            (NAMES[4], "not measured", "no device-side times (no GPU)"),
            (NAMES[5], "not measured", "no pinned host-to-device cases"),
            (NAMES[6], "not measured", "no bidir cases"),
            (NAMES[7], "not measured", "no all_gpus_host cases (they need two or more GPUs)"),
            (NAMES[8], "not measured", "no copy_kind cases"),
            (NAMES[9], "not measured", "no numa cases ran (one NUMA node, or no GPU)"),
            (NAMES[10], "not measured", "no peer_bidir cases (they need two or more GPUs)"),
            (NAMES[11], "not measured", "no peer_all cases (they need three or more GPUs)"),
            (NAMES[12], "not measured", "no run-time clocks recorded (no GPU, or no nvidia-ml-py)"),
        ]


class TestPinnedBeatsPageableGroups:
    def test_every_size_and_destination_is_reported(self, tmp_path):
        """Each (size, GPU) pair is checked and listed; one losing pair, even not the last, makes it 'not held'."""
        results = results_of(tmp_path, [
            move("h2d", "cpu", "cuda:0", 25.0, memory="pinned"), move("h2d", "cpu", "cuda:0", 10.0, memory="pageable"),
            move("h2d", "cpu", "cuda:1", 8.0, memory="pinned"), move("h2d", "cpu", "cuda:1", 9.0, memory="pageable"),
            move("h2d", "cpu", "cuda:0", 26.0, mib=256, memory="pinned"),
            move("h2d", "cpu", "cuda:0", 11.0, mib=256, memory="pageable"),
        ])
        verdict = pinned_beats_pageable(results)
        assert verdict.status == "not held"
        assert verdict.detail == ("64 MiB -> cuda:0: pinned 25 GB/s, pageable 10 GB/s; "
                                  "64 MiB -> cuda:1: pinned 8 GB/s, pageable 9 GB/s; "
                                  "256 MiB -> cuda:0: pinned 26 GB/s, pageable 11 GB/s")

    def test_a_pair_without_pageable_is_skipped_not_failed(self, tmp_path):
        """A size measured only pinned is left out of the verdict; later pairs are still checked."""
        results = results_of(tmp_path, [
            move("h2d", "cpu", "cuda:0", 25.0, memory="pinned"),
            move("h2d", "cpu", "cuda:0", 26.0, mib=256, memory="pinned"),
            move("h2d", "cpu", "cuda:0", 11.0, mib=256, memory="pageable"),
        ])
        assert pinned_beats_pageable(results) == Verdict(
            pinned_beats_pageable(results).name, "held", "256 MiB -> cuda:0: pinned 26 GB/s, pageable 11 GB/s")

    def test_a_tie_is_not_beating(self, tmp_path):
        """Pinned merely equal to pageable has not paid off."""
        results = results_of(tmp_path, [move("h2d", "cpu", "cuda:0", 12.0, memory="pinned"),
                                        move("h2d", "cpu", "cuda:0", 12.0, memory="pageable")])
        assert pinned_beats_pageable(results).status == "not held"

    def test_only_pinned_sources(self, tmp_path):
        results = results_of(tmp_path, [move("h2d", "cpu", "cuda:0", 25.0, memory="pinned")])
        assert pinned_beats_pageable(results) == Verdict(NAMES[0], "not measured",
                                                         "no size with both pinned and pageable sources")


class TestSameDevice10x:
    @pytest.mark.parametrize(("d2d_gbps", "status"), [(250.0, "held"), (262.5, "held"), (249.0, "not held")])
    def test_threshold_is_ten_times(self, tmp_path, d2d_gbps, status):
        """Exactly 10x holds; 10.5x holds; just under 10x does not."""
        results = results_of(tmp_path, [move("h2d", "cpu", "cuda:0", 25.0, memory="pinned"),
                                        move("d2d", "cuda:0", "cuda:0", d2d_gbps)])
        assert same_device_10x(results).status == status

    def test_d2d_without_h2d(self, tmp_path):
        results = results_of(tmp_path, [move("d2d", "cuda:0", "cuda:0", 500.0)])
        assert same_device_10x(results).status == "not measured"

    def test_h2d_without_d2d(self, tmp_path):
        """A run that measured h2d but no same-device copy has nothing to compare, not a NaN ratio."""
        results = results_of(tmp_path, [move("h2d", "cpu", "cuda:0", 25.0, memory="pinned")])
        assert same_device_10x(results) == Verdict(NAMES[1], "not measured", "needs d2d and h2d at a common size")


class TestD2HPageableSlowest:
    def test_names_the_slowest_path(self, tmp_path):
        """The detail names the slowest path and its bandwidth at the common size."""
        results = results_of(tmp_path, [move("h2d", "cpu", "cuda:0", 25.0, memory="pinned"),
                                        move("d2h", "cuda:0", "cpu", 4.0, memory="pageable"),
                                        move("host", "cpu", "cpu", 2.0, memory="pageable")])
        verdict = d2h_pageable_slowest(results)
        assert (verdict.status, verdict.detail) == (
            "held", "at 64 MiB the slowest path is d2h pageable copy_ cuda:0->cpu at 4 GB/s")

    @pytest.mark.parametrize(("op", "src", "dst"), [("d2d", "cuda:0", "cuda:0"), ("peer", "cuda:0", "cuda:1")])
    def test_slower_device_path_contradicts(self, tmp_path, op, src, dst):
        """A same-device or peer copy slower than d2h into pageable memory is a contradiction, named."""
        results = results_of(tmp_path, [move("d2h", "cuda:0", "cpu", 4.0, memory="pageable"),
                                        move(op, src, dst, 3.0)])
        verdict = d2h_pageable_slowest(results)
        assert verdict.status == "not held"
        assert f"the slowest path is {op} copy_ {src if op == 'd2d' else src + '->' + dst} at 3 GB/s" in verdict.detail

    def test_other_sizes_do_not_count(self, tmp_path):
        """Only the common size is compared: a slow small h2d does not make the verdict fail."""
        results = results_of(tmp_path, [move("h2d", "cpu", "cuda:0", 25.0, memory="pinned"),
                                        move("d2h", "cuda:0", "cpu", 4.0, memory="pageable"),
                                        move("h2d", "cpu", "cuda:0", 0.1, mib=1, memory="pinned")])
        assert d2h_pageable_slowest(results).status == "held"

    def test_pinned_d2h_and_pageable_h2d_are_not_enough(self, tmp_path):
        """Without a d2h into pageable memory there is nothing to check, even with pinned d2h and pageable h2d."""
        results = results_of(tmp_path, [move("h2d", "cpu", "cuda:0", 25.0, memory="pageable"),
                                        move("d2h", "cuda:0", "cpu", 4.0, memory="pinned")])
        assert d2h_pageable_slowest(results).status == "not measured"


class TestNoopsEveryDevice:
    def test_lists_every_missing_noop(self, tmp_path):
        """Each no-op that did not pass is named, method and device, in a stable order."""
        results = results_of(tmp_path, [move("h2d", "cpu", "cuda:0", 25.0, memory="pinned"), noop("cpu", "to")])
        verdict = noops_same_object(results)
        assert (verdict.status, verdict.detail) == (
            "not held", "missing (failed or not run): .cpu() on cpu, .cuda() on cuda:0, .to() on cuda:0")

    def test_the_host_needs_its_to_noop(self, tmp_path):
        """``.to("cpu")`` on a CPU tensor is a no-op too; its absence is reported."""
        results = results_of(tmp_path, [move("h2d", "cpu", "cuda:0", 25.0, memory="pinned"), noop("cpu", "cpu"),
                                        noop("cuda:0", "to"), noop("cuda:0", "cuda")])
        assert noops_same_object(results).detail == "missing (failed or not run): .to() on cpu"

    def test_a_device_only_seen_as_destination(self, tmp_path):
        """cuda:1, reached only by h2d, still needs its no-ops."""
        results = results_of(tmp_path, [move("h2d", "cpu", "cuda:1", 25.0, memory="pinned"),
                                        noop("cpu", "to"), noop("cpu", "cpu")])
        assert noops_same_object(results).detail == "missing (failed or not run): .cuda() on cuda:1, .to() on cuda:1"

    @pytest.mark.parametrize("device", ["xpu:0", "mps:0"])
    def test_other_accelerators(self, tmp_path, device):
        """Intel and Apple GPUs need their .to() no-op too (no .cuda() on them)."""
        benchmarks = [move("h2d", "cpu", device, 5.0), noop("cpu", "to"), noop("cpu", "cpu")]
        assert noops_same_object(results_of(tmp_path, benchmarks)).detail == f"missing (failed or not run): .to() on {device}"
        assert noops_same_object(results_of(tmp_path, [*benchmarks, noop(device, "to")])).status == "held"

    def test_rank_devices_are_not_devices(self, tmp_path):
        """Distributed rows name ranks, not devices a no-op runs on: nothing more is expected."""
        results = results_of(tmp_path, [move("h2d", "cpu", "rank0:cuda", 5.0), noop("cpu", "to"), noop("cpu", "cpu")])
        assert noops_same_object(results).status == "held"


def timed(op, src, dst, device_over_wall, **kwargs):
    case = move(op, src, dst, 25.0, memory="pinned", **kwargs)
    case["extra_info"] |= {"device_seconds": case["stats"]["median"] * device_over_wall, "device_time_method": "profiler"}
    return case


class TestDeviceWithinWall:
    def test_equal_is_within(self, tmp_path):
        """Device time equal to wall time (the copy is all there is) is not over, nor counted as above."""
        verdict = device_within_wall(results_of(tmp_path, [timed("h2d", "cpu", "cuda:0", 1.0)]))
        assert (verdict.status, verdict.detail) == (
            "held", "0 of 1 cases over by more than 5% (0 above but within it: device and wall medians come from "
                    "different calls); highest device/wall 1.000 (h2d pinned copy_ cpu->cuda:0 64 MiB)")

    def test_counts_over_and_within_and_names_the_worst(self, tmp_path):
        """The detail counts the cases over the tolerance and those above but within it, and names the worst
        case, so the user knows where to look."""
        cases = [timed("h2d", "cpu", "cuda:0", 1.03), timed("h2d", "cpu", "cuda:0", 1.05, mib=128),
                 timed("d2h", "cuda:0", "cpu", 1.5, mib=1), timed("d2h", "cuda:0", "cpu", 0.9)]
        verdict = device_within_wall(results_of(tmp_path, cases))
        assert (verdict.status, verdict.detail) == (
            "not held", "1 of 4 cases over by more than 5% (2 above but within it: device and wall medians come from "
                        "different calls); highest device/wall 1.500 (d2h pinned copy_ cuda:0->cpu 1 MiB)")

    def test_zero_wall_time_is_left_out(self, tmp_path):
        """A zero wall median (a broken timer) is not divided by: no 'inf' ratio, the case is not counted."""
        results = results_of(tmp_path, [timed("h2d", "cpu", "cuda:0", 1.0), timed("d2h", "cuda:0", "cpu", 1.0)])
        # The loader refuses a zero median in a file; a frame made in code can still hold one.
        results.frame.loc[results.frame["op"] == "h2d", "median_s"] = 0.0
        verdict = device_within_wall(results)
        assert verdict.status == "held"
        assert verdict.detail.startswith("0 of 1 cases")


class TestPinnedLinkEfficiency:
    def test_only_pinned_h2d_counts(self, tmp_path):
        """The figure is the best pinned h2d, not a faster pageable h2d nor a pinned d2h."""
        results = results_of(tmp_path, [move("h2d", "cpu", "cuda:0", 31.5, memory="pinned"),
                                        move("h2d", "cpu", "cuda:0", 40.0, memory="pageable"),
                                        move("d2h", "cuda:0", "cpu", 50.0, memory="pinned")])
        verdict = pinned_link_efficiency(results)
        assert (verdict.status, verdict.detail) == (
            "figure", "best 31.5 GB/s (h2d pinned copy_ cpu->cuda:0, 64 MiB) = 50% of PCIe Gen5 x16's 63 GB/s; "
            "pinned copies reach 55-57 GB/s on such a link in practice (docs/design.md section 5)")

    def test_unknown_link_still_shows_the_best(self, tmp_path):
        """Without NVML facts the best bandwidth is shown and the user is told how to get the peak."""
        results = results_of(tmp_path, [move("h2d", "cpu", "cuda:0", 31.5, memory="pinned")], machine={})
        assert pinned_link_efficiency(results) == Verdict(
            NAMES[5], "not measured", "best 31.5 GB/s; the link is not in the fingerprint (install nvidia-ml-py)")


def concurrent(op, variant, src, dst, gbps, *, mib=64, payloads=1, **measured):
    """A concurrent family's benchmark: ``payloads`` payloads of ``mib`` MiB moved at ``gbps`` GB/s summed."""
    nbytes = mib * MiB * payloads
    seconds = nbytes / (gbps * 1e9)
    info = {"xfer_schema": 1, "op": op, "method": "copy_", "src": src, "dst": dst, "nbytes": nbytes, "dtype": "float32",
            "shape": [mib * MiB // 4], "variant": variant, "clock": "wall+sync"} | measured
    stats = {k: seconds for k in ("min", "max", "mean", "median", "q1", "q3")} | {
        "iqr": 0.0, "stddev": 0.0, "rounds": 5, "iterations": 1, "data": [seconds] * 5}
    return {"name": f"test_{op}[{variant}-{mib}-{src}-{dst}]", "extra_info": info, "stats": stats}


class TestConcurrentFigures:
    def test_bidir_reports_the_largest_complete_payload(self, tmp_path):
        """With several payload sizes, the figure is the largest one's, once."""
        rows = [concurrent("bidir", v, "cpu", "cuda:0", g, mib=mib, payloads=2 if v == "h2d+d2h" else 1)
                for mib in (16, 64) for v, g in (("h2d", 20.0), ("d2h", 10.0), ("h2d+d2h", 30.0))]
        assert bidirectional_duplex(results_of(tmp_path, rows)).detail == (
            "64 MiB each way: h2d+d2h 30 GB/s summed = 1.50x the faster direction alone (h2d 20, d2h 10)")

    @pytest.mark.parametrize("variants", [("h2d", "h2d+d2h"), ("h2d", "d2h")])
    def test_bidir_incomplete(self, tmp_path, variants):
        """A missing direction or a missing both-at-once case is said, not divided by."""
        rows = [concurrent("bidir", v, "cpu", "cuda:0", 20.0) for v in variants]
        assert bidirectional_duplex(results_of(tmp_path, rows)) == Verdict(
            NAMES[6], "figure", "incomplete: needs h2d, d2h and h2d+d2h at one size")

    def test_all_gpus_both_directions(self, tmp_path):
        rows = [concurrent("all_gpus_host", "h2d_one", "cpu", "cuda:0", 25.0),
                concurrent("all_gpus_host", "h2d_all", "cpu", "all:cuda", 40.0),
                concurrent("all_gpus_host", "d2h_one", "cuda:0", "cpu", 20.0),
                concurrent("all_gpus_host", "d2h_all", "all:cuda", "cpu", 30.0)]
        assert all_gpus_scaling(results_of(tmp_path, rows)).detail == (
            "64 MiB per GPU: h2d: all at once 40 GB/s summed = 1.60x one GPU's 25; "
            "d2h: all at once 30 GB/s summed = 1.50x one GPU's 20")

    def test_all_gpus_incomplete(self, tmp_path):
        rows = [concurrent("all_gpus_host", "h2d_all", "cpu", "all:cuda", 40.0)]
        assert all_gpus_scaling(results_of(tmp_path, rows)) == Verdict(
            NAMES[7], "figure", "incomplete: needs _one and _all of a direction")

    def test_copy_kind_per_route_in_measured_order(self, tmp_path):
        """Each route is listed in the order it was measured, every kind against its memcpy."""
        rows = [concurrent("copy_kind", v, src, dst, g)
                for src, dst in (("cuda:0", "cpu"), ("cpu", "cuda:0"))
                for v, g in (("memcpy", 20.0), ("strided", 5.0), ("convert", 10.0), ("convert_nonblocking", 16.0))]
        assert copy_kind_cost(results_of(tmp_path, rows)).detail == (
            "at 64 MiB, bytes read and written per second: cuda:0->cpu: memcpy 20 GB/s, strided 0.25x, convert 0.38x, "
            "convert_nonblocking 0.60x; cpu->cuda:0: memcpy 20 GB/s, strided 0.25x, convert 0.38x, "
            "convert_nonblocking 0.60x")

    def test_numa_both_directions(self, tmp_path):
        rows = [concurrent("numa", "h2d_local", "cpu", "cuda:0", 25.0, host_numa_node=0),
                concurrent("numa", "h2d_remote", "cpu", "cuda:0", 20.0, host_numa_node=1),
                concurrent("numa", "d2h_local", "cuda:0", "cpu", 20.0, host_numa_node=0),
                concurrent("numa", "d2h_remote", "cuda:0", "cpu", 10.0, host_numa_node=1)]
        assert numa_penalty(results_of(tmp_path, rows)).detail == (
            "h2d: remote (node 1) 20 GB/s = 0.80x local (node 0) 25; d2h: remote (node 1) 10 GB/s = 0.50x local (node 0) 20")

    def test_numa_placement_that_did_not_happen(self, tmp_path):
        """Both buffers recorded on one node (the binding was ignored): said, with no "1.00x" ratio; buffers whose
        node was not recorded keep their ratio, marked unverified."""
        rows = [concurrent("numa", "h2d_local", "cpu", "cuda:0", 25.0, host_numa_node=0),
                concurrent("numa", "h2d_remote", "cpu", "cuda:0", 25.0, host_numa_node=0),
                concurrent("numa", "d2h_local", "cuda:0", "cpu", 20.0),
                concurrent("numa", "d2h_remote", "cuda:0", "cpu", 10.0)]
        assert numa_penalty(results_of(tmp_path, rows)).detail == (
            "h2d: placement did not happen (both buffers landed on node 0), no remote figure; "
            "d2h: remote 10 GB/s = 0.50x local 20 (where the buffers landed was not recorded: placement unverified)")

    def test_numa_one_placement(self, tmp_path):
        """Only the remote placement ran (the local one was skipped): said, not divided by."""
        rows = [concurrent("numa", "h2d_remote", "cpu", "cuda:0", 20.0)]
        assert numa_penalty(results_of(tmp_path, rows)) == Verdict(
            NAMES[9], "figure", "only one placement ran (see the skip reasons)")

    @pytest.mark.parametrize("machine", [{}, {"xferbench": {"devices": [{"device": "cuda:0"}]}}])
    def test_clocks_without_a_maximum(self, tmp_path, machine):
        """Without the GPU's maximum SM clock in the fingerprint, no '(max ...)' is made up."""
        row = move("h2d", "cpu", "cuda:0", 25.0, memory="pinned")
        row["extra_info"] |= {"sm_clock_mhz": 1410, "memory_clock_mhz": 2619}
        assert clocks_and_link_at_run_time(results_of(tmp_path, [row], machine=machine)).detail == (
            "SM clock 1410-1410 MHz, memory clock 2619-2619 MHz over 1 cases; PCIe right after timing: unknown")


def peer_rows(pairs, *, one=300.0, other=290.0, both=580.0, mib=256):
    """peer_bidir's three cases for each pair (a, b) at these GB/s."""
    rows = []
    for a, b in pairs:
        rows += [concurrent("peer_bidir", "one_way", a, b, one, mib=mib, peer_legs=[f"{a}->{b}"]),
                 concurrent("peer_bidir", "other_way", b, a, other, mib=mib, peer_legs=[f"{b}->{a}"]),
                 concurrent("peer_bidir", "both_ways", a, b, both, mib=mib, payloads=2,
                            peer_legs=[f"{a}->{b}", f"{b}->{a}"])]
    return rows


def spread(row, low_gbps, high_gbps):
    """The row with its rounds' quartiles at these GB/s (q3 the slow one, q1 the fast one)."""
    nbytes = row["extra_info"]["nbytes"]
    q1, q3 = nbytes / (high_gbps * 1e9), nbytes / (low_gbps * 1e9)
    stats = row["stats"]  # min and max widened with the quartiles: a run's stats are ordered (load refuses others)
    stats |= {"q1": q1, "q3": q3, "min": min(stats.get("min", q1), q1), "max": max(stats.get("max", q3), q3)}
    return row


RING3 = ["cuda:0->cuda:1", "cuda:1->cuda:2", "cuda:2->cuda:0"]


def ring_row(gbps, legs=RING3, mib=256):
    return concurrent("peer_all", "ring", "all:cuda", "all:cuda", gbps, mib=mib, payloads=len(legs), peer_legs=legs)


class TestPeerFigures:
    def test_duplex_both_ways_twice_one_way(self, tmp_path):
        """The finding: both ways at once against the faster direction alone, and the word for it."""
        verdict = peer_duplex(results_of(tmp_path, peer_rows([("cuda:0", "cuda:1")])))
        assert (verdict.name, verdict.status, verdict.detail) == (NAMES[10], "figure", (
            "256 MiB each way: cuda:0<->cuda:1: duplex: both ways at once reach 580 GB/s, 1.93x one way "
            "(300 GB/s cuda:0->cuda:1, the faster alone)"))

    def test_one_link_shared_both_ways(self, tmp_path):
        verdict = peer_duplex(results_of(tmp_path, peer_rows([("cuda:0", "cuda:1")], other=310.0, both=320.0)))
        assert verdict.detail.startswith("256 MiB each way: cuda:0<->cuda:1: shared both ways: both ways at once "
                                         "reach 320 GB/s, 1.03x one way (310 GB/s cuda:1->cuda:0")

    def test_cant_tell_when_the_rounds_span_the_midpoint(self, tmp_path):
        """A median at 1.5x whose quartiles reach from 1.33x to 1.67x cannot say duplex or shared."""
        rows = peer_rows([("cuda:0", "cuda:1")], both=450.0)
        spread(rows[2], 400.0, 500.0)
        assert ": can't tell (1.33-1.67x over the rounds' quartiles): both ways at once reach 450 GB/s, 1.50x" in \
            peer_duplex(results_of(tmp_path, rows)).detail

    def test_cant_tell_without_a_copy_alone(self, tmp_path):
        rows = peer_rows([("cuda:0", "cuda:1")])[2:]
        assert peer_duplex(results_of(tmp_path, rows)).detail == (
            "256 MiB each way: cuda:0<->cuda:1: can't tell (no copy one way alone)")

    def test_many_pairs_say_their_extremes(self, tmp_path):
        rows = peer_rows([("cuda:0", "cuda:1"), ("cuda:1", "cuda:2"), ("cuda:2", "cuda:3")])
        rows += peer_rows([("cuda:0", "cuda:3")], both=330.0)
        detail = peer_duplex(results_of(tmp_path, rows)).detail
        assert detail.startswith("256 MiB each way: 4 pairs, 1.10-1.93x; lowest cuda:0<->cuda:3: shared both ways")
        assert "; highest cuda:2<->cuda:3: duplex" in detail

    def test_duplex_cant_tell_without_a_copy_both_ways(self, tmp_path):
        """Copies alone ran but none both ways at once: a figure that says it cannot tell, not "not measured"."""
        verdict = peer_duplex(results_of(tmp_path, peer_rows([("cuda:0", "cuda:1")])[:2]))
        assert (verdict.name, verdict.status, verdict.detail) == (
            NAMES[10], "figure", "can't tell: no copy both ways at once ran")

    def test_three_pairs_are_each_said(self, tmp_path):
        """Up to three pairs each get their line, lowest ratio first; a pair that cannot tell comes first."""
        rows = peer_rows([("cuda:0", "cuda:1")], both=400.0) + peer_rows([("cuda:1", "cuda:2")], both=560.0)
        rows += peer_rows([("cuda:2", "cuda:3")])[2:]  # no copy alone: no ratio
        detail = peer_duplex(results_of(tmp_path, rows)).detail
        assert detail.startswith("256 MiB each way: cuda:2<->cuda:3: can't tell (no copy one way alone); "
                                 "cuda:0<->cuda:1: ")
        assert "; cuda:1<->cuda:2: duplex" in detail and "pairs," not in detail

    def test_many_pairs_range_from_the_lowest_to_the_highest(self, tmp_path):
        rows = []
        for pair, both in ((("cuda:0", "cuda:1"), 360.0), (("cuda:1", "cuda:2"), 420.0),
                           (("cuda:2", "cuda:3"), 480.0), (("cuda:0", "cuda:3"), 570.0)):
            rows += peer_rows([pair], both=both)
        detail = peer_duplex(results_of(tmp_path, rows)).detail
        assert detail.startswith("256 MiB each way: 4 pairs, 1.20-1.90x; lowest cuda:0<->cuda:1")
        assert "; highest cuda:0<->cuda:3: duplex" in detail

    def test_ring_against_the_sum_of_its_pairs_alone(self, tmp_path):
        """One-way figures of the ring's payload from peer rows and from peer_bidir's copies alone."""
        rows = [ring_row(800.0), move("peer", "cuda:1", "cuda:2", 250.0, mib=256),
                move("peer", "cuda:2", "cuda:0", 250.0, mib=256, method="to"),
                move("peer", "cuda:2", "cuda:0", 100.0, mib=64)]  # another payload: not this ring's reference
        rows += peer_rows([("cuda:0", "cuda:1")])
        verdict = peer_ring(results_of(tmp_path, rows))
        assert (verdict.name, verdict.detail) == (NAMES[11], (
            "256 MiB per copy, 3 copies at once: 800 GB/s summed = 1.00x the sum of each pair's one-way figure "
            "(800 GB/s): every pair at full speed"))

    def test_ring_on_a_shared_switch(self, tmp_path):
        rows = [ring_row(400.0), *peer_rows([("cuda:0", "cuda:1"), ("cuda:1", "cuda:2")], one=270.0, other=260.0),
                move("peer", "cuda:2", "cuda:0", 260.0, mib=256)]
        assert peer_ring(results_of(tmp_path, rows)).detail.endswith(
            "= 0.50x the sum of each pair's one-way figure (800 GB/s): the pairs share a switch or a link")

    def test_ring_without_a_reference_cannot_tell(self, tmp_path):
        rows = [ring_row(800.0), move("peer", "cuda:0", "cuda:1", 250.0, mib=256)]
        assert peer_ring(results_of(tmp_path, rows)).detail == (
            "256 MiB per copy, 3 copies at once: 800 GB/s summed; can't tell against one way: no copy alone of "
            "256 MiB for cuda:1->cuda:2, cuda:2->cuda:0")

    def test_ring_figures_are_figures(self, tmp_path):
        """The ring's verdict is a figure whether or not it has a reference; a ring row without legs is not
        a ring."""
        full = peer_ring(results_of(tmp_path, [ring_row(800.0), *peer_rows([("cuda:0", "cuda:1")])]))
        assert (full.name, full.status) == (NAMES[11], "figure") and "can't tell" in full.detail
        legless = ring_row(800.0)
        legless["extra_info"]["peer_legs"] = []
        assert peer_ring(results_of(tmp_path, [legless])).status == "not measured"
        rows = [ring_row(750.0), *peer_rows([("cuda:0", "cuda:1"), ("cuda:1", "cuda:2")], one=250.0),
                move("peer", "cuda:2", "cuda:0", 250.0, mib=256)]
        assert peer_ring(results_of(tmp_path, rows)).status == "figure"

    def test_pairs_without_a_figure_take_their_link_class(self, tmp_path):
        """The peer plan's premise (one pair stands for its link class), said where it is used."""
        classes = {leg: "NVSwitch" for leg in RING3}
        machine = {"xferbench": MACHINE["xferbench"] | {"peer_plan": {"mode": "one-per-class", "reason": "default",
                                                                  "swept_pairs": ["cuda:0->cuda:1"], "classes": classes}}}
        rows = [ring_row(750.0), *peer_rows([("cuda:0", "cuda:1")], one=250.0)]
        assert peer_ring(results_of(tmp_path, rows, machine=machine)).detail == (
            "256 MiB per copy, 3 copies at once: 750 GB/s summed = 1.00x the sum of each pair's one-way figure "
            "(750 GB/s): every pair at full speed (pairs without a figure of their own take cuda:0->cuda:1's, "
            "its link class)")
