"""Does the harness cost a GPU figure anything? The suite against a bare loop, in one process.

    PYTHONPATH=src python tools/gpu_harness_check.py [--json OUT.json] [--dry-run]

For pinned host-to-device ``copy_`` at 4 KiB, 1 MiB and 256 MiB, blocking and non-blocking, and
same-device ``copy_`` of 1 GiB, on cuda:0, the suite's own benchmarks run (pytest-benchmark, in this
process) and, on the suite's own buffers (``transfers.prepare``), a bare loop times the same copies:

- wall: the copy then ``torch.cuda.synchronize``, per call, like the suite's ``wall+sync`` clock
  (compared median with median);
- events: N non-blocking copies enqueued back to back between two CUDA events behind a spin, per
  copy: the copy engine's (or the memory's) own rate, as nvbandwidth measures it.

In this order: bare loop; the suite without its profiler pass (``TEARDOWN_CUPTI=0``: the suite then
takes no profiler time, since CUPTI would stay attached); the suite with it (``TEARDOWN_CUPTI=1``:
each copy's device time from torch.profiler after its wall-time rounds, CUPTI detached at each
session's end); the bare loop again. Three ratios of bandwidth, each with the goal >= 0.97:

- suite / bare wall (the better bare figure, so drift between the two cannot flatter the suite);
- suite with the profiler pass / suite without it: a profiler session left attached would slow the
  wall time of every later case (pytorch/pytorch#144455);
- bare wall after the suite / before it: nothing the suite did (CUPTI above all) lingers.

Exit 0 when every ratio meets the goal, 1 when one does not; without a CUDA GPU it says so and exits
0 having checked nothing. ``--dry-run`` prints the plan (the steps and the suite's node ids) and
runs nothing: it needs no GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from xferbench.measure.cases import Case
from xferbench.measure.transfers import operation, prepare

BENCH = Path(__file__).resolve().parents[1] / "bench"
GOAL = 0.97
REPEATS = 30
KiB, MiB = 2**10, 2**20
#: The sizes: latency-bound, in between, bandwidth-bound.
H2D_SIZES = {"4 KiB": 4 * KiB, "1 MiB": MiB, "256 MiB": 256 * MiB}
SIZES_OPTION = "--xfer-sizes=4KiB,1MiB,256MiB,1GiB"
#: Each case in one piece, as the bare loop runs it (the default run measures compared cases in paired blocks).
BLOCKS_OPTION = "--xfer-blocks=1"
#: The two suite runs, in this order: without the profiler pass, then with it.
PROFILER_PASS = {"without": "0", "with": "1"}


def _h2d(nbytes: int, non_blocking: bool) -> Case:
    return Case("h2d", "copy_", "cpu", "cuda:0", (nbytes // 4,), host_memory="pinned", non_blocking=non_blocking)


#: name -> (case, bench file, test function)
CASES: dict[str, tuple[Case, Path, str]] = {
    **{f"h2d pinned copy_ {label} {kind}": (_h2d(nbytes, kind == "non-blocking"), BENCH / "test_h2d.py", "test_h2d")
       for label, nbytes in H2D_SIZES.items() for kind in ("blocking", "non-blocking")},
    "d2d copy_ 1 GiB": (Case("d2d", "copy_", "cuda:0", "cuda:0", (1024 * MiB // 4,)), BENCH / "test_d2d.py", "test_d2d"),
}


def node_ids() -> list[str]:
    """The suite's benchmarks this check runs, as pytest node ids."""
    return [f"{path}::{test}[{case.id}]" for case, path, test in CASES.values()]


def plan() -> list[str]:
    """The steps the check takes, in order, as lines to print."""
    return ["bare loop: " + ", ".join(CASES),
            *[f"suite {label} the profiler pass (TEARDOWN_CUPTI={value}): {len(CASES)} benchmarks"
              for label, value in PROFILER_PASS.items()],
            "bare loop again",
            f"goal: every ratio >= {GOAL} (suite / bare wall, with / without the profiler pass, bare after / before)",
            *[f"  {node}" for node in node_ids()]]


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


