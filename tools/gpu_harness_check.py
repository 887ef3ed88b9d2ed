"""Does the harness cost a GPU figure anything? The suite against a bare loop, in one process.

    PYTHONPATH=src python tools/gpu_harness_check.py [--json OUT.json]

For pinned host-to-device ``copy_`` (256 MiB) and same-device ``copy_`` (1 GiB) on
cuda:0, the suite's own benchmarks run (pytest-benchmark, in this process) and, on the
suite's own buffers (``transfers.prepare``), a bare loop times the same copies:

- wall: ``copy_`` then ``torch.cuda.synchronize``, per call, like the suite's
  ``wall+sync`` clock (compared median with median);
- events: N copies enqueued back to back between two CUDA events, per copy: the
  copy engine's (or the memory's) own rate, as nvbandwidth measures it.

Bare loop, suite, bare loop again: the better bare figures are kept, so drift between
the two cannot flatter the suite. Prints suite / bare ratios of bandwidth; the goal is
>= 0.97 against the bare wall loop. Exit 0 when every such ratio meets it, 1 when one
does not; without a CUDA GPU it says so and exits 0 having checked nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from xferbench.measure.cases import Case
from xferbench.measure.transfers import operation, prepare

BENCH = Path(__file__).resolve().parents[1] / "bench"
GOAL = 0.97
REPEATS = 30
MiB = 2**20
CASES = {
    "h2d pinned copy_ 256 MiB": (Case("h2d", "copy_", "cpu", "cuda:0", (256 * MiB // 4,), host_memory="pinned"),
                                 BENCH / "test_h2d.py", "test_h2d"),
    "d2d copy_ 1 GiB": (Case("d2d", "copy_", "cuda:0", "cuda:0", (1024 * MiB // 4,)), BENCH / "test_d2d.py", "test_d2d"),
}


def bare(case: Case) -> dict[str, float]:
    """Median wall+sync seconds per call, and event seconds per copy back to back."""
    buffers = prepare(case)
    copy = operation(case, buffers)
    assert buffers.src is not None and buffers.dst is not None
    src, dst = buffers.src, buffers.dst
    device = torch.device("cuda:0")
    for _ in range(3):
        copy()
    torch.cuda.synchronize(device)
    walls = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        copy()
        torch.cuda.synchronize(device)
        walls.append(time.perf_counter() - start)
    enqueue: Callable[[], object] = lambda: dst.copy_(src, non_blocking=True)  # noqa: E731  never waits on the host
    with torch.cuda.device(device):
        first, last = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(50_000_000)  # hold the stream so every copy is queued before the first runs
        first.record()
        for _ in range(REPEATS):
            enqueue()
        last.record()
        last.synchronize()
    return {"wall_s": statistics.median(walls), "event_s": first.elapsed_time(last) / 1e3 / REPEATS}


def suite(json_path: Path) -> dict[str, dict]:
    node_ids = [f"{path}::{test}[{case.id}]" for case, path, test in CASES.values()]
    args = [*node_ids, "--benchmark-only", "--xfer-devices=cpu,cuda:0", "--xfer-sizes=256MiB,1GiB", "-q",
            "-p", "no:cacheprovider", f"--benchmark-json={json_path}"]
    if pytest.main(args) != 0:
        sys.exit("gpu_harness_check: the suite's run failed (see above)")
    return {b["name"]: b for b in json.loads(json_path.read_text())["benchmarks"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("gpu_harness_check: no CUDA GPU here; nothing checked")
        return 0
    before = {name: bare(case) for name, (case, _, _) in CASES.items()}
    with tempfile.TemporaryDirectory() as tmp:
        ours = suite(Path(tmp) / "suite.json")
    after = {name: bare(case) for name, (case, _, _) in CASES.items()}
    rows, ok = [], True
    print(f"\n{'copy':28} {'suite wall':>11} {'bare wall':>10} {'ratio':>6} {'suite dev':>10} {'bare events':>12} "
          f"{'ratio':>6}   (GB/s, bytes counted once)")
    for name, (case, _, test) in CASES.items():
        bench = ours[f"{test}[{case.id}]"]
        def gbps(seconds: float, nbytes: int = case.nbytes) -> float:
            return nbytes / seconds / 1e9
        bare_wall = gbps(min(before[name]["wall_s"], after[name]["wall_s"]))
        bare_events = gbps(min(before[name]["event_s"], after[name]["event_s"]))
        suite_wall = gbps(bench["stats"]["median"])
        device_s = bench["extra_info"].get("device_seconds")
        suite_device = gbps(device_s) if device_s else float("nan")
        ratio = suite_wall / bare_wall
        ok &= ratio >= GOAL
        print(f"{name:28} {suite_wall:11.2f} {bare_wall:10.2f} {ratio:6.3f} {suite_device:10.2f} {bare_events:12.2f} "
              f"{suite_device / bare_events:6.3f}")
        rows.append({"copy": name, "suite_wall_gbps": suite_wall, "bare_wall_gbps": bare_wall, "wall_ratio": ratio,
                     "suite_device_gbps": suite_device, "bare_events_gbps": bare_events,
                     "device_ratio": suite_device / bare_events, "rounds": bench["stats"]["rounds"]})
    print(f"goal: suite wall / bare wall >= {GOAL}: {'met' if ok else 'NOT met'}")
    if args.json:
        args.json.write_text(json.dumps({"goal": GOAL, "met": ok, "device": torch.cuda.get_device_name(0),
                                         "torch": torch.__version__, "rows": rows}, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
