"""bidir: host-to-device and device-to-host at the same time on two streams of one GPU, next to each alone.

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...units import format_bytes, percent, percent_span
from ..base import Family, Judge, judge_of, of_variant

if TYPE_CHECKING:
    import pandas as pd


def _verdict(both: pd.Series, alone: pd.Series, judge: Judge) -> str:
    """Both ways' time against the slower direction's alone (1: fully duplex; 2: one at a time), with its interval."""
    ratio = judge(both, alone)
    if not ratio.resolved:
        return f": can't tell it from fully duplex ({ratio.text()})"
    if ratio.value < 1:
        return f": both ways took {ratio.faster().text()} less time than one direction alone, an odd result"
    if ratio.low <= 2 <= ratio.high:
        return f": both ways took {ratio.text()} one direction's time: can't tell it from one at a time"
    # throughput short of duplex: a time 1.109x as long moves the bytes at 1/1.109, 9.8% short
    ends = percent_span(1 - 1 / ratio.low, 1 - 1 / ratio.high)
    short = percent(1 - 1 / ratio.value) + ("" if ends == percent(1 - 1 / ratio.value) else f" ({ends})")
    return f": both ways took {ratio.text()} the slower direction's time alone, about {short} short of fully duplex"


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
        slower = max((h2d.iloc[0], d2h.iloc[0]), key=lambda r: float(r["median_s"]))
        out.append(f"Both directions at once at {format_bytes(int(row['nbytes']) // 2)} each way on {gpu}: "
                   f"{row['bandwidth_gbps']:.3g} GB/s against {one[0]:.3g} GB/s host to device and {one[1]:.3g} GB/s "
                   f"device to host alone, {_span(times)}× one direction's throughput"
                   f"{_verdict(row, slower, judge_of(rows))}.")
    return out[-2:]


RECORD = Family("bidir", "Host and device copying both ways at once", "h2d and d2h on two streams of one GPU, and each alone",
                "concurrent", "tab:cyan", finding=finding,
                caption="A GPU has copy engines for each direction, so host-to-device and device-to-host can run at once. "
                        "h2d+d2h is the sum of both directions' bytes over the time both take; near twice one direction "
                        "means the link and the engines are duplex, near one direction means something is shared.")
