"""d2h_kept: ``.to('cpu', non_blocking=True)``, the one-line fix, with its results freed and kept. It returns pinned
memory (torch's _to_copy pins the result of a non-blocking copy to the CPU): freed, the caching host allocator hands
the same pinned block back to the next call; kept (a caller who collects the results), each call page-locks fresh
memory (cudaHostAlloc) first.

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...units import format_bytes, format_seconds
from ..base import Family

if TYPE_CHECKING:
    import pandas as pd


def finding(rows: pd.DataFrame) -> list[str]:
    """At the largest size on each GPU: the fix with its results freed against kept, and what that means for a
    loop that lets each result go and for one that keeps them."""
    out = []
    for src, on_gpu in rows.groupby("src"):
        at = on_gpu[on_gpu["nbytes"] == on_gpu["nbytes"].max()]
        median = {v: at.loc[at["variant"] == v, "median_s"].iloc[0] for v in at["variant"]}
        if not {"freed", "kept"} <= median.keys():
            continue
        freed, kept = median["freed"], median["kept"]
        out.append(f".to('cpu', non_blocking=True) from {src} at {format_bytes(at['nbytes'].iloc[0])} took "
                   f"{format_seconds(freed)} a call with each result freed before the next (the caching host allocator "
                   f"hands its pinned block back) and {format_seconds(kept)} with the results kept ({kept / freed:.2f}x: "
                   f"each call page-locks fresh memory). So the one-line fix costs {format_seconds(freed)} in a loop that "
                   f"lets each result go, and {format_seconds(kept)} in one that keeps them (collecting outputs): there, "
                   "copy_ into pinned buffers allocated once costs what the freed call does.")
    return out


RECORD = Family("d2h_kept", "Scenario: .to('cpu', non_blocking=True), its results freed or kept",
                ".to('cpu', non_blocking=True) with each result freed before the next call, and with the results kept",
                "scenario", "tab:red", finding=finding,
                caption="freed: each result is dropped before the next call, so torch's caching host allocator hands "
                        "the same pinned block back (what the core d2h row times); kept: the results are kept, as a "
                        "caller collecting outputs does, so every call page-locks fresh memory (cudaHostAlloc) before "
                        "its copy. To keep memory small the run holds the last 4 and gives them back to the driver "
                        "between rounds, untimed.")
