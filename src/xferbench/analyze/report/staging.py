"""The driver's staging of a pageable copy, one direction against the other: what the run's own copy_ cases show of
it, and that the run cannot tell why they differ where it records nothing that would."""

from __future__ import annotations

import pandas as pd

from ...units import format_bytes, format_seconds
from ..view import RunView
from . import drift_text

__all__ = ["staging_both_ways"]

#: Each direction's copy_ into (or from) a buffer that exists, blocking: pageable is staged by the driver, pinned is not.
_DIRECTIONS = (("h2d", "to the GPU"), ("d2h", "from the GPU"))


def _copies(view: RunView, op: str) -> pd.DataFrame:
    """Per size: the direction's blocking copy_ from pageable and from pinned memory (median seconds, GB/s)."""
    rows = view.rows
    rows = rows[(rows["op"] == op) & (rows["method"] == "copy_") & ~rows["non_blocking"].astype(bool)]
    table = rows.pivot_table(index="nbytes", columns="host_memory", values=["median_s", "bandwidth_gbps"])
    return table.dropna() if {"pageable", "pinned"} <= set(table.columns.get_level_values(1)) else pd.DataFrame()


def staging_both_ways(view: RunView) -> str | None:
    """Staging (pageable copy_ minus pinned copy_) host to device against device to host at the largest size both
    ran, held against the run's drift floor; where the two pageable copies ran alike at a smaller size, which sizes
    the difference comes from. None unless both directions ran both copies at one size."""
    up, down = (_copies(view, op) for op, _ in _DIRECTIONS)
    if up.empty or down.empty:
        return None
    common = sorted(set(up.index) & set(down.index))
    if not common:
        return None
    size = common[-1]
    staged = [float(t.loc[size, ("median_s", "pageable")] - t.loc[size, ("median_s", "pinned")]) for t in (up, down)]
    if min(staged) <= 0:
        return None
    slow = [float(t.loc[size, ("median_s", "pageable")]) for t in (up, down)]
    if view.drift.within(slow[0], slow[1]):
        return (f"At {format_bytes(size)} staging costs {format_seconds(staged[0])} host to device and "
                f"{format_seconds(staged[1])} device to host; the pageable copies lie {drift_text.clause(view.drift)}: can't "
                "tell the directions apart.")
    gbps = [tuple(float(t.loc[n, ("bandwidth_gbps", "pageable")]) for t in (up, down)) for n in common]
    alike = [n for n, (a, b) in zip(common, gbps, strict=True) if n < size and view.drift.within(1 / a, 1 / b)]
    text = (f"Staging differs by direction: at {format_bytes(size)} it costs {format_seconds(staged[0])} host to device "
            f"and {format_seconds(staged[1])} device to host ({max(staged) / min(staged):.2g}×; the pageable copies "
            f"took {format_seconds(slow[0])} and {format_seconds(slow[1])}, beyond the run's drift floor)")
    if alike:
        mid = alike[-1]
        at = dict(zip(common, gbps, strict=True))
        (a_mid, b_mid), (a_big, b_big) = at[mid], at[size]
        text += (f"; pageable copy_ ran {a_mid:.3g} GB/s to the GPU and {b_mid:.3g} from it at {format_bytes(mid)}, "
                 f"within the floor, and {a_big:.3g} against {b_big:.3g} GB/s at {format_bytes(size)}: the difference "
                 f"comes from the sizes above {format_bytes(mid)}")
    return text + f". {_why(view)}"


def _why(view: RunView) -> str:
    """What the run lacks to say why: the single-thread host memcpy (the driver's staging copy) and fault counts."""
    rows = view.rows
    missing = [] if (rows["op"].eq("host") & rows["variant"].eq("single_thread")).any() else ["single-thread host memcpy"]
    faults = rows.get("minor_faults_per_call")
    if faults is None or not pd.to_numeric(faults, errors="coerce").notna().any():
        missing.append("page-fault counts")
    if missing:
        return f"Why, this run cannot tell: it records no {' and no '.join(missing)}."
    return "Why, this run's cases do not single out."
