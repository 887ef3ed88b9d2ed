"""The plugin end to end through pytester: options, usage errors, parametrization, JSON."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_benchmark.session
import torch  # loaded before pytester's in-process runs, which unload what they import

import xferbench.measure.session.plugin  # noqa: F401
from xferbench.measure.hardware.machine import host_cache_bytes
from xferbench.measure.session.blocks import BLOCKS
from xferbench.measure.session.plugin import PROFILE_MAX_TIME

ROOT = Path(__file__).resolve().parents[1]

CONFTEST = """
pytest_plugins = ("xferbench.measure.session.plugin",)
from fakes import FakeBackend

def pytest_xfer_make_backend(config):
    return FakeBackend(gpus={gpus})
"""

BENCH = """
import pytest

@pytest.mark.xfer("{op}")
def test_{op}(xfer_case, xfer):
    xfer(xfer_case)
"""


@pytest.fixture
def suite(pytester):
    def make(gpus: int = 0, ops=("host",)):
        pytester.makeconftest(CONFTEST.format(gpus=gpus))
        for op in ops:
            pytester.makepyfile(**{f"test_{op}": BENCH.format(op=op)})
        return pytester
    return make


class TestUsageErrors:
    @pytest.mark.parametrize(("args", "message"), [
        (["--xfer-devices=cuda : 0"], "--xfer-devices=cuda : 0: 'cuda : 0' is not a device; write it like cpu or cuda:0"),
        (["--xfer-devices=gpu0"], "'gpu0' is not a device"),
        (["--xfer-devices=cuda:7"], "--xfer-devices=cuda:7: cuda:7 does not exist on this machine; it has: cpu, cuda:0"),
        (["--xfer-sizes=64XB"], "argument --xfer-sizes: '64XB' is not a size"),
        (["--xfer-sizes=1GiB..1KiB"], "the range must go from small to large"),
        (["--xfer-dtypes=float8"], "argument --xfer-dtypes: 'float8' is not a supported dtype"),
        (["--xfer-profile=huge"], "argument --xfer-profile: invalid choice: 'huge'"),
    ])
    def test_one_line_error_no_traceback(self, suite, args, message):
        """Bad option values are pytest usage errors naming the option and the value."""
        result = suite(gpus=1).runpytest("--benchmark-only", *args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        output = "\n".join(result.outlines + result.errlines)
        assert message in output
        assert "Traceback" not in output


class TestCollection:
    def test_three_gpu_matrix_and_skips(self, suite):
        """With 3 fake GPUs every ordered peer pair is a test with a readable id."""
        result = suite(gpus=3, ops=("peer",)).runpytest("--collect-only", "-q", "--xfer-sizes=1KiB")
        ids = [line for line in result.outlines if "::test_peer[" in line]
        assert len(ids) == 12
        assert "test_peer.py::test_peer[blocking-to-1KiB-float32-cuda:2->cuda:0]" in ids

    def test_cpu_only_skip_reason(self, suite):
        """On a CPU-only machine the accelerator families skip with one line each."""
        result = suite(gpus=0, ops=("h2d", "peer")).runpytest("--benchmark-only", "-rs")
        result.assert_outcomes(skipped=2)
        result.stdout.fnmatch_lines([
            "*h2d needs an accelerator; the devices measured are: cpu",
            "*peer copies need two accelerators; found 0 (none)",
        ])

    def test_header_names_settings(self, suite):
        result = suite(gpus=1).runpytest("--collect-only", "--xfer-devices=cpu", "--xfer-sizes=4B,2x3")
        result.stdout.fnmatch_lines(["xferbench: devices cpu; profile quick; sizes 4B, 2x3; dtypes float32"])


class TestJson:
    def test_extra_info_and_machine_info(self, suite, tmp_path):
        """The JSON carries the data contract per benchmark and an xferbench machine block."""
        out = tmp_path / "run.json"
        result = suite(gpus=0, ops=("host", "noop")).runpytest(
            "--benchmark-only", "--xfer-sizes=1KiB", "--benchmark-max-time=0.01", "--xfer-blocks=1",
            f"--benchmark-json={out}")
        # host: copy_ (a reference: 6 blocks), clone, copy_ on one thread; noop: .to(device), .to('cpu'), .cpu()
        result.assert_outcomes(passed=11)
        data = json.loads(out.read_text())
        infos = {b["name"]: b["extra_info"] for b in data["benchmarks"]}
        # what the process held after each benchmark (journal.memory_now): a leak shows in the results
        assert all(info.pop("host_rss_bytes") > 0 for info in infos.values())
        faults = infos["test_host[pageable-clone-1KiB-float32-cpu->cpu]"].get("minor_faults_per_call")
        assert type(faults) is float
        assert infos["test_host[pageable-clone-1KiB-float32-cpu->cpu]"] == {
            "xfer_schema": 1, "op": "host", "src": "cpu", "dst": "cpu", "nbytes": 1024, "dtype": "float32",
            "shape": [256], "host_memory": "pageable", "non_blocking": False, "method": "clone", "clock": "wall+sync",
            "variant": None, "world_size": None, "backend": None, "minor_faults_per_call": faults,
            # 1 KiB fits the host's cache, where sysfs tells its size
            **({"cache_resident": True} if host_cache_bytes() else {})}
        assert data["machine_info"]["xferbench"]["devices"] == []
        # the run's own facts beside machine_info, which holds only what identifies the machine: the machine's load
        # around the run (compare says when a side ran busy), its boot and start
        facts = data["xferbench_run"]
        assert set(facts) == {"boot_id", "started", "load"} and "load" not in data["machine_info"]["xferbench"]
        assert set(facts["load"]) == {"cpus", "load_before", "load_after", "cpu_steal", "cpu_others"}
        assert facts["load"]["cpus"] >= 1 and facts["started"].endswith("+00:00")
        assert facts["boot_id"] == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        # the software measured through
        assert data["machine_info"]["xferbench"]["pytest_benchmark"] == data["version"]
        # every round is kept for the significance test of `xferbench compare`
        assert all(len(b["stats"]["data"]) == b["stats"]["rounds"] for b in data["benchmarks"])
        assert {b["options"]["min_time"] for b in data["benchmarks"]} == {0.001}

    def test_profile_sets_max_time_unless_given(self, suite, tmp_path):
        """The quick profile's time budget applies only when --benchmark-max-time is absent."""
        pytester = suite(gpus=0)
        for extra, expected in (([], float(PROFILE_MAX_TIME["quick"])), (["--benchmark-max-time=0.02"], 0.02)):
            out = tmp_path / f"{expected}.json"
            pytester.runpytest("--benchmark-only", "--xfer-sizes=4B", f"--benchmark-json={out}", *extra)
            times = {b["name"]: b["options"]["max_time"] for b in json.loads(out.read_text())["benchmarks"]}
            # a reference case's blocks share the case's time (blocks.py)
            assert [t * BLOCKS if "-block" in name else t for name, t in times.items()] == pytest.approx(
                [expected] * len(times))
            assert any("-block" in name for name in times) and len(times) > 3


