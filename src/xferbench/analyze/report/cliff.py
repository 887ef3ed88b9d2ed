"""What breaks at the .cpu() cliff, read from the run's own calls: every call that writes a fresh pageable host
destination against every call into a reused host buffer, across the same two sizes, each growth judged by its own interval
(xferbench.ratios)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ...families.base import span as _span
from ...units import count, format_bytes, format_seconds
from ..cliff import UNTOUCHED, across
from ..view import RunView

__all__ = ["FRESH_PARTIAL", "FRESH_SPLIT", "MMAP_THRESHOLD_MAX",
           "before_and_after_threshold", "cliff_cause", "cliff_note", "fresh_clause", "host_fresh", "held_there",
           "mmap_clause"]

#: glibc's largest mmap threshold on 64-bit Linux (DEFAULT_MMAP_THRESHOLD_MAX): its threshold starts at 128 KiB and
#: rises as mmapped blocks are freed, never past this; above it every fresh allocation is a new mapping whose pages
#: fault in on first touch (the full profile measures 24, 31 and 33 MiB around it, measure/cases.py).
MMAP_THRESHOLD_MAX = 32 * 2**20
#: Sizes this close to the threshold on each side place a cliff at it.
_AT_THRESHOLD = 1.1


#: How the cliff's cause begins where the run's calls split cleanly (the figure shortens that sentence).
FRESH_SPLIT = ("Across the same sizes every call measured here that writes a fresh pageable host destination (random "
               "creators aside: their generator sets their time)")
#: How it begins where only some of those calls split from the calls into a reused host buffer.
FRESH_PARTIAL = "Across the same sizes,"


def _untouched(view: RunView, found: dict[str, Any], fresh: list[dict[str, Any]]) -> str:
    """torch.empty across the cliff, where it stays under 1% of every allocating call that broke: its own time per
    call, judged by its own interval. The H200 timed 4.44 µs → 15.9 µs, 3.58x: a jump in a call that moves no bytes
    (so no figure per byte), so only where the jump is not resolved is the allocation call said not to break."""
    empty = across(view.rows, found["before"], found["after"], UNTOUCHED)
    if not empty or empty[0]["after_s"] >= 0.01 * min(c["after_s"] for c in fresh):
        return ""
    said = f" {empty[0]['label']}, which allocates without touching a page, took {empty[0]['figures']}"
    # no threshold is named its cause: the H200's grew below glibc's largest mmap threshold too (4 → 16 MiB)
    jump, lower = view.ratio(*empty[0]["rows"]), view.grew_before(empty[0]["rows"][1])
    if jump.value <= 1 or not jump.resolved:
        return said + ": the allocation call itself did not break."
    small, large = (int(row["iterations"]) for row in empty[0]["rows"][::-1])  # a loop's length can move a median too
    grew = f": it moves no bytes, yet its time grew {jump.text()}" + (
        f" (rounds of {small:,} calls against {large:,})" if small != large else "")
    if lower is not None:
        grew += (f", and {lower[1].text()} from {format_bytes(int(lower[0]['nbytes']))} to "
                 f"{format_bytes(found['before'])} before it")
    return said + grew + ": why, this run cannot tell."


def _grew(calls: list[dict[str, Any]]) -> str:
    return "; ".join(f"{c['label']} {c['figures']} ({c['growth']:.3g}× per byte)" for c in calls)


def cliff_cause(found: dict[str, Any], view: RunView) -> str:
    """The cliff's cause as this run's own calls show it: every call that writes a fresh pageable host destination
    against every call into a reused host buffer across the same two sizes (growth per byte, each resolved by its interval),
    then the fault counts where the rows carry them."""
    (fresh, reused, broke), text = view.cliff_split, ""
    if fresh and reused:
        most = max(reused, key=lambda c: c["growth"])
        against = (f"every copy_ into a reused host buffer measured at both sizes, {count(len(reused), 'call')}: "
                   f"{_span(pd.Series([c['growth'] for c in reused]))}× per byte, the highest {most['label']}, "
                   f"{most['figures']}")
        if len(broke) == len(fresh):
            text = (FRESH_SPLIT + " grew dearer per byte than every call into a reused host buffer, each beyond its "
                    f"interval ({_grew(fresh)}, against {against}): a fresh destination breaks, a reused one holds."
                    + _untouched(view, found, fresh) + _beyond_the_host(found, view))
        elif broke:
            rest = [c for c in fresh if c not in broke]
            text = (FRESH_PARTIAL + f" {_grew(broke)} grew dearer per byte than every call into a reused host buffer, "
                    f"each beyond its interval ({against}); {_grew(rest)}, which also write"
                    f"{'s' if len(rest) == 1 else ''} a fresh pageable host destination, did not grow past every "
                    "call into a reused host buffer beyond its interval: can't tell whether "
                    f"{'it breaks' if len(rest) == 1 else 'they break'} too." + _untouched(view, found, broke))
        else:
            text = (f"Across the same sizes, calls that write a fresh pageable host destination "
                    f"({_span(pd.Series([c['growth'] for c in fresh]))}× per byte) and calls into a reused host buffer "
                    f"({_span(pd.Series([c['growth'] for c in reused]))}×) do not split cleanly.")
    if found["faults"] is None:
        return (text + " The rows carry no page-fault counts (minor_faults_per_call, which newer runs record).").strip()
    faults = f"{_span(found['faults'], ',.0f')} minor page faults per call at {format_bytes(found['after'])}"
    if found["us_per_fault"] is not None:
        faults += f", {_span(found['us_per_fault'], '.2g')} µs per fault beyond copy_ into an existing buffer"
    return f"{text} {faults}.".strip()


def _beyond_the_host(found: dict[str, Any], view: RunView) -> str:
    """How much of .cpu()'s extra time at the cliff's larger size a fresh destination on the host alone explains
    (``host_fresh``): on the H200 at 64 MiB .cpu() took 46.6 ms beyond copy_ into a reused buffer, host clone 7.54 ms
    beyond host copy_: the breaking is not the host's page faults alone."""
    cpu, existing = found["at"][found["at"]["method"] == "cpu"], found["existing"]
    if cpu.empty or existing is None or (step := float(cpu["median_s"].iloc[0] - existing["median_s"])) <= 0:
        return ""
    said = host_fresh(view, found["after"], step)
    return (f" At {format_bytes(found['after'])}, .cpu() took {format_seconds(step)} beyond copy_ into a reused buffer"
            f"{said}.") if said else ""


