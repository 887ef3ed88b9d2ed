#!/usr/bin/env python3
"""The Quickstart: ``python3 run.py bench`` (the benchmarks and their report) and ``python3 run.py test``.

Every command runs in one environment, which holds torch and everything else once:

- the running Python itself when it is a virtual environment or the active conda environment;
- otherwise ``.venv`` beside this file (a system, pyenv or Homebrew Python is never installed into), made with
  ``--system-site-packages`` so that a GPU box's own CUDA or ROCm torch is used as it is. Where Debian's
  ``python3-venv`` is missing (no ``ensurepip``), the environment is made without pip and the system's pip
  installs pip into it; with neither, one line says what to install.

Into that environment go the project's requirements (pyproject.toml: its dependencies and the ``test`` and
``browser`` extras) where they are missing, and torch where there is none (tools/ensure_torch.py: the CPU
build on a machine without an NVIDIA GPU). Nothing outside the checkout changes, except pip's cache.

Exit codes: those of pytest (0 passed, 1 a test or benchmark failed, ...); 2 a usage or setup error (one line);
130 after Ctrl-C; 143 after SIGTERM (``bench`` still writes the report of the cases that finished).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
HISTORY = ROOT / "reports" / "history"
REPORT = ROOT / "reports" / "index.html"
EXTRAS = ("test", "browser")
#: The tests but the slow tier, on every core; --dist loadfile keeps a file's tests (and its module-scoped
#: fixtures: worlds of processes, whole benchmark sessions) on one worker, so each such fixture runs once.
#: A -m or -n given after the command replaces these (pytest takes the last one).
TEST_ARGS = ("-n", "auto", "--dist", "loadfile", "-m", "not slow")
#: The slow tier in one process: its whole benchmark sessions and worlds of ranks time real work, and a
#: second worker beside them made two of them fail on a 2-core machine.
SLOW_ARGS = ("-n", "0", "-m", "slow")
LINT_DEPS = ("ruff", "import-linter", "mypy")

#: word -> (what it does, how long it takes), measured on a shared 2-core machine without a GPU (docs/install.md).
COMMANDS = {
    "bench": ("run the benchmarks (the quick profile) and write reports/index.html; the last line names it",
              "75 s of benchmarks without a GPU, then the report"),
    "test": ("run the tests (CPU only; a GPU is never assumed), all but the slow tier",
             "5 min on 2 idle cores, 23 min on busy ones"),
    "slow": ("run the slow tier of the tests: whole benchmark sessions, torchrun worlds", "about 11 min"),
    "lint": ("ruff, import-linter and mypy", "25 s, once they are installed"),
    "golden": ("rewrite the files the code generates and tests compare against (tools/golden.py)", "1 min"),
    "tox": ("run tox with the arguments that follow (tox -e lint, tox -e mutation), from the same environment",
            "as the tox environment"),
    "python": ("print the path of the Python the commands run in", "seconds"),
}
FIRST_RUN = ("The first command also makes the environment (.venv, unless python3 is a venv or a conda env):\n"
             "3 min in all for bench and 1.1 GB with a local CPU wheel of torch; more where torch is downloaded.")
HELP = f"""usage: python3 run.py COMMAND [pytest arguments]

The Quickstart: python3 run.py bench, then python3 run.py test.

commands:
{chr(10).join(f"  {word:<7} {what}{chr(10)}          ({took})" for word, (what, took) in COMMANDS.items())}

{FIRST_RUN}
Arguments after the command go to pytest, e.g. one family or one file:
  python3 run.py bench -k h2d               python3 run.py bench bench/test_host.py
  python3 run.py test -k journal            python3 run.py test tests/test_store.py
  python3 run.py bench --xfer-profile=full  (the whole sweep)
Exit: pytest's code (0 passed, 1 a test or benchmark failed); 2 a usage or setup error; 130 Ctrl-C.
"""


class BootstrapError(Exception):
    """Something the user has to fix; printed as one line, exit 2."""


def say(message: str) -> None:
    """Progress and setup lines go to stderr, so that stdout holds only what a command prints."""
    print(f"run.py: {message}", file=sys.stderr, flush=True)


def required_python(pyproject: Path = ROOT / "pyproject.toml") -> tuple[int, int]:
    """The oldest Python pyproject.toml's requires-python allows (">=3.10" -> (3, 10))."""
    found = re.search(r'^requires-python\s*=\s*">=\s*(\d+)\.(\d+)', pyproject.read_text(), re.MULTILINE)
    return (int(found.group(1)), int(found.group(2))) if found else (3, 0)


