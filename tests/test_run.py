"""Using xferbench outside this repository: ``xferbench run`` (the benchmarks shipped in the package), ``store
machine``, ``history -o`` into a new folder, pytest-benchmark's own comparison of xferbench runs, the editable
install and the wheel, each in a fresh venv run from an empty folder (slow: the wheel's installs torch from the
configured index)."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path
from typing import Any

import pytest

import xferbench
from xferbench import cli
from xferbench.cli import main

from hostile_inputs import assert_refused, run_cli

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "data" / "cpu-sample.json"


class TestRun:
    """``xferbench run -o RUN [pytest args]``: pytest on the package's benchmarks, from any folder."""

    def fake(self, monkeypatch: pytest.MonkeyPatch, code: int) -> list[list[str]]:
        calls: list[list[str]] = []

        def run(command: list[str], check: bool, env: dict[str, str] | None = None) -> Any:
            calls.append(command)
            return subprocess.CompletedProcess(command, code)

        monkeypatch.setattr(subprocess, "run", run)
        return calls

    def test_pytest_runs_the_package_benchmarks_with_the_arguments_given(self, tmp_path, monkeypatch):
        """pytest writes into a private folder (-o is claimed at the end), the journal goes beside -o."""
        calls = self.fake(monkeypatch, 0)
        out = tmp_path / "run.json"
        assert main(["run", "-o", str(out), "--xfer-devices=cpu", "-k", "host", "-p", "no:cacheprovider", "bench"]) == 0
        (command,) = calls
        assert command[:3] == [sys.executable, *cli.PYTEST] and command[3:8] == list(cli.RUN_ARGS)
        private = Path(command[8].removeprefix("--benchmark-json="))
        assert private.name == "run.json" and private.parent != tmp_path and not private.parent.exists()
        assert command[9:] == [f"--xfer-journal={tmp_path / 'run.journal.jsonl'}", "--xfer-devices=cpu", "-k", "host",
                               "-p", "no:cacheprovider", "bench"]

    @pytest.mark.hostile
    def test_pytest_never_imports_from_the_folder_it_runs_in(self, tmp_path, monkeypatch, capfd):
        """A cloned repository's pluggy.py or numpy/ in the working folder is not imported: pytest starts with that
        folder off sys.path (python -m would put it first)."""
        (tmp_path / "pluggy.py").write_text("raise SystemExit('pluggy.py of the working folder was imported')\n")
        (tmp_path / "numpy").mkdir()
        (tmp_path / "numpy" / "__init__.py").write_text("raise SystemExit('numpy/ of the working folder was imported')\n")
        monkeypatch.chdir(tmp_path)
        assert main(["run", "-o", "run.json", "--version"]) == 0
        assert "was imported" not in "".join(capfd.readouterr())
        (tmp_path / "own").mkdir()  # a benchmark of the user's own that imports numpy, run from that folder
        (tmp_path / "own" / "test_own.py").write_text("import numpy\n\ndef test_own():\n    assert numpy.ndarray\n")
        own = subprocess.run([sys.executable, *cli.PYTEST, "-q", "-p", "no:cacheprovider", "own"], capture_output=True,
                             text=True, timeout=300, cwd=tmp_path, check=False)
        assert own.returncode == 0 and "was imported" not in own.stdout + own.stderr, own.stdout[-2000:]

    def _racing(self, monkeypatch: pytest.MonkeyPatch, out: Path, other: str | None) -> None:
        """pytest that writes its run where it is told, while ``other`` (another run's, a user's file) lands on -o."""
        def run(command: list[str], check: bool, env: dict[str, str] | None = None) -> Any:
            assert env is not None and env["XFERBENCH_RUN_OUTPUT"] == str(out)  # the summary's report line names -o
            Path(next(a for a in command if a.startswith("--benchmark-json=")).split("=", 1)[1]).write_text("ours")
            if other is not None:
                out.write_text(other)
            return subprocess.CompletedProcess(command, 0)

        monkeypatch.setattr(subprocess, "run", run)

    @pytest.mark.hostile
    def test_a_file_that_takes_the_output_during_the_run_is_kept(self, tmp_path, monkeypatch, capsys):
        """Two runs given one -o, or a file saved there while the run runs: -o is claimed by an exclusive create when
        the run is written, so the other file stays, this run lands beside it under a name said in one line, exit 2."""
        out = tmp_path / "run.json"
        self._racing(monkeypatch, out, "the other run")
        assert main(["run", "-o", str(out)]) == 2
        assert out.read_text() == "the other run" and (tmp_path / "run.1.json").read_text() == "ours"
        err = capsys.readouterr().err.splitlines()
        assert err[-1] == f"xferbench run: -o {out}: another file took that name during the run; this run is " \
                          f"{tmp_path / 'run.1.json'}"

    def test_the_run_is_written_to_the_output(self, tmp_path, monkeypatch, capsys):
        out = tmp_path / "run.json"
        self._racing(monkeypatch, out, None)
        assert main(["run", "-o", str(out)]) == 0 and out.read_text() == "ours"
        assert capsys.readouterr().out == f"xferbench run: wrote {out}\n"

    def test_force_replaces_a_file_that_took_the_output(self, tmp_path, monkeypatch):
        out = tmp_path / "run.json"
        self._racing(monkeypatch, out, "the other run")
        assert main(["run", "-o", str(out), "--force"]) == 0 and out.read_text() == "ours"

    @pytest.mark.hostile
    @pytest.mark.parametrize("given", [["--benchmark-json=x.json"], ["--benchmark-json", "x.json"]])
    def test_benchmark_json_through_run_is_refused(self, tmp_path, monkeypatch, capsys, given):
        """pytest-benchmark's --benchmark-json replaces an earlier run of that name: the run's JSON is -o."""
        calls = self.fake(monkeypatch, 0)
        code, _, err = run_cli(capsys, "run", "-o", tmp_path / "run.json", *given)
        assert_refused(code, err, "--benchmark-json: xferbench run writes the run to -o")
        assert calls == []

    @pytest.mark.parametrize(("pytest_code", "code"), [(1, 1), (2, 130), (3, 3), (4, 2), (5, 2), (99, 3)])
    def test_pytest_exit_codes_become_xferbench_ones(self, tmp_path, monkeypatch, pytest_code, code):
        """A usage error or nothing collected is bad input (2), never 1 ("regression")."""
        self.fake(monkeypatch, pytest_code)
        assert main(["run", "-o", str(tmp_path / "r.json")]) == code

    def test_an_output_that_is_a_folder_is_refused_before_pytest(self, tmp_path, monkeypatch, capsys):
        calls = self.fake(monkeypatch, 0)
        assert main(["run", "-o", str(tmp_path)]) == 2 and calls == []
        assert "is a folder" in capsys.readouterr().err

    def test_the_folder_of_the_output_is_made_as_pytest_benchmark_would(self, tmp_path, monkeypatch):
        calls = self.fake(monkeypatch, 0)
        out = tmp_path / "runs" / "new" / "x.json"
        assert main(["run", "-o", str(out)]) == 0 and len(calls) == 1 and out.parent.is_dir()

    def test_an_output_below_a_file_is_refused_before_pytest(self, tmp_path, monkeypatch, capsys):
        calls = self.fake(monkeypatch, 0)
        (tmp_path / "file").write_text("")
        assert main(["run", "-o", str(tmp_path / "file" / "x.json")]) == 2 and calls == []
        assert capsys.readouterr().err.count("\n") == 1

    def test_an_existing_output_is_never_replaced_without_force(self, tmp_path, monkeypatch, capsys):
        """An earlier run's results are never lost: pytest-benchmark's --benchmark-json would replace them."""
        calls = self.fake(monkeypatch, 0)
        out = tmp_path / "run.json"
        out.write_text('{"benchmarks": []}')
        assert main(["run", "-o", str(out)]) == 2 and calls == [] and out.read_text() == '{"benchmarks": []}'
        error = capsys.readouterr().err
        assert error.count("\n") == 1 and "never replaces" in error
        assert main(["run", "-o", str(out), "--force"]) == 0 and len(calls) == 1
        assert "--force" not in calls[0]

    def test_other_commands_still_refuse_unknown_arguments(self, capsys):
        with pytest.raises(SystemExit) as exited:
            main(["compare", str(SAMPLE), str(SAMPLE), "--no-such-flag"])
        assert exited.value.code == 2 and "unrecognized arguments: --no-such-flag" in capsys.readouterr().err

    def test_the_run_arguments_name_the_plugin_and_the_package(self):
        assert cli.RUN_ARGS[:4] == ("-p", "xferbench.measure.session.plugin", "--pyargs", "xferbench.bench")


