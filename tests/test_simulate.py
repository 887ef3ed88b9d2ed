"""The simulated machine as the suite's oracle: the real pipeline (plugin, timing, transfers,
JSON, results, fits, findings, check, compare) must read back the costs a spec gives.

The benchmark runs use the project's own ``bench/`` files in a subprocess, as a user would.
"""

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch  # noqa: F401  loaded before pytester's in-process runs, which unload what they import

from xferbench.analyze.load.results import device_time_valid, load
from xferbench.analyze.model import fit_alpha_beta, fit_paths
from xferbench.analyze.report.findings import findings
from xferbench.cli import main
from xferbench.contract import machine_differences, simulation_mismatch
from xferbench.measure.cases import Case
from xferbench.measure.simulate import (
    CLOCK,
    PATHS,
    SimBackend,
    SpecError,
    describe,
    load_spec,
    parse_spec,
    path_of,
)

from fakes import priced_seconds, view_of_rows

pytestmark = pytest.mark.slow  # whole benchmark sessions and worlds: the slow tier (tox -e slow)

ROOT = Path(__file__).resolve().parents[1]
KiB, MiB = 2**10, 2**20

#: Every path priced differently, so a case charged to the wrong path is caught.
SPEC = """
gpus = {gpus}
sync_us = 5.0
dispatch_ns = 400
launch_us = 4.0
{extra}
[paths]
h2d_pinned   = {{ alpha_us = 2.0, GBps = 50 }}
h2d_pageable = {{ alpha_us = 6.0, GBps = 20 }}
d2h_pinned   = {{ alpha_us = 3.0, GBps = 45 }}
d2h_pageable = {{ alpha_us = 8.0, GBps = 10 }}
d2d          = {{ alpha_us = 1.5, GBps = 1500 }}
peer         = {{ alpha_us = 3.5, GBps = 300 }}
[link]
pcie_gen = 5
pcie_width = 16
"""
SIZES = "4B,4KiB,64KiB,1MiB,4MiB"
COPIES = ("h2d", "d2h", "d2d", "peer")


def write_spec(folder: Path, gpus: int = 2, extra: str = "", name: str = "spec.toml") -> Path:
    path = folder / name
    path.write_text(SPEC.format(gpus=gpus, extra=extra))
    return path


def run_bench(spec: Path, out: Path, files: tuple[str, ...], sizes: str = SIZES, *args: str) -> dict:
    """Run bench/ files on the simulated machine in a subprocess; the JSON it wrote
    (and, under "output", what pytest printed)."""
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *(f"bench/test_{f}.py" for f in files), "--benchmark-only", "-q",
         "-p", "no:cacheprovider", f"--xfer-simulate={spec}", f"--xfer-sizes={sizes}", f"--benchmark-json={out}",
         *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads(out.read_text()) if out.exists() else {"benchmarks": []}
    return data | {"output": proc.stdout}


@pytest.fixture(scope="module")
def two_gpus(tmp_path_factory):
    """One simulated 2-GPU run of every core family: (spec, JSON path)."""
    folder = tmp_path_factory.mktemp("sim2")
    spec = write_spec(folder)
    out = folder / "run.json"
    run_bench(spec, out, ("h2d", "d2h", "d2d", "peer", "noop", "sync", "create", "host"))
    return load_spec(spec), out


def rows(out: Path):
    return load([out]).frame


def path_cost(spec, row):
    """The spec's price of a row's path (h2d/d2h by host memory)."""
    case = Case(row.op, row.method, row.src, row.dst, (1,),
                host_memory=row.host_memory if isinstance(row.host_memory, str) else None)
    return spec.paths[path_of(case)]


def device_cost(spec, row) -> float:
    return path_cost(spec, row).seconds(int(row.nbytes))


def stated_beta(alpha_us: float, gbps: float, largest: int) -> tuple[float, str]:
    """The β the report states for a path of fixed cost ``alpha_us`` and bandwidth ``gbps`` swept up to ``largest``
    bytes, and its basis (docs/report.md): none where every size sits below α·β (latency-bound), the largest size's
    figure where β is above 1.25x it (capped), else β."""
    if largest < alpha_us * 1e-6 * gbps * 1e9:
        return math.nan, "latency-bound"
    reached = largest / (alpha_us * 1e-6 + largest / (gbps * 1e9)) / 1e9
    return (reached, "capped fit") if gbps > 1.25 * reached else (gbps, "fit")