def suite(json_path: Path, teardown: str) -> dict[str, dict[str, Any]]:
    """The suite's benchmarks, run here with TEARDOWN_CUPTI set to ``teardown``, by name."""
    os.environ["TEARDOWN_CUPTI"] = teardown  # read by the suite at each profiled case (devices.cupti_torn_down)
    args = [*node_ids(), "--benchmark-only", "--xfer-devices=cpu,cuda:0", SIZES_OPTION, BLOCKS_OPTION, "-q",
            "-p", "no:cacheprovider", f"--benchmark-json={json_path}"]
    if pytest.main(args) != 0:
        sys.exit("gpu_harness_check: the suite's run failed (see above)")
    return {b["name"]: b for b in json.loads(json_path.read_text())["benchmarks"]}


def gbps(nbytes: int, seconds: float | None) -> float:
    return nbytes / seconds / 1e9 if seconds else float("nan")


def row(name: str, case: Case, test: str, before: dict[str, float], after: dict[str, float],
        ours: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """One copy's figures (GB/s, bytes counted once) and ratios."""
    with_, without = ours["with"][f"{test}[{case.id}]"], ours["without"][f"{test}[{case.id}]"]
    bare_wall = gbps(case.nbytes, min(before["wall_s"], after["wall_s"]))
    bare_events = gbps(case.nbytes, min(before["event_s"], after["event_s"]))
    suite_wall = gbps(case.nbytes, with_["stats"]["median"])
    suite_device = gbps(case.nbytes, with_["extra_info"].get("device_seconds"))
    return {"copy": name, "suite_wall_gbps": suite_wall, "bare_wall_gbps": bare_wall,
            "wall_ratio": suite_wall / bare_wall,
            "profiler_pass_ratio": suite_wall / gbps(case.nbytes, without["stats"]["median"]),
            "bare_after_ratio": gbps(case.nbytes, after["wall_s"]) / gbps(case.nbytes, before["wall_s"]),
            "suite_device_gbps": suite_device, "bare_events_gbps": bare_events,
            "device_ratio": suite_device / bare_events,
            "device_time_method": with_["extra_info"].get("device_time_method"),
            "rounds": with_["stats"]["rounds"]}


RATIOS = ("wall_ratio", "profiler_pass_ratio", "bare_after_ratio")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and run nothing")
    args = parser.parse_args(argv)
    if args.dry_run:
        print("\n".join(plan()))
        return 0
    if not torch.cuda.is_available():
        print("gpu_harness_check: no CUDA GPU here; nothing checked")
        return 0
    before = {name: bare(case) for name, (case, _, _) in CASES.items()}
    with tempfile.TemporaryDirectory() as tmp:
        ours = {label: suite(Path(tmp) / f"suite_{label}.json", value) for label, value in PROFILER_PASS.items()}
    after = {name: bare(case) for name, (case, _, _) in CASES.items()}
    rows = [row(name, case, test, before[name], after[name], ours) for name, (case, _, test) in CASES.items()]
    ok = all(r[ratio] >= GOAL for r in rows for ratio in RATIOS)
    print(f"\n{'copy':36} {'suite wall':>10} {'bare wall':>9} {'ratio':>6} {'w/o prof':>8} {'bare a/b':>8} "
          f"{'suite dev':>9} {'bare ev':>8} {'ratio':>6}  method   (GB/s, bytes counted once)")
    for r in rows:
        print(f"{r['copy']:36} {r['suite_wall_gbps']:10.3f} {r['bare_wall_gbps']:9.3f} {r['wall_ratio']:6.3f} "
              f"{r['profiler_pass_ratio']:8.3f} {r['bare_after_ratio']:8.3f} {r['suite_device_gbps']:9.3f} "
              f"{r['bare_events_gbps']:8.3f} {r['device_ratio']:6.3f}  {r['device_time_method']}")
    print(f"goal: every {', '.join(RATIOS)} >= {GOAL}: {'met' if ok else 'NOT met'}")
    if args.json:
        args.json.write_text(json.dumps({"goal": GOAL, "met": ok, "device": torch.cuda.get_device_name(0),
                                         "torch": torch.__version__, "rows": rows}, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