def test_the_wheel_finds_every_package_under_src_and_maps_bench_as_xferbench_bench():
    """bench/ is the package xferbench.bench (one copy of the benchmarks, run from a checkout and shipped in the
    wheel); setup.py finds the packages under src/xferbench (a new family folder needs no line) and adds the mapped
    one."""
    import tomllib  # Python 3.11+, as test_plugin's check of the requirements

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["package-dir"] == {"": "src", "xferbench.bench": "bench"} and "packages" not in setuptools
    assert (ROOT / "bench" / "__init__.py").exists() and not (ROOT / "src" / "xferbench" / "bench").exists()


@pytest.mark.hostile
def test_a_stray_folder_under_src_is_no_package_of_the_wheel(tmp_path, monkeypatch):
    """A scratchpad/ with an __init__.py left under src/ would have become a top-level package of the wheel: only
    xferbench's packages (and xferbench.bench) are shipped."""
    import setuptools

    shutil.copytree(ROOT / "src" / "xferbench", tmp_path / "src" / "xferbench",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "src" / "scratchpad" / "deep").mkdir(parents=True)
    for init in ("scratchpad/__init__.py", "scratchpad/deep/__init__.py"):
        (tmp_path / "src" / init).write_text("")
    given: dict[str, Any] = {}
    monkeypatch.setattr(setuptools, "setup", given.update)
    monkeypatch.chdir(tmp_path)
    exec(compile((ROOT / "setup.py").read_text(), "setup.py", "exec"), {"__name__": "__main__"})
    packages = given["packages"]
    assert "xferbench" in packages and "xferbench.bench" in packages
    assert {"xferbench.analyze.load", "xferbench.measure.distributed"} <= set(packages)
    assert [p for p in packages if not p.startswith("xferbench")] == []


