"""How a figure splits rows into series so that no line joins points of two runs.

Two runs of one machine (two files, often two boots) differ by more than their spread: a line through a point of
each would draw that difference as a slope. Rows of one family read from more than one run (``one_per_case`` picks
each case's instance) are drawn as one series per run, each named by its run. No torch here.
"""

from __future__ import annotations

import pandas as pd

__all__ = ["case_labels", "run_of", "spans_runs"]

#: What tells apart two cases whose path reads the same (a path names neither dtype, shape, call nor size).
TELLS_APART = ("method", "dtype", "shape", "host_memory", "non_blocking", "nbytes")


def spans_runs(rows: pd.DataFrame) -> bool:
    """Whether ``rows`` come from more than one run (file)."""
    return "run" in rows and rows["run"].nunique() > 1


def run_of(rows: pd.DataFrame, row: pd.Series) -> str:
    """`` (run)`` to name a series after its run where ``rows`` span several, else nothing."""
    return f" ({row['run']})" if spans_runs(rows) else ""


def case_labels(rows: pd.DataFrame, sized: bool = True) -> pd.Series:
    """Each row's path, and where rows share one, the fields that differ among them (``dtype=float16``):
    bars on a category axis with one label overprint each other, and one line through two cases zigzags.
    ``sized``: the size (and the shape, which follows it) tells cases apart (bars); on a size axis (lines) not.
    Where the rows span runs, each label ends with its run: a line is one run's."""
    fields = [f for f in TELLS_APART if sized or f not in ("nbytes", "shape")]
    labels = rows["path"].astype(str)
    for path, group in rows.groupby(labels, sort=False):
        differ = [f for f in fields if group[f].astype(str).nunique() > 1]
        if len(group) > 1 and differ:
            labels[group.index] = [f"{path} " + " ".join(f"{f}={row[f]}" for f in differ) for _, row in group.iterrows()]
    if spans_runs(rows):
        labels = labels + " (" + rows["run"].astype(str) + ")"
    return labels
