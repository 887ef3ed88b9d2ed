"""d2h_kept: ``.to('cpu', non_blocking=True)``, the one-line fix, with its results freed and kept. It returns pinned
memory (torch's _to_copy pins the result of a non-blocking copy to the CPU): freed, the caching host allocator hands
the same pinned block back to the next call; kept (a caller who collects the results), each call of a first pass
page-locks fresh memory (cudaHostAlloc), held until the result is collected and the block given back (cudaFreeHost);
a second pass, once those results are dropped, reuses their blocks. Beside it, the pageable ``.cpu()`` freed and kept.

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...units import format_bytes, format_seconds
from ..base import Family

if TYPE_CHECKING:
    import pandas as pd


#: How the sentence names each use after the freed call, and why it costs what it does against that call (None:
#: not a copy, no comparison).
USES = {"kept": ("one that keeps its results pays, on a first pass,", "each call pins fresh memory"),
        "kept_again": ("on a second pass, once the first pass's results are dropped,", "their blocks handed back"),
        "release": ("giving one kept result back when it is collected (cudaFreeHost) costs", None),
        "cpu_freed": ("the pageable .cpu() pays, each result freed,", "the driver stages the copy"),
        "cpu_kept": ("the pageable .cpu(), its results kept,", "the driver stages it into fresh pages")}


def finding(rows: pd.DataFrame) -> list[str]:
    """At the largest size on each GPU, which use pays what: each variant against the freed call by the run's
    comparison rule (``rows.attrs["ratio"]``; nothing is said without one), and the pinned memory a kept result
    holds."""
    ratio, out = rows.attrs.get("ratio"), []
    for src, on_gpu in rows.groupby("src"):
        at = on_gpu[on_gpu["nbytes"] == on_gpu["nbytes"].max()]
        row = {r["variant"]: r for _, r in at.iterrows()}
        if ratio is None or "freed" not in row:
            continue
        said = [f"{words} {format_seconds(row[v]['median_s'])}" + (
            f" ({ratio(row[v], row['freed']).text()} the freed call: {why})" if why else "")
            for v, (words, why) in USES.items() if v in row]
        block = (row["kept"].get("held_bytes") if "kept" in row else None) or 0  # None: not recorded; NaN fails > 0
        held = f"; each kept result holds {format_bytes(int(block))} pinned until it is collected" if block > 0 else ""
        out.append(f".to('cpu', non_blocking=True) from {src} at {format_bytes(int(at['nbytes'].iloc[0]))}: a loop that "
                   f"lets each result go pays {format_seconds(row['freed']['median_s'])} a call (the caching host "
                   f"allocator hands its pinned block back); {'; '.join(said)}{held}.")
    return out


RECORD = Family("d2h_kept", "Scenario: .to('cpu', non_blocking=True), its results freed or kept",
                ".to('cpu', non_blocking=True) with each result freed, kept (a first pass, then a second), a kept "
                "result given back; .cpu() freed and kept",
                "scenario", "tab:red", finding=finding,
                caption="freed: each result is dropped before the next call, so torch's caching host allocator hands "
                        "the same pinned block back (what the core d2h row times); kept: the results are kept, as a "
                        "caller collecting outputs does, so on a first pass every call page-locks fresh memory "
                        "(cudaHostAlloc) before its copy, the memory held said (held_bytes); kept_again: a second "
                        "pass, the results before dropped, their blocks reused; release: one kept result given back "
                        "to the driver (cudaFreeHost, what collecting it and emptying the cache costs); cpu_freed and "
                        "cpu_kept: the pageable .cpu() alike. The run holds the last 4 kept results and gives them "
                        "back between rounds, untimed.")