def _measured(cwd: Path, env: dict[str, str], command: list[str], out: str, cases: int = 8) -> dict[str, Any]:
    """Run command (a benchmark run of the 64 KiB host cases, writing out) in cwd: its JSON."""
    args = ["--xfer-devices=cpu", "--xfer-sizes=64KiB", "-k", "host", "--benchmark-max-time=0.02", "-p",
            "no:cacheprovider"]
    measured = subprocess.run([*command, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert measured.returncode == 0, measured.stdout[-3000:] + measured.stderr[-2000:]
    run: dict[str, Any] = json.loads((cwd / out).read_text())
    # 3 cases, the reference copy_ (the smallest size) in 6 blocks (blocks.py)
    assert len(run["benchmarks"]) == cases and set(run["xferbench_run"]) == {"boot_id", "started", "load"}
    return run


def _pyargs(python: Path, out: str) -> list[str]:
    return [str(python), "-m", "pytest", "-p", "xferbench.measure.session.plugin", "--pyargs", "xferbench.bench",
            "--benchmark-only", f"--benchmark-json={out}"]


@pytest.mark.slow
def test_the_editable_install_runs_bench_as_xferbench_bench_from_any_folder(tmp_path):
    """`pip install -e` of a checkout (a copy here, so this one is left alone): `import xferbench.bench` is its
    bench/ folder, and `xferbench run`, `pytest --pyargs xferbench.bench` (from an empty folder) and `pytest bench`
    (in the checkout, no PYTHONPATH) measure. The venv sees this environment's packages (torch, pytest) through a
    .pth file, not its xferbench."""
    checkout = tmp_path / "checkout"
    for name in ("src", "bench"):
        shutil.copytree(ROOT / name, checkout / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, checkout / name)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    venv_site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip()
    (Path(venv_site) / "this_environment.pth").write_text("".join(f"{path}\n" for path in site.getsitepackages()))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    installed = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "-e",
                                str(checkout)], capture_output=True, text=True, timeout=600, env=env)
    assert installed.returncode == 0, installed.stderr[-2000:]
    empty = tmp_path / "empty"
    empty.mkdir()
    where = subprocess.run([str(python), "-c", "import xferbench.bench; print(xferbench.bench.__file__)"], cwd=empty,
                           env=env, capture_output=True, text=True, timeout=300)
    assert where.stdout.strip() == str(checkout / "bench" / "__init__.py"), where.stderr[-2000:]
    _measured(empty, env, [str(venv / "bin" / "xferbench"), "run", "-o", "a.json"], "a.json")
    _measured(empty, env, _pyargs(python, "b.json"), "b.json")
    checked = _measured(checkout, env, [str(python), "-m", "pytest", "bench", "--benchmark-only",
                                        "--benchmark-json=c.json"], "c.json")
    assert {b["fullname"].split("::")[0] for b in checked["benchmarks"]} == {"bench/test_host.py"}


