"""The torchrun world's estimate against its wall clock, and the loopback gloo calls its price is calibrated on.

    python tools/estimate_check.py [--layouts 1x2,1x4,2x2] [--repeats 3] [--profile quick] [--sizes ...]
    python tools/estimate_check.py --calibrate [--layouts 1x2,1x4] [--sizes 4B,64KiB,1MiB,16MiB]

Each layout NxP is N ``xferbench torchrun`` launches of P ranks on loopback (XFERBENCH_NODE tells the "nodes"
apart). The check prints, per run, the load average before it, the plan line's estimate and the wall time from the
first launch to the last exit. ``--calibrate`` prints each case's median call against its priced call
(distributed.price) and the world's start-up (a ``--plan-only`` run's wall time), to refit the constants.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ESTIMATE = re.compile(r"about ([\d.]+) (min|s)\b")


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def world(nodes: int, per_node: int, entry: list[str], folder: Path) -> tuple[float, str]:
    """Wall seconds of one world of ``nodes`` launches of ``per_node`` ranks, and node 0's output."""
    port, procs = _port(), []
    start = time.perf_counter()
    for node in range(nodes):
        command = [sys.executable, "-m", "xferbench.cli", "torchrun", f"--nnodes={nodes}", f"--nproc-per-node={per_node}",
                   f"--node-rank={node}", "--master-addr=127.0.0.1", f"--master-port={port}", "--", *entry]
        procs.append(subprocess.Popen(command, cwd=folder, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      env=os.environ | {"XFERBENCH_NODE": f"node{node}"}))
    outputs = [proc.communicate()[0] for proc in procs]
    wall = time.perf_counter() - start
    for proc, out in zip(procs, outputs, strict=True):
        if proc.returncode:
            sys.exit(f"estimate_check: a launch exited {proc.returncode}:\n{out[-3000:]}")
    return wall, outputs[0]


def _layouts(text: str) -> list[tuple[int, int]]:
    return [(int(n), int(p)) for n, p in (layout.split("x") for layout in text.split(","))]


def check(args: argparse.Namespace) -> None:
    sized = ["--sizes", args.sizes] if args.sizes else []
    for nodes, per_node in _layouts(args.layouts):
        for repeat in range(args.repeats):
            with tempfile.TemporaryDirectory() as folder:
                load = _load()
                entry = ["--profile", args.profile, *sized, "--out", "run.json"]
                wall, out = world(nodes, per_node, entry, Path(folder))
            found = ESTIMATE.search(out)
            estimate = float(found.group(1)) * (60 if found.group(2) == "min" else 1) if found else float("nan")
            print(f"{nodes}x{per_node} #{repeat + 1}: load before {load}; estimate {estimate:.1f} s, wall {wall:.1f} s "
                  f"(wall / estimate {wall / estimate:.2f})", flush=True)


def calibrate(args: argparse.Namespace) -> None:
    """Each case's median call against its priced call, the calls' totals, and the start-up (a --plan-only world)."""
    from xferbench.measure.distributed.operations import DistCase
    from xferbench.measure.distributed.price import call_seconds, price_of

    for nodes, per_node in _layouts(args.layouts):
        with tempfile.TemporaryDirectory() as folder:
            load = _load()
            startup, _ = world(nodes, per_node, ["--plan-only", "--out", "plan.json"], Path(folder))
            print(f"{nodes}x{per_node}: load before {load}; start-up (a --plan-only world) {startup:.1f} s", flush=True)
            load = _load()
            wall, _ = world(nodes, per_node, ["--sizes", args.sizes or "4B,64KiB,1MiB,16MiB", "--rounds", "5",
                                              "--out", "run.json"], Path(folder))
            run = json.loads((Path(folder) / "run.json").read_text())
        described = run["machine_info"]["xferbench"]
        ranks = [rank["node"] for rank in described["ranks"]]
        price = price_of("gloo", ranks, described["node_fingerprints"], os.cpu_count())
        measured = priced = 0.0
        for bench in run["benchmarks"]:
            info = bench["extra_info"]
            case = DistCase(info["op"], info["nbytes"], "gloo", info["world_size"], variant=info.get("variant"),
                            crosses=info.get("crosses"))
            calls = bench["stats"]["rounds"] * bench["options"]["iterations"]
            median, call = bench["stats"]["median"], call_seconds(case, price)
            measured, priced = measured + calls * median, priced + calls * call
            print(f"  {bench['param']:<50} median {median * 1e3:8.3f} ms, priced {call * 1e3:8.3f} ms", flush=True)
        print(f"{nodes}x{per_node}: load before {load}; {len(run['benchmarks'])} cases in {wall:.1f} s; their timed "
              f"calls {measured:.1f} s, priced {priced:.1f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layouts", default="1x2,1x4,2x2", help="NODESxRANKS, comma-separated")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", default="quick")
    parser.add_argument("--sizes", help="override the profile's sizes")
    parser.add_argument("--calibrate", action="store_true")
    args = parser.parse_args()
    (calibrate if args.calibrate else check)(args)


if __name__ == "__main__":
    main()
