"""module_to: ``net.to(device)``, a first move and a second one that copies nothing.

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...units import format_bytes, format_seconds
from ..base import Family, ms, of_variant

if TYPE_CHECKING:
    import pandas as pd


def _apart(slow: pd.DataFrame, fast: pd.DataFrame, floor: float | None) -> bool:
    """Whether every case of ``slow`` took longer than every one of ``fast`` beyond the run's drift floor (without a
    floor: their rounds do not overlap)."""
    if floor:
        return bool(slow["median_s"].min() > (1 + floor) * fast["median_s"].max())
    return bool(slow["min_s"].min() > fast["max_s"].max())


def _step(again: pd.DataFrame, floor: float | None) -> str:
    """Where the sizes split into a smaller and a larger run of sizes whose times lie apart (``_apart``), the step in
    words; else nothing. The second move copies nothing, yet the H200 timed 74.7-79.4 µs up to 393 KiB and 44.7-45.5 µs
    from 3.82 MiB on: a step the bytes line up with, which "the bytes do not set its cost" would hide."""
    rows = again.sort_values("nbytes")
    for cut in range(1, len(rows)):
        small, large = rows.iloc[:cut], rows.iloc[cut:]
        for slow, fast in ((small, large), (large, small)):
            if _apart(slow, fast, floor):
                ratio = slow["median_s"].min() / fast["median_s"].max()
                beyond = f"beyond this run's drift floor of {floor:.1%}" if floor else "their rounds apart"
                return (f"{ms(small['median_s'])} up to {format_bytes(small['nbytes'].max())} of parameters and "
                        f"{ms(large['median_s'])} from {format_bytes(large['nbytes'].min())}: a step of "
                        f"{ratio:.2f}× or more ({beyond}) that lines up with size, though nothing is copied (every "
                        "parameter tensor is visited).")
    return ""


def _odd_one(again: pd.DataFrame, floor: float | None) -> str:
    """Where one size lies apart (``_apart``) from every other and the others do not (the H200's .to(cpu): 68-73.3 µs
    but 40.7 µs at 38.2 MiB), the others' span and that size named; else nothing."""
    if len(again) < 3:
        return ""
    for label, one in again.iterrows():
        rest = again.drop(index=label)
        if not (_apart(rest, again.loc[[label]], floor) or _apart(again.loc[[label]], rest, floor)):
            continue
        if _step(rest, floor):
            return ""
        return (f"{ms(rest['median_s'])} from {format_bytes(again['nbytes'].min())} to "
                f"{format_bytes(again['nbytes'].max())} of parameters, but {format_seconds(one['median_s'])} at "
                f"{format_bytes(one['nbytes'])}: nothing is copied (every parameter tensor is visited), and the bytes do "
                "not set its cost.")
    return ""


def finding(rows: pd.DataFrame) -> list[str]:
    out = []
    floor = rows.attrs.get("drift_floor")
    for dst, again in of_variant(rows, "again").groupby("dst"):
        step = _step(again, floor) or _odd_one(again, floor)
        out.append(f"A second .to({dst}) of a module already there took " + (step or (
            f"{ms(again['median_s'])} from {format_bytes(again['nbytes'].min())} to "
            f"{format_bytes(again['nbytes'].max())} of parameters: nothing is copied (every parameter tensor is "
            "visited), and the bytes do not set its cost.")))
    first = of_variant(rows, "first")
    if not first.empty:
        big = first.loc[first["nbytes"].idxmax()]
        out.append(f"The first move to {big['dst']} took {format_seconds(big['median_s'])} ({big['bandwidth_gbps']:.3g} GB/s).")
    return out


RECORD = Family("module_to", "Scenario: moving a module (net.to(device))", "net.to(device): a first move and a second no-op one",
                "scenario", "tab:cyan", finding=finding,
                caption="The first move copies every parameter; a second .to() to the same device copies nothing but still "
                        "visits every parameter tensor.")
