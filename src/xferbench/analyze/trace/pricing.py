"""A trace's copies priced with a run's own fits (``RunView.fits``: t = α + n/β, the report's own), and what each fix
saves there: pin the host buffer; pin and ``non_blocking`` (the host pays the pipelined α); batch a step's small
copies into one; remove the synchronize of a device-to-host copy (which also saves the wait the trace measured).

Without a run the trace's own times and shares are given and nothing is priced. Every line that says where a
figure comes from is written here, so the console, ``--json`` and the page say the same.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...units import format_bytes, format_seconds
from ..view import RunView
from .copies import Group, Step, group, steps, tie
from .parser import Trace, read_trace

__all__ = ["Priced", "price", "spread", "to_json", "to_text"]

#: The call a group is priced with, among a path's fitted calls, first found first.
METHODS = ("to", "copy_", "cpu", "cuda", "clone")


@dataclass(frozen=True)
class Priced:
    """A priced trace: the lines saying where each figure comes from, its steps, and one row per group."""

    labels: list[str]
    steps: list[Step]
    rows: list[dict[str, Any]]


def price(path: Path, view: RunView | None, step: int | None = None) -> Priced:
    """The trace at ``path`` priced with ``view`` (None: not priced), over its steps (``step``: that one only)."""
    trace = read_trace(path)
    found, kept = steps(trace, tie(trace), step)
    total = sum(s.span[1] - s.span[0] for s in found)
    rows = [_row(g, view, len(found), total) for g in group(kept)]
    return Priced(_labels(trace, view, found), found, rows)


def _labels(trace: Trace, view: RunView | None, found: list[Step]) -> list[str]:
    """Where the figures come from: the trace's GPU, the run's, whether they differ, the steps read."""
    recorded = sorted(set(trace.gpus.values())) or ["a GPU the trace does not name"]
    said = [f"trace recorded on {', '.join(recorded)}" + (f" (SIMULATED: {trace.simulated})" if trace.simulated else "")]
    if view is None:
        said.append("no run given: the trace's own times and shares, nothing priced")
    else:
        gpus = sorted({str(name) for name in view.fingerprint.gpu_names or []}) or ["an unnamed GPU"]
        said.append(f"priced with run {', '.join(view.sources) or '(rows)'} on {', '.join(gpus)}"
                    + (", a SIMULATED run (--xfer-simulate): its prices read back a machine spec" if view.simulated else ""))
        if set(gpus) != set(recorded):
            said.append("warning: the run's GPU is not the trace's: prices are the run's machine's, waits the trace's")
    numbers = [s.number for s in found if s.number is not None]
    said.append(f"steps read: ProfilerStep#{', #'.join(map(str, numbers))}" if numbers else
                "no ProfilerStep recorded: the trace's whole window is read as one step")
    return said


def _fit(view: RunView, kind: str, memory: str, blocking: bool) -> dict[str, Any] | None:
    """The run's fitted path a copy of this kind takes (the first of ``METHODS`` the run measured), or None."""
    fits = view.fits
    memories = fits["host_memory"].fillna("device")
    waits = fits["non_blocking"] == (memory == "pinned" and not blocking)
    found = fits[(fits["op"] == kind) & (memories == memory) & waits & np.isfinite(fits["alpha_us"].astype(float))
                 & np.isfinite(fits["stated_gbps"].astype(float))]
    ranked = sorted(found.to_dict("records"), key=lambda f: METHODS.index(f["method"]) if f["method"] in METHODS else 9)
    return ranked[0] if ranked else None


def spread(view: RunView, path: str, size: float) -> tuple[float, float]:
    """A path's relative interval at ``size``: its lower and upper quartile over its median at the measured sizes that
    bracket it (the least and the most of the two). The one place an interval comes from, for the run's paired
    ratios to replace."""
    rows = view.rows[view.rows["path"] == path]
    sizes = np.sort(rows["nbytes"].unique())
    below, above = sizes[sizes <= size], sizes[sizes >= size]
    at = rows[rows["nbytes"].isin([below[-1] if below.size else sizes[0], above[0] if above.size else sizes[-1]])]
    return float((at["q1_s"] / at["median_s"]).min()), float((at["q3_s"] / at["median_s"]).max())


def _cost(view: RunView, fit: dict[str, Any], count: int, nbytes: int, pipelined: bool = False) -> tuple[float, ...]:
    """``count`` copies of ``nbytes`` in all on a path: (seconds, low, high); ``pipelined``: the device's own α, β."""
    alpha, beta = (fit["pipelined_alpha_us"], fit["pipelined_gbps"]) if pipelined else (fit["alpha_us"], fit["stated_gbps"])
    seconds = count * alpha * 1e-6 + (nbytes / (beta * 1e9) if beta else 0.0)
    low, high = spread(view, fit["path"], nbytes / max(count, 1))
    return seconds, seconds * low, seconds * high


