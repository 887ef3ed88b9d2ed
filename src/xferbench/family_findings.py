"""What the report says under each scenario and concurrent family: sentences computed from its rows.

Each function takes the rows of one family (a pandas DataFrame of ``analyze.results``) and
returns its sentences, none when the rows it needs are not there. The family's record in
``families.py`` names its function (``Family.finding``), so a family's finding is declared
once, beside its title and caption. Shared by both sides and torch-free: it works on the
frame it is given and imports neither side (import-linter checks it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .units import format_bytes, format_seconds

if TYPE_CHECKING:
    import pandas as pd

#: A step of a ladder smaller than this share of the call is read as none.
NEGLIGIBLE = 0.01

__all__ = ["cpu_convert", "cuda_vs_to", "d2h_registered", "module_to", "ms", "pin_memory", "span", "sync_stall"]


def span(values: pd.Series, digits: str = ".3g", joint: str = "-") -> str:
    """``181-217`` (the lowest and the highest, the same format), or one figure when they round alike."""
    def text(value: float) -> str:  # 1926, not 1.93e+03
        return f"{value:,.0f}" if digits == ".3g" and value >= 1000 else f"{value:{digits}}"

    low, high = text(values.min()), text(values.max())
    return low if low == high else f"{low}{joint}{high}"


def ms(seconds: pd.Series) -> str:
    """Times as one span in ms, µs or s, whichever the shortest reads best in."""
    unit, scale = next(((u, k) for u, k in (("s", 1.0), ("ms", 1e3), ("µs", 1e6)) if seconds.min() * k >= 1),
                       ("ns", 1e9))
    return f"{span(seconds * scale)} {unit}"


def _variant(rows: pd.DataFrame, variant: str) -> pd.DataFrame:
    return rows[rows["variant"] == variant]


def module_to(rows: pd.DataFrame) -> list[str]:
    out = []
    for dst, again in _variant(rows, "again").groupby("dst"):
        out.append(f"A second .to({dst}) of a module already there took {ms(again['median_s'])} from "
                   f"{format_bytes(again['nbytes'].min())} to {format_bytes(again['nbytes'].max())} of parameters: "
                   "nothing is copied (every parameter tensor is visited), and the bytes do not set its cost.")
    first = _variant(rows, "first")
    if not first.empty:
        big = first.loc[first["nbytes"].idxmax()]
        out.append(f"The first move to {big['dst']} took {format_seconds(big['median_s'])} ({big['bandwidth_gbps']:.3g} GB/s).")
    return out


def sync_stall(rows: pd.DataFrame) -> list[str]:
    waiting = rows[rows["variant"] != "nonblocking_event"]
    event = _variant(rows, "nonblocking_event")
    if waiting.empty:
        return []
    slow = waiting.loc[waiting["median_s"].idxmin()]
    out = [f"With 2 ms of work queued, even the quickest synchronizing call ({slow['variant']}) took "
           f"{format_seconds(slow['median_s'])}."]
    if not event.empty:
        out.append(f"The non_blocking copy into pinned memory returned in {format_seconds(event['median_s'].min())}.")
    return out


def _ratio(rows: pd.DataFrame, slow: str, fast: str, what: str) -> list[str]:
    out = []
    for (size, dst), group in rows.groupby(["nbytes", "dst"]):
        a, b = _variant(group, slow), _variant(group, fast)
        if not a.empty and not b.empty:
            ratio = a["median_s"].iloc[0] / b["median_s"].iloc[0]
            out.append(f"{what} at {format_bytes(size)} on {dst}: {fast} took {format_seconds(b['median_s'].iloc[0])}, "
                       f"{slow} {format_seconds(a['median_s'].iloc[0])} ({ratio:.2f}x).")
    return out[-2:]


def pin_memory(rows: pd.DataFrame) -> list[str]:
    return (_ratio(rows, "pin_cached_then_to", "reused_pinned_to", "Host to device")
            + _ratio(rows, "to", "reused_pinned_to", "Host to device"))


def cuda_vs_to(rows: pd.DataFrame) -> list[str]:
    """How far .cuda(i), .to('cuda:i') and .to(device) lie apart, size by size: across sizes the spread is
    the payload's, not the call's."""
    tensors = rows[rows["variant"].isin(("cuda", "to_str", "to_device"))]
    spreads = [f"{tensors_at['median_s'].max() / tensors_at['median_s'].min() - 1:.1%} at {format_bytes(size)}"
               for size, tensors_at in tensors.groupby("nbytes") if len(tensors_at) > 1]
    if not spreads:
        return []
    return [f".cuda(i), .to('cuda:i') and .to(torch.device) differed by {', '.join(spreads)} (slowest over fastest "
            "of the same size)."]


def cpu_convert(rows: pd.DataFrame) -> list[str]:
    cpu = _variant(rows, "convert_on_cpu")
    out = [f"Converting {int(r['nbytes'] // (3 * 224 * 224))} images to normalized float32 on the CPU took "
           f"{format_seconds(r['median_s'])}." for _, r in cpu.iterrows()][-1:]
    return out + _ratio(rows, "convert_then_move", "move_then_convert", "Placement")


def d2h_registered(rows: pd.DataFrame) -> list[str]:
    """The .cpu() ladder at the largest size on each GPU: the call, then each factor it removes (the fresh
    destination, the staging copy), from this family's own rows."""
    out = []
    for src, on_gpu in rows.groupby("src"):
        at = on_gpu[on_gpu["nbytes"] == on_gpu["nbytes"].max()]
        median = {v: at.loc[at["variant"] == v, "median_s"].iloc[0] for v in at["variant"]}
        if not {"cpu", "pageable", "registered"} <= median.keys():
            continue
        call = median["cpu"]
        steps = (f".cpu() from {src} took {format_seconds(call)} at {format_bytes(at['nbytes'].iloc[0])}: "
                 f"the fresh destination {_step(call - median['pageable'], call)}, the driver's staging copy "
                 f"{_step(median['pageable'] - median['registered'], call)}, the copy into registered memory "
                 f"{format_seconds(median['registered'])}")
        pinned = f" (into pinned memory: {format_seconds(median['pinned'])})" if "pinned" in median else ""
        out.append(steps + pinned + ".")
    return out


def _step(seconds: float, call: float) -> str:
    """A step of a ladder: what it adds to the call, or none where that is within NEGLIGIBLE of the call
    (no median's noise can tell so little from nothing)."""
    return format_seconds(seconds) if seconds > NEGLIGIBLE * call else f"none (within {NEGLIGIBLE:.0%} of the call)"
