"""The .cpu() cliff as facts and verdicts: where .cpu() / .to('cpu') into new pageable memory fall off a cliff
(``cliff``), and across its two sizes which calls that write a fresh pageable host destination grew dearer per byte
than every call into a reused host buffer, each growth judged by its own interval (``split``). The view reads both once
(``RunView.cliff``, ``RunView.cliff_split``); their sentences are report/cliff.py's. No torch here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import pandas as pd

from ..ratios import Ratio
from ..units import format_seconds
from .load.rows import matching

__all__ = ["ALLOCATING", "CLIFF_DROP", "REUSING", "UNTOUCHED", "USUAL_WAY_BACK", "Split", "across", "cliff", "split"]

#: The calls users make to bring a tensor back to the CPU, .cpu() and .to(device): each allocates a new pageable tensor.
USUAL_WAY_BACK = ("cpu", "to")
#: A fall in bandwidth from one size to the next by at least this factor is a cliff worth naming.
CLIFF_DROP = 3.0

#: Calls that write a fresh pageable host destination on every call, and calls into a buffer they reuse (every copy_
#: with a host end), each as (label, match): across a cliff every such call the run measured at both sizes is read.
#: Random creators are left out: their generator's own work sets their time (the H200's torch.rand took 29 ms at
#: 16 MiB, torch.ones 71 µs), so their growth says nothing about the destination's pages.
ALLOCATING = (("torch.{method} on the CPU", {"op": "create", "src": "cpu", "method": ("ones", "zeros", "full", "arange")}),
              ("host clone", {"op": "host", "method": "clone"}),
              (".{method}()", {"op": "d2h", "method": ("cpu", "to"), "host_memory": "pageable", "non_blocking": False}))
#: The controls: copy_ into a host buffer written before (d2h and host copies). h2d's copy_ writes device memory, and
#: its pageable source is staged by the driver, which has a cliff of its own: no control of a host destination.
REUSING = (("{path}", {"op": ("host", "d2h"), "method": "copy_"}),)
#: An allocation that touches no page: beside the calls above, it tells the allocation call from its first touch.
UNTOUCHED = (("torch.empty on the CPU", {"op": "create", "method": "empty", "src": "cpu"}),)


class Split(NamedTuple):
    """Across the cliff's two sizes: every call that writes a fresh pageable host destination (``ALLOCATING``), every
    call into a reused buffer (``REUSING``), and those of the first that grew dearer per byte than every one of the
    second, each such quotient of growths resolved by its interval; each call as ``across`` gives it."""

    fresh: list[dict[str, Any]]
    reused: list[dict[str, Any]]
    broke: list[dict[str, Any]]


def across(frame: pd.DataFrame, before: int, after: int, calls: tuple[tuple[str, dict[str, Any]], ...]) -> list[dict[str, Any]]:
    """Each call of ``calls`` measured at both sizes (one run's row each): its figures there and how much its time
    per call grew, per byte moved (1 = it scaled with its bytes). A label may name the row's ``method`` or ``path``."""
    found = []
    for label, match in calls:
        rows = matching(frame, match)
        for _, group in rows.groupby("path", sort=True):
            at = [group[group["nbytes"] == n] for n in (before, after)]
            if any(r.empty for r in at):
                continue
            one, two = (r.iloc[0] for r in at)
            moves = bool(pd.notna(one["bandwidth_gbps"]))
            figures = ((f"{one['bandwidth_gbps']:.3g} → {two['bandwidth_gbps']:.3g} GB/s") if moves else
                       f"{format_seconds(one['median_s'])} → {format_seconds(two['median_s'])}")
            growth = float(two["median_s"] / one["median_s"]) / (after / before)
            name = label.format(method=one["method"], path=one["path"]).replace(".to()", ".to(device)")
            found.append({"label": name, "figures": figures, "growth": growth, "after_s": float(two["median_s"]),
                          "rows": (two, one)})
    return found


def split(frame: pd.DataFrame, found: dict[str, Any], judge: Callable[[pd.Series, pd.Series], Ratio]) -> Split:
    """``Split`` of the cliff ``found`` (``cliff``), each growth judged by ``judge`` (``RunView.ratio``)."""
    fresh = across(frame, found["before"], found["after"], ALLOCATING)
    reused = across(frame, found["before"], found["after"], REUSING)

    def dearer(call: dict[str, Any], other: dict[str, Any]) -> bool:  # the quotient of their growths, resolved
        growth = judge(*call["rows"]).over(judge(*other["rows"]))
        return growth.value > 1 and growth.resolved

    return Split(fresh, reused, [c for c in fresh if all(dearer(c, r) for r in reused)])


def cliff(frame: pd.DataFrame) -> dict[str, Any] | None:
    """Where .cpu() / .to('cpu') into new pageable memory fall off a cliff: the pair of consecutive sizes with
    the steepest fall in bandwidth (at least ``CLIFF_DROP``x, on every such call), and what the run measured
    about its cause (``minor_faults_per_call``), or None."""
    down = frame[(frame["op"] == "d2h") & (frame["host_memory"] == "pageable") & frame["bandwidth_gbps"].notna()]
    usual = down[down["method"].isin(USUAL_WAY_BACK) & ~down["non_blocking"].astype(bool)]
    if usual["nbytes"].nunique() < 2:
        return None
    gbps = usual.pivot_table(index="nbytes", columns="method", values="bandwidth_gbps").dropna()
    falls = gbps.shift(1) / gbps  # bandwidth at the size before over bandwidth at this size, per call
    steepest = falls.min(axis=1)  # the fall every call shares
    if steepest.isna().all() or steepest.max() < CLIFF_DROP:
        return None
    after = int(steepest.idxmax())
    before = int(gbps.index[gbps.index.get_loc(after) - 1])
    at = usual[usual["nbytes"] == after]
    existing = down[(down["method"] == "copy_") & (down["nbytes"] == after)]
    found: dict[str, Any] = {"before": before, "after": after, "gbps_before": gbps.loc[before], "gbps_after":
                             gbps.loc[after], "existing": existing.iloc[0] if not existing.empty else None, "at": at,
                             "faults": None, "us_per_fault": None}
    faults = pd.to_numeric(at.get("minor_faults_per_call"), errors="coerce") if "minor_faults_per_call" in at else None
    if faults is not None and faults.notna().all():
        found["faults"] = faults
        if found["existing"] is not None:
            base = pd.to_numeric(pd.Series([found["existing"].get("minor_faults_per_call")]), errors="coerce").fillna(0)
            extra = faults - float(base.iloc[0])
            cost = at["median_s"] - float(found["existing"]["median_s"])
            per = (cost / extra)[extra > 0]
            found["us_per_fault"] = per * 1e6 if not per.empty else None
    return found