def _fixes(view: RunView, g: Group, fit: dict[str, Any], now: tuple[float, ...], steps_: int,
           pipelined: bool) -> list[dict[str, Any]]:
    """Each fix that applies to a group, with what it would cost and save on the run's machine."""
    after: list[tuple[str, str, tuple[float, ...] | None]] = []
    if g.memory == "pageable":
        pinned = _fit(view, g.kind, "pinned", True)
        after.append(("pin", "pin the host buffer", _cost(view, pinned, g.count, g.nbytes) if pinned else None))
    if g.kind == "h2d" and g.blocking and g.memory != "unknown":
        ahead = _fit(view, g.kind, "pinned", False)
        ready = ahead is not None and math.isfinite(ahead["pipelined_alpha_us"])
        after.append(("pin_non_blocking", "pin it and copy with non_blocking=True (the host pays the pipelined α)",
                      _cost(view, ahead, g.count, 0, True) if ahead is not None and ready else None))
    per_step = g.count / max(steps_, 1)
    if per_step >= 2 and g.nbytes / g.count < fit["half_peak_bytes"]:
        after.append(("batch", f"batch each step's {per_step:.3g} copies into one (latency-bound: below α·β)",
                      _cost(view, fit, steps_, g.nbytes, pipelined)))
    fixes = [_saving(fix, what, now, cost) for fix, what, cost in after]
    if g.kind == "d2h" and g.blocking:
        wait = g.total("wait")
        fix = "remove this synchronize, or move it off the step (it also saves the wait measured on the trace)"
        fixes.append(_saving("remove_sync", fix, now, (-wait, -wait, -wait)) | {"measured_wait_s": wait})
    return fixes


def _saving(fix: str, what: str, now: tuple[float, ...], after: tuple[float, ...] | None) -> dict[str, Any]:
    if after is None:
        return {"fix": fix, "what": what, "after_s": None, "saved_s": None, "low_s": None, "high_s": None,
                "said": "not priced: the run did not measure the path it needs"}
    saved, low, high = now[0] - after[0], now[1] - after[2], now[2] - after[1]
    said = (f"saves {format_seconds(saved)} ({format_seconds(low)}-{format_seconds(high)})" if low > 0
            else f"can't tell (the run's spread: {format_seconds(low)} to {format_seconds(high)})")
    return {"fix": fix, "what": what, "after_s": max(after[0], 0.0), "saved_s": saved, "low_s": low, "high_s": high,
            "said": said}


def _row(g: Group, view: RunView | None, steps_: int, total: float) -> dict[str, Any]:
    """One group as the JSON's ``copies`` rows and the tables show it."""
    host = g.total("wait") + g.total("blocked") + g.total("tail")
    row: dict[str, Any] = {
        "kind": g.kind, "memory": g.memory, "blocking": g.blocking, "op": g.op, "count": g.count, "bytes": g.nbytes,
        "gpu_s": g.gpu_s, "host_s": host, "wait_s": g.total("wait"), "blocked_s": g.total("blocked"),
        "tail_s": g.total("tail"), "share": host / total if total > 0 else None,
        "examples": [c.copy.correlation for c in g.copies[:2]], "path": None, "priced_s": None, "fixes": []}
    fit = _fit(view, g.kind, g.memory, g.blocking) if view is not None and g.memory != "unknown" else None
    if view is not None and fit is None:
        row["note"] = f"not priced: the run measured no {g.kind} path from {g.memory} memory"
    if view is None or fit is None:
        return row
    pipelined = not g.blocking and math.isfinite(fit["pipelined_alpha_us"])  # the device's time: the host never waits
    now = _cost(view, fit, g.count, g.nbytes, pipelined)
    return row | {"path": fit["path"], "priced_s": now[0], "priced_low_s": now[1], "priced_high_s": now[2],
                  "fixes": _fixes(view, g, fit, now, steps_, pipelined)}


def to_json(priced: Priced) -> str:
    """The ``--json`` document: labels, steps, ``copies`` (docs/contract.md)."""
    return json.dumps({"labels": priced.labels, "steps": [
        {"step": s.number, "seconds": s.span[1] - s.span[0], "compute_s": s.compute_s, "copy_s": s.copy_s,
         "blocked_s": s.blocked_s, "wait_s": s.wait_s} for s in priced.steps], "copies": priced.rows}, indent=1)


def to_text(priced: Priced) -> str:
    """The console's table: a paragraph per group, the host's time split, the price and each fix."""
    lines = list(priced.labels)
    for row in priced.rows:
        lines += ["", f"{row['count']} {row['kind']} {row['memory']} {'blocking' if row['blocking'] else 'non-blocking'} "
                      f"copies in {row['op']}: {format_bytes(row['bytes'])}, GPU {format_seconds(row['gpu_s'])}; host "
                      f"{format_seconds(row['host_s'])} = waiting for the queue {format_seconds(row['wait_s'])} + "
                      f"blocked on the copy {format_seconds(row['blocked_s'])} + tail {format_seconds(row['tail_s'])}"
                      + (f" ({row['share']:.1%} of the steps)" if row["share"] is not None else "")
                      + f"; e.g. correlation {', '.join(map(str, row['examples']))}"]
        if not row["blocking"]:
            lines.append("  the host never waits for these: off the critical path")
        if row["priced_s"] is not None:
            lines.append(f"  costs {format_seconds(row['priced_s'])} here ({row['path']})")
        lines += [f"  {fix['what']}: {fix['said']}" for fix in row["fixes"]] + ([f"  {row['note']}"] if "note" in row else [])
    return "\n".join(lines if priced.rows else [*lines, "", "no copy between host and device in the steps read"])
