#!/usr/bin/env python3
"""The Quickstart's one command: ``python3 run.py bench`` (benchmarks) or ``python3 run.py test`` (tests).

It runs the matching tox environment (tox.ini holds the commands) with any Python 3.9+,
including a Debian 12 / Ubuntu 24.04 system Python, which refuses ``pip install``
("externally-managed-environment", PEP 668):

- in a virtual environment, conda, pyenv or any Python that lets pip install, tox is
  installed for that Python and run from it;
- in an externally managed Python, a virtual environment ``.venv`` is made beside this
  file with ``--system-site-packages`` (so the box's own torch stays visible), tox is
  installed there and run from it. Where Debian's ``python3-venv`` is missing (no
  ``ensurepip``), the environment is made without pip and the system's own pip
  installs into it (``pip --python``); with neither, one line says what to install.

tox's environments see the base Python's site-packages (``system_site_packages``), so a
GPU box's CUDA or ROCm torch is used as it is; only where there is none is the CPU
requirement installed (tools/ensure_torch.py). Extra arguments go to pytest:
``python3 run.py bench --xfer-profile=full``. Also: ``python3 run.py slow`` (the slow tier of
the tests, which CI runs too) and ``python3 run.py lint``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
#: Quickstart words -> tox environments (tox.ini).
ENVIRONMENTS = {"bench": "bench", "test": "py", "slow": "slow", "lint": "lint"}


class BootstrapError(Exception):
    """Something the user has to fix; printed as one line, exit 2."""


def externally_managed(stdlib: str | None = None) -> bool:
    """PEP 668: this Python's distribution manages its packages; pip refuses to install into it."""
    in_venv = sys.prefix != sys.base_prefix
    marker = Path(stdlib or sysconfig.get_path("stdlib")) / "EXTERNALLY-MANAGED"
    return not in_venv and marker.exists()


def _venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _quiet(*command: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in command], capture_output=True, text=True)


def has_module(python: str | Path, module: str) -> bool:
    return _quiet(python, "-c", f"import {module}").returncode == 0


def make_venv(venv: Path = VENV, python: str = sys.executable) -> Path:
    """A virtual environment that sees the system's packages, with pip in it; its Python."""
    target = _venv_python(venv)
    if target.exists() and has_module(target, "pip"):
        return target
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


def interpreter() -> Path:
    """The Python that runs tox: this one, unless it is externally managed (then .venv's)."""
    if externally_managed():
        print(f"run.py: {sys.executable} is managed by the system (PEP 668); using the virtual environment {VENV}",
              flush=True)
        return make_venv()
    return Path(sys.executable)


def ensure_tox(python: Path) -> None:
    if has_module(python, "tox"):
        return
    print(f"run.py: installing tox for {python}", flush=True)
    installed = subprocess.run([str(python), "-m", "pip", "install", "-q", "tox>=4"])
    if installed.returncode != 0:
        raise BootstrapError(f"pip could not install tox for {python} (see above); is the package index reachable?")


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ENVIRONMENTS:
        print(f"usage: python3 run.py {{{'|'.join(ENVIRONMENTS)}}} [pytest arguments]", file=sys.stderr)
        return 2
    try:
        python = interpreter()
        ensure_tox(python)
    except BootstrapError as error:
        print(f"run.py: {error}", file=sys.stderr)
        return 2
    command = [str(python), "-m", "tox", "-e", ENVIRONMENTS[argv[0]]]
    if argv[1:]:
        command += ["--", *argv[1:]]
    return subprocess.run(command, cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
