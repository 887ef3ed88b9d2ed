"""How long does `xferbench report` take on a 2,000-benchmark JSON?

    python tools/report_speed.py [N]

The JSON is built from the real CPU sample (tests/data/cpu-sample.json): its 28
benchmarks are repeated with distinct sizes and dtypes until there are N (default
2000) different cases, each keeping its real per-round timings. Only the count
matters here; the figures in that file are not meant to be read. Prints the
wall time and this process's CPU time of loading, modelling, plotting and writing the
page (HTML, CSV and Markdown). On a shared machine the wall time includes waiting for a
core; the CPU time is what the report itself costs. The goal: under 5 s.
"""

from __future__ import annotations

import copy
import json
import sys
import tempfile
import time
from pathlib import Path

from xferbench.analyze.load.results import load
from xferbench.analyze.report.page import write_report

SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "data" / "cpu-sample.json"
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


def main() -> int:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "inflated.json"
        source.write_text(json.dumps(inflate(count)))
        start, cpu = time.perf_counter(), time.process_time()
        results = load([source])
        write_report(results, Path(tmp) / "index.html")
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        size = (Path(tmp) / "index.html").stat().st_size
    print(f"report of {len(results.frame)} benchmarks written in {elapsed:.2f} s wall, {cpu:.2f} s CPU "
          f"({size / 1e6:.1f} MB page, with its CSV and Markdown)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
