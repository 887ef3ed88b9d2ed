"""numa: pinned copies with the host buffer on the GPU's NUMA node against one on the farthest other node (placed
with every thread of the process bound to that node's CPUs and its memory preferred there, and checked page by
page).

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...units import format_bytes
from ..base import Family, of_variant

if TYPE_CHECKING:
    import pandas as pd


def _node(row: pd.Series) -> str:
    """``node 1 (SLIT distance 21; spilled: ...)``: its distance where recorded, and whether a page sat elsewhere."""
    far = row.get("numa_distance")
    said = [] if far is None or far != far else [f"SLIT distance {int(far)}"]  # None or NaN: not recorded
    said += ["spilled: a page of it sat on another node"] if row.get("host_placement") == "spilled" else []
    return f"node {int(row['host_numa_node'])}" + (f" ({'; '.join(said)})" if said else "")


def finding(rows: pd.DataFrame) -> list[str]:
    """Each direction and size: the remote buffer's time against the local one's by the run's comparison rule
    (``rows.attrs["ratio"]``; nothing is said without one), naming both nodes and the remote one's distance."""
    ratio = rows.attrs.get("ratio")
    out = []
    for (src, dst, nbytes), at in rows.groupby(["src", "dst", "nbytes"]) if ratio is not None else ():
        direction = "h2d" if src == "cpu" else "d2h"
        local, remote = of_variant(at, f"{direction}_local"), of_variant(at, f"{direction}_remote")
        if local.empty or remote.empty or local["host_numa_node"].isna().any() or remote["host_numa_node"].isna().any():
            continue
        out.append(f"{direction} {src}->{dst} at {format_bytes(int(nbytes))}: the buffer on {_node(remote.iloc[0])} "
                   f"took {ratio(remote.iloc[0], local.iloc[0]).text()} the time of one on the GPU's "
                   f"{_node(local.iloc[0])}.")
    return out


RECORD = Family("numa", "Host buffer near or far from the GPU (NUMA)", "pinned copies with the host buffer on the GPU's NUMA "
                "node and on the farthest other", "concurrent", "tab:cyan", finding=finding,
                caption="The host buffer is allocated and filled with every thread of the process bound to the CPUs of "
                        "the GPU's NUMA node (local) or of the other node farthest from it by SLIT distance (remote), "
                        "its memory preferred there (libnuma, where present); where its pages landed, read back page "
                        "by page, is in each benchmark's host_numa_node (the node holding most), host_placement "
                        "(spilled: a page elsewhere) and numa_distance. A remote buffer crosses the link between "
                        "sockets.")
