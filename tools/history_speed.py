"""How long do `xferbench report FOLDER` and `compare` take on a storage folder of N runs?

    python tools/history_speed.py [N ...]      (default: 100 1000)
    python tools/history_speed.py --folder DIR  (a storage folder already written)

Each run is the real CPU sample (tests/data/cpu-sample.json, 58 benchmarks with their rounds, as
--benchmark-autosave keeps them), saved as ``NNNN_run.json`` with every median moved by a seeded
lognormal wobble and, from two thirds of the runs on, the 16 MiB host copy made 2x slower: a lasting
step the history page must find. Only the count matters; the figures are not meant to be read.
Prints, per N, wall and CPU time of: the whole `xferbench report FOLDER` command (every run parsed); reading the
folder, the trend plot (change-point search included) and `xferbench compare` of the newest run against the
folder. The goal (issue 24) was 10,000 runs in under 30 s, met with one process per core on an idle machine; in
one process it reads them in about 50 s of CPU.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

from xferbench.analyze.load.history import load_storage
from xferbench.analyze.report.history import history_plots
from xferbench.cli import main as cli

T = TypeVar("T")
SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "data" / "cpu-sample.json"


def write_runs(folder: Path, count: int, seed: int = 0) -> None:
    sample = json.loads(SAMPLE.read_text())
    rng = np.random.default_rng(seed)
    machine = folder / "Linux-CPython-3.11-64bit"
    machine.mkdir(parents=True)
    for index in range(count):
        data = copy.deepcopy(sample)
        data["datetime"] = f"2026-01-01T00:00:00.{index:06d}"
        for bench in data["benchmarks"]:
            factor = float(np.exp(rng.normal(0, 0.05)))
            if index >= 2 * count // 3 and bench["extra_info"].get("nbytes") == 16 * 2**20:
                factor *= 2
            stats = bench["stats"]
            for name in ("median", "min", "mean", "max", "q1", "q3", "iqr", "stddev"):
                stats[name] *= factor
            stats["data"] = [t * factor for t in stats["data"]]
        (machine / f"{index + 1:04d}_run.json").write_text(json.dumps(data))


def timed(work: Callable[[], T]) -> tuple[T, float, float]:
    start, cpu = time.perf_counter(), time.process_time()
    result = work()
    return result, time.perf_counter() - start, time.process_time() - cpu


def measure(folder: Path, scratch: Path) -> str:
    count = len(list(folder.rglob("*.json")))
    code, page_wall, page_cpu = timed(lambda: cli(["report", str(folder), "-o", str(scratch / "r.html")]))
    stored, load_wall, load_cpu = timed(lambda: load_storage(folder))
    _, plot_wall, plot_cpu = timed(lambda: history_plots(folder, stored))
    newest = str(stored.summaries[-1].path)
    gate, compare_wall, compare_cpu = timed(lambda: cli(["compare", folder.as_posix(), newest, "--json",
                                                        str(scratch / "c.json")]))
    return (f"{count} runs (load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores): `xferbench report FOLDER` "
            f"{page_wall:.1f} s wall / {page_cpu:.1f} s CPU (exit {code}); read {load_wall:.1f} s / {load_cpu:.1f} s, "
            f"trend plot {plot_wall:.1f} s / {plot_cpu:.1f} s, `xferbench compare` {compare_wall:.1f} s / "
            f"{compare_cpu:.1f} s (exit {gate})")


def main() -> int:
    args = sys.argv[1:]
    if args[:1] == ["--folder"]:
        with tempfile.TemporaryDirectory() as tmp:
            print(measure(Path(args[1]), Path(tmp)), flush=True)
        return 0
    for count in [int(a) for a in args] or [100, 1000]:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "hist"
            write_runs(folder, count)
            print(measure(folder, Path(tmp)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
