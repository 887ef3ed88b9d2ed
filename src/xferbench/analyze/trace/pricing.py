"""A trace's copies priced with a run's own fits (``RunView.fits``: t = α + n/β, the report's own), and what each fix
saves there: pin the host buffer; pin and ``non_blocking`` (the host pays the pipelined α); batch a step's small
copies into one; remove the synchronize of a device-to-host copy (which also saves the wait the trace measured).

Without a run the trace's own times and shares are given and nothing is priced. Facts only: report/trace_section.py
words them, for the console, ``--json`` and the page alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..view import RunView
from .copies import Group, Step, group, steps, tie
from .parser import read_trace

__all__ = ["METHODS", "Priced", "price", "spread"]

#: The call a group is priced with, among a path's fitted calls, first found first.
METHODS = ("to", "copy_", "cpu", "cuda", "clone")


@dataclass(frozen=True)
class Priced:
    """A priced trace: whose GPUs recorded and priced it (report/trace_section.py words them), its steps, and one row
    per group of copies."""

    recorded: list[str]
    simulated_trace: str | None
    run: list[str] | None  # the run's files (None: not priced)
    run_gpus: list[str]
    run_simulated: bool
    steps: list[Step]
    rows: list[dict[str, Any]]


def price(path: Path, view: RunView | None, step: int | None = None) -> Priced:
    """The trace at ``path`` priced with ``view`` (None: not priced), over its steps (``step``: that one only)."""
    trace = read_trace(path)
    found, kept = steps(trace, tie(trace), step)
    total = sum(s.span[1] - s.span[0] for s in found)
    rows = [_row(g, view, len(found), total) for g in group(kept)]
    gpus = sorted({str(name) for name in view.fingerprint.gpu_names or []}) if view is not None else []
    return Priced(sorted(set(trace.gpus.values())), trace.simulated, list(view.sources) if view is not None else None,
                  gpus, bool(view is not None and view.simulated), found, rows)


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
    after: list[tuple[str, tuple[float, ...] | None]] = []
    if g.memory == "pageable":
        pinned = _fit(view, g.kind, "pinned", True)
        after.append(("pin", _cost(view, pinned, g.count, g.nbytes) if pinned else None))
    if g.kind == "h2d" and g.blocking and g.memory != "unknown":
        ahead = _fit(view, g.kind, "pinned", False)
        ready = ahead is not None and math.isfinite(ahead["pipelined_alpha_us"])
        after.append(("pin_non_blocking", _cost(view, ahead, g.count, 0, True) if ahead is not None and ready else None))
    if g.count >= 2 * steps_ and g.nbytes / g.count < fit["half_peak_bytes"]:  # latency-bound: below α·β
        after.append(("batch", _cost(view, fit, steps_, g.nbytes, pipelined)))
    fixes = [_saving(fix, now, cost) for fix, cost in after]
    if g.kind == "d2h" and g.blocking:  # the synchronize also costs the wait the trace measured
        wait = g.total("wait")
        fixes.append(_saving("remove_sync", now, (-wait, -wait, -wait)) | {"measured_wait_s": wait})
    return fixes


def _saving(fix: str, now: tuple[float, ...], after: tuple[float, ...] | None) -> dict[str, Any]:
    if after is None:
        return {"fix": fix, "after_s": None, "saved_s": None, "low_s": None, "high_s": None}
    return {"fix": fix, "after_s": max(after[0], 0.0), "saved_s": now[0] - after[0], "low_s": now[1] - after[2],
            "high_s": now[2] - after[1]}


def _row(g: Group, view: RunView | None, steps_: int, total: float) -> dict[str, Any]:
    """One group as the JSON's ``copies`` rows and the tables show it."""
    host = g.total("wait") + g.total("blocked") + g.total("tail")
    row: dict[str, Any] = {
        "kind": g.kind, "memory": g.memory, "blocking": g.blocking, "op": g.op, "count": g.count, "bytes": g.nbytes,
        "gpu_s": g.gpu_s, "host_s": host, "wait_s": g.total("wait"), "blocked_s": g.total("blocked"),
        "tail_s": g.total("tail"), "share": host / total if total > 0 else None,
        "examples": [c.copy.correlation for c in g.copies[:2]], "path": None, "priced_s": None, "fixes": []}
    fit = _fit(view, g.kind, g.memory, g.blocking) if view is not None and g.memory != "unknown" else None
    if view is None or fit is None:
        return row
    pipelined = not g.blocking and math.isfinite(fit["pipelined_alpha_us"])  # the device's time: the host never waits
    now = _cost(view, fit, g.count, g.nbytes, pipelined)
    return row | {"path": fit["path"], "priced_s": now[0], "priced_low_s": now[1], "priced_high_s": now[2],
                  "fixes": _fixes(view, g, fit, now, steps_, pipelined)}