class TestReadsBackTheSpec:
    def test_device_time_of_every_copy_is_alpha_plus_n_over_bandwidth(self, two_gpus):
        """Events read each copy's device time within 1%: no host enqueue, no synchronize in it."""
        spec, out = two_gpus
        frame = rows(out)
        copies = frame[frame["op"].isin(COPIES)]
        assert len(copies) == (12 + 6 + 2 + 2) * 2 * 5  # variants x endpoints x sizes
        # Pageable copies (staged by the host) have no device time of their own, nor do blocking ones timed back
        # to back by events without a recorded method (the host paces them): the loader drops those.
        for row, valid in zip(copies.itertuples(), device_time_valid(copies), strict=True):
            if not valid:
                assert math.isnan(row.device_seconds), row.name
            else:
                assert row.device_seconds == pytest.approx(device_cost(spec, row), rel=0.01), row.name
                # No profiler on a simulated machine: a blocking host copy is timed by its non-blocking twin.
                blocking = row.op in ("h2d", "d2h") and not row.non_blocking
                assert row.device_time_method == ("nonblocking_twin" if blocking else "events"), row.name
            # A simulated copy only charges a clock: faults of its calls would be none of the copy's.
            assert math.isnan(row.minor_faults_per_call), row.name

    def test_host_cases_record_faults_per_call_measured(self, two_gpus):
        """The host family runs for real on the simulated machine: its faults per call are measured."""
        _, out = two_gpus
        host = rows(out).query("op == 'host' or (op == 'create' and src == 'cpu')")
        assert len(host) > 0 and (host["minor_faults_per_call"] >= 0).all() and (host["clock"] == "wall+sync").all()

    def test_wall_time_is_launch_device_time_and_one_sync_per_device(self, two_gpus):
        """Per-call wall time = launch + device time + sync_us for each accelerator touched:
        a missing or doubled synchronize, or an unsynchronized peer end, shows here."""
        spec, out = two_gpus
        frame = rows(out)
        for row in frame[frame["op"].isin(COPIES)].itertuples():
            syncs = sum(d.startswith("cuda:") for d in {row.src, row.dst})
            expected = spec.launch_us * 1e-6 + device_cost(spec, row) + syncs * spec.sync_us * 1e-6
            assert row.median_s == pytest.approx(expected, rel=1e-4), row.name

    def test_device_time_never_above_wall_time(self, two_gpus):
        _, out = two_gpus
        frame = rows(out).dropna(subset=["device_seconds"])
        assert len(frame) > 0
        assert (frame["device_seconds"] <= frame["median_s"]).all()

    def test_alpha_beta_fits_recover_bandwidth_and_fixed_cost(self, two_gpus):
        """The α-β fit of wall times finds GBps within 2% and launch + alpha + syncs within 10%; the fit of device
        times finds alpha within 10%. The report states the spec's β, a capped figure below it, or none where the
        sweep stops below α·β (d2d and peer here: launch and synchronizes in α put α·β past 4 MiB); its pipelined β,
        from device time (no launch, no synchronize), is the spec's for every path that has one."""
        spec, out = two_gpus
        frame = rows(out)
        fits = fit_paths(frame)
        fits = fits[fits["op"].isin(COPIES)]
        assert len(fits) == 22 * 2
        for fit in fits.itertuples():
            group = frame[frame["path"] == fit.path]
            first = next(group.itertuples())
            cost = path_cost(spec, first)
            syncs = sum(d.startswith("cuda:") for d in {first.src, first.dst})
            wall_alpha_us = spec.launch_us + cost.alpha_us + syncs * spec.sync_us
            largest = int(group["nbytes"].max())
            wall = fit_alpha_beta(group["nbytes"].to_numpy(), group["transfer_s"].to_numpy())
            assert wall is not None and wall.beta_gbps == pytest.approx(cost.GBps, rel=0.02), fit.path
            assert fit.alpha_us == pytest.approx(wall_alpha_us, rel=0.1), fit.path
            assert fit.beta_gbps == pytest.approx(cost.GBps, rel=0.02), fit.path
            stated, basis = stated_beta(wall_alpha_us, cost.GBps, largest)
            assert fit.beta_basis == basis, fit.path
            assert fit.stated_gbps == pytest.approx(stated, rel=0.02, nan_ok=True), fit.path
            if not device_time_valid(group).all():
                assert math.isnan(fit.pipelined_gbps), fit.path
                continue  # no device time: see test_device_time_of_every_copy_is_alpha_plus_n_over_bandwidth
            device = fit_alpha_beta(group["nbytes"].to_numpy(), group["device_seconds"].to_numpy())
            assert device is not None and device.alpha_s * 1e6 == pytest.approx(cost.alpha_us, rel=0.1), fit.path
            assert device.beta_gbps == pytest.approx(cost.GBps, rel=0.02), fit.path
            assert fit.pipelined_alpha_us == pytest.approx(cost.alpha_us, rel=0.1), fit.path
            pipelined, _ = stated_beta(cost.alpha_us, cost.GBps, largest)
            assert fit.pipelined_gbps == pytest.approx(pipelined, rel=0.02), fit.path
        # The spec and sizes give both kinds of wall-clock path: bandwidth-bound (h2d, d2h) and latency-bound (d2d, peer).
        assert set(fits.loc[fits["op"].isin(("h2d", "d2h")), "beta_basis"]) == {"fit"}
        assert set(fits.loc[fits["op"].isin(("d2d", "peer")), "beta_basis"]) == {"latency-bound"}

    def test_gpu_noop_is_the_dispatch_not_a_synchronize(self, two_gpus):
        """A no-op .cuda(i)/.to() on a GPU costs dispatch_ns: timed bare, with no synchronize."""
        spec, out = two_gpus
        frame = rows(out)
        gpu_noops = frame[(frame["op"] == "noop") & (frame["src"] != "cpu")]
        assert len(gpu_noops) == 3 * 2 * 2  # .to(torch.device) / .to(str) / .cuda(i) x 2 GPUs x smallest/largest size
        for row in gpu_noops.itertuples():
            assert row.median_s == pytest.approx(spec.dispatch_ns * 1e-9, rel=1e-4), row.name

    def test_synchronize_of_an_idle_device_is_its_own_case(self, two_gpus):
        spec, out = two_gpus
        frame = rows(out)
        syncs = frame[frame["op"] == "sync"]
        assert sorted(set(syncs["src"])) == ["cuda:0", "cuda:1"]
        assert syncs["median_s"].to_numpy() == pytest.approx(spec.sync_us * 1e-6, rel=1e-4)

    def test_creation_on_a_gpu(self, two_gpus):
        """empty costs a dispatch; a fill costs launch + a same-device write + the synchronize."""
        spec, out = two_gpus
        frame = rows(out)
        for row in frame[(frame["op"] == "create") & (frame["src"] == "cuda:0")].itertuples():
            if row.method == "empty":
                expected = spec.dispatch_ns * 1e-9 + spec.sync_us * 1e-6
            else:
                expected = (spec.launch_us + spec.sync_us) * 1e-6 + spec.paths["d2d"].seconds(int(row.nbytes))
            assert row.median_s == pytest.approx(expected, rel=1e-4), row.name


class TestSaysItIsSimulated:
    def test_rows_and_machine_info(self, two_gpus):
        """Every accelerator row's clock is 'simulated'; host rows stay real; machine_info has the spec."""
        spec, out = two_gpus
        results = load([out])
        frame = results.frame
        on_gpu = (frame["src"] != "cpu") | (frame["dst"] != "cpu")
        assert set(frame.loc[on_gpu, "clock"]) == {"simulated"}
        assert set(frame.loc[~on_gpu, "clock"]) == {"wall+sync"}
        assert results.simulated == json.loads(json.dumps(spec.as_json()))
        devices = results.machine_info["xferbench"]["devices"]
        assert [(d["pcie_generation"], d["pcie_width"]) for d in devices] == [(5, 16), (5, 16)]
        assert "(simulated)" in devices[0]["name"]

    def test_findings_say_pinned_beats_pageable(self, two_gpus):
        text = " ".join(findings(view_of_rows(rows(two_gpus[1]))))
        assert "pinned" in text and "pageable" in text

    def test_compare_refuses_simulated_against_real_whatever_the_flag(self, two_gpus, tmp_path, capsys):
        """A simulated figure is never compared with a measurement: exit 2 even when allowed."""
        _, out = two_gpus
        real = json.loads(out.read_text())
        del real["machine_info"]["xferbench"]["simulated"]
        real_path = tmp_path / "real.json"
        real_path.write_text(json.dumps(real))
        for args in ([], ["--allow-different-machines"]):
            assert main(["compare", str(real_path), str(out), *args]) == 2
            assert "simulated" in capsys.readouterr().err