class TestCompareMachines:
    @pytest.fixture(autouse=True, params=["this Python", "Python 3.12, CUDA build"])
    def elsewhere(self, request, monkeypatch):
        """Also as under Python 3.12 with a CUDA build of torch and no GPU: pytest-benchmark keeps runs in a folder
        named after the Python version (Linux-CPython-3.12-64bit), and the build's torch.version.cuda is set."""
        if request.param != "this Python":
            monkeypatch.setattr(pytest_benchmark.session, "get_machine_id", lambda: "Linux-CPython-3.12-64bit")
            monkeypatch.setattr(torch.version, "cuda", "12.8")

    def _saved_run(self, pytester, gpu_name: str):
        # the folder --benchmark-compare reads: the running Python's machine id, never a fixed version
        storage = pytester.path / ".benchmarks" / pytest_benchmark.session.get_machine_id()
        storage.mkdir(parents=True)
        run = {"machine_info": {"xferbench": {"devices": [{"name": gpu_name}], "torch": "2.13.0+cpu"}},
               "commit_info": {}, "benchmarks": [], "datetime": "2026-01-01T00:00:00", "version": "5.2.3"}
        (storage / "0001_base.json").write_text(json.dumps(run))

    def test_different_gpu_is_refused(self, suite):
        """--benchmark-compare against a run from another GPU fails, naming what differs."""
        pytester = suite(gpus=1)
        self._saved_run(pytester, "NVIDIA H100")
        result = pytester.runpytest("--benchmark-only", "--benchmark-compare", "--benchmark-storage=.benchmarks")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        output = "\n".join(result.outlines + result.errlines)
        assert "the saved run comes from a different machine (GPUs [NVIDIA H100] -> [Fake GPU 0]" in output
        assert "--xfer-allow-different-machines" in output

    @pytest.mark.filterwarnings("ignore::pytest_benchmark.logger.PytestBenchmarkWarning")
    def test_override(self, suite):
        """--xfer-allow-different-machines lets the comparison run."""
        pytester = suite(gpus=1)
        self._saved_run(pytester, "NVIDIA H100")
        result = pytester.runpytest("--benchmark-only", "--benchmark-compare", "--benchmark-storage=.benchmarks",
                                    "--xfer-allow-different-machines", "--xfer-devices=cpu", "--xfer-sizes=4B",
                                    "--benchmark-max-time=0.01")
        assert result.ret == pytest.ExitCode.OK


