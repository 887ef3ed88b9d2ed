"""sync_stall: ``.item()``, ``.cpu()``, ``.tolist()``, ``str(t)`` behind queued GPU work, and the
non_blocking copy completed by an event that does not wait.

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...units import format_seconds
from ..base import Family, of_variant

if TYPE_CHECKING:
    import pandas as pd


def finding(rows: pd.DataFrame) -> list[str]:
    waiting = rows[rows["variant"] != "nonblocking_event"]
    event = of_variant(rows, "nonblocking_event")
    if waiting.empty:
        return []
    slow = waiting.loc[waiting["median_s"].idxmin()]
    out = [f"With 2 ms of work queued, even the quickest synchronizing call ({slow['variant']}) took "
           f"{format_seconds(slow['median_s'])}."]
    if not event.empty:
        out.append(f"The non_blocking copy into pinned memory returned in {format_seconds(event['median_s'].min())}.")
    return out


RECORD = Family("sync_stall", "Scenario: hidden synchronizations", ".item(), .cpu(), .tolist(), str(t) behind queued GPU work",
                "scenario", "tab:cyan", finding=finding, moves_payload=False,
                caption=".item(), .cpu(), .tolist() and str(t) wait for all queued GPU work (2 ms here) before copying, so even "
                        "4 bytes cost milliseconds. A non_blocking copy into pinned memory, completed by an event, returns at "
                        "once and lets the host work meanwhile. The bandwidth sweep starts every call on an idle GPU: its "
                        "figures hold none of this wait. Read such a buffer only after the event or a synchronize.")
