"""Hand-fed pytest-benchmark JSON for report tests: exact times from t = alpha + n / beta.

No GPU produced these: they are inputs with known answers, so the tests can state what the
report must show (a fitted beta, a share of a roof, a hover text) to the digit.
"""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path
from typing import Any

SIZES = [4**k for k in range(1, 15)]  # 4 B .. 256 MiB


def bench(op: str, method: str, src: str, dst: str, nbytes: int, seconds: float, host_memory: str | None = None,
          non_blocking: bool = False, **measured: Any) -> dict[str, Any]:
    info = {"xfer_schema": 1, "op": op, "method": method, "src": src, "dst": dst, "nbytes": nbytes,
            "dtype": "float32", "shape": [max(nbytes // 4, 1)], "host_memory": host_memory,
            "non_blocking": non_blocking, "clock": "wall+sync", **measured}
    stats = {"median": seconds, "min": seconds, "mean": seconds, "max": seconds, "iqr": 0.0, "q1": seconds,
             "q3": seconds, "stddev": 0.0, "rounds": 5, "iterations": 1}
    return {"name": f"test_{op}[{method}-{host_memory}-{non_blocking}-{nbytes}-{src}-{dst}]", "group": op,
            "extra_info": info, "stats": stats}


def steady(nbytes: int = 4096, seconds: float = 1e-3) -> list[dict[str, Any]]:
    """A same-code pair timed alike (.cpu() and .to('cpu')): a hand-fed run's evidence that it did not drift, so that
    its unpaired comparisons are judged from their rounds (a run with no such evidence judges none)."""
    return [bench("d2h", method, "cuda:0", "cpu", nbytes, seconds, host_memory="pageable") for method in ("cpu", "to")]


def sweep(op: str, method: str, src: str, dst: str, alpha: float, beta_gbps: float, sizes: list[int] = SIZES,
          **kwargs: Any) -> list[dict[str, Any]]:
    return [bench(op, method, src, dst, n, alpha + n / (beta_gbps * 1e9), **kwargs) for n in sizes]


def gpu_machine(**device: Any) -> dict[str, Any]:
    fields = {"device": "cuda:0", "name": "hand-fed GPU", "pcie_max_generation": 4, "pcie_max_width": 16} | device
    return {"cpu": {"brand_raw": "hand-fed CPU", "count": 2}, "python_version": "3.11",
            "xferbench": {"torch": "2.13.0", "cuda": "12.4", "devices": [fields], "host": {}}}


def write(path: Path, benchmarks: list[dict[str, Any]], machine_info: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"machine_info": machine_info, "commit_info": {}, "benchmarks": benchmarks,
                                "datetime": "2026-11-30T12:00:00", "version": "5.3.1"}))
    return path


def visible_text(html: str) -> str:
    """A report page as a reader reads it: figures dropped, tags dropped, entities decoded, whitespace folded."""
    body = re.sub(r"<svg.*?</svg>", " ", html, flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", body)).split())


def scaled(sample: Path, scale: float = 1.013) -> dict[str, Any]:
    """``sample``'s run with every time ``scale`` times as long: its ratios as they were, its rounds off the scheduler's
    4 ms ticks (analyze/load/blocks.py), so that the paired verdicts a reading checked it for stay its evidence."""
    run: dict[str, Any] = json.loads(sample.read_text())
    for bench in run["benchmarks"]:
        stats = bench["stats"]
        stats |= {k: stats[k] * scale for k in ("min", "max", "mean", "median", "q1", "q3", "iqr", "stddev")}
        stats |= {"data": [t * scale for t in stats["data"]]} if stats.get("data") else {}
        stats.pop("ops", None)
    return run


def quiet(run: dict[str, Any]) -> dict[str, Any]:
    """``run`` (a parsed results file) with no load recorded, where it kept one (load.results.run_facts)."""
    run.get("xferbench_run", {}).pop("load", None)
    run.get("machine_info", {}).get("xferbench", {}).pop("load", None)
    return run


def off_ticks(tmp_path: Path, sample: Path, steady: bool = False) -> Path:
    """``scaled(sample)`` written beside the test, under the sample's name; ``steady``: with no load recorded either
    (``quiet``), so that no round is read as a wait (a busy run with no tick reads them by the longest)."""
    run = scaled(sample)
    (tmp_path / sample.name).write_text(json.dumps(quiet(run) if steady else run))
    return tmp_path / sample.name
