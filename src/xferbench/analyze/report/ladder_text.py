"""A ladder of controls in words (analyze/ladder.py finds its rungs, steps and intervals): each step's figure or
"can't tell" and why, the fault count beside the fresh destination, the whole ladder in one sentence, and every
ladder as the page's table (a column per factor). No torch here."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ...families.base import span
from ...families.core import SHORT
from ...ratios import UNJUDGED
from ...units import format_bytes, format_seconds, format_span, percent, percent_span
from ..ladder import Ladder, Step
from ..view import RunView
from .svg import left_said

__all__ = ["fault_split", "ladder_table", "rows", "sentence", "split_text", "summary", "title", "why_not"]


def why_not(step: Step) -> str:
    """Why a step is "can't tell": the smallest ratio the two rungs could tell from 1, or that the run cannot judge."""
    if not step.ratio.judged or not math.isfinite(step.ratio.could_see):
        return UNJUDGED.get(step.ratio.basis, UNJUDGED["unjudged"])
    if step.ratio.same:
        return "the two rungs took the same time"
    return f"the two rungs could see ≥ {step.ratio.could_see:.2f}×"


def untold(step: Step) -> str:
    """A step the run does not tell from zero: ``none`` where its two rungs took the same time (a cost model's alike),
    else ``can't tell`` and why, after the order its rungs' interleaved rounds give, where they give one."""
    return f"none ({why_not(step)})" if step.ratio.same else f"{_ordered(step)}can't tell ({why_not(step)})"


def _ordered(step: Step) -> str:
    """``above zero: every round of clone() took longer than every round of copy_ into a touched buffer, in 6
    interleaved blocks (quickest 51.3 ms against slowest 23.9 ms); how much, `` (``Ratio.order``), else ""."""
    order = step.ratio.order(f"of {step.above.label}", f"of {step.below.label}")
    return order and f"{_sign(step)}: {order}"


def _sign(step: Step) -> str:
    """An untold step in a table's cell: ``none``, ``can't tell``, or where interleaved rounds order it ``above zero``."""
    ratio = step.ratio
    return "none" if ratio.same else "can't tell" if ratio.apart is None else "above zero" if ratio.value > 1 else "below zero"


def split_text(ladder: Ladder, step: Step) -> str | None:
    """The fault count beside the fresh-destination step (the first), where the run recorded faults per call."""
    if ladder.split is None or step is not ladder.steps[0]:
        return None
    return fault_split(ladder.split.faults_per_call, ladder.split.us_per_fault)


def fault_split(faults: float, us_per_fault: float) -> str:
    """A fresh-destination step beside its fault count: the count is measured, the time per fault only if the whole
    step were faults (it also holds allocating and releasing the buffer)."""
    return f"with {faults:,.0f} more minor faults per call ({us_per_fault:.3g} µs each if the whole step were faults)"


def sentence(ladder: Ladder, step: Step) -> str:
    """One step in words, by its short name (the table says what it removes): its figure and interval, or "can't
    tell" (a reading found "the fresh destination: what the call pays beyond ...: 94.8 ms" hard to read)."""
    factor = SHORT.get(step.factor, step.factor)
    if step.ratio.same:
        return f"{factor}: {untold(step)}"
    if not step.told:
        return f"{factor}: {_ordered(step)}can't tell ({format_seconds(step.seconds)}; {why_not(step)})"
    span = percent_span(*ladder.share_bounds(step), alike="")
    return f"{factor}: {format_seconds(step.seconds)} ({percent(ladder.share(step) or 0.0)}{span and '; ' + span})"


def summary(ladder: Ladder) -> str:
    """The whole ladder in one sentence, read top to bottom."""
    steps = "; ".join(sentence(ladder, s) for s in ladder.steps)
    return (f"{ladder.top.label} of {format_bytes(ladder.size)} took {format_seconds(ladder.top.median_s)} "
            f"({ladder.top.path}): {steps}; {bottom(ladder)}: {format_seconds(ladder.base.median_s)} "
            f"({ladder.base.case}).")


def bottom(ladder: Ladder) -> str:
    """What is left of the call, named: its factor (``the copy itself (into a touched buffer)``), or where its bytes set
    little of its time (``Ladder.waited``) the rung, how much at most, and the smaller size that took as long; where its
    rounds lie on the scheduler's ticks (``on_ticks``), that."""
    if (said := left_said(ladder.base.row, ladder.waited)) is None:
        return ladder.bottom
    took = "" if ladder.waited is None else f": {took_at(ladder.waited.small, ladder.base.row)}"
    return f"{ladder.base.label} ({said}{took})"


def title(ladder: Ladder) -> str:
    """``.cpu() of 256 MiB: 181 ms``: the call, its size and its median."""
    return f"{ladder.top.label} of {format_bytes(ladder.size)}: {format_seconds(ladder.top.median_s)}"


def took_at(small: pd.Series, row: pd.Series | None = None) -> str:
    """``12 ms at 1 MiB, 64× fewer bytes``: a smaller size's time (``RunView.growth``: where it is the median of its
    blocks timed as ``row``'s were, it says so, and what its other blocks took), and how many times fewer bytes it
    moved than ``row``, where given."""
    alike, (other, calls) = small.get("alike_blocks"), small.get("other_blocks", ((), ()))
    apart = "" if not len(other) else (
        f" ({f'its {len(other)} others' if len(other) > 1 else 'its other'}, at "
        f"{span(pd.Series(calls))} calls a round, took "
        f"{format_span(format_seconds(min(other)), format_seconds(max(other)))})")
    return (f"{format_seconds(float(small['median_s']))} at {format_bytes(int(small['nbytes']))}"
            + (f" in its {int(alike)} blocks timed alike{apart}" if pd.notna(alike) else "")
            + ("" if row is None else f", {row['nbytes'] / small['nbytes']:,.0f}× fewer bytes"))


def rows(ladder: Ladder) -> list[list[str]]:
    """The ladder as rows of cells: the call, each step (the case it reaches, the factor removed, the difference, its
    share or "can't tell") and what is left, with the size at which it took as long where the bytes do not set its
    time (``Ladder.waited``)."""
    top = ladder.top
    found = [["the call", f"{top.label}: {top.case}", "–", "median " + format_seconds(top.median_s), "100%"]]
    for number, step in enumerate(ladder.steps, start=1):
        share = ladder.share(step)
        span = percent_span(*ladder.share_bounds(step), alike="") if share is not None else ""
        shown = untold(step) if share is None else percent(share) + (span and f" ({span})")
        if share is not None and (split := split_text(ladder, step)) is not None:
            shown += f", {split}"
        found.append([str(number), f"{step.below.label}: {step.below.case}", step.factor, format_seconds(step.seconds), shown])
    base, left = ladder.base, f"what is left: {bottom(ladder)}"
    share = ladder.left_share
    found.append(["left", base.case, left, "median " + format_seconds(base.median_s),
                  ladder.whole.text() if share is None and ladder.whole is not None else percent(share or 0.0)])
    return found


_NO_FAULTS = "no fault counts split it into allocation and first touch"


def _cell(ladder: Ladder, seconds: float, span: str, told: bool, cases: str, split: str | None, sign: str) -> dict[str, str]:
    if not told:  # the cases say why (``_sign``: two rungs that took the same time, a cost model's, are no step)
        return {"text": sign, "title": f"the medians {format_seconds(seconds)} apart, no size of the step: {cases}"}
    text = f"{format_seconds(seconds)} ({percent(seconds / ladder.top.median_s)})"
    if split is not None:  # the step the run's fault counts split
        text += f", {split}"
    return {"text": text, "title": f"{span} of the call: {cases}" if span else cases}  # what is left: one median


def ladder_table(view: RunView) -> dict[str, Any] | None:
    """The ladders as the page's table (the Markdown's: ``ladder_text.rows``): one row per call, one column per factor removed (in
    ladder order), each cell the step read from its two cases (named in its hover title with the interval)."""
    found = view.ladders
    if not found:
        return None
    factors = list(dict.fromkeys(factor for ladder in found for factor, *_ in ladder.parts()))
    rows = []
    for ladder in found:
        cases = [("" if s.told else f"{untold(s)}; ") + f"{s.above.case} − {s.below.case}"
                 for s in ladder.steps] + [ladder.base.case]
        splits = [split_text(ladder, s) for s in ladder.steps] + [None]
        if ladder.split is None and ladder.key.startswith("host"):  # said only where this run recorded no faults
            splits[0] = _NO_FAULTS
        signs = [_sign(s) for s in ladder.steps] + [""]
        cells = {factor: _cell(ladder, seconds, span, told, case, split, sign) for (factor, seconds, span, told), case,
                 split, sign in zip(ladder.parts(), cases, splits, signs, strict=True)}
        if ladder.left_share is None:  # what is left is measured, its share of the call is not
            cells[ladder.bottom]["text"] = format_seconds(ladder.base.median_s)
        if (said := left_said(ladder.base.row, wait := ladder.waited, "it")) is not None:  # as ``rows`` says it
            cells[ladder.bottom]["text"] += f"; {said}" + ("" if wait is None else f" ({took_at(wait.small, ladder.base.row)})")
        rows.append({"call": f"{ladder.top.label}, {format_bytes(ladder.size)}: {format_seconds(ladder.top.median_s)}",
                     "title": f"{ladder.top.path}, {ladder.run}",
                     "cells": [cells.get(factor, {"text": "–", "title": "not a rung of this call"}) for factor in factors]})
    return {"columns": [SHORT.get(factor, factor) for factor in factors], "rows": rows,
            "runs": sorted({ladder.run for ladder in found})}