def own_environment() -> bool:
    """Whether this Python is one to install into: a virtual environment, or the active conda environment.

    A system, pyenv or Homebrew Python is not: the user's own packages stay as they are (.venv is made instead).
    """
    if sys.prefix != sys.base_prefix:
        return True
    conda = os.environ.get("CONDA_PREFIX")
    return conda is not None and (Path(sys.prefix) / "conda-meta").is_dir() and _same(conda, sys.prefix)


def _same(a: str | Path, b: str | Path) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def _venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _quiet(*command: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in command], capture_output=True, text=True)


def has_module(python: str | Path, module: str) -> bool:
    return _quiet(python, "-c", f"import {module}").returncode == 0


def runs(python: Path) -> bool:
    """Whether this Python starts: a venv's link dangles once the Python it was made from is removed or moved."""
    try:
        return _quiet(python, "-c", "pass").returncode == 0
    except OSError:
        return False


def drop_broken_venv(venv: Path = VENV) -> None:
    """A .venv whose Python no longer starts is made again, with one line that says why."""
    target = _venv_python(venv)
    if not (target.exists() or target.is_symlink()) or runs(target):
        return
    if not (venv / "pyvenv.cfg").is_file():
        raise BootstrapError(f"{target} does not start and {venv} is not a virtual environment run.py made; "
                             "move it away and run again")
    origin = os.readlink(target) if target.is_symlink() else target
    say(f"{target} does not start (it points to {origin}, which was removed or moved); making {venv.name} again")
    shutil.rmtree(venv)


def make_venv(venv: Path = VENV, python: str = sys.executable) -> Path:
    """A virtual environment that sees the system's packages, with pip in it; its Python."""
    target = _venv_python(venv)
    if target.exists() and has_module(target, "pip"):
        return target
    say(f"making the virtual environment {venv} for {python} (Python {sys.version.split()[0]}), "
        "which sees its packages and installs nothing into it")
    if has_module(python, "ensurepip"):
        made = _quiet(python, "-m", "venv", "--system-site-packages", venv)
        if made.returncode == 0:
            return target
    # Debian without python3-venv: no ensurepip. A venv without pip, filled by the system's pip.
    made = _quiet(python, "-m", "venv", "--without-pip", "--system-site-packages", venv)
    if made.returncode != 0 or not has_module(python, "pip"):
        raise BootstrapError(
            "this Python can make neither a virtual environment with pip (no ensurepip) nor install into one (no pip): "
            "install python3-venv (sudo apt-get install python3-venv), or run with a conda, pyenv or venv Python")
    pip = _quiet(python, "-m", "pip", "--python", target, "install", "-q", "pip")
    if pip.returncode != 0:
        raise BootstrapError(f"pip could not install itself into {venv}: {pip.stderr.strip().splitlines()[-1:]}")
    return target


def environment() -> Path:
    """The Python every command runs in: this one when it is an environment of its own, else .venv's."""
    if own_environment():
        return Path(sys.executable)
    drop_broken_venv()
    return make_venv()


#: Run by the environment's Python: the requirements (pyproject.toml's dependencies and the given extras) that
#: are missing or too old there, one a line; "xferbench" when this checkout is not the one installed.
_MISSING = r"""
import importlib.metadata as metadata, importlib.util, sys
from pathlib import Path
try:
    import tomllib
except ImportError:  # Python 3.10
    from pip._vendor import tomli as tomllib
from pip._vendor.packaging.requirements import Requirement
root = Path(sys.argv[1])
project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
missing = []
for text in project["dependencies"] + [r for extra in sys.argv[2:] for r in project["optional-dependencies"][extra]]:
    requirement = Requirement(text)
    if requirement.marker is None or requirement.marker.evaluate():
        try:
            version = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            version = None
        if version is None or not requirement.specifier.contains(version, prereleases=True):
            missing.append(text)
spec = importlib.util.find_spec("xferbench")
if spec is None or not Path(spec.origin).resolve().is_relative_to(root / "src"):
    missing.append("xferbench")
elif (root / "bench" / "__init__.py").exists() and (not (bench := importlib.util.find_spec("xferbench.bench"))
                                                   or Path(bench.origin).resolve() != root / "bench" / "__init__.py"):
    missing.append("xferbench")  # installed before bench/ became xferbench.bench: installed again, so xferbench run works
print("\n".join(missing))
"""


