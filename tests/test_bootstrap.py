"""run.py, the Quickstart: which environment the commands run in, what it installs there and where never, its
help, and how it ends (Ctrl-C, SIGTERM, a setup failure under tox).

The whole path with the package index (a .venv made, the project and torch installed, the benchmarks and the
tests run) is measured by hand in a fresh clone (README, docs/install.md) and run by CI (.ci/run).
"""

import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("xferbench_run", ROOT / "run.py")
run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run)


def _tree(folder: Path) -> dict[str, str]:
    """Every file under folder with its content's hash (links by their target): what a change would show."""
    found = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            found[str(path.relative_to(folder))] = "-> " + os.readlink(path)
        elif path.is_file():
            found[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _base_python(where: Path) -> Path:
    """A Python installation of its own that is neither a virtual environment nor externally managed (PEP 668),
    with an empty site-packages: this interpreter copied, its standard library linked, as a pyenv Python is."""
    real = Path(sys.base_prefix)
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    (where / "bin").mkdir(parents=True)
    shutil.copy2(real / "bin" / version, where / "bin" / version)
    stdlib = Path(sysconfig.get_path("stdlib", vars={"installed_base": str(real), "base": str(real)}))
    lib = where / "lib" / version
    lib.mkdir(parents=True)
    for entry in stdlib.iterdir():
        if entry.name not in ("site-packages", "dist-packages", "EXTERNALLY-MANAGED"):
            (lib / entry.name).symlink_to(entry)
    (lib / "site-packages").mkdir()
    for shared in (real / "lib").glob("libpython*"):  # a --enable-shared build finds it beside its prefix
        (where / "lib" / shared.name).symlink_to(shared)
    python = where / "bin" / version
    found = subprocess.run([python, "-c", "import sys, ensurepip; print(sys.prefix == sys.base_prefix)"],
                           capture_output=True, text=True)
    if found.stdout.strip() != "True":
        pytest.skip(f"this Python cannot be copied into a standalone installation: {found.stderr.strip()[-200:]}")
    return python


@pytest.mark.slow  # a virtual environment made with ensurepip: about 10 s
def test_a_python_that_is_not_an_environment_gets_dot_venv_and_is_left_unchanged(tmp_path):
    """Under a plain (pyenv-like) Python, run.py makes .venv beside itself and runs there; the Python's own
    site-packages, even with a package of the user's in it, is byte for byte the same afterwards."""
    base = _base_python(tmp_path / "base")
    site = base.parents[1] / "lib" / base.name / "site-packages"
    project = tmp_path / "project"
    (project / "tools").mkdir(parents=True)
    (project / "src" / "xferbench").mkdir(parents=True)
    (project / "src" / "xferbench" / "__init__.py").write_text("")
    shutil.copy(ROOT / "run.py", project / "run.py")
    # the requirements are all there (none), and so is torch (the stand-in says so): nothing needs the index
    (project / "pyproject.toml").write_text(textwrap.dedent("""\
        [project]
        name = "xferbench"
        requires-python = ">=3.10"
        dependencies = []
        [project.optional-dependencies]
        test = []
        browser = []
        """))
    (project / "tools" / "ensure_torch.py").write_text("print('ensure_torch: stand-in')\n")
    # the user's own package in their Python: here, one that puts the project on the path
    (site / "users_own.pth").write_text(str(project / "src") + "\n")
    before = _tree(base.parents[1])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "CONDA"))}
    done = subprocess.run([base, project / "run.py", "python"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    venv_python = project / ".venv" / "bin" / "python"
    assert done.stdout.strip() == str(venv_python)
    assert f"making the virtual environment {project / '.venv'}" in done.stderr
    assert "installing" not in done.stderr
    assert _tree(base.parents[1]) == before


class TestWhichEnvironment:
    def test_a_venv_is_used_as_it_is(self, monkeypatch):
        monkeypatch.setattr(sys, "prefix", "/somewhere/venv")
        assert run.own_environment()

    @pytest.mark.parametrize("active", [True, False])
    def test_a_conda_environment_only_when_active(self, tmp_path, monkeypatch, active):
        (tmp_path / "conda-meta").mkdir()
        monkeypatch.setattr(sys, "prefix", str(tmp_path))
        monkeypatch.setattr(sys, "base_prefix", str(tmp_path))
        monkeypatch.setenv("CONDA_PREFIX", str(tmp_path) if active else "/other/env")
        assert run.own_environment() is active

    @pytest.mark.parametrize("marker", [True, False], ids=["externally managed", "pyenv-like"])
    def test_any_other_python_gets_dot_venv(self, tmp_path, monkeypatch, marker):
        """A Debian system Python (PEP 668) and a pyenv or Homebrew Python alike: never installed into."""
        if marker:
            (tmp_path / "EXTERNALLY-MANAGED").write_text("[externally-managed]\n")
        monkeypatch.setattr(sys, "prefix", str(tmp_path))
        monkeypatch.setattr(sys, "base_prefix", str(tmp_path))
        monkeypatch.delenv("CONDA_PREFIX", raising=False)
        made = []
        monkeypatch.setattr(run, "make_venv", lambda: made.append(True) or Path("/project/.venv/bin/python"))
        assert run.environment() == Path("/project/.venv/bin/python") and made


class TestMakeVenv:
    def test_neither_ensurepip_nor_pip_says_what_to_install(self, tmp_path, monkeypatch):
        monkeypatch.setattr(run, "has_module", lambda python, module: False)
        with pytest.raises(run.BootstrapError, match=r"install python3-venv \(sudo apt-get install python3-venv\)"):
            run.make_venv(tmp_path / "venv")

    def test_without_ensurepip_the_system_pip_fills_the_venv(self, tmp_path, monkeypatch):
        """Debian without python3-venv: venv --without-pip, then `pip --python VENV install pip`."""
        calls = []

        def quiet(*command):
            calls.append([str(c) for c in command])
            return type("Done", (), {"returncode": 0, "stderr": ""})()

        monkeypatch.setattr(run, "has_module", lambda python, module: module == "pip" and python == "python3")
        monkeypatch.setattr(run, "_quiet", quiet)
        venv = tmp_path / "venv"
        assert run.make_venv(venv, python="python3") == run._venv_python(venv)
        assert calls == [["python3", "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
                         ["python3", "-m", "pip", "--python", str(run._venv_python(venv)), "install", "-q", "pip"]]


class TestBrokenVenv:
    def _venv(self, tmp_path, target: str) -> Path:
        venv = tmp_path / ".venv"
        (venv / "bin").mkdir(parents=True)
        (venv / "pyvenv.cfg").write_text("home = /gone/bin\n")
        (venv / "bin" / "python").symlink_to(target)
        return venv

    def test_a_dangling_python_is_named_and_the_venv_made_again(self, tmp_path, capsys):
        """The Python .venv was made from was removed (a pyenv version uninstalled): one line, then a new .venv."""
        venv = self._venv(tmp_path, "/gone/bin/python3.12")
        run.drop_broken_venv(venv)
        assert not venv.exists()
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert "does not start (it points to /gone/bin/python3.12, which was removed or moved); making .venv again" in err

    def test_a_working_venv_is_kept(self, tmp_path):
        venv = self._venv(tmp_path, sys.executable)
        run.drop_broken_venv(venv)
        assert (venv / "bin" / "python").exists()

    def test_a_folder_run_py_did_not_make_is_never_deleted(self, tmp_path):
        venv = self._venv(tmp_path, "/gone/bin/python3.12")
        (venv / "pyvenv.cfg").unlink()
        with pytest.raises(run.BootstrapError, match=r"is not a virtual environment run\.py made; move it away"):
            run.drop_broken_venv(venv)
        assert venv.exists()


class TestRequirements:
    def test_what_is_missing_or_too_old(self, tmp_path, monkeypatch):
        (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""\
            [project]
            dependencies = ["pytest>=1", "pytest>=999", "surely-not-a-package-here>=1"]
            [project.optional-dependencies]
            test = ["pytest-xdist"]
            other = ["also-not-here"]
            """))
        monkeypatch.setattr(run, "ROOT", tmp_path)
        missing = run.missing_requirements(Path(sys.executable), ("test",))
        assert missing == ["pytest>=999", "surely-not-a-package-here>=1", "xferbench"]

    def test_the_checkout_s_requirements_are_there_in_the_test_environment(self):
        assert run.missing_requirements(Path(sys.executable)) in ([], ["xferbench"])

    def test_an_environment_of_the_user_s_own_keeps_its_xferbench(self, monkeypatch):
        """Only the missing requirements go into it; the commands import this checkout (PYTHONPATH=src)."""
        monkeypatch.setattr(run, "missing_requirements", lambda python: ["pyyaml", "xferbench"])
        installed = []
        monkeypatch.setattr(run, "pip_install", lambda python, arguments, what: installed.append(arguments))
        run.ensure_project(Path("/users/own/venv/bin/python"))
        assert installed == [["pyyaml"]]

    def test_dot_venv_gets_the_project_itself(self, monkeypatch):
        monkeypatch.setattr(run, "missing_requirements", lambda python: ["xferbench"])
        installed = []
        monkeypatch.setattr(run, "pip_install", lambda python, arguments, what: installed.append(arguments))
        run.ensure_project(run._venv_python(run.VENV))
        assert installed == [["-e", f"{run.ROOT}[test,browser]"]]


class TestCommandLine:
    def test_help_lists_every_command_with_its_time_and_exits_0(self):
        done = subprocess.run([sys.executable, ROOT / "run.py", "--help"], capture_output=True, text=True)
        assert done.returncode == 0 and done.stderr == ""
        for word in run.COMMANDS:
            assert re.search(rf"^  {word} +\S", done.stdout, re.MULTILINE), word
        assert "75 s of benchmarks" in done.stdout and "-k h2d" in done.stdout and "tests/test_store.py" in done.stdout

    def test_unknown_word_is_a_usage_error(self, capsys):
        assert run.main(["benchmark"]) == 2
        assert "usage: python3 run.py {bench|test|slow|lint|golden|tox|python}" in capsys.readouterr().err

    def test_a_python_older_than_pyproject_s_is_one_line(self, monkeypatch, capsys):
        monkeypatch.setattr(sys, "version_info", (3, 9, 18, "final", 0))
        assert run.main(["test"]) == 2
        assert "xferbench needs Python 3.10 or newer (pyproject.toml's requires-python)" in capsys.readouterr().err

    def test_a_setup_failure_is_exit_2(self, monkeypatch, capsys):
        def fail(word, args):
            raise run.BootstrapError("pip could not install tox (its last lines above)")

        monkeypatch.setattr(run, "dispatch", fail)
        assert run.main(["test"]) == 2
        assert capsys.readouterr().err == "run.py: pip could not install tox (its last lines above)\n"


_DRIVER = """
import importlib.util, signal, sys
spec = importlib.util.spec_from_file_location("run", sys.argv[1])
run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run)
# pytest's stand-in: ready, then waits; Ctrl-C ends it as pytest ends, with its exit 2
child = ("import signal, sys, time; signal.signal(signal.SIGINT, lambda *a: sys.exit(2)); "
         "print('ready', flush=True); time.sleep(60)")
run.dispatch = lambda word, args: run.child([sys.executable, "-c", child])
sys.exit(run.main(["test"]))
"""


@pytest.mark.parametrize(("signum", "code", "line"), [(signal.SIGINT, 130, "run.py: stopped (Ctrl-C)"),
                                                      (signal.SIGTERM, 143, "run.py: stopped (SIGTERM)")])
def test_stopped_without_a_traceback(tmp_path, signum, code, line):
    """Ctrl-C (or a kill of run.py alone) while a command runs: it reaches the command, then one line, no traceback."""
    # Ctrl-C as a terminal delivers it: a test command started in the background of a shell without job control
    # (``cmd &``) inherits SIGINT ignored, and the driver would never see it.
    process = subprocess.Popen([sys.executable, "-c", _DRIVER, str(ROOT / "run.py")], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert process.stdout.readline() == "ready\n"
        process.send_signal(signum)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == code
    assert "Traceback" not in err and err.strip() == line


class TestBenchStopped:
    """A SIGTERM mid-benchmark: pytest-benchmark never saves, the journal has the finished cases, and the
    report is written from it (labelled incomplete by `xferbench report`), its path the last line."""

    @pytest.fixture
    def reports(self, tmp_path, monkeypatch):
        monkeypatch.setattr(run, "HISTORY", tmp_path / "history")
        monkeypatch.setattr(run, "REPORT", tmp_path / "index.html")
        return tmp_path

    def _stopped_after(self, monkeypatch, write) -> list[list[str]]:
        commands = []

        def child(command):
            commands.append(command)
            if "pytest" in command:
                write()
                raise run.Stopped()
            return 0

        monkeypatch.setattr(run, "child", child)
        return commands

    def test_the_report_is_written_from_this_run_s_journal(self, reports, monkeypatch, capsys):
        journal = reports / "history" / "journal" / "20261201T120000.jsonl"
        old = reports / "history" / "journal" / "20261101T120000.jsonl"
        old.parent.mkdir(parents=True)
        old.write_text("{}\n")
        os.utime(old, (1, 1))
        commands = self._stopped_after(monkeypatch, lambda: journal.write_text('{"xfer_journal": 1}\n'))
        assert run.bench(Path("python"), []) == 143
        assert commands[1][1:] == ["-m", "xferbench.cli", "report", str(journal), "--history", str(reports / "history"),
                                   "-o", str(reports / "index.html")]
        out, err = capsys.readouterr()
        assert out.splitlines()[-1] == f"Report: {reports / 'index.html'}"
        assert f"stopped (SIGTERM); the report shows the cases that finished, from {journal}" in err

    def test_stopped_before_any_case_writes_no_report(self, reports, monkeypatch, capsys):
        commands = self._stopped_after(monkeypatch, lambda: None)
        assert run.bench(Path("python"), []) == 143
        assert len(commands) == 1
        assert "stopped (SIGTERM) before any case finished; no report written" in capsys.readouterr().err

    def test_a_finished_run_is_reported_over_the_history_and_named_last(self, reports, monkeypatch, capsys):
        saved = reports / "history" / "Linux-CPython-3.11-64bit" / "0001_x.json"

        def child(command):
            if "pytest" in command:
                saved.parent.mkdir(parents=True)
                saved.write_text("{}")
            return 0

        monkeypatch.setattr(run, "child", child)
        assert run.bench(Path("python"), ["-k", "h2d"]) == 0
        assert capsys.readouterr().out == f"Report: {reports / 'index.html'}\n"

    def test_a_run_that_saved_nothing_writes_no_report_and_keeps_pytest_s_code(self, reports, monkeypatch, capsys):
        """-k matching nothing (pytest's 5), --collect-only (0): no report of an older run passes for this one."""
        commands = []
        monkeypatch.setattr(run, "child", lambda command: commands.append(command) or 5)
        assert run.bench(Path("python"), ["-k", "nothing"]) == 5
        assert len(commands) == 1
        assert "the benchmarks saved no run (pytest exit 5); no report written" in capsys.readouterr().err

    def test_a_file_given_replaces_the_bench_folder(self):
        assert run._has_path(["bench/test_host.py", "-q"]) and not run._has_path(["-k", "h2d"])


class TestTox:
    def _result(self, path: Path, setup_code: int, test_code: int) -> None:
        path.write_text(json.dumps({"testenvs": {"lint": {"setup": [{"retcode": setup_code}],
                                                          "test": [{"retcode": test_code}]}}}))

    @pytest.mark.parametrize(("setup", "test", "expected"), [(1, 0, 2), (0, 1, 1), (0, 0, 0)])
    def test_a_failed_setup_is_exit_2_a_failed_command_its_own_code(self, monkeypatch, setup, test, expected):
        """tox answers 1 for both; run.py tells them apart (--result-json): a setup failure is never a 'regression'."""
        monkeypatch.setattr(run, "has_module", lambda python, module: True)

        def child(command):
            self._result(Path(command[command.index("--result-json") + 1]), setup, test)
            return 1 if setup or test else 0

        monkeypatch.setattr(run, "child", child)
        assert run.tox(Path("python"), ["-e", "lint"]) == expected