def test_store_machine_names_the_folder_of_a_runs_machine(capsys):
    from xferbench.analyze.load.results import load
    from xferbench.analyze.store import machine_folder

    assert main(["store", "machine", str(SAMPLE)]) == 0
    assert capsys.readouterr().out.strip() == machine_folder(load([SAMPLE]).machine_info)


def test_history_makes_the_folder_of_its_output(tmp_path):
    """``history -o site/index.html`` where site/ does not exist yet (a dashboard's own folder)."""
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copy(SAMPLE, runs / "0001_a.json")
    assert main(["report", str(runs), "-o", str(tmp_path / "site" / "index.html")]) == 0
    assert (tmp_path / "site" / "index.html").exists()


def test_report_makes_the_folder_of_its_output(tmp_path):
    """``report run.json -o site/index.html`` where site/ does not exist yet: the page and its companions land there."""
    assert main(["report", str(SAMPLE), "-o", str(tmp_path / "site" / "index.html")]) == 0
    assert {p.name for p in (tmp_path / "site").iterdir()} == {"index.html", "index.csv", "index.md"}


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    src = Path(xferbench.__file__).resolve().parents[1]
    return subprocess.run([sys.executable, "-m", "pytest", str(ROOT / "bench" / "test_host.py"), "-q", "-p",
                           "no:cacheprovider", "--benchmark-only", "--xfer-sizes=1KiB", "-k", "clone",
                           "--benchmark-max-time=0.01", "--rootdir", str(cwd), *args], cwd=cwd, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(src)}, timeout=600)


@pytest.mark.slow
def test_pytest_benchmark_compares_two_xferbench_runs_under_an_absolute_storage_path(tmp_path):
    """machine_info holds only what identifies the machine (the load moved to xferbench_run), so pytest-benchmark's
    --benchmark-compare sees one machine, and its own path bug (ionelmc/pytest-benchmark#217, hit when it warns of
    another machine) stays asleep; --benchmark-compare-fail and `pytest-benchmark compare` work too."""
    storage = tmp_path / "store"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    first = _pytest(elsewhere, "--benchmark-autosave", f"--benchmark-storage={storage}")
    assert first.returncode == 0, first.stdout[-2000:]
    second = _pytest(elsewhere, "--benchmark-autosave", f"--benchmark-storage={storage}", "--benchmark-compare",
                     "--benchmark-compare-fail=min:1000%")
    assert second.returncode == 0 and "INTERNALERROR" not in second.stdout + second.stderr, second.stdout[-3000:]
    assert "Comparing against benchmarks from: Linux-" in second.stderr and "/0001_" in second.stderr
    runs = sorted(storage.rglob("0*.json"))
    assert len(runs) == 2 and all("xferbench_run" in json.loads(r.read_text()) for r in runs)
    console = Path(sys.executable).parent / "pytest-benchmark"  # its console script (the module has no __main__)
    compared = subprocess.run([str(console), "--storage", str(storage), "compare"],
                              capture_output=True, text=True, cwd=elsewhere, timeout=300)
    assert compared.returncode == 0 and "test_host" in compared.stdout, compared.stderr[-2000:]


