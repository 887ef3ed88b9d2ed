"""What a report leaves to take away: a tidy CSV and a Markdown summary, beside the HTML.

``xferbench report -o x.html`` also writes ``x.csv`` (one row per benchmark measured, each
instance of a case measured in more than one run with ``read`` saying which one the report
reads; every field of the data contract plus its statistics, for notebooks) and ``x.md`` (key findings, the
ladders of controls, the latency/bandwidth table and the comparison with other tools, for a
PR comment).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ... import escape
from ...contract import IDENTITY, MEASURED
from ...machine_facts import machine_line as facts_line
from ...units import format_bytes, format_seconds
from ..ladder import Ladder, percent
from ..view import RunView
from . import drift_text, ladder_text

if TYPE_CHECKING:
    from .changes import Change
    from .findings import Said

__all__ = ["CSV_COLUMNS", "busy_notice", "frame_for_csv", "instance_numbers", "instances_line", "ladder_markdown", "machine_line",
           "measured", "to_csv", "to_markdown"]

#: Statistics of each benchmark, as pytest-benchmark computed them (seconds per call).
STATS = ("median_s", "min_s", "mean_s", "max_s", "iqr_s", "q1_s", "q3_s", "stddev_s", "rounds", "iterations")
#: What the suite derives: the time of one transfer, bytes / time (GB = 1e9 B), nccl-tests' bus bandwidth.
DERIVED = ("transfer_s", "bandwidth_gbps", "busbw_gbps", "path")
#: The CSV's columns, in order: where the row came from (its file, and the machine instance: one boot of the
#: machine, view.Instance), whether the report reads it (False: a case measured in more than one run, read from
#: another), the identity, the measured fields, stats, derived.
CSV_COLUMNS = ("run", "instance", "read", "datetime", "name", *IDENTITY, *MEASURED, *STATS, *DERIVED)


def to_csv(view: RunView) -> str:
    """One row per benchmark measured (every instance of a case measured in more than one run, ``read`` True for the
    one the report reads), every data-contract field; shape as ``AxB``, empty where a field is absent. A text
    cell a spreadsheet would take for a formula (``=``, ``+``, ``-``, ``@``, from the run file) starts with ``'``."""
    frame = frame_for_csv(view).map(lambda v: escape.csv_cell(v) if isinstance(v, str) else v)
    return str(frame.to_csv(index=False, lineterminator="\n"))


