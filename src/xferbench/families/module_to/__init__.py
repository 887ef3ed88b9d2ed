"""module_to: ``net.to(device)``, a first move and a second one that copies nothing.

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...units import format_bytes, format_seconds
from ..base import Family, ms, of_variant

if TYPE_CHECKING:
    import pandas as pd


def finding(rows: pd.DataFrame) -> list[str]:
    out = []
    for dst, again in of_variant(rows, "again").groupby("dst"):
        out.append(f"A second .to({dst}) of a module already there took {ms(again['median_s'])} from "
                   f"{format_bytes(again['nbytes'].min())} to {format_bytes(again['nbytes'].max())} of parameters: "
                   "nothing is copied (every parameter tensor is visited), and the bytes do not set its cost.")
    first = of_variant(rows, "first")
    if not first.empty:
        big = first.loc[first["nbytes"].idxmax()]
        out.append(f"The first move to {big['dst']} took {format_seconds(big['median_s'])} ({big['bandwidth_gbps']:.3g} GB/s).")
    return out


RECORD = Family("module_to", "Scenario: moving a module (net.to(device))", "net.to(device): a first move and a second no-op one",
                "scenario", "tab:cyan", finding=finding,
                caption="The first move copies every parameter; a second .to() to the same device copies nothing but still "
                        "visits every parameter tensor: its cost does not follow the bytes.")