def missing_requirements(python: Path, extras: tuple[str, ...] = EXTRAS) -> list[str] | None:
    """What the environment lacks; None when that cannot be told (then everything is installed)."""
    # -I: neither this checkout (the working folder) nor PYTHONPATH may pass for the installed package.
    done = subprocess.run([str(python), "-I", "-c", _MISSING, str(ROOT), *extras], capture_output=True, text=True,
                          cwd=tempfile.gettempdir())
    return [line for line in done.stdout.splitlines() if line.strip()] if done.returncode == 0 else None


def pip_install(python: Path, arguments: list[str], what: str) -> None:
    """pip install, showing what it collects and installs (one short line each), its last lines on failure."""
    command = [str(python), "-m", "pip", "install", "--progress-bar", "off", *arguments]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line.rstrip())
        if line.startswith(("Collecting ", "Downloading ", "Installing collected", "Successfully installed")):
            print(f"  {line.rstrip()[:160]}", file=sys.stderr, flush=True)
    if process.wait() != 0:
        print("\n".join(lines[-15:]), file=sys.stderr)
        raise BootstrapError(f"pip could not install {what} (its last lines above); is the package index reachable?")


def ensure_project(python: Path) -> None:
    """The project's requirements, where missing; in .venv the project itself too (its `xferbench` command)."""
    missing = missing_requirements(python)
    if missing == []:
        return
    ours = _same(python, _venv_python(VENV))
    if missing is None or (ours and "xferbench" in missing):
        say(f"installing xferbench and what it needs ({', '.join(EXTRAS)} extras) into {python}")
        pip_install(python, ["-e", f"{ROOT}[{','.join(EXTRAS)}]"], "the project's requirements")
        return
    needed = [m for m in missing if m != "xferbench"]  # an environment of the user's own keeps its xferbench
    if needed:
        say(f"installing what xferbench needs into {python}: {', '.join(needed)}")
        pip_install(python, needed, "the project's requirements")


def ensure_torch(python: Path) -> None:
    # its lines are progress, as run.py's own: on stderr (stdout holds only what the command prints)
    done = subprocess.run([str(python), str(ROOT / "tools" / "ensure_torch.py")], cwd=ROOT, stdout=sys.stderr)
    if done.returncode != 0:
        raise BootstrapError("torch could not be installed (see above); XFERBENCH_TORCH picks another requirement")


class Stopped(Exception):
    """The command was stopped by SIGTERM (after its child was told to stop too)."""


def child(command: list[str]) -> int:
    """Run a command of the environment, in the checkout; Ctrl-C and SIGTERM reach it and stop this script too."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
    process = subprocess.Popen(command, cwd=ROOT, env=env)
    terminated: list[int] = []

    def forward(signum: int, frame: object) -> None:
        terminated.append(signum)
        if process.poll() is None:
            process.send_signal(signum)

    previous = signal.signal(signal.SIGTERM, forward)
    try:
        code = process.wait()
    except KeyboardInterrupt:  # the terminal sends Ctrl-C to the child too; a `kill -INT` of this script only here
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        _wait_or_kill(process)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    if terminated:
        raise Stopped()
    return code


def _wait_or_kill(process: subprocess.Popen[bytes]) -> None:
    try:
        process.wait(timeout=30)
    except (KeyboardInterrupt, subprocess.TimeoutExpired):
        process.kill()
        process.wait()


def _has_path(args: list[str]) -> bool:
    """Whether pytest's arguments name a file or folder (then the default folder is not added)."""
    return any(not a.startswith("-") and (ROOT / a.split("::")[0]).exists() for a in args)


def _saved_runs() -> set[Path]:
    return {p for p in HISTORY.glob("*/*.json")} if HISTORY.is_dir() else set()


def _journal_since(started: float) -> Path | None:
    """This run's journal (docs/journal.md): the newest under reports/history/journal/ written since it started."""
    journals = [p for p in (HISTORY / "journal").glob("*.jsonl") if p.stat().st_mtime >= started]
    return max(journals, key=lambda p: p.stat().st_mtime) if journals else None