@pytest.mark.slow
@pytest.mark.parametrize("pythonpath", [None, "src"], ids=["installed", "PYTHONPATH=src"])
def test_real_bench_directory_runs_on_this_machine(tmp_path, pythonpath):
    """`pytest bench --benchmark-only` from the checkout with the real backend runs and writes JSON, with the
    installed xferbench and as .ci/nightly and tools/gpu_reference_run.sh run it (PYTHONPATH=src: the package's
    xferbench.bench is not importable there, and bench/ runs as the folder's own package, bench)."""
    out = tmp_path / "bench.json"
    env = {**os.environ, **({"PYTHONPATH": str(ROOT / pythonpath)} if pythonpath else {})}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "bench", "--benchmark-only", "--xfer-sizes=1KiB", "-q", "-p", "no:cacheprovider",
         "--benchmark-max-time=0.01", f"--benchmark-json={out}"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {b["fullname"].split("::")[0] for b in json.loads(out.read_text())["benchmarks"]} >= {"bench/test_host.py"}
    names = {b["name"] for b in json.loads(out.read_text())["benchmarks"]}
    assert "test_host[pageable-clone-1KiB-float32-cpu->cpu]" in names
    assert "test_host[pageable-copy_-1KiB-float32-cpu->cpu-block6of6]" in names  # a reference case, in blocks
    assert "test_noop[to-1KiB-float32-cpu]" in names


def test_pytest_benchmark_requirement_covers_what_the_code_calls():
    """The scenarios call benchmark.pedantic(teardown=...), new in pytest-benchmark 5.2:
    the declared requirement must not admit a version without it."""
    import inspect

    import tomllib
    from packaging.requirements import Requirement
    from pytest_benchmark.fixture import BenchmarkFixture

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirement = next(Requirement(r) for r in project["dependencies"] if r.startswith("pytest-benchmark"))
    assert not requirement.specifier.contains("5.1.0")
    assert "teardown" in inspect.signature(BenchmarkFixture.pedantic).parameters


@pytest.mark.hostile
class TestOptionsUpFront:
    def test_without_pytest_benchmark_a_clear_message(self, pytester):
        """-p no:benchmark: one usage error saying what is missing, not an unknown-hook traceback."""
        pytester.makeconftest('pytest_plugins = ("xferbench.measure.session.plugin",)')
        pytester.makepyfile(test_one="def test_one():\n    pass\n")
        result = pytester.runpytest_subprocess("-p", "no:benchmark")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*xferbench times with pytest-benchmark*-p no:benchmark*"])
        assert "Traceback" not in result.stderr.str()


@pytest.mark.hostile
class TestOptionValues:
    @pytest.mark.parametrize(("option", "message"), [
        ("--xfer-sizes=0B", "argument --xfer-sizes: '0B' is not a positive size"),
        ("--xfer-dtypes=float8", "argument --xfer-dtypes: 'float8' is not a supported dtype"),
        ("--xfer-profile=slow", "argument --xfer-profile: invalid choice: 'slow'"),
        ("--xfer-dist-timeout=nan", "argument --xfer-dist-timeout: 'nan': must be a finite number"),
        ("--xfer-dist-backend=mpi", "argument --xfer-dist-backend: invalid choice: 'mpi'"),
        ("--xfer-dist-rounds=0", "argument --xfer-dist-rounds: '0': must be between"),
    ])
    def test_pytest_option_value_is_one_line_exit_4(self, pytester, option, message):
        """pytest prints argparse's own refusal as usage + error + inifile + rootdir; ours is one line."""
        pytester.makeconftest('pytest_plugins = ("xferbench.measure.session.plugin",)')
        pytester.makepyfile(test_one="def test_one():\n    pass\n")
        result = pytester.runpytest_subprocess(option)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        errors = [line for line in result.errlines if line.strip()]
        assert len(errors) == 1 and errors[0].startswith(f"ERROR: {message}"), errors

    def test_pytest_option_values_still_parsed(self, pytester):
        pytester.makeconftest('pytest_plugins = ("xferbench.measure.session.plugin",)')
        pytester.makepyfile(test_one="def test_one(request):\n    o = request.config.option\n"
                                     "    assert o.xfer_sizes == [4, (2, 3)] and o.xfer_dtypes == ['float16']\n"
                                     "    assert o.xfer_dist_timeout == 5.0 and o.xfer_dist_rounds == 3\n")
        result = pytester.runpytest_subprocess("--xfer-sizes=4B,2x3", "--xfer-dtypes=float16,torch.float16",
                                               "--xfer-dist-timeout=5", "--xfer-dist-rounds=3", "--xfer-devices=cpu")
        result.assert_outcomes(passed=1)
