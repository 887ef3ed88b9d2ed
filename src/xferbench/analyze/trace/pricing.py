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
import pandas as pd

from ...ratios import median_span
from ..drift import side
from ..view import RunView
from .copies import Group, Step, group, steps, tie
from .parser import read_trace

__all__ = ["METHODS", "Priced", "price"]

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
    gpus = sorted({str(g.get("name")) for g in view.fingerprint.devices}) if view is not None else []
    return Priced(sorted(set(trace.gpus.values())), trace.simulated, list(view.sources) if view is not None else None,
                  gpus, bool(view is not None and view.simulated), found, rows)


def _fit(view: RunView, kind: str, memory: str, blocking: bool) -> dict[str, Any] | None:
    """The run's fitted path a copy of this kind takes (the first of ``METHODS`` the run measured), or None."""
    fits = view.fits
    memories = fits["host_memory"].fillna("device")
    waits = fits["non_blocking"] == (memory == "pinned" and not blocking)
    found = fits[(fits["op"] == kind) & (memories == memory) & waits & np.isfinite(fits["alpha_us"].astype(float))
                 & np.isfinite(fits["stated_gbps"].astype(float))]
    return min(found.to_dict("records"), key=lambda f: METHODS.index(f["method"]) if f["method"] in METHODS else 9, default=None)


def _row_at(view: RunView, path: str, size: float) -> pd.Series:
    """The path's measured row at the size nearest ``size`` (on a log scale): where its comparisons are read."""
    rows = view.of_path(path)
    distance = np.abs(np.log2(rows["nbytes"].clip(lower=1).astype(float)) - np.log2(max(size, 1.0)))
    return rows.iloc[int(np.argmin(distance.to_numpy()))]


def _cost(fit: dict[str, Any], count: int, nbytes: int, pipelined: bool = False) -> float:
    """``count`` copies of ``nbytes`` in all on a fitted path; ``pipelined``: the device's own α and β."""
    alpha, beta = (fit["pipelined_alpha_us"], fit["pipelined_gbps"]) if pipelined else (fit["alpha_us"], fit["stated_gbps"])
    return float(count * alpha * 1e-6 + (nbytes / (beta * 1e9) if nbytes else 0.0))


def _moved(fix: str, view: RunView, mine: pd.Series, now: float, fit: dict[str, Any] | None,
           after: float | None) -> dict[str, Any]:
    """A fix that moves the copies to another path: the fits' saving, its interval from the run's ``Ratio`` of the
    two paths at the copies' size (the cost after scaled by the ratio's interval over its value); claimed only where
    that ratio is resolved, the fix's way."""
    if fit is None or after is None:
        return {"fix": fix, "after_s": None, "saved_s": None, "low_s": None, "high_s": None, "ratio": None, "resolved": False}
    ratio = view.ratio(mine, _row_at(view, fit["path"], mine["nbytes"]))
    low = now - (after * ratio.value / ratio.low if ratio.low > 0 else math.inf)
    return {"fix": fix, "after_s": after, "saved_s": now - after, "low_s": low, "high_s": now - after * ratio.value
            / ratio.high, "ratio": ratio, "resolved": ratio.resolved and ratio.value > 1 and low > 0}


def _kept(fix: str, mine: pd.Series, saved: float, now: float, measured: float = 0.0) -> dict[str, Any]:
    """A fix on the copies' own path: the priced saving scaled by that path's median interval (its rounds), never
    above what the copies cost (``now``), plus what the trace measured (a wait: exact, and the trace's machine's)."""
    low, high = median_span(*side(mine)[:2])
    scale = saved / float(mine["median_s"])
    return {"fix": fix, "after_s": None, "saved_s": saved + measured, "low_s": low * scale + measured,
            "high_s": min(high * scale, now) + measured, "ratio": None, "resolved": low * scale + measured > 0}


def _fixes(view: RunView, g: Group, fit: dict[str, Any], now: float, steps_: int, pipelined: bool) -> list[dict[str, Any]]:
    """Each fix that applies to a group, with what it would cost and save on the run's machine."""
    mine = _row_at(view, fit["path"], g.nbytes / g.count)
    fixes = []
    if g.memory == "pageable":
        pinned = _fit(view, g.kind, "pinned", True)
        fixes.append(_moved("pin", view, mine, now, pinned, _cost(pinned, g.count, g.nbytes) if pinned else None))
    if g.kind == "h2d" and g.blocking and g.memory != "unknown":
        ahead = _fit(view, g.kind, "pinned", False)
        ready = ahead is not None and math.isfinite(ahead["pipelined_alpha_us"])
        fixes.append(_moved("pin_non_blocking", view, mine, now, ahead,
                            _cost(ahead, g.count, 0, True) if ahead is not None and ready else None))
    if g.count >= 2 * steps_ and g.nbytes / g.count < fit["half_peak_bytes"]:  # latency-bound: below α·β
        after = _cost(fit, steps_, g.nbytes, pipelined)
        fixes.append(_kept("batch", mine, now - after, now) | {"after_s": after})
    if g.kind == "d2h" and g.blocking:  # the synchronize also costs the wait the trace measured
        fixes.append(_kept("remove_sync", mine, now, now, g.total("wait")) | {"after_s": 0.0, "measured_wait_s": g.total("wait")})
    return fixes


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
    now = _cost(fit, g.count, g.nbytes, pipelined)
    return row | {"path": fit["path"], "priced_s": now, "fixes": _fixes(view, g, fit, now, steps_, pipelined)}
