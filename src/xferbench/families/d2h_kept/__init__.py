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


def _uses(src: str, size: str, t: dict[str, str], vs: dict[str, str], held: str) -> str:
    """The run's figures of one GPU and size in sentences: each variant against the freed call, then who pays what."""
    said = [f".to('cpu', non_blocking=True) from {src} at {size} took {t['freed']} a call with each result freed (its "
            f"pinned block handed back by the caching host allocator); kept, on a first pass, {t['kept']} ({vs['kept']}"
            f" the freed call: each call pins fresh memory{held})"]
    if "kept_again" in t:
        said.append(f"a second pass, once the first pass's results are dropped, {t['kept_again']} ({vs['kept_again']} "
                    "the freed call: the allocator hands their blocks back)")
    if "release" in t:
        said.append(f"giving one kept result back to the driver (cudaFreeHost) {t['release']}")
    out = "; ".join(said) + "."
    if "cpu_kept" in t and "cpu_freed" in t:
        out += (f" The pageable .cpu(): {t['cpu_freed']} freed, {t['cpu_kept']} kept ({vs['cpu_kept']} the freed "
                "call).")
    return out + (f" So a loop that lets each result go pays {t['freed']} a call; one that keeps them pays {t['kept']} "
                  "a call on its first pass" + (f" and {t['release']} a result when they are collected" if "release" in
                                                 t else "") + ", the fix's pinned memory held meanwhile.")


def finding(rows: pd.DataFrame) -> list[str]:
    """At the largest size on each GPU: each variant against the freed call by the run's comparison rule
    (``rows.attrs["ratio"]``; nothing is said without one), the pinned memory a kept result holds, and which use pays
    what."""
    ratio = rows.attrs.get("ratio")
    out = []
    for src, on_gpu in rows.groupby("src") if ratio is not None else ():
        at = on_gpu[on_gpu["nbytes"] == on_gpu["nbytes"].max()]
        row = {r["variant"]: r for _, r in at.iterrows()}
        if not {"freed", "kept"} <= row.keys():
            continue
        base = {v: row["cpu_freed" if v.startswith("cpu") else "freed"] for v in row}
        vs = {v: ratio(r, base[v]).text() for v, r in row.items()}
        block = row["kept"].get("held_bytes")
        held = "" if block is None or block != block else (  # None or NaN: not recorded
            f", each result holding {format_bytes(int(block))} pinned until it is collected")
        out.append(_uses(src, format_bytes(int(at["nbytes"].iloc[0])),
                         {v: format_seconds(r["median_s"]) for v, r in row.items()}, vs, held))
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
