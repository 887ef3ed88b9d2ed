"""What a report leaves to take away: a tidy CSV and a Markdown summary, beside the HTML.

``xferbench report -o x.html`` also writes ``x.csv`` (one row per benchmark measured, each
instance of a case measured in more than one run with ``read`` saying which one the report
reads; every field of the data contract plus its statistics, for notebooks) and ``x.md`` (key findings, the
ladders of controls, the latency/bandwidth table and the comparison with other tools, for a
PR comment).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from ... import escape
from ...contract import IDENTITY, MEASURED
from ...units import format_bytes, format_number
from ..view import RunView

if TYPE_CHECKING:
    from .story import Story

__all__ = ["CSV_COLUMNS", "LADDER_INTRO", "frame_for_csv", "to_csv", "to_markdown"]

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
    frame = frame_for_csv(view)  # a text cell escaped; a number is no formula (a column of them is left alone)
    escaped = {c: frame[c].map(lambda v: escape.csv_cell(v) if isinstance(v, str) else v)
               for c in frame.select_dtypes(exclude="number")}
    return str(frame.assign(**escaped).to_csv(index=False, lineterminator="\n"))


def _cell(value: Any, digits: int = 3) -> str:
    return format_number(value, digits) if value is None or isinstance(value, float) else escape.markdown(value)


def to_markdown(story: Story) -> str:
    """The report's take-aways as Markdown, in the page's order, every sentence read from the run the story's
    (story.py): the machine, what to change, the key findings (each headline with its evidence beneath), how the run
    was judged, the ladders, the α/β table, the peer pairs measured, the other tools' figures."""
    view = story.view
    lines = ["# xferbench: tensor creation and transfer costs", ""]
    if view.simulated:
        lines += ["> **Simulated machine.** Its device figures are xferbench's simulated machine's cost model, not "
                  "hardware: they check the suite, they are not measurements (its host-side rows ran on this CPU).", ""]
    lines += [f"{view.benchmarks} from {escape.markdown(', '.join(view.sources))}.", ""]
    lines += [escape.markdown(story.machine_line), ""]
    if story.busy is not None:
        lines += [f"> {escape.markdown(story.busy)}", ""]
    if story.changes:
        lines += ["## What to change here", ""]
        lines += [f"{n}. **{escape.markdown(c.spec.title)}**: {'simulated, not a measurement: ' if c.simulated else ''}"
                  f"{escape.markdown(c.text())}: `{c.spec.before}` → "
                  f"`{c.spec.after}` ({escape.markdown(c.condition)})" for n, c in enumerate(story.changes, 1)] + [""]
        if story.break_even_line:
            lines += [escape.markdown(story.break_even_line), ""]  # the break-even table the change cites
    elif story.unresolved:
        lines += ["## What to change here", "", escape.markdown(story.unresolved), ""]
    lines += ["## Key findings" + (" (device figures: the simulated machine's cost model, not a measurement)"
                                   if view.simulated else ""), ""]
    lines += [f"- {escape.markdown(said.headline)}" + ("" if said.evidence == said.headline else
                                                        f"\n  - {escape.markdown(said.evidence)}")
              for said in story.findings]
    lines += [] if story.findings else ["- Not enough data for findings."]
    lines += ["", "## How this run was judged", "", f"- {escape.markdown(story.drift)}"]
    lines += [f"- {escape.markdown(story.instances)}"] if story.instances else []
    lines += _ladders(story)
    lines += _model(story.model, story.view.has_accelerator)
    if story.peer_plan:
        lines += ["", "## Peer pairs measured", ""] + [f"- {escape.markdown(sentence)}" for sentence in story.peer_plan]
    if story.peer_lines:
        lines += ["", "## Against other tools on this machine", ""] + [f"- {escape.markdown(s)}" for s in story.peer_lines]
    return "\n".join(lines) + "\n"


def _model(model: list[dict[str, Any]], gpu: bool) -> list[str]:
    """The α/β table, a row per path; the pipelined columns (from device time) only where a GPU ran."""
    if not model:
        return []
    lines = ["", "## Latency and bandwidth per path", "",
             "α and β from wall time describe a loop that synchronizes after every call; pipelined, from the "
             "copy's own device time, what the device spends per copy issued back to back (– where the row's device "
             "time is not the copy's own and was left out: pageable copies, staged by the host, and blocking ones "
             "between host and device, paced by it)." if gpu else "α and β from the wall time of one call.", ""]
    roofed = any(row["peak_gbps"] for row in model)  # a CPU run knows no roof: no roof columns
    head = ["α (sync loop)", "α pipelined", "β (GB/s, sync loop)", "β pipelined (GB/s)"] if gpu else ["α", "β (GB/s)"]
    head += ["β from", "largest size kept: GB/s", *(["roof", "share of roof"] if roofed else [])]
    lines += [f"| path | {' | '.join(head)} |", "|---|" + "".join("---|" if c in ("β from", "roof") else "---:|" for c in head)]
    for row in model:
        largest = f"{format_bytes(row['largest_bytes'])}: {_cell(row['largest_gbps'])}"
        alpha, beta = ([row["pipelined_alpha"]], [_cell(row["pipelined_gbps"])]) if gpu else ([], [])
        cells = [_cell(row["path"]), row["alpha"], *alpha, _cell(row["stated_gbps"]), *beta,
                 _cell(row["beta_basis"]), largest, *([_cell(row["link"]), row.get("share", "–")] if roofed else [])]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


#: What the ladder tables say, as the page's ladder caption says it.
LADDER_INTRO = (
    "Each call read down a ladder of this run's own cases at one size, each step removing one factor: a step is the "
    "difference of two medians (the case above minus the step's own), its share of the call with the 95% interval of "
    "the two cases' ratio (paired blocks where both were measured so, else their rounds and the run's drift in their "
    "regime). A step that interval does not tell from zero can't tell, never a share. The steps and what is left add "
    "up to the call, though they overlap in time.")


def _ladders(story: Story) -> list[str]:
    """The ladders of controls the page draws (``Story.ladders``), one table each: a row per step."""
    if not story.ladders:
        return []
    lines = ["", "## Where the time of one call goes", "", LADDER_INTRO]
    for title, where, rows in story.ladders:
        lines += ["", f"**{escape.markdown(title)}** ({escape.markdown(where)})", "",
                  "| step | case | factor removed | median difference | share (interval) |", "|---|---|---|---:|---:|"]
        lines += ["| " + " | ".join(escape.markdown(cell) for cell in row) + " |" for row in rows]
    return lines + (["", escape.markdown(story.same_code)] if story.same_code else [])


def frame_for_csv(view: RunView) -> pd.DataFrame:
    """The CSV's rows as a DataFrame (for a notebook that wants it without a file): every row measured (``RunView.measured``)."""
    return view.numbered(view.measured).reindex(columns=list(CSV_COLUMNS))
