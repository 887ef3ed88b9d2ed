"""The simulated machine as the suite's oracle: the real pipeline (plugin, timing, transfers,
JSON, results, fits, findings, check, compare) must read back the costs a spec gives.

The benchmark runs use the project's own ``bench/`` files in a subprocess, as a user would.
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch  # noqa: F401  loaded before pytester's in-process runs, which unload what they import

from xferbench.analyze.findings import findings
from xferbench.analyze.model import fit_alpha_beta, fit_paths
from xferbench.analyze.results import load
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


class TestReadsBackTheSpec:
    def test_device_time_of_every_copy_is_alpha_plus_n_over_bandwidth(self, two_gpus):
        """Events read each copy's device time within 1%: no host enqueue, no synchronize in it."""
        spec, out = two_gpus
        frame = rows(out)
        copies = frame[frame["op"].isin(COPIES)]
        assert len(copies) == (12 + 5 + 2 + 2) * 2 * 5  # variants x endpoints x sizes
        for row in copies.itertuples():
            if row.host_memory == "pageable":  # staged by the host: no device time of its own
                assert math.isnan(row.device_seconds), row.name
            else:
                assert row.device_seconds == pytest.approx(device_cost(spec, row), rel=0.01), row.name

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
        """The α-β fit of wall times finds GBps within 2% and launch + alpha + syncs within 10%;
        the fit of device times finds alpha within 10%; the report's fit states the truth or a
        capped figure below it, saying so."""
        spec, out = two_gpus
        frame = rows(out)
        fits = fit_paths(frame)
        fits = fits[fits["op"].isin(COPIES)]
        assert len(fits) == 21 * 2
        for fit in fits.itertuples():
            group = frame[frame["path"] == fit.path]
            first = next(group.itertuples())
            cost = path_cost(spec, first)
            syncs = sum(d.startswith("cuda:") for d in {first.src, first.dst})
            wall = fit_alpha_beta(group["nbytes"].to_numpy(), group["transfer_s"].to_numpy())
            assert wall is not None and wall.beta_gbps == pytest.approx(cost.GBps, rel=0.02), fit.path
            assert fit.alpha_us == pytest.approx(spec.launch_us + cost.alpha_us + syncs * spec.sync_us, rel=0.1)
            assert fit.beta_gbps == pytest.approx(cost.GBps, rel=0.02), fit.path
            # What the report states is that β, or, where it caps β at the largest size's figure
            # (the sweep stopped far below it), that figure, lower than the truth, saying so.
            if "capped" in str(fit.beta_basis):
                assert fit.stated_gbps == fit.largest_gbps < cost.GBps, fit.path
            else:
                assert fit.stated_gbps == pytest.approx(cost.GBps, rel=0.02), fit.path
            if first.host_memory == "pageable":
                continue  # no device time: see test_device_time_of_every_copy_is_alpha_plus_n_over_bandwidth
            device = fit_alpha_beta(group["nbytes"].to_numpy(), group["device_seconds"].to_numpy())
            assert device is not None and device.alpha_s * 1e6 == pytest.approx(cost.alpha_us, rel=0.1), fit.path
            assert device.beta_gbps == pytest.approx(cost.GBps, rel=0.02), fit.path

    def test_gpu_noop_is_the_dispatch_not_a_synchronize(self, two_gpus):
        """A no-op .cuda(i)/.to() on a GPU costs dispatch_ns: timed bare, with no synchronize."""
        spec, out = two_gpus
        frame = rows(out)
        gpu_noops = frame[(frame["op"] == "noop") & (frame["src"] != "cpu")]
        assert len(gpu_noops) == 2 * 2 * 2  # to/cuda x 2 GPUs x smallest/largest size
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

    def test_check_verdicts_agree_with_the_spec_and_are_labelled(self, tmp_path, capsys):
        """At 64 MiB the spec has pinned beat pageable, d2h pageable slowest and same-device copies
        far ahead: check holds every expectation and labels each verdict simulated."""
        out = tmp_path / "large.json"
        run_bench(write_spec(tmp_path), out, ("h2d", "d2h", "d2d", "noop"), "4B,64MiB", "-k", "cuda:0 or noop")
        code = main(["check", str(out)])
        lines = capsys.readouterr().out.splitlines()
        assert code == 0, lines
        assert "SIMULATED" in lines[0]
        # The verdicts on families this run did not include (concurrent ones, run-time clocks) are not measured.
        others = ("(bidir)", "(all_gpus_host)", "(copy_kind)", "(numa)", "clocks and PCIe link")
        statuses = {line.strip().split("  ")[0] for line in lines[1:] if line.strip() and not any(o in line for o in others)}
        assert statuses <= {"simulated held", "simulated figure"}, lines
        pinned = [line for line in lines if "pinned host-to-device beats pageable" in line]
        slowest = [line for line in lines if "pageable memory is the slowest" in line]
        assert pinned and "simulated held" in pinned[0] and slowest and "simulated held" in slowest[0], lines

    def test_findings_say_pinned_beats_pageable(self, two_gpus):
        text = " ".join(findings(rows(two_gpus[1])))
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
        verdicts = {line.split("  ")[0].strip(): line.split()[-1] for line in lines if line.startswith("h2d ")}
        assert verdicts == {"h2d pinned non-blocking copy_ cpu->cuda:0": "regression",
                            "h2d pinned copy_ cpu->cuda:0": "regression",
                            "h2d pageable non-blocking copy_ cpu->cuda:0": "unchanged",
                            "h2d pageable copy_ cpu->cuda:0": "unchanged"}, lines


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
        pytester.makeconftest('pytest_plugins = ("xferbench.measure.plugin",)')
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
        pytester.makeconftest('pytest_plugins = ("xferbench.measure.plugin",)')
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
        backend.charge(case)
        assert CLOCK.now == pytest.approx(4e-6)
        backend.charge(case)  # queued behind the first copy
        assert CLOCK.now == pytest.approx(8e-6)
        backend.synchronize(0)
        assert CLOCK.now == pytest.approx(2 * (2e-6 + 1e6 / 10e9) + 4e-6 + 5e-6)

    def test_blocking_and_pageable_copies_wait(self):
        backend = SimBackend(self.spec())
        backend.charge(Case("h2d", "to", "cpu", "cuda:1", (250_000,), host_memory="pageable", non_blocking=True))
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

    from xferbench.measure.plugin import pytest_benchmark_compare_machine_info

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
