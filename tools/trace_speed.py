"""`xferbench price`'s reading of a trace against `json.load` of the same file: wall time and peak memory.

    python tools/trace_speed.py TRACE.json [MORE.json ...] [--repeat 5]

Goal (issue 59): at most 1.5x json.load's wall time, peak memory under a quarter of its. Each measurement runs in
a fresh interpreter, the two alternating; time and memory are measured in separate runs (tracemalloc slows what
it watches). The CPU time (process_time) is printed beside the wall time: on a shared machine it is the steadier.
The trace is priced without a run (loading a run is the same cost with or without a trace), so this is parsing,
tying copies to calls and ops, and grouping. Prints medians and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

_CHILD = """
import json, sys, time, tracemalloc
from pathlib import Path
what, path, memory = sys.argv[1], Path(sys.argv[2]), sys.argv[3] == "1"
from xferbench.analyze.trace.pricing import price
if memory:
    tracemalloc.start()
start, cpu = time.perf_counter(), time.process_time()
if what == "json":
    with open(path, "rb") as handle:
        kept = json.load(handle)
else:
    kept = price(path, None)
took, cpu = time.perf_counter() - start, time.process_time() - cpu
print(tracemalloc.get_traced_memory()[1] if memory else f"{took} {cpu}")
"""


def _one(what: str, path: Path, memory: bool) -> list[float]:
    env = os.environ | {"PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    done = subprocess.run([sys.executable, "-c", _CHILD, what, str(path), "1" if memory else "0"], check=True,
                          capture_output=True, text=True, env=env)
    return [float(field) for field in done.stdout.split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+", type=Path, help="uncompressed trace JSON files")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"load before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    for path in args.traces:
        times: dict[str, list[list[float]]] = {"json": [], "price": []}
        peaks: dict[str, list[float]] = {"json": [], "price": []}
        for _ in range(args.repeat):
            for what in ("json", "price"):
                times[what].append(_one(what, path, False))
                peaks[what].append(_one(what, path, True)[0])
        t = {k: statistics.median(x[0] for x in v) for k, v in times.items()}
        c = {k: statistics.median(x[1] for x in v) for k, v in times.items()}
        m = {k: statistics.median(v) / 2**20 for k, v in peaks.items()}
        print(f"{path.name} ({path.stat().st_size / 1e6:.1f} MB): json.load {t['json']:.3f} s wall, {c['json']:.3f} s "
              f"CPU, {m['json']:.0f} MiB; price {t['price']:.3f} s wall ({t['price'] / t['json']:.2f}x), "
              f"{c['price']:.3f} s CPU ({c['price'] / c['json']:.2f}x), {m['price']:.1f} MiB ({m['price'] / m['json']:.1%})")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
