"""bidir: host-to-device and device-to-host at the same time on two streams of one GPU, next to each alone.

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...units import format_bytes
from ..base import Family, of_variant

if TYPE_CHECKING:
    import pandas as pd


def _verdict(rows: pd.DataFrame, ratio: float) -> str:
    """Where ``ratio`` (both ways over one way) sits against 1 and 2, each held against the run's drift floor
    (``rows.attrs["drift_floor"]``); nothing without a floor."""
    floor = rows.attrs.get("drift_floor")
    if not floor:
        return ""
    if ratio <= 1 + floor:
        return f": within this run's drift floor of {floor:.1%} of one direction, can't tell it from one at a time"
    if 2 / ratio - 1 <= floor:
        return (f": over this run's drift floor of {floor:.1%} above one direction and within it of twice, so both ways "
                "ran at once; can't tell it from fully duplex")
    return f": over this run's drift floor of {floor:.1%} above one direction, and below twice it by more than the floor"


def _span(values: list[float]) -> str:
    low, high = f"{min(values):.3g}", f"{max(values):.3g}"
    return low if low == high else f"{low}-{high}"


def finding(rows: pd.DataFrame) -> list[str]:
    """Both directions at once against each alone, per GPU at the two largest sizes that ran all three."""
    out = []
    both = of_variant(rows, "h2d+d2h")
    for _, row in both.sort_values("nbytes").iterrows():
        gpu = row["dst"]  # h2d runs to it, d2h from it
        each = rows[(rows["nbytes"] == row["nbytes"] // 2) & ((rows["dst"] == gpu) | (rows["src"] == gpu))]
        h2d, d2h = of_variant(each, "h2d"), of_variant(each, "d2h")
        if h2d.empty or d2h.empty:
            continue
        one = [float(h2d["bandwidth_gbps"].iloc[0]), float(d2h["bandwidth_gbps"].iloc[0])]
        times = [float(row["bandwidth_gbps"]) / gbps for gbps in one]
        out.append(f"Both directions at once at {format_bytes(int(row['nbytes']) // 2)} each way on {gpu}: "
                   f"{row['bandwidth_gbps']:.3g} GB/s against {one[0]:.3g} GB/s host to device and {one[1]:.3g} GB/s "
                   f"device to host alone, {_span(times)}× one direction"
                   f"{_verdict(rows, min(times))}.")
    return out[-2:]


RECORD = Family("bidir", "Host and device copying both ways at once", "h2d and d2h on two streams of one GPU, and each alone",
                "concurrent", "tab:cyan", finding=finding,
                caption="A GPU has copy engines for each direction, so host-to-device and device-to-host can run at once. "
                        "h2d+d2h is the sum of both directions' bytes over the time both take; near twice one direction "
                        "means the link and the engines are duplex, near one direction means something is shared.")