def test_machine_differences_name_the_simulation():
    """A simulated fingerprint differs from a real one in a field of its own, and two
    simulated runs (say, with a regression injected) are the same machine."""
    real = {"xferbench": {"devices": [{"name": "GPU"}], "torch": "2.13"}}
    simulated = {"xferbench": {"devices": [{"name": "GPU"}], "torch": "2.13", "simulated": {"gpus": 1}}}
    assert machine_differences(real, simulated) == ["simulated False -> True"]
    assert simulation_mismatch(real, simulated) and simulation_mismatch(simulated, real)
    assert simulation_mismatch(simulated, simulated) is None and simulation_mismatch({}, simulated) is None


class TestMachines:
    @pytest.mark.parametrize("gpus", [1, 2, 4])
    def test_every_ordered_peer_pair(self, gpus, tmp_path):
        """N GPUs give N x (N-1) peer paths, each timed at the spec's cost; one GPU gives a skip reason."""
        spec_path = write_spec(tmp_path, gpus=gpus)
        data = run_bench(spec_path, tmp_path / "peer.json", ("peer",), "4MiB", "-rs", "-k", "copy_ or two")
        if gpus == 1:
            assert "peer copies need two accelerators; found 1 (cuda:0)" in data["output"]
        pairs = {(b["extra_info"]["src"], b["extra_info"]["dst"]) for b in data["benchmarks"]}
        expected = {(f"cuda:{i}", f"cuda:{j}") for i in range(gpus) for j in range(gpus) if i != j}
        assert pairs == expected
        spec = load_spec(spec_path)
        for b in data["benchmarks"]:
            assert b["extra_info"]["device_seconds"] == pytest.approx(spec.paths["peer"].seconds(4 * MiB), rel=0.01)

    def test_slowdown_is_a_regression_compare_finds(self, tmp_path, capsys):
        """Five A/A runs of a noisy machine (different seeds) calibrate compare; the same machine
        with h2d_pinned 30% slower is flagged on pinned h2d, and pageable h2d is not."""
        args = ("h2d",)
        base = tmp_path / "base"
        base.mkdir()
        for seed in range(1, 6):
            spec = write_spec(tmp_path, extra=f"noise = 0.01\nseed = {seed}", name=f"base{seed}.toml")
            run_bench(spec, base / f"run{seed}.json", args, "4MiB", "-k", "copy_ and cuda:0")
        slow_spec = write_spec(tmp_path, extra="noise = 0.01\nseed = 6", name="slow.toml")
        slow_spec.write_text(slow_spec.read_text().replace("GBps = 50 }", "GBps = 50, slowdown = 1.3 }"))
        run_bench(slow_spec, tmp_path / "slow.json", args, "4MiB", "-k", "copy_ and cuda:0")
        assert main(["calibrate", str(base), "-o", str(tmp_path / "noise.json")]) == 0
        capsys.readouterr()
        code = main(["compare", str(base), str(tmp_path / "slow.json"), "--noise", str(tmp_path / "noise.json")])
        lines = capsys.readouterr().out.splitlines()
        assert code == 1, lines
        verdicts = {line.split("  ")[0].strip(): line for line in lines if line.startswith("h2d ")}
        assert {path for path, line in verdicts.items() if line.endswith("  regression")} == {
            "h2d pinned non-blocking copy_ cpu->cuda:0", "h2d pinned copy_ cpu->cuda:0"}, lines
        # pageable h2d is not flagged: unchanged, "can't tell" where its interval reaches past its 5% floor, or a
        # drift past its tiny spread inside that floor
        assert all(verdicts[f"h2d pageable {how}copy_ cpu->cuda:0"].endswith("  unchanged")
                   or "  can't tell (would flag " in verdicts[f"h2d pageable {how}copy_ cpu->cuda:0"]
                   or ", within the floor (×" in verdicts[f"h2d pageable {how}copy_ cpu->cuda:0"]
                   for how in ("", "non-blocking ")), lines


BAD_SPECS = [
    ("gpus = 2\nsync_us = 5\ndispatch_ns = 1\nlaunch_us = 1\ncolour = 3\n", "unknown key colour"),
    ("gpus = 0\nsync_us = 5\ndispatch_ns = 1\nlaunch_us = 1\n", "gpus must be at least 1"),
    ("gpus = 1\nsync_us = 5\ndispatch_ns = 1\n", "missing key launch_us"),
    ("gpus = 1\nsync_us = -5\ndispatch_ns = 1\nlaunch_us = 1\n", "sync_us must be a finite number >= 0"),
    ("gpus = [\n", "not TOML"),
    ("gpus = 1.5\nsync_us = 5\ndispatch_ns = 1\nlaunch_us = 1\n", "gpus must be a whole number"),
]
PATHS_TABLE = "\n[paths]\n" + "\n".join(f"{p} = {{ alpha_us = 1, GBps = 10 }}" for p in PATHS) + "\n"


