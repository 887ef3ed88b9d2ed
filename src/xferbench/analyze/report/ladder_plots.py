"""The ladders of a run's controls as a figure, one bar of steps per call (their table and caption are words:
ladder_text.py, captions.py)."""

from __future__ import annotations

from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from ...families.core import SHORT
from ...ratios import UNJUDGED
from ...units import format_bytes, format_number, format_seconds, mathtext_safe, percent
from ..ladder import Ladder
from ..view import RunView
from .svg import WIDTH, left_said, subplots, tip

__all__ = ["ladder_figure"]


#: Each factor a ladder step removes, in one colour in every ladder; a step the run cannot tell from zero is hatched.
_FACTOR_COLOURS = {"fresh": "tab:orange", "staging": "tab:gray", "launch": "tab:blue", "DMA": "tab:red", "copy": "tab:green"}


def _factor_colour(factor: str) -> str:
    for word, colour in _FACTOR_COLOURS.items():
        if word in factor:
            return colour
    return "tab:purple"


def _ladder_bar(ax: Axes, y: int, ladder: Ladder, legend: dict[str, Artist]) -> None:
    """One ladder as a bar of its steps and its bottom rung: each segment the difference of two medians of the run,
    so the segments add up to the call; a step whose interval holds zero is drawn hatched, without a share. A bottom
    rung whose bytes do not set its time (``Ladder.waited``), or on the scheduler's ticks, is named so, as the ladder's
    table says."""
    left, total = 0.0, ladder.top.median_s
    steps = [*ladder.steps, None]
    for (factor, seconds, span, told), step in zip(ladder.parts(), steps, strict=True):
        if step is None and (said := left_said(ladder.base.row, ladder.waited, "it")) is not None:
            factor = f"what is left ({said})"
        width = max(seconds, 0.0) * 1e3
        colour = _factor_colour(factor)
        bar = ax.barh([y], [width], left=left, color=colour if told else "white", edgecolor=colour if not told else
                      "white", hatch=None if told else "//")
        if step is None:  # the bottom rung
            tip(bar.patches[0], [f"{factor}: {format_seconds(seconds)} ({ladder.base.case})"])
        else:  # the step, its share and interval (or the ratio's can't tell), and its two rungs
            order = step.ratio.order(f"of {step.above.label}", f"of {step.below.label}")  # the table's words (ladder_text)
            said = (f"{format_seconds(seconds)} ({percent(seconds / total)}{span and '; ' + span})" if told else
                    f"the medians {format_seconds(seconds)} apart, no size of the step: {order}{step.ratio.text()}")
            tip(bar.patches[0], [f"{factor}: {said}\n{step.above.case} − {step.below.case}"])
        if told and seconds / total >= 0.15:
            ax.text(left + width / 2, y, format_seconds(seconds), ha="center", va="center", fontsize=7.5, color="white")
        why = "the two rungs' ratio holds 1" if step is None or step.ratio.judged else UNJUDGED[step.ratio.basis]
        above = "above zero, how much " if step is not None and step.ratio.apart and step.ratio.value > 1 else ""
        legend.setdefault(SHORT.get(factor, factor) if told else f"{above}can't tell ({why})", bar.patches[0])
        left += width


def ladder_figure(view: RunView) -> Figure | str:
    """Every ladder of the run (analyze/ladder.py), one bar each, in ms, labelled with its call, size and run."""
    found = view.ladders
    if {"d2h-cpu", "d2h-to"} <= {ladder.key for ladder in found}:  # the same lower rungs: one bar, both in the table
        found = [ladder for ladder in found if ladder.key != "d2h-to"]
    if not found:
        return ("No call and its controls were measured at one size in one run (.cpu() with copy_ into a touched "
                "buffer, or host clone() with copy_).")
    fig, ax = subplots(figsize=(WIDTH * 0.62, 0.36 * len(found) + 0.8), layout="tight")
    legend: dict[str, Artist] = {}
    for y, ladder in enumerate(found):
        _ladder_bar(ax, y, ladder, legend)
    ax.set_yticks(range(len(found)), [mathtext_safe(f"{ladder.top.label}, {format_bytes(ladder.size)} "
                                                    f"({format_seconds(ladder.top.median_s)})") for ladder in found])
    ax.invert_yaxis()
    ax.set_xlabel("ms: each segment is one rung's median minus the next one's (same run, same size)", fontsize=8)
    ax.tick_params(labelsize=8)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_number(v)))  # 1,500 ms, as the tables write it
    ax.grid(True, axis="x", alpha=0.3)
    fig.legend(list(legend.values()), [mathtext_safe(label) for label in legend], loc="center left",
               bbox_to_anchor=(1.0, 0.5), fontsize=7.5, frameon=False)
    return fig