def _cell(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return escape.markdown(value)


def _us(value: float) -> str:
    return f"{value:.3g} µs" if np.isfinite(value) else "–"


def machine_line(view: RunView) -> str:
    """The machine in one line for the page's head (machine_facts.machine_line)."""
    return facts_line(view.machine_info)


def busy_notice(view: RunView) -> str | None:
    """A warning where the run recorded more load than cores (``busy_load``): its times carry the neighbours' work."""
    busy = view.busy
    if busy is None:
        return None
    return (f"Busy machine: this run recorded {busy}: its times carry what those processes took, and a difference "
            "between two of its cases may be theirs.")


def to_markdown(view: RunView, findings: Sequence[Said], model: list[dict[str, Any]],
                peers: list[str] | None = None, peer_plan: Sequence[str] = (), changes: Sequence[Change] = (),
                break_even: dict[str, Any] | None = None) -> str:
    """The report's take-aways as Markdown, in the page's order: the machine, what to change, the key findings (each
    headline with its evidence beneath), how the run was judged, the ladders, the α/β table, the peer pairs measured,
    the other tools' figures."""
    lines = ["# xferbench: tensor creation and transfer costs", ""]
    if view.simulated:
        lines += ["> **Simulated machine.** These figures come from xferbench's simulated machine, not from hardware: "
                  "they check the suite, they are not measurements.", ""]
    lines += [f"{len(view.rows)} benchmarks from {escape.markdown(', '.join(view.sources))}.", ""]
    lines += [escape.markdown(machine_line(view)), ""]
    if (busy := busy_notice(view)) is not None:
        lines += [f"> {escape.markdown(busy)}", ""]
    if changes:
        lines += ["## What to change here", ""]
        lines += [f"{n}. **{escape.markdown(c.spec.title)}**: {escape.markdown(c.text())}: `{c.spec.before}` → "
                  f"`{c.spec.after}` ({escape.markdown(c.condition)})" for n, c in enumerate(changes, 1)] + [""]
        if break_even and any(c.spec.key == "pinned-source" for c in changes):
            lines += [escape.markdown(break_even["summary"]) + ".", ""]  # the break-even table the change cites
    lines += ["## Key findings", ""]
    lines += [f"- {escape.markdown(said.headline)}" + ("" if said.evidence == said.headline else
                                                        f"\n  - {escape.markdown(said.evidence)}") for said in findings]
    lines += [] if findings else ["- Not enough data for findings."]
    lines += ["", "## How this run was judged", "", f"- {escape.markdown(drift_text.statement(view))}"]
    if view.several_instances:
        lines += [f"- {escape.markdown(instances_line(view))}"]
    lines += ladder_markdown(view)
    if model:
        lines += ["", "## Latency and bandwidth per path", "",
                  "α and β from wall time describe a loop that synchronizes after every call; pipelined, from the "
                  "copy's own device time, what the device spends per copy issued back to back (– where the row's device "
                  "time is not the copy's own and was left out: pageable copies, staged by the host, and blocking ones, "
                  "paced by it).", "",
                  "| path | α (sync loop) | α pipelined | β (GB/s, sync loop) | β pipelined (GB/s) | β from "
                  "| largest size: GB/s | roof | share of roof |",
                  "|---|---:|---:|---:|---:|---|---:|---|---:|"]
        for row in model:
            share = row.get("share", "–")
            largest = f"{format_bytes(row['largest_bytes'])}: {_cell(row['largest_gbps'])}"
            lines.append(f"| {_cell(row['path'])} | {_us(row['alpha_us'])} | {_us(row['pipelined_alpha_us'])} "
                         f"| {_cell(row['stated_gbps'])} | {_cell(row['pipelined_gbps'])} | {_cell(row['beta_basis'])} "
                         f"| {largest} | {_cell(row['link'])} | {share} |")
    if peer_plan:
        lines += ["", "## Peer pairs measured", ""] + [f"- {escape.markdown(sentence)}" for sentence in peer_plan]
    if peers:
        lines += ["", "## Against other tools on this machine", ""] + [f"- {escape.markdown(s)}" for s in peers]
    return "\n".join(lines) + "\n"


#: What the ladder tables say, as the page's ladder caption says it.
LADDER_INTRO = (
    "Each call read down a ladder of this run's own cases at one size, each step removing one factor: a step is the "
    "difference of two medians (the case above minus the step's own), with its 95% interval from the two cases' ratio "
    "(paired blocks where both were measured so, else their rounds and the run's drift in their regime). A step that "
    "interval does not tell from zero can't tell, never a share. The steps and what is left add up to the call, "
    "though they overlap in time.")


def _span(seconds: float, low: float, high: float) -> str:
    """``163 ms (160 ms to 179 ms)``; a figure without rounds (a device time) alone."""
    if low == high:
        return format_seconds(seconds)
    return f"{format_seconds(seconds)} ({format_seconds(low)} to {format_seconds(high)})"


def _ladder_rows(ladder: Ladder) -> list[list[str]]:
    """The call, each step (the case it reaches, the factor removed, the difference, its share or "can't tell") and
    what is left, as cells."""
    top = ladder.top
    rows = [["the call", f"{top.label}: {top.case}", "–", "median " + format_seconds(top.median_s), "100%"]]
    for number, step in enumerate(ladder.steps, start=1):
        share = ladder.share(step)
        shown = f"can't tell ({ladder_text.why_not(step)})" if share is None else percent(share)
        if share is not None and (split := ladder_text.split_text(ladder, step)) is not None:
            shown += f", {split}"
        rows.append([str(number), f"{step.below.label}: {step.below.case}", step.factor,
                     _span(step.seconds, step.low_s, step.high_s), shown])
    base = ladder.base
    rows.append(["left", base.case, f"what is left: {ladder.bottom}", "median " + format_seconds(base.median_s),
                 percent(base.median_s / top.median_s)])
    return rows


def ladder_markdown(view: RunView) -> list[str]:
    """The ladders of controls the page draws (``view.ladders``), one table each: a row per step."""
    if not view.ladders:
        return []
    lines = ["", "## Where the time of one call goes", "", LADDER_INTRO]
    several = len(view.sources) > 1  # two files may be two boots of the machine: say which run a ladder read
    for ladder in view.ladders:
        run = f", {ladder.run}" if several else ""
        lines += ["", f"**{escape.markdown(ladder.top.label)} of {format_bytes(ladder.size)}: "
                  f"{format_seconds(ladder.top.median_s)}** ({escape.markdown(ladder.top.path + run)})", "",
                  "| step | case | factor removed | median difference (interval) | share |", "|---|---|---|---:|---:|"]
        lines += ["| " + " | ".join(escape.markdown(cell) for cell in row) + " |" for row in _ladder_rows(ladder)]
    return lines


def measured(view: RunView) -> pd.DataFrame:
    """Every row measured, with ``read``: True for the instance of its case every figure and sentence reads (all of
    them where no case was measured in more than one run)."""
    every = view.results.measured
    if every is None or "read" not in every:
        return view.rows.assign(read=True)
    return every


def instances_line(view: RunView) -> str:
    """Which machine instance (boot of the machine) each file's figures came from, when there are several: when each
    ran and how many benchmarks it measured, why they count apart, and where a case measured in both is read from."""
    every, times = measured(view), view.run_times
    runs = every["run"].astype(str)
    parts = [f"{', '.join(i.runs)} ({', '.join(str(times.get(run, 'time not recorded'))[:16] for run in i.runs)}, "
             f"{int(runs.isin(i.runs).sum())} benchmarks)" for i in view.instances]
    boots = {i.boot_id for i in view.instances}
    why = ("none recorded a boot id, so each run counts as an instance of its own" if boots == {None} else
           "their boot ids differ" if None not in boots else "some recorded no boot id")
    shared = every[~every["read"].astype(bool)]
    named = view.results.read_run
    rule = f"{named} (--read-run) where it measured them, else " if named else ""
    read = (f"; {len(shared)} case(s) measured in more than one are read from {rule}the run with more rounds (ties: "
            "the newest)" if not shared.empty else "")
    return (f"Machine instances: {'; '.join(parts)}: {why}{read}. Figures of different instances are never divided by "
            "one another.")


def instance_numbers(view: RunView) -> dict[str, int]:
    """The number of the machine instance of each run (a row's ``run``)."""
    return {run: instance.number for instance in view.instances for run in instance.runs}


def frame_for_csv(view: RunView) -> pd.DataFrame:
    """The CSV's rows as a DataFrame (for a notebook that wants it without a file): every row measured (``measured``)."""
    rows = measured(view)
    return rows.assign(instance=rows["run"].astype(str).map(instance_numbers(view))).reindex(columns=list(CSV_COLUMNS))
