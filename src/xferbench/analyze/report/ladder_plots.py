"""The ladders of a run's controls as a figure (one bar of steps per call) and as the page's table."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ...units import format_bytes, format_seconds, mathtext_safe
from ..ladder import Ladder, percent
from ..view import RunView
from .ladder_text import sentence, short, split_text, why_not
from .svg import WIDTH, tip

__all__ = ["HOST_LADDER_CAPTION", "LADDER_CAPTION", "ladder_figure", "ladder_table"]


#: Each factor a ladder step removes, in one colour in every ladder; a step the run cannot tell from zero is hatched.
_FACTOR_COLOURS = {"fresh": "tab:orange", "staging": "tab:gray", "launch": "tab:blue", "DMA": "tab:red",
                   "copy": "tab:green"}


def _factor_colour(factor: str) -> str:
    for word, colour in _FACTOR_COLOURS.items():
        if word in factor:
            return colour
    return "tab:purple"


def _ladder_bar(ax: Axes, y: int, ladder: Ladder, legend: dict[str, Artist]) -> None:
    """One ladder as a bar of its steps and its bottom rung: each segment the difference of two medians of the run,
    so the segments add up to the call; a step whose interval holds zero is drawn hatched, without a share."""
    left, total = 0.0, ladder.top.median_s
    steps = [*ladder.steps, None]
    for (factor, seconds, _low, _high, told), step in zip(ladder.parts(), steps, strict=True):
        width = max(seconds, 0.0) * 1e3
        colour = _factor_colour(factor)
        bar = ax.barh([y], [width], left=left, color=colour if told else "white", edgecolor=colour if not told else
                      "white", hatch=None if told else "//")
        label = sentence(ladder, step) if step is not None else f"{factor}: {format_seconds(seconds)} ({ladder.base.case})"
        what = f"\n{step.above.case} − {step.below.case}" if step is not None else ""
        tip(bar.patches[0], [label + what])
        if told and seconds / total >= 0.15:
            ax.text(left + width / 2, y, format_seconds(seconds), ha="center", va="center", fontsize=7.5, color="white")
        legend.setdefault(short(factor) if told else "can't tell (the two rungs' ratio holds 1)",
                          bar.patches[0])
        left += width


def ladder_figure(view: RunView) -> Figure | str:
    """Every ladder of the run (analyze/ladder.py), one bar each, in ms, labelled with its call, size and run."""
    found = view.ladders
    if {"d2h-cpu", "d2h-to"} <= {ladder.key for ladder in found}:  # the same lower rungs: one bar, both in the table
        found = [ladder for ladder in found if ladder.key != "d2h-to"]
    if not found:
        return ("No call and its controls were measured at one size in one run (.cpu() with copy_ into a touched "
                "buffer, or host clone() with copy_).")
    fig, ax = plt.subplots(figsize=(WIDTH * 0.62, 0.36 * len(found) + 0.8))
    legend: dict[str, Artist] = {}
    for y, ladder in enumerate(found):
        _ladder_bar(ax, y, ladder, legend)
    ax.set_yticks(range(len(found)), [mathtext_safe(f"{ladder.top.label}, {format_bytes(ladder.size)} "
                                                    f"({format_seconds(ladder.top.median_s)})") for ladder in found])
    ax.invert_yaxis()
    ax.set_xlabel("ms: each segment is one rung's median minus the next one's (same run, same size)", fontsize=8)
    ax.tick_params(labelsize=8)
    ax.grid(True, axis="x", alpha=0.3)
    fig.legend(list(legend.values()), [mathtext_safe(label) for label in legend], loc="center left",
               bbox_to_anchor=(1.0, 0.5), fontsize=7.5, frameon=False)
    fig.set_layout_engine("tight")  # laid out as it is written (svg.to_svg), maybe in another process
    return fig


_NO_FAULTS = "no fault counts split it into allocation and first touch"


def _cell(ladder: Ladder, seconds: float, low: float, high: float, told: bool, cases: str,
          split: str | None) -> dict[str, str]:
    span = f"{format_seconds(low)} to {format_seconds(high)}"
    if not told:
        return {"text": "can't tell", "title": f"{format_seconds(seconds)}, interval {span}: {cases}"}
    text = f"{format_seconds(seconds)} ({percent(seconds / ladder.top.median_s)})"
    if split is not None:  # the step the run's fault counts split
        text += f", {split}"
    return {"text": text, "title": f"interval {span}: {cases}"}


def ladder_table(view: RunView) -> dict[str, Any] | None:
    """The ladders as the page's table (the Markdown's: ``ladder_text.rows``): one row per call, one column per factor removed (in
    ladder order), each cell the step read from its two cases (named in its hover title with the interval)."""
    found = view.ladders
    if not found:
        return None
    factors = list(dict.fromkeys(factor for ladder in found for factor, *_ in ladder.parts()))
    rows = []
    for ladder in found:
        cases = [("" if s.told else f"{why_not(s)}; ") + f"{s.above.case} − {s.below.case}"
                 for s in ladder.steps] + [ladder.base.case]
        splits = [split_text(ladder, s) for s in ladder.steps] + [None]
        if ladder.split is None and ladder.key.startswith("host"):  # said only where this run recorded no faults
            splits[0] = _NO_FAULTS
        cells = {factor: _cell(ladder, seconds, low, high, told, case, split)
                 for (factor, seconds, low, high, told), case, split in zip(ladder.parts(), cases, splits, strict=True)}
        rows.append({"call": f"{ladder.top.label}, {format_bytes(ladder.size)}: {format_seconds(ladder.top.median_s)}",
                     "title": f"{ladder.top.path}, {ladder.run}",
                     "cells": [cells.get(factor, {"text": "–", "title": "not a rung of this call"}) for factor in factors]})
    return {"columns": [short(factor) for factor in factors], "rows": rows, "runs": sorted({ladder.run for ladder in found})}


LADDER_CAPTION = (
    "Each call read down a ladder of cases of one run at one size, each rung removing one factor (the table's columns, "
    "left to right). A segment is the difference of two medians: the segments add up to the call, though they overlap "
    "in time. A step whose two rungs' ratio the run cannot tell from 1 (its 95% interval: paired blocks where both were "
    "measured so, else their rounds and the run's drift) is hatched: can't tell. The launch, sync, blocking rung sets "
    "the blocking copy against its non-blocking twin's DMA (a blocking copy's own DMA is not timed), so it also holds "
    "whatever blocking adds. Hover a cell for its cases and interval.")


HOST_LADDER_CAPTION = (
    "clone() on the host read against copy_ into a buffer that was already touched, same run, same size: the "
    "difference is what clone() pays for the fresh destination it allocates on every call, the rest is the copy "
    "itself. With a GPU, .cpu() is read down the same kind of ladder (this run measured none). A step's interval is "
    "the two rungs' ratio's (95%: paired blocks where both were measured so, else their rounds and the run's drift): "
    "one that holds zero reads \"can't tell\", never a share.")