def before_and_after_threshold(found: dict[str, Any], view: RunView) -> bool:
    """Whether the cliff's two sizes hold glibc's largest mmap threshold between them, on Linux."""
    return view.machine_info.get("system") == "Linux" and found["before"] < MMAP_THRESHOLD_MAX < found["after"]


def mmap_clause(found: dict[str, Any], view: RunView) -> str:
    """Where the cliff's two sizes hold glibc's largest mmap threshold (Linux): that it sits at it where they lie
    within ``_AT_THRESHOLD`` of it, else that the run measured no size nearer it and cannot tell; nothing otherwise."""
    before, after = found["before"], found["after"]
    if not before_and_after_threshold(found, view):
        return ""
    threshold = f"glibc's largest mmap threshold ({format_bytes(MMAP_THRESHOLD_MAX)})"
    if before * _AT_THRESHOLD >= MMAP_THRESHOLD_MAX >= after / _AT_THRESHOLD:
        return (f" The cliff sits at {threshold}: above it each fresh allocation is a new mapping whose pages fault in "
                "on first touch.")
    return (f" {format_bytes(MMAP_THRESHOLD_MAX)}, glibc's largest mmap threshold, lies between these sizes; this run "
            "measured no size nearer it, so it cannot tell whether the cliff sits there (31 and 33 MiB would).")


def held_there(found: dict[str, Any], view: RunView) -> str:
    """What copy_ into an existing pageable buffer reached at the cliff's two sizes (one path, one run), as a span:
    the H200's 13.6 GB/s at 16 MiB and 15.0 at 64 MiB; nothing where the run has no such copy_ at the larger size."""
    if (existing := found["existing"]) is None:
        return ""
    same = (rows := view.of_path(existing["path"]))[rows["nbytes"].isin((found["before"], found["after"]))]
    if "run" in same:
        same = same[same["run"] == existing["run"]]
    gbps = pd.concat([same["bandwidth_gbps"], pd.Series([existing["bandwidth_gbps"]])]).dropna()
    return f"; copy_ into an existing buffer held {_span(gbps)} GB/s across them"


def cliff_note(found: dict[str, Any], view: RunView) -> str:
    """The cliff's cause, short enough for the figure: the key findings give every call's figures."""
    fresh, reused, broke = view.cliff_split
    if fresh and reused and len(broke) == len(fresh):
        return ("calls that write a fresh pageable host destination fall here; copy_ into a reused host buffer holds "
                "(key findings)")
    if fresh and reused and broke:
        return (", ".join(c["label"] for c in broke) + " fall here, copy_ into a reused host buffer holds; "
                + ", ".join(c["label"] for c in fresh if c not in broke) + ", also writing a fresh destination: can't "
                "tell (key findings)")
    return cliff_cause(found, view)


def fresh_clause(view: RunView, size: int) -> str:
    """Why copy_ into an existing buffer is cheaper, only where the run's ladder tells its fresh-destination step."""
    ladder = next((found for found in view.ladders if found.key in ("d2h-cpu", "d2h-to") and found.size == size), None)
    if ladder is None or not ladder.steps[0].told:
        same = ladder is not None and ladder.steps[0].ratio.same  # a cost model's alike
        return f"; {'it took the same time as' if same else 'this run cannot tell it from'} .cpu() / .to(device)." \
            if ladder is not None else "."
    pages = ("faults its pages in" if ladder.split is not None else
             "fills it (no fault counts recorded: how much of that is faults is not measured)")
    return (f": {ladder.top.label} allocates a new pageable tensor on every call and {pages}, copy_ does "
            f"not ({format_seconds(ladder.steps[0].seconds)} of {format_seconds(ladder.top.median_s)}, the ladder below)"
            + host_fresh(view, size, ladder.steps[0].seconds) + ".")


def host_fresh(view: RunView, size: int, step_s: float) -> str:
    """What a fresh host destination costs at ``size`` (host clone beyond host copy_, one run: allocation and first
    touch, no fault counts needed), beside .cpu()'s fresh-destination step: on the H200 25.4 ms of 163 ms, so the rest
    is said to be what the copy from the device pays more for it."""
    host = view.rows[(view.rows["op"] == "host") & (view.rows["nbytes"] == size)]
    both = [(g[g["method"] == "clone"], g[g["method"] == "copy_"]) for _, g in host.groupby("run", sort=True)]
    clone, copy = next(((a.iloc[0], b.iloc[0]) for a, b in both if not a.empty and not b.empty), (None, None))
    if clone is None or copy is None:
        return ""
    touch = float(clone["median_s"] - copy["median_s"])
    if not (ratio := view.ratio(clone, copy)).resolved or ratio.value <= 1 or touch >= step_s:
        return ""
    return (f"; on the host alone a fresh destination costs {format_seconds(touch)} at this size (host clone beyond host "
            f"copy_): the copy from the device pays {format_seconds(step_s - touch)} more for it, which this run does not "
            "take apart")
