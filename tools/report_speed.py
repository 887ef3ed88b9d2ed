"""How long does `xferbench report` take on a 2,000-benchmark JSON, and on the H200 sample?

    python tools/report_speed.py [N] [--repeat R]
    python tools/report_speed.py --h200 [--repeat R]

The JSON is built from the real CPU sample (tests/data/cpu-sample.json): its 28
benchmarks are repeated with distinct sizes and dtypes until there are N (default
2000) different cases, each keeping its real per-round timings. Only the count
matters here; the figures in that file are not meant to be read. Prints the
wall time and this process's CPU time of loading, modelling, plotting and writing the
page (HTML, CSV and Markdown). On a shared machine the wall time includes waiting for a
core; the CPU time is what the report itself costs. The goal: under 3 s.

--h200 times the whole command on the H200 sample instead, imports included, as a user
runs it: ``xferbench report reports/samples/h200/full.json.gz
reports/samples/h200/quick-scenarios.json -o DIR/index.html``. The goal: under 4 s.
Each form prints every repeat, their median and the load average before and after.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from xferbench.analyze.load.results import load
from xferbench.analyze.report.page import write_report

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "data" / "cpu-sample.json"
H200 = [ROOT / "reports" / "samples" / "h200" / "full.json.gz", ROOT / "reports" / "samples" / "h200" / "quick-scenarios.json"]
DTYPES = ["float32", "float16", "bfloat16", "float64", "int8", "uint8", "int32", "int64", "int16"]


def inflate(count: int) -> dict:
    data = json.loads(SAMPLE.read_text())
    originals, benchmarks = data["benchmarks"], []
    for index in range(count):
        bench = copy.deepcopy(originals[index % len(originals)])
        generation = index // len(originals)
        info = bench["extra_info"]
        info["dtype"] = DTYPES[generation % len(DTYPES)]
        info["nbytes"] = info["nbytes"] * (1 + generation // len(DTYPES))
        bench["name"] = f"{bench['name']}#{index}"
        benchmarks.append(bench)
    data["benchmarks"] = benchmarks
    return data


def _cpu() -> float:
    """CPU seconds of this process and of the children it waited for."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def inflated(count: int) -> tuple[float, float]:
    """Wall and CPU seconds of one report of ``count`` benchmarks, in this process (imports done)."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "inflated.json"
        source.write_text(json.dumps(inflate(count)))
        start, cpu = time.perf_counter(), _cpu()
        results = load([source])
        write_report(results, Path(tmp) / "index.html")
        return time.perf_counter() - start, _cpu() - cpu


def h200() -> tuple[float, float]:
    """Wall and CPU seconds of ``xferbench report`` on the H200 sample, a process of its own."""
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-c", "import sys; from xferbench.cli import main; sys.exit(main())",
                   "report", *map(str, H200), "-o", str(Path(tmp) / "index.html")]
        start, cpu = time.perf_counter(), _cpu()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - start, _cpu() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", nargs="?", type=int, default=2000, help="benchmarks in the inflated JSON")
    parser.add_argument("--h200", action="store_true", help="time the H200 sample's report instead")
    parser.add_argument("--repeat", type=int, default=1, help="reports to time (the median is printed)")
    args = parser.parse_args()
    what = "the H200 sample's report (a process)" if args.h200 else f"a report of {args.count} benchmarks"
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    walls = []
    for _ in range(args.repeat):
        wall, cpu = h200() if args.h200 else inflated(args.count)
        walls.append(wall)
        print(f"{what} written in {wall:.2f} s wall, {cpu:.2f} s CPU (HTML, CSV and Markdown)")
    print(f"median of {len(walls)}: {statistics.median(walls):.2f} s wall; "
          f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
