"""Make sure the environment has torch, without replacing one that is there.

run.py runs this with the environment's Python before the tests and the benchmarks. A GPU box's own torch
(a CUDA or ROCm build, seen through the environment's system site-packages) is used as it is. Where there is
none, ``XFERBENCH_TORCH`` (default ``torch==2.13.0``) is installed, once:

- on a machine without an NVIDIA GPU, the CPU build, from PyTorch's CPU-only index where it can be reached
  (PyPI's Linux wheel is the CUDA build, which pulls about 3 GB of ``nvidia-*`` packages a CPU never uses);
- before anything is downloaded, one line says what will be installed and how large it is, and whether it is
  the CUDA build.

``PIP_INDEX_URL`` / ``PIP_EXTRA_INDEX_URL`` point pip at other indexes (a ROCm one, a mirror).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def nvidia_gpu() -> bool:
    """Whether this machine has an NVIDIA GPU and its driver (the CUDA build is then the one to install)."""
    return Path("/proc/driver/nvidia/version").exists() or shutil.which("nvidia-smi") is not None


def reachable(url: str, timeout: float = 5.0) -> bool:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def source_options(gpu: bool, cpu_index_reachable: bool) -> list[str]:
    """pip's options that choose the build: the CPU index beside the others, where there is no NVIDIA GPU.

    An extra index, not a replacement: pip still finds torch's dependencies (and a local CPU wheel) where it
    did, and of ``2.13.0`` and ``2.13.0+cpu`` it takes ``+cpu``, the higher version.
    """
    return ["--extra-index-url", CPU_INDEX] if not gpu and cpu_index_reachable else []


def size_of(url: str) -> int | None:
    """A wheel's size in bytes: a local file's, or what the server says; None when it cannot be told."""
    if url.startswith("file://"):
        path = Path(urllib.request.url2pathname(url.removeprefix("file://")))
        return path.stat().st_size if path.is_file() else None
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=10) as answer:
            length = answer.headers.get("Content-Length")
            return int(length) if length else None
    except (OSError, ValueError):
        return None


def plan(requirement: str, options: list[str]) -> list[dict[str, Any]] | None:
    """What pip would install (its --dry-run --report, which reads metadata only), or None where pip cannot say."""
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-",
                           *options, requirement], capture_output=True, text=True)
    try:
        return list(json.loads(done.stdout)["install"]) if done.returncode == 0 else None
    except (ValueError, KeyError, TypeError):
        return None


def _megabytes(size: int) -> str:
    return f"{size / 1e9:.1f} GB" if size >= 1e9 else f"{size / 1e6:.0f} MB"


def announcement(requirement: str, items: list[dict[str, Any]] | None, sizes: dict[str, int | None], gpu: bool) -> str:
    """One line: what will be installed, how large, from where, and which build."""
    if not items:
        return f"ensure_torch: installing {requirement} (pip could not say beforehand what it will download)"
    names = [f"{i['metadata']['name']} {i['metadata']['version']}" for i in items]
    torch = next((n for n in names if n.lower().startswith("torch ")), requirement)
    urls = [i.get("download_info", {}).get("url", "") for i in items]
    local = sum(sizes.get(u) or 0 for u in urls if u.startswith("file://"))
    remote = [sizes.get(u) for u in urls if not u.startswith("file://")]
    parts = []
    if remote:
        known = sum(s for s in remote if s)
        parts.append(f"{_megabytes(known)} to download" + (" (some sizes unknown)" if None in remote else ""))
    if local:
        parts.append(f"{_megabytes(local)} from local disk")
    cuda = any(n.lower().startswith("nvidia-") for n in names)
    build = (" the CUDA build (PyTorch's CPU-only index cannot be reached from here), with its nvidia-* packages;"
             if cuda and not gpu else "")
    others = len(items) - 1
    return (f"ensure_torch: installing {torch} and {others} package{'' if others == 1 else 's'} it needs;{build} "
            f"{', '.join(parts) or 'size unknown'}")


def install(requirement: str) -> int:
    gpu = nvidia_gpu()
    options = source_options(gpu, not gpu and reachable(f"{CPU_INDEX}/torch/"))
    if not gpu:
        print(f"ensure_torch: no NVIDIA GPU here; the CPU build of torch is wanted"
              f" ({'from ' + CPU_INDEX if options else CPU_INDEX + ' cannot be reached; looking where pip is told to'})",
              flush=True)
    items = plan(requirement, options)
    urls = [i.get("download_info", {}).get("url", "") for i in items or []]
    print(announcement(requirement, items, {u: size_of(u) for u in urls}, gpu), flush=True)
    return subprocess.run([sys.executable, "-m", "pip", "install", *options, requirement]).returncode


def main() -> int:
    if importlib.util.find_spec("torch") is not None:
        import torch

        print(f"ensure_torch: using the installed torch {torch.__version__} ({Path(torch.__file__).parent})", flush=True)
        return 0
    requirement = os.environ.get("XFERBENCH_TORCH", "torch==2.13.0")
    if not requirement.strip() or requirement.lstrip().startswith("-"):
        # pip would read it as an option (or install nothing): refuse it before pip sees it.
        print(f"ensure_torch: XFERBENCH_TORCH={requirement!r} is not a requirement; set it like torch==2.13.0",
              file=sys.stderr)
        return 2
    print(f"ensure_torch: no torch in this environment ({sys.prefix})", flush=True)
    return install(requirement)


if __name__ == "__main__":
    sys.exit(main())
