"""sync_stall: ``.item()``, ``.cpu()``, ``.tolist()``, ``str(t)`` behind queued GPU work, and the
non_blocking copy completed by an event that does not wait.

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

import pandas as pd

from ...units import format_bytes, format_seconds
from ..base import Family, of_variant


def _waiting(rows: pd.DataFrame) -> pd.DataFrame:
    """The synchronizing calls: every variant but the non_blocking copy completed by an event."""
    return rows[rows["variant"] != "nonblocking_event"]


def _queued(waiting: pd.DataFrame) -> float:
    """The GPU work queued before the synchronizing calls, in seconds, as the run recorded it (NaN: it recorded none)."""
    return float(pd.to_numeric(waiting.get("queued_seconds"), errors="coerce").max())


def finding(rows: pd.DataFrame) -> list[str]:
    waiting = _waiting(rows)
    event = of_variant(rows, "nonblocking_event")
    if waiting.empty:
        return []
    queued = _queued(waiting)
    work = f"{format_seconds(queued)} of work" if queued == queued else "GPU work"  # NaN: the run recorded none
    out = [f"With {work} queued, {_calls_took(_least(waiting))}."]
    if not event.empty:
        out.append(f"The non_blocking copy into pinned memory returned in {format_seconds(event['median_s'].min())}.")
    return out


def _least(waiting: pd.DataFrame) -> pd.DataFrame:
    """The synchronizing calls of the smallest payload, whose time is the wait (1 MiB's tolist builds a list: 6.39 ms on
    the H200), on the first GPU: identical GPUs say the same."""
    least = waiting[waiting["nbytes"] == waiting["nbytes"].min()]
    return least[least["src"] == least["src"].min()]


def _calls_took(least: pd.DataFrame) -> str:
    """``the synchronizing calls of 4 B on cuda:0 took: item 1.95 ms, cpu 1.97 ms, ...`` (``_least``): each median, none
    named the quickest (item 1.953 ms, cpu 1.971 ms: within the rounds' spread) nor folded into a span (str's 2.3 ms
    stood past every item round), in the scenario and the "why" box alike."""
    took = ", ".join(f"{row['variant']} {format_seconds(row['median_s'])}" for _, row in least.iterrows())
    return f"the synchronizing calls of {format_bytes(int(least['nbytes'].iloc[0]))} on {least['src'].iloc[0]} took: {took}"


def why_wait(rows: pd.DataFrame, runs: int) -> str | None:
    """What this run measured of waiting for queued work: the work queued and the synchronizing calls as the scenario
    gives them (``_calls_took``; with their runs where the page reads several ``runs``)."""
    stall = _waiting(rows)
    if stall.empty or (queued := _queued(stall)) != queued:  # NaN: the run recorded no queued work
        return None
    least = _least(stall)
    run = f", {', '.join(least['run'].unique())}" if runs > 1 else ""
    return f"with {format_seconds(queued)} of GPU work queued, {_calls_took(least)} (scenario below{run})."


RECORD = Family("sync_stall", "Scenario: hidden synchronizations", ".item(), .cpu(), .tolist(), str(t) behind queued GPU work",
                "scenario", "tab:cyan", finding=finding, moves_payload=False, why=("wait", why_wait),
                caption=".item(), .cpu(), .tolist() and str(t) wait for all queued GPU work before copying, so even "
                        "4 bytes cost milliseconds. A non_blocking copy into pinned memory, completed by an event, returns at "
                        "once and lets the host work meanwhile. The bandwidth sweep starts every call on an idle GPU: its "
                        "figures hold none of this wait. Read such a buffer only after the event or a synchronize.")
