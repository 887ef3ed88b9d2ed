"""numa: pinned copies with the host buffer on the GPU's NUMA node against one on the farthest other node (placed
with every thread of the process bound to that node's CPUs and its memory preferred there, and checked page by
page).

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...units import format_bytes, format_seconds
from ..base import Family, of_variant

if TYPE_CHECKING:
    import pandas as pd


def _node(row: pd.Series) -> str:
    """``node 1 (SLIT distance 21; spilled: ...)``: its distance where recorded, and whether a page sat elsewhere."""
    said = [f"SLIT distance {row['numa_distance']:.0f}"] if (row.get("numa_distance") or 0) > 0 else []  # NaN fails
    said += ["spilled: a page of it sat on another node"] if row.get("host_placement") == "spilled" else []
    return f"node {row['host_numa_node']:.0f}" + (f" ({'; '.join(said)})" if said else "")


def finding(rows: pd.DataFrame) -> list[str]:
    """Each direction and size: the remote buffer's time against the local one's by the run's comparison rule
    (``rows.attrs["ratio"]``; without one, both times and no comparison), naming both nodes, their distance from
    the GPU's and a spill. Rows that do not say where their buffer landed say nothing."""
    ratio, out = rows.attrs.get("ratio"), []
    for (src, dst, nbytes), at in rows.dropna(subset=["host_numa_node"]).groupby(["src", "dst", "nbytes"]):
        remote, local = (of_variant(at, f"{'h2d' if src == 'cpu' else 'd2h'}_{where}") for where in ("remote", "local"))
        if len(remote) and len(local):
            far, near = remote.iloc[0], local.iloc[0]
            took = f"{ratio(far, near).text()} the time of" if ratio else f"{format_seconds(far['median_s'])}, against " \
                f"{format_seconds(near['median_s'])} for"
            out.append(f"{far['variant'][:3]} {src}->{dst} at {format_bytes(int(nbytes))}: the buffer on {_node(far)} "
                       f"took {took} one on the GPU's {_node(near)}.")
    return out


RECORD = Family("numa", "Host buffer near or far from the GPU (NUMA)", "pinned copies with the host buffer on the GPU's NUMA "
                "node and on the farthest other", "concurrent", "tab:cyan", finding=finding,
                caption="The host buffer is allocated and filled with every thread of the process bound to the CPUs of "
                        "the GPU's NUMA node (local) or of the other node farthest from it by SLIT distance (remote), "
                        "its memory preferred there (libnuma, where present); where its pages landed, read back page "
                        "by page, is in each benchmark's host_numa_node (the node holding most), host_placement "
                        "(spilled: a page elsewhere) and numa_distance. A remote buffer crosses the link between "
                        "sockets.")