@pytest.mark.slow
def test_the_wheel_runs_compares_and_stores_from_an_empty_folder(tmp_path):
    """From a fresh venv in an empty folder, with no checkout: the wheel (shipping bench/ as xferbench.bench)
    installs, `xferbench run` measures twice and `pytest --pyargs xferbench.bench` once, compare judges the two
    runs, and store push keeps them in a folder store."""
    wheels = tmp_path / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
                            "-q", "-w", str(wheels)], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = wheels.glob("xferbench-*.whl")
    shipped = zipfile.ZipFile(wheel).namelist()
    assert {"xferbench/bench/__init__.py", "xferbench/bench/conftest.py", "xferbench/bench/test_host.py"} <= set(shipped)
    assert not [name for name in shipped if name.startswith("bench/")]  # bench/ is shipped as xferbench.bench only
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    torch = next(line for line in subprocess.run([sys.executable, "-m", "pip", "freeze"], capture_output=True,
                                                 text=True).stdout.splitlines() if line.startswith("torch=="))
    # nothing of this checkout on the path (a PYTHONPATH to it would make pip take xferbench as installed)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    installed = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", torch.split("+")[0], str(wheel)],
                               capture_output=True, text=True, timeout=3000, env=env)
    assert installed.returncode == 0, installed.stderr[-2000:]
    empty = tmp_path / "empty"
    empty.mkdir()
    xferbench_cmd = str(venv / "bin" / "xferbench")
    for name in ("a.json", "b.json"):
        _measured(empty, env, [xferbench_cmd, "run", "-o", name], name)
    _measured(empty, env, _pyargs(venv / "bin" / "python", "pyargs.json"), "pyargs.json")
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import xferbench.bench; print(xferbench.bench.__file__)"],
                           cwd=empty, env=env, capture_output=True, text=True, timeout=300).stdout
    assert where.startswith(str(venv)) and str(ROOT) not in where  # the installed package's, no checkout's
    compared = subprocess.run([xferbench_cmd, "compare", "a.json", "b.json"], cwd=empty, env=env, capture_output=True,
                              text=True, timeout=300)
    assert compared.returncode in (0, 1) and "case(s): 1 base run(s) against 1 new run(s)" in compared.stdout
    stored = subprocess.run([xferbench_cmd, "store", "push", "store", "a.json", "b.json"], cwd=empty, env=env,
                            capture_output=True, text=True, timeout=300)
    assert stored.returncode == 0 and "2 run(s) in store" in stored.stdout, stored.stderr
    assert len(list((empty / "store").rglob("*.json"))) >= 2
    _own_benchmarks_as_the_docs_write_them(empty, env, xferbench_cmd)


def _own_benchmarks_as_the_docs_write_them(repo: Path, env: dict[str, str], xferbench_cmd: str) -> None:
    """docs/regression-tracking.md's step 2, its files as the page writes them, in a new git repository: `xferbench
    run ... bench` measures the repository's own case beside the shipped ones, under its own name."""
    page = (ROOT / "docs" / "regression-tracking.md").read_text()
    block = page.split("**Benchmarks of your own**", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    conftest, test = block.split("# bench/test_our_host_copy.py")
    (repo / "bench").mkdir()
    (repo / "bench" / "conftest.py").write_text(textwrap.dedent(conftest))
    (repo / "bench" / "test_our_host_copy.py").write_text(textwrap.dedent(test))
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, timeout=60)
    # both suites: 2 cases and a reference in 6 blocks each
    run = _measured(repo, env, [xferbench_cmd, "run", "-o", "own.json", "bench"], "own.json", cases=16)
    names = {bench["fullname"] for bench in run["benchmarks"]}
    assert any(name.startswith("bench/test_our_host_copy.py::test_our_host_copy[") for name in names), names
    assert any(name.startswith("bench/test_host.py::") for name in names), names  # the shipped ones, apart
