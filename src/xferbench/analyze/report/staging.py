"""The driver's staging of a pageable copy, one direction against the other: what the run's own copy_ cases show of
it, and that the run cannot tell why they differ where it records nothing that would."""

from __future__ import annotations

import pandas as pd

from ...machine_facts import at
from ...units import format_bytes, format_seconds
from ..view import RunView

__all__ = ["staging_both_ways"]

#: Each direction's copy_ into (or from) a buffer that exists, blocking: pageable is staged by the driver, pinned is not.
_DIRECTIONS = (("h2d", "to the GPU"), ("d2h", "from the GPU"))


def _copies(view: RunView, op: str) -> dict[tuple[int, str], pd.Series]:
    """The direction's blocking copy_ from pageable and from pinned memory, by (size, host memory)."""
    rows = view.rows
    rows = rows[(rows["op"] == op) & (rows["method"] == "copy_") & ~rows["non_blocking"].astype(bool)]
    return {(int(row["nbytes"]), str(row["host_memory"])): row for _, row in rows.iterrows()}


def staging_both_ways(view: RunView) -> str | None:
    """Staging (pageable copy_ minus pinned copy_) host to device against device to host at the largest size both
    ran, the two pageable copies judged by their own interval; where they ran alike at a smaller size, which sizes the
    difference comes from. None unless both directions ran both copies at one size."""
    up, down = (_copies(view, op) for op, _ in _DIRECTIONS)
    common = sorted(n for (n, memory) in up if memory == "pageable" and all(
        (n, m) in table for table in (up, down) for m in ("pageable", "pinned")))
    if not common:
        return None
    size = common[-1]
    staged = [float(t[size, "pageable"]["median_s"] - t[size, "pinned"]["median_s"]) for t in (up, down)]
    if min(staged) <= 0:
        return None
    judged = view.ratio(up[size, "pageable"], down[size, "pageable"])
    slow = [float(t[size, "pageable"]["median_s"]) for t in (up, down)]
    if not judged.resolved:
        return (f"At {format_bytes(size)} staging costs {format_seconds(staged[0])} host to device and "
                f"{format_seconds(staged[1])} device to host; the pageable copies took {format_seconds(slow[0])} and "
                f"{format_seconds(slow[1])}: which direction is slower, {judged.text()}.")
    alike = [n for n in common if n < size and not view.ratio(up[n, "pageable"], down[n, "pageable"]).resolved]
    text = (f"Staging differs by direction: at {format_bytes(size)} it costs {format_seconds(staged[0])} host to device "
            f"and {format_seconds(staged[1])} device to host (the pageable copies took {format_seconds(slow[0])} and "
            f"{format_seconds(slow[1])}, {judged.text()})")
    if alike:
        mid = alike[-1]
        (a_mid, b_mid), (a_big, b_big) = ([float(t[n, "pageable"]["bandwidth_gbps"]) for t in (up, down)]
                                          for n in (mid, size))  # lists: each binds its own n
        text += (f"; pageable copy_ ran {a_mid:.3g} GB/s to the GPU and {b_mid:.3g} from it at {format_bytes(mid)}, "
                 f"which the run cannot tell apart, and {a_big:.3g} against {b_big:.3g} GB/s at {format_bytes(size)}: "
                 f"the two directions part above {format_bytes(mid)}")
    return text + f". {_why(view)}"


def _why(view: RunView) -> str:
    """What the run lacks to say why: the single-thread host memcpy (the driver's staging copy) and fault counts; on a
    simulated run, the rates its cost model's spec set (the 2-GPU spec's 20 GB/s up, 10 down), which are the why."""
    rates = [at("xferbench", "simulated", "paths", f"{way}_pageable", "GBps")(view.machine_info) for way in ("h2d", "d2h")]
    if all(isinstance(rate, (int, float)) for rate in rates):  # a simulated run's spec: a real run records none
        return f"Why: the cost model's spec sets pageable copies at {rates[0]:g} GB/s host to device, {rates[1]:g} from it."
    rows = view.rows
    missing = [] if (rows["op"].eq("host") & rows["variant"].eq("single_thread")).any() else ["single-thread host memcpy"]
    faults = rows.get("minor_faults_per_call")
    if faults is None or not pd.to_numeric(faults, errors="coerce").notna().any():
        missing.append("page-fault counts")
    if missing:
        return f"Why, this run cannot tell: it records no {' and no '.join(missing)}."
    return "Why, this run's cases do not single out."
