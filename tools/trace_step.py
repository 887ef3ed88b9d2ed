"""A small training step's torch.profiler trace, priced against a run of the same machine, then the fixed step
measured beside the original: the next GPU run compares the savings `xferbench price` predicts with measured ones.

    python tools/trace_step.py --run OUT/full.json.gz --out OUT             # on a GPU (tools/gpu_reference_run.sh)
    python tools/trace_step.py --run RUN.json --out DIR --simulate SPEC     # the simulated machine: priced, not measured

The step: a pageable batch copied with a blocking .to() (it waits for the previous step's backward), four pinned
side-stream copies, a forward, a logging `.item()` (it waits for the forward), the backward and an SGD step. The
fixed step pins the batch and copies it with non_blocking=True and keeps the loss on the device. Writes
step.pt.trace.json, step-price.json (price --json) and step-check.json (predicted and measured seconds per step).
Needs only torch and this checkout (PYTHONPATH=src): no network.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

BATCH = (4096, 1024)  # float32: 16 MiB, as tests/step_trace.py's BATCH_BYTES
SIDE = (4, 256, 1024)  # four pinned copies of 1 MiB on a side stream
STEPS, ROUNDS = 20, 5


def _state(torch):
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)).cuda()
    return {"model": model, "opt": torch.optim.SGD(model.parameters(), lr=1e-3), "side": torch.cuda.Stream(),
            "batch": torch.randn(*BATCH), "pinned": torch.randn(*BATCH).pin_memory(),
            "extra": [torch.randn(*SIDE[1:]).pin_memory() for _ in range(SIDE[0])], "kept": []}


def _step(torch, s, fixed: bool) -> None:
    x = s["pinned"].to("cuda", non_blocking=True) if fixed else s["batch"].to("cuda")
    with torch.cuda.stream(s["side"]):
        s["kept"] = [t.to("cuda", non_blocking=True) for t in s["extra"]]
    loss = s["model"](x).square().mean()
    if fixed:
        s["last"] = loss.detach()  # read once, after the steps
    else:
        s["last"] = loss.item()  # the logging line that synchronizes every step
    loss.backward()
    s["opt"].step()
    s["opt"].zero_grad()


def _per_step(torch, s, fixed: bool) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(STEPS):
        _step(torch, s, fixed)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / STEPS


def _record(torch, s, trace: Path) -> None:
    from torch.profiler import ProfilerActivity, profile, schedule

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], schedule=schedule(wait=1, warmup=1, active=3)) as prof:
        for _ in range(5):
            _step(torch, s, False)
            prof.step()
    prof.export_chrome_trace(str(trace))


def _predicted(priced: dict) -> float | None:
    """Seconds per step the fixed step should save: pinning with non_blocking for the batch, the .item()'s sync."""
    steps = max(len(priced["steps"]), 1)
    fixes = [f["saved_s"] for row in priced["copies"] for f in row["fixes"]
             if (row["kind"], f["fix"]) in (("h2d", "pin_non_blocking"), ("d2h", "remove_sync"))]
    return sum(fixes) / steps if fixes and None not in fixes else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True, help="the run to price with (this machine's)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--simulate", type=Path, metavar="SPEC", help="write the simulated machine's step instead")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    trace, price = args.out / "step.pt.trace.json", args.out / "step-price.json"
    measured: dict = {"original_s": None, "fixed_s": None, "why_none": "the simulated machine measures no step"}
    if args.simulate:
        from xferbench.measure.simulate import load_spec

        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the simulated step: a test oracle
        from step_trace import write_step_trace

        write_step_trace(load_spec(args.simulate), trace)
    else:
        import torch

        if not torch.cuda.is_available():
            print("trace_step: no GPU here; give --simulate SPEC", file=sys.stderr)
            return 2
        state = _state(torch)
        _record(torch, state, trace)
        rounds = [(_per_step(torch, state, False), _per_step(torch, state, True)) for _ in range(ROUNDS)]
        measured = {"original_s": statistics.median(r[0] for r in rounds),
                    "fixed_s": statistics.median(r[1] for r in rounds), "rounds": rounds}
    subprocess.run([sys.executable, "-m", "xferbench.cli", "price", str(trace), str(args.run), "--json", str(price)],
                   check=True)
    predicted = _predicted(json.loads(price.read_text()))
    saved = None if measured["fixed_s"] is None else measured["original_s"] - measured["fixed_s"]
    check = {"predicted_saving_s": predicted, "measured_saving_s": saved, **measured}
    (args.out / "step-check.json").write_text(json.dumps(check, indent=1))
    print(f"trace_step: predicted saving {predicted} s a step, measured {saved} s a step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