class TestBadSpecs:
    @pytest.mark.parametrize(("text", "message"), [*BAD_SPECS,
        ("gpus = 1\nsync_us = 5\ndispatch_ns = 1\nlaunch_us = 1\n" + PATHS_TABLE.replace("GBps = 10 }", "GBps = 0 }", 1),
         "paths.h2d_pinned.GBps must be > 0"),
        ("gpus = 1\nsync_us = 5\ndispatch_ns = 1\nlaunch_us = 1\n" + PATHS_TABLE.replace("alpha_us", "alpha", 1),
         "unknown key paths.h2d_pinned.alpha"),
        ("gpus = 1\nsync_us = 5\ndispatch_ns = 1\nlaunch_us = 1\n" + PATHS_TABLE.replace("d2d", "d2x"),
         "unknown key paths.d2x"),
        ("gpus = 1\nsync_us = 5\ndispatch_ns = 1\nlaunch_us = 1\n" + PATHS_TABLE + "[link]\npcie = 5\n",
         "unknown key link.pcie"),
    ])
    def test_usage_error_names_the_key_before_anything_runs(self, pytester, text, message):
        """A bad spec is a one-line usage error naming the key; no case runs, no traceback."""
        pytester.makeconftest('pytest_plugins = ("xferbench.measure.session.plugin",)')
        pytester.makepyfile(test_h2d="import pytest\n\n@pytest.mark.xfer('h2d')\ndef test_h2d(xfer_case, xfer):\n"
                                     "    xfer(xfer_case)\n")
        spec = pytester.path / "bad.toml"
        spec.write_text(text)
        result = pytester.runpytest("--benchmark-only", f"--xfer-simulate={spec}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        output = "\n".join(result.outlines + result.errlines)
        assert f"--xfer-simulate={spec}: {message}" in output
        assert "Traceback" not in output

    def test_another_timer_is_refused(self, pytester, tmp_path):
        """The simulated clock is the timer; a second one would time something else."""
        pytester.makeconftest('pytest_plugins = ("xferbench.measure.session.plugin",)')
        result = pytester.runpytest("--benchmark-only", f"--xfer-simulate={write_spec(tmp_path)}",
                                    "--benchmark-timer=time.process_time")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert "drop --benchmark-timer" in "\n".join(result.outlines + result.errlines)

    def test_missing_file(self, tmp_path):
        with pytest.raises(SpecError, match="cannot read it"):
            load_spec(tmp_path / "nowhere.toml")

    def test_example_specs_are_valid(self):
        """The shipped examples load, and say they are illustrative."""
        examples = sorted((ROOT / "examples").glob("*.toml"))
        assert examples
        for path in examples:
            assert load_spec(path).gpus >= 1
            assert "ILLUSTRATIVE" in path.read_text()


class TestBackend:
    def spec(self, **extra):
        data = {"gpus": 2, "sync_us": 5.0, "dispatch_ns": 400, "launch_us": 4.0,
                "paths": {p: {"alpha_us": 2.0, "GBps": 10.0} for p in PATHS}} | extra
        return parse_spec(data)

    def test_non_blocking_pinned_copy_returns_after_the_launch(self):
        """Queued device work overlaps the host; a synchronize waits for it, then costs sync_us."""
        backend = SimBackend(self.spec())
        case = Case("h2d", "copy_", "cpu", "cuda:0", (250_000,), host_memory="pinned", non_blocking=True)
        backend.issue(*backend.plan(case))
        assert CLOCK.now == pytest.approx(4e-6)
        backend.issue(*backend.plan(case))  # queued behind the first copy
        assert CLOCK.now == pytest.approx(8e-6)
        backend.synchronize(0)
        assert CLOCK.now == pytest.approx(2 * (2e-6 + 1e6 / 10e9) + 4e-6 + 5e-6)

    def test_blocking_and_pageable_copies_wait(self):
        backend = SimBackend(self.spec())
        backend.issue(*backend.plan(Case("h2d", "to", "cpu", "cuda:1", (250_000,), host_memory="pageable", non_blocking=True)))
        assert CLOCK.now == pytest.approx(4e-6 + 2e-6 + 1e6 / 10e9)
        assert backend.busy_until[0] == 0.0  # the other device is untouched

    def test_noise_is_seeded(self):
        """Two backends with the same seed produce the same jittered figures; another seed differs."""
        case = Case("d2d", "clone", "cuda:0", "cuda:0", (1000,))

        def figures(seed):
            backend = SimBackend(self.spec(noise=0.05, seed=seed))
            return backend.event_seconds(backend._simulated(case, lambda: None), 0, 10)

        assert figures(1) == figures(1)
        assert figures(1) != figures(2)


def test_benchmark_compare_refuses_simulated_against_real_even_when_allowed():
    """pytest's --benchmark-compare goes through the plugin's hook: a simulated run against a
    measured one is a usage error even with --xfer-allow-different-machines."""
    from types import SimpleNamespace

    from xferbench.measure.session.plugin import pytest_benchmark_compare_machine_info

    config = SimpleNamespace(getoption=lambda name: True)
    real = {"xferbench": {"devices": [], "torch": "2.13"}}
    simulated = {"xferbench": {"devices": [], "torch": "2.13", "simulated": {"gpus": 1}}}
    with pytest.raises(pytest.UsageError, match="simulated"):
        pytest_benchmark_compare_machine_info(config, None, simulated, {"machine_info": real})
    pytest_benchmark_compare_machine_info(config, None, simulated, {"machine_info": simulated})


def test_fingerprint_holds_the_spec_not_the_host_gpus():
    """On a machine whose NVML described real GPUs, the simulated fingerprint keeps only the spec's links."""
    spec = parse_spec({"gpus": 1, "sync_us": 1, "dispatch_ns": 1, "launch_us": 1,
                       "paths": {p: {"alpha_us": 1, "GBps": 1} for p in PATHS}, "link": {"pcie_gen": 4}})
    fingerprint = {"driver": "550.54", "nvml": True,
                   "devices": [{"pcie_max_generation": 5, "pcie_max_width": 16, "memory_peak_gbps": 4800.0}]}
    describe(spec, fingerprint)
    assert fingerprint["driver"] is None and fingerprint["nvml"] is False
    assert fingerprint["devices"][0]["pcie_max_generation"] == 4
    assert fingerprint["devices"][0]["pcie_max_width"] is None and fingerprint["devices"][0]["memory_peak_gbps"] is None
    assert fingerprint["simulated"]["link"]["pcie_gen"] == 4


# --- the GPU scenarios and the concurrent families on a simulated machine ---------------------------------

#: Every new cost set away from its default, so a variant priced with the wrong key is caught:
#: 2 GPUs at 50 GB/s (h2d pinned) share 60 GB/s, so each gets 30 at once; remote buffers cap at 25.
FAMILY_KEYS = """pin_GBps = 4.0
host_copy_GBps = 16.0
kernel_slowdown = 2.0
shared_host_GBps = 60.0
numa_nodes = 2
remote_GBps = 25.0"""
US = 1e-6
GPU_SCENARIOS = ("module_to", "sync_stall", "pin_memory", "placement", "cuda_vs_to")
CONCURRENT = ("bidir", "all_gpus_host", "copy_kind", "numa")
STALL_S = 2e-3  # the work sync_stall queues before each call (scenarios.STALL_SECONDS)
TICKS = 2e-9  # a reading of the simulated clock advances it 1 ns (simulate.TICK_S)


@pytest.fixture(scope="module")
def gpu_families(tmp_path_factory):
    """One simulated 2-GPU quick run of bench/test_scenarios.py and bench/test_concurrent.py, and its
    report: spec, frame, output (pytest's), html and json. The host-only scenarios that take seconds
    for real (forward and convert_on_cpu on the CPU) are left out: they are not simulated."""
    from types import SimpleNamespace

    folder = tmp_path_factory.mktemp("simfamilies")
    spec = write_spec(folder, extra=FAMILY_KEYS)
    out = folder / "families.json"
    data = run_bench(spec, out, ("scenarios", "concurrent"), SIZES, "-rs", "-k", "not 64batch-cpu and not convert_on_cpu")
    assert main(["report", str(out), "-o", str(folder / "report.html")]) == 0
    return SimpleNamespace(spec=load_spec(spec), frame=rows(out), output=data["output"],
                           html=(folder / "report.html").read_text(), json=out)


class Costs:
    """The spec's prices, written out as README's "Simulated machine" states them."""

    def __init__(self, spec):
        self.spec = spec
        self.launch, self.sync, self.dispatch = spec.launch_us * US, spec.sync_us * US, spec.dispatch_ns * 1e-9

    def path(self, name, nbytes, cap=None):
        cost = spec_path = self.spec.paths[name]
        gbps = spec_path.GBps if cap is None else min(spec_path.GBps, cap)
        return (cost.alpha_us * US + nbytes / (gbps * 1e9)) * cost.slowdown

    def kernel(self, written):
        return self.path("d2d", written) * self.spec.kernel_slowdown

    def host_copy(self, written):
        return written / (self.spec.host_copy_GBps * 1e9)

    def synced(self, now, done):
        """The clock after synchronizing devices whose work ends at ``done``, one after the other."""
        for end in done:
            now = max(now, end) + self.sync
        return now


def mlp_parameter_bytes(params):
    from xferbench.measure.families.scenario import mlp

    return [p.numel() * 4 for p in mlp(params).parameters()]


def expected_scenario(c, row):
    """Per-call wall time of one GPU scenario row on the simulated machine."""
    n, L = int(row.nbytes), c.launch
    variant = row.variant
    if row.op == "module_to":
        sizes = mlp_parameter_bytes(int(row.shape))
        if variant == "again":  # every parameter walked, nothing copied, then the synchronize
            return len(sizes) * c.dispatch + c.sync
        return sum(L + c.path("h2d_pageable", b) for b in sizes) + c.sync
    if row.op == "sync_stall":  # the launch is hidden behind the queued work; the copy waits for it
        if variant == "nonblocking_event":
            return L + c.dispatch
        return STALL_S + c.path("d2h_pageable", 4 if variant == "item" else n)
    if row.op == "pin_memory":
        return {"pin_cold": n / (c.spec.pin_GBps * 1e9) + c.host_copy(n),
                "pin_cached": c.host_copy(n),
                "to": L + c.path("h2d_pageable", n) + c.sync,
                "pin_cached_then_to": c.host_copy(n) + L + c.path("h2d_pinned", n) + c.sync,
                "reused_pinned_to": c.host_copy(n) + L + c.path("h2d_pinned", n) + c.sync,
                "pinned_to": L + c.path("h2d_pinned", n) + c.sync}[variant]
    if row.op == "placement":  # n uint8 pixels become 4n bytes of float32
        if variant == "convert_then_move":
            return c.host_copy(4 * n) + L + c.path("h2d_pageable", 4 * n) + c.sync
        return L + c.path("h2d_pageable", n) + L + c.kernel(4 * n) + c.sync
    if row.op == "cuda_vs_to":
        if variant.startswith("module"):
            return sum(L + c.path("h2d_pageable", b) for b in mlp_parameter_bytes(max(10**3, n // 4))) + c.sync
        return L + c.path("h2d_pageable", n) + c.sync
    raise AssertionError(f"no expectation for {row.op} {variant}")


def expected_concurrent(c, row, gpus=2):
    """Per-call wall time of one concurrent row: copies queued one launch apart, then every GPU synchronized."""
    L, payload = c.launch, int(row.nbytes) // (2 if row.variant in ("h2d+d2h", "h2d_all", "d2h_all") else 1)
    if row.op == "bidir":
        up, down = c.path("h2d_pinned", payload), c.path("d2h_pinned", payload)
        parts = {"h2d": [up], "d2h": [down], "h2d+d2h": [up, down]}[row.variant]
        if c.spec.duplex:  # each on its own copy engine
            return c.synced(len(parts) * L, [max((i + 1) * L + t for i, t in enumerate(parts))])
        return c.synced(len(parts) * L, [L + sum(parts)])
    if row.op == "all_gpus_host":
        direction, which = row.variant.split("_")
        legs = gpus if which == "all" else 1
        cost = c.path(f"{direction}_pinned", payload, cap=c.spec.shared_host_GBps / legs)
        return c.synced(legs * L, [(i + 1) * L + cost for i in range(legs)])
    if row.op == "copy_kind":
        n = payload
        if row.src == "cpu":
            return {"memcpy": L + c.path("h2d_pinned", n),
                    "strided": c.host_copy(n) + L + c.path("h2d_pageable", n),
                    "convert": c.host_copy(n // 2) + L + c.path("h2d_pageable", n // 2),
                    "convert_nonblocking": L + c.path("h2d_pinned", n) + c.kernel(n // 2)}[row.variant] + c.sync
        return L + {"memcpy": c.path("d2d", n), "strided": c.kernel(n), "convert": c.kernel(n // 2)}[row.variant] + c.sync
    if row.op == "numa":
        direction, where = row.variant.split("_")
        cap = c.spec.remote_GBps if where == "remote" else None
        return L + c.path(f"{direction}_pinned", payload, cap=cap) + c.sync
    raise AssertionError(f"no expectation for {row.op} {row.variant}")


def said(sentence: str, ratio: float) -> re.Pattern[str]:
    """``sentence`` and then ``ratio`` as ratios.Ratio.text writes it: three figures and ×, then its interval where
    that does not round to the figure. The simulated costs are exact, but the interval allows for the run's drift,
    which module_to's host case (run for real, in blocks) measures: shown or not, from run to run."""
    return re.compile(rf"{re.escape(sentence)} \({re.escape(f'{ratio:.3g}')}×( \([\d.]+-[\d.]+\))?\)\.")


class TestGpuScenariosReadBackTheSpec:
    def test_every_gpu_scenario_runs_simulated_on_every_gpu(self, gpu_families):
        """None of the GPU scenarios is skipped on a simulated machine: each variant runs on each GPU,
        its clock says simulated, and the host-only ones stay real."""
        frame, output = gpu_families.frame, gpu_families.output
        on_gpu = frame[(frame["src"] != "cpu") | (frame["dst"] != "cpu")]
        expected_variants = {"module_to": 2, "sync_stall": 5, "pin_memory": 6, "placement": 2, "cuda_vs_to": 6}
        for op, variants in expected_variants.items():
            rows_of = on_gpu[on_gpu["op"] == op]
            assert rows_of["variant"].nunique() == variants, op
            assert {d for d in (*rows_of["src"], *rows_of["dst"]) if d != "cpu"} == {"cuda:0", "cuda:1"}, op
        assert set(on_gpu["clock"]) == {"simulated"}
        assert set(frame.loc[frame.index.difference(on_gpu.index), "clock"]) == {"wall+sync"}
        assert "needs an accelerator" not in output and "needs real CUDA" not in output

    def test_wall_time_of_every_gpu_scenario_is_what_the_spec_prices(self, gpu_families):
        """sync_stall waits for the queued 2 ms, pin_memory pays pinning and host copies at their rates,
        placement moves 4x the bytes or converts on the device, cuda_vs_to and module moves copy each
        parameter: each per-call figure equals the spec's price."""
        spec, frame = gpu_families.spec, gpu_families.frame
        costs = Costs(spec)
        scenario_rows = frame[frame["op"].isin(GPU_SCENARIOS) & (frame["clock"] == "simulated")]
        assert len(scenario_rows) == 2 * (3 * 2 + 5 + 2 * 6 + 2 * 2 + 6)  # GPUs x (sizes x variants) per family
        for row in scenario_rows.itertuples():
            assert row.median_s == pytest.approx(expected_scenario(costs, row), rel=1e-4, abs=TICKS), row.name

    def test_forward_on_a_simulated_gpu_says_why_it_does_not_run(self, gpu_families):
        """The simulation prices copies, not compute: forward on a simulated GPU is a skip with its reason."""
        for gpu in ("cuda:0", "cuda:1"):
            assert f"forward on {gpu}: the simulated machine prices copies and synchronizes, not compute" in \
                gpu_families.output
        assert not (gpu_families.frame["op"] == "forward").any()

    def test_findings_read_the_spec_back(self, gpu_families):
        """The sections' sentences state the stall, the non_blocking return and the placement ratio the spec implies."""
        from xferbench.analyze.report.findings import scenario_findings
        from xferbench.units import format_seconds

        spec, frame = gpu_families.spec, gpu_families.frame
        costs = Costs(spec)
        stall = " ".join(scenario_findings(view_of_rows(frame), "sync_stall"))
        assert f"of 4 B on cuda:0 took: item {format_seconds(STALL_S + costs.path('d2h_pageable', 4))}, cpu " in stall
        assert f"returned in {format_seconds(costs.launch + costs.dispatch)}" in stall
        n = 64 * 3 * 224 * 224
        slow = costs.host_copy(4 * n) + costs.launch + costs.path("h2d_pageable", 4 * n) + costs.sync
        fast = 2 * costs.launch + costs.path("h2d_pageable", n) + costs.kernel(4 * n) + costs.sync
        placement = " ".join(scenario_findings(view_of_rows(frame), "placement"))
        assert said(f"move_then_convert took {format_seconds(fast)}, convert_then_move {format_seconds(slow)}",
                    slow / fast).search(placement), placement
        # pin_memory: a pinned staging buffer against pin-then-move and against a plain pageable .to()
        n = 64 * MiB
        staged = costs.host_copy(n) + costs.launch + costs.path("h2d_pinned", n) + costs.sync
        pageable = costs.launch + costs.path("h2d_pageable", n) + costs.sync
        pinning = " ".join(scenario_findings(view_of_rows(frame), "pin_memory"))
        for call in ("pin_cached_then_to", "reused_pinned_to"):
            assert said(f"{call} took {format_seconds(staged)}, to {format_seconds(pageable)}", pageable / staged) \
                .search(pinning), pinning
        # Two calls the spec prices alike took the same time (their sums may differ by float rounding alone).
        assert f"reused_pinned_to took {format_seconds(staged)}, pin_cached_then_to {format_seconds(staged)} " \
               "(the same)" in pinning


class TestConcurrentFamiliesReadBackTheSpec:
    def test_every_concurrent_family_runs_where_the_spec_places_it(self, gpu_families):
        """bidir, all_gpus_host, copy_kind and numa all run on the simulated GPUs; numa places the host
        buffer on the GPU's node (GPU i on node i) or the other one."""
        frame, output = gpu_families.frame, gpu_families.output
        counts = frame[frame["op"].isin(CONCURRENT)].groupby("op").size().to_dict()
        assert counts == {"bidir": 3 * 2, "all_gpus_host": 4, "copy_kind": 7 * 2, "numa": 4 * 2}
        numa = frame[frame["op"] == "numa"]
        for row in numa.itertuples():
            gpu = int((row.dst if row.src == "cpu" else row.src).split(":")[1])
            assert row.host_numa_node == (gpu if row.variant.endswith("local") else 1 - gpu), row.name
        assert "simulated machine models single copies" not in output

    def test_wall_time_of_every_concurrent_case_is_what_the_spec_prices(self, gpu_families):
        """Duplex copy engines overlap both directions, every GPU at once shares the host's 60 GB/s,
        copy kernels run at half the d2d path, remote host buffers are capped at 25 GB/s."""
        spec, frame = gpu_families.spec, gpu_families.frame
        costs = Costs(spec)
        for row in frame[frame["op"].isin(CONCURRENT)].itertuples():
            assert row.clock == "simulated"
            assert row.median_s == pytest.approx(expected_concurrent(costs, row), rel=1e-4, abs=TICKS), row.name

    def test_report_draws_a_section_for_every_simulated_family(self, gpu_families):
        """The report has a section, with a drawn figure, for each GPU scenario and concurrent family."""
        html = gpu_families.html
        sections = {chunk.split('"', 1)[0]: chunk for chunk in html.split('<h2 id="section-')[1:]}
        for op in (*GPU_SCENARIOS, *CONCURRENT):
            assert op in sections, op
            body = sections[op].split("<h2 ", 1)[0]
            assert "<svg" in body and "data-missing" not in body, op


def family_spec(**extra):
    data = {"gpus": 2, "sync_us": 5.0, "dispatch_ns": 400, "launch_us": 4.0,
            "paths": {p: {"alpha_us": 2.0, "GBps": 10.0} for p in PATHS}} | extra
    return parse_spec(data)


class TestFamilySpecKeys:
    def test_defaults_are_the_documented_ones(self):
        """A spec without the scenario keys still runs every family, with README's defaults."""
        spec = family_spec()
        assert (spec.pin_GBps, spec.host_copy_GBps, spec.kernel_slowdown, spec.duplex, spec.shared_host_GBps,
                spec.numa_nodes, spec.remote_GBps) == (6.0, 10.0, 1.0, True, None, 1, None)

    @pytest.mark.parametrize(("key", "value", "message"), [
        ("duplex", 1, "duplex must be true or false, got 1"),
        ("pin_GBps", 0, "pin_GBps must be > 0, got 0.0"),
        ("host_copy_GBps", -2.0, "host_copy_GBps must be a finite number >= 0, got -2.0"),
        ("kernel_slowdown", 0.0, "kernel_slowdown must be > 0, got 0.0"),
        ("shared_host_GBps", 0, "shared_host_GBps must be > 0, got 0.0"),
        ("numa_nodes", 0, "numa_nodes must be > 0, got 0"),
        ("numa_nodes", 1.5, "numa_nodes must be a whole number, got 1.5"),
        ("remote_GBps", "fast", "remote_GBps must be a number, got 'fast'"),
    ])
    def test_bad_values_name_the_key(self, key, value, message):
        with pytest.raises(SpecError, match="^" + message.replace("(", r"\(").replace(".", r"\.") + "$"):
            family_spec(**{key: value})


class TestConcurrencyModel:
    """The copy engines and the shared host link, on the backend alone (no benchmark run)."""

    def elapsed(self, spec, case):
        from xferbench.measure.families.registry import SCENARIO_FAMILIES

        backend = SimBackend(spec)
        gpus = [int(gpu.split(":")[1]) for gpu in case.gpus]
        prepared = SCENARIO_FAMILIES[case.op].prepared(case, backend, lambda: [backend.synchronize(i) for i in gpus])
        start = CLOCK.now
        prepared.target()
        return CLOCK.now - start

    def test_duplex_engines_overlap_and_one_engine_takes_turns(self):
        from xferbench.measure.families.concurrent import Concurrent

        both = Concurrent("bidir", "h2d+d2h", "cpu", "cuda:0", MiB, ("cuda:0",))
        copy = 2e-6 + MiB / 10e9
        # duplex: d2h, queued one launch later on its own engine, ends last; then the synchronize
        assert self.elapsed(family_spec(), both) == pytest.approx(2 * 4e-6 + copy + 5e-6)
        # one engine: the second copy starts when the first ends
        assert self.elapsed(family_spec(duplex=False), both) == pytest.approx(4e-6 + 2 * copy + 5e-6)

    def test_every_gpu_at_once_shares_the_host_link(self):
        from xferbench.measure.families.concurrent import Concurrent

        every = Concurrent("all_gpus_host", "h2d_all", "cpu", "all:cuda", MiB, ("cuda:0", "cuda:1"))
        alone = 2e-6 + MiB / 10e9
        shared = 2e-6 + MiB / 4e9  # 8 GB/s shared by two GPUs: 4 each, below the path's 10
        # cuda:0's copy (launched first) ends one launch before cuda:1's, which its 5 us synchronize covers
        assert self.elapsed(family_spec(), every) == pytest.approx(4e-6 + alone + 2 * 5e-6)
        assert self.elapsed(family_spec(shared_host_GBps=8.0), every) == pytest.approx(4e-6 + shared + 2 * 5e-6)
        # a cap above what the GPUs ask for changes nothing
        assert self.elapsed(family_spec(shared_host_GBps=100.0), every) == pytest.approx(4e-6 + alone + 2 * 5e-6)

    def test_numa_remote_needs_a_second_node(self):
        from xferbench.measure.families.concurrent import Concurrent, NotPlaceable

        remote = Concurrent("numa", "h2d_remote", "cpu", "cuda:1", MiB, ("cuda:1",))
        with pytest.raises(NotPlaceable, match="the simulated machine has one"):
            self.elapsed(family_spec(), remote)
        assert self.elapsed(family_spec(numa_nodes=2, remote_GBps=5.0), remote) == pytest.approx(
            4e-6 + 2e-6 + MiB / 5e9 + 5e-6)


class TestRealBackendTakesTheRealPath:
    """The simulation changes nothing on a real GPU path: a backend that is not the simulator (a fake,
    even one claiming to be simulated) goes through the real prepares, on the wall+sync clock."""

    @pytest.fixture
    def simulator_refused(self, monkeypatch):
        import xferbench.measure.families.base as priced

        def refuse(*args):
            raise AssertionError("a real backend reached the simulator")
        monkeypatch.setattr(priced, "Priced", refuse)

    @staticmethod
    def record_prepares(monkeypatch, op):
        """Replace ``op``'s real preparation (and the check that torch sees its GPUs) by one that records its case."""
        import dataclasses

        from xferbench.measure.families import scenario
        from xferbench.measure.families.base import Prepared
        from xferbench.measure.families.registry import SCENARIO_FAMILIES

        prepared = []
        monkeypatch.setitem(SCENARIO_FAMILIES, op, dataclasses.replace(
            SCENARIO_FAMILIES[op], prepare=lambda case, sync: prepared.append(case) or Prepared(lambda: None)))
        monkeypatch.setattr(scenario, "missing_cuda", lambda devices: None)
        return prepared

    @pytest.mark.parametrize("claims_simulated", [False, True])
    def test_scenario(self, monkeypatch, simulator_refused, claims_simulated):
        from xferbench.measure.families.registry import run
        from xferbench.measure.families.scenario import Scenario

        from fakes import FakeBackend, FakeBenchmark

        prepared = self.record_prepares(monkeypatch, "sync_stall")
        backend = FakeBackend(gpus=2)
        backend.simulated = claims_simulated
        stall = Scenario("sync_stall", "item", "cuda:1", "cpu", 4, "bytes")
        info = run(stall, FakeBenchmark(), backend)
        assert prepared == [stall] and info["clock"] == "wall+sync"
        assert backend.syncs() and set(backend.syncs()) == {1}

    @pytest.mark.parametrize("claims_simulated", [False, True])
    def test_concurrent(self, monkeypatch, simulator_refused, claims_simulated):
        from xferbench.measure.families.concurrent import Concurrent
        from xferbench.measure.families.registry import run

        from fakes import FakeBackend, FakeBenchmark

        prepared = self.record_prepares(monkeypatch, "bidir")
        backend = FakeBackend(gpus=1)
        backend.simulated = claims_simulated
        case = Concurrent("bidir", "h2d", "cpu", "cuda:0", MiB, ("cuda:0",))
        info = run(case, FakeBenchmark(), backend)
        assert prepared == [case] and info["clock"] == "wall+sync"

    def test_host_only_scenario_on_the_simulated_machine_runs_for_real(self, monkeypatch, simulator_refused):
        """placement's CPU half touches no simulated GPU: it is run and timed for real."""
        from xferbench.measure.families.registry import run
        from xferbench.measure.families.scenario import Scenario

        from fakes import FakeBenchmark

        prepared = self.record_prepares(monkeypatch, "placement")
        on_cpu = Scenario("placement", "convert_on_cpu", "cpu", "cpu", 8, "images")
        info = run(on_cpu, FakeBenchmark(), SimBackend(family_spec()))
        assert prepared == [on_cpu] and info["clock"] == "wall+sync"


class TestWorkloadsArePricedAndLabelledSimulated:
    """batching, copy_overlap and state_dict on the simulated machine: each variant costs what the spec
    prices (launch 4 µs, sync 5 µs, every path 2 µs + n / 10 GB/s, host copies at 10 GB/s)."""

    @staticmethod
    def seconds(scenario):
        index = int(next(d for d in scenario.devices if d != "cpu").split(":")[1])
        return priced_seconds(scenario, SimBackend(family_spec()), index)

    def test_many_small_copies_pay_the_fixed_cost_each(self):
        from xferbench.families.batching.run import BATCH_PIECE
        from xferbench.measure.families.scenario import Scenario

        n, L, sync = 4 * MiB, 4 * US, 5 * US
        path = lambda nbytes: 2 * US + nbytes / 10e9  # noqa: E731
        one = Scenario("batching", "one_copy", "cpu", "cuda:0", n, "bytes")
        assert self.seconds(one) == pytest.approx(L + path(n) + sync)
        cat = Scenario("batching", "cat_then_one", "cpu", "cuda:0", n, "bytes")
        assert self.seconds(cat) == pytest.approx(n / 10e9 + L + path(n) + sync)
        many = Scenario("batching", "many_small", "cpu", "cuda:1", n, "bytes")
        assert self.seconds(many) == pytest.approx(1024 * (L + path(BATCH_PIECE)) + sync)

    def test_a_copy_on_a_side_stream_runs_beside_the_kernel(self):
        from xferbench.families.copy_overlap.run import OVERLAP_KERNEL_S as K
        from xferbench.measure.families.scenario import Scenario

        n, L, sync = 4 * MiB, 4 * US, 5 * US
        copy = 2 * US + n / 10e9
        cost = {v: self.seconds(Scenario("copy_overlap", v, "cpu", "cuda:0", n, "bytes"))
                for v in ("kernel_alone", "copy_alone", "sequential", "overlapped")}
        assert cost["kernel_alone"] == pytest.approx(L + K + sync)
        assert cost["copy_alone"] == pytest.approx(L + copy + sync)
        assert cost["sequential"] == pytest.approx(L + K + copy + sync)  # the copy waits for the kernel
        assert cost["overlapped"] == pytest.approx(max(L + K, 2 * L + copy) + sync)

    def test_state_dict_copies_each_tensor(self):
        from xferbench.measure.families.scenario import Scenario, parameter_bytes

        L, sync = 4 * US, 5 * US
        sizes = parameter_bytes(10**5)
        path = lambda nbytes: 2 * US + nbytes / 10e9  # noqa: E731
        blocking = Scenario("state_dict", "cpu", "cuda:0", "cpu", 10**5, "params")
        assert self.seconds(blocking) == pytest.approx(sum(L + path(b) for b in sizes) + sync)
        now = busy = 0.0  # queued one launch apart, run one after the other on the stream
        for b in sizes:
            now += L
            busy = max(now, busy) + path(b)
        queued = Scenario("state_dict", "nonblocking", "cuda:0", "cpu", 10**5, "params")
        assert self.seconds(queued) == pytest.approx(max(now, busy) + sync)

    @pytest.mark.parametrize("scenario", [("batching", "many_small", "cpu", "cuda:0", 64 * 2**10, "bytes"),
                                          ("copy_overlap", "overlapped", "cpu", "cuda:1", MiB, "bytes"),
                                          ("state_dict", "nonblocking", "cuda:0", "cpu", 10**4, "params")])
    def test_rows_say_simulated_and_carry_no_faults(self, scenario):
        """A simulated figure is never a measurement: the clock says so, and no page faults are counted."""
        from xferbench.measure.families.registry import run
        from xferbench.measure.families.scenario import Scenario

        from fakes import FakeBenchmark

        info = run(Scenario(*scenario), FakeBenchmark(calls=2), SimBackend(family_spec()))
        assert info["clock"] == "simulated" and "minor_faults_per_call" not in info