def bench(python: Path, args: list[str]) -> int:
    """The benchmarks, autosaved under reports/history/, then the report over that history; its path last."""
    before, started = _saved_runs(), time.time()
    command = [str(python), "-m", "pytest", *([] if _has_path(args) else ["bench"]), "--benchmark-only",
               "--benchmark-autosave", f"--benchmark-storage=file://{HISTORY}", *args]
    try:
        code = child(command)
    except Stopped:
        # Killed before pytest-benchmark saved: the journal holds the cases that finished, and the report
        # says the run is incomplete ("Incomplete run: 12 of 58 cases finished before it stopped").
        journal = _journal_since(started)
        if journal is None:
            say("stopped (SIGTERM) before any case finished; no report written")
        else:
            say(f"stopped (SIGTERM); the report shows the cases that finished, from {journal}")
            write_report(python, [str(journal), "--history", str(HISTORY)])
        return 128 + signal.SIGTERM
    if not _saved_runs() - before:
        say(f"the benchmarks saved no run (pytest exit {code}); no report written")
        return code
    report = write_report(python, [str(HISTORY)])
    return code or report


def write_report(python: Path, inputs: list[str]) -> int:
    report = child([str(python), "-m", "xferbench.cli", "report", *inputs, "-o", str(REPORT)])
    if report == 0:
        print(f"Report: {REPORT}", flush=True)
    return report


def lint(python: Path) -> int:
    missing = [d for d in LINT_DEPS if not has_module(python, d.replace("import-linter", "importlinter"))]
    if missing:
        say(f"installing {', '.join(missing)} into {python}")
        pip_install(python, missing, ", ".join(missing))
    bin_dir = Path(python).parent
    for command in ([bin_dir / "ruff", "check", "src", "tests", "bench", "tools"], [bin_dir / "lint-imports"],
                    [bin_dir / "mypy"]):
        code = child([str(c) for c in command])
        if code:
            return code
    return 0


def tox(python: Path, args: list[str]) -> int:
    """tox from the environment; a failure while it sets an environment up is exit 2, as any setup failure."""
    if not has_module(python, "tox"):
        say(f"installing tox into {python}")
        pip_install(python, ["tox>=4"], "tox")
    if args[:1] and not args[0].startswith("-"):  # a subcommand (tox exec, tox list): its own options
        return child([str(python), "-m", "tox", *args])
    with tempfile.TemporaryDirectory() as folder:
        result = Path(folder) / "result.json"
        code = child([str(python), "-m", "tox", "--result-json", str(result), *args])
        return 2 if code and setup_failed(result) else code


def setup_failed(result: Path) -> bool:
    """Whether tox's --result-json shows a failed setup step (creating the environment, installing into it)."""
    import json

    try:
        environments = json.loads(result.read_text()).get("testenvs", {})
    except (OSError, ValueError):
        return False
    return any(step.get("retcode", 0) != 0 for env in environments.values() if isinstance(env, dict)
               for step in env.get("setup", []) if isinstance(step, dict))


def dispatch(word: str, args: list[str]) -> int:
    python = environment()
    if word == "tox":
        return tox(python, args)
    ensure_project(python)
    if word == "lint":
        return lint(python)
    ensure_torch(python)
    if word == "python":
        print(python)
        return 0
    if word == "bench":
        return bench(python, args)
    if word == "golden":
        return child([str(python), str(ROOT / "tools" / "golden.py"), *args])
    extra = TEST_ARGS if word == "test" else SLOW_ARGS
    return child([str(python), "-m", "pytest", *extra, *args])


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"], ["help"]):
        print(HELP, end="")
        return 0
    if not argv or argv[0] not in COMMANDS:
        print(f"usage: python3 run.py {{{'|'.join(COMMANDS)}}} [pytest arguments]; python3 run.py --help says more",
              file=sys.stderr)
        return 2
    oldest = required_python()
    if sys.version_info[:2] < oldest:
        print(f"run.py: xferbench needs Python {oldest[0]}.{oldest[1]} or newer (pyproject.toml's requires-python); "
              f"this is {sys.version.split()[0]} ({sys.executable})", file=sys.stderr)
        return 2
    try:
        return dispatch(argv[0], argv[1:])
    except BootstrapError as error:
        print(f"run.py: {error}", file=sys.stderr)
        return 2
    except Stopped:
        say("stopped (SIGTERM)")
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print("\nrun.py: stopped (Ctrl-C)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
