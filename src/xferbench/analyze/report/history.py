"""The history page's trend figure: key cases over a storage folder's runs, each lasting step marked.

The runs are read and their steps found on the loading side (load/history.py); this draws them.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...contract import environment_differences, hardware_differences
from ...families import order_of
from ...units import format_bytes
from ..load.case_time import DEFAULT_FLOOR, DEFAULT_SPREAD, case_class
from ..load.history import MIN_STEP_RUNS, RunSummary, Stored, lasting_steps, load_storage
from .plots import Plot, as_plot

__all__ = ["MAX_KEY_CASES", "history_plots"]

#: Lines in the trend plot: more than this is unreadable.
MAX_KEY_CASES = 12


def _key_cases(latest: pd.DataFrame) -> pd.DataFrame:
    """Each path at its largest size, the busiest paths first."""
    largest = latest.loc[latest.groupby("path")["nbytes"].idxmax()]
    largest = largest.assign(_o=largest["op"].map(order_of)).sort_values(["_o", "path"])
    return largest.head(MAX_KEY_CASES)


def history_plots(folder: Path, stored: Stored | None = None) -> list[Plot]:
    """The trend plot over a storage folder's runs (``stored``: the folder already loaded)."""
    stored = stored or load_storage(folder)
    caption = ("Time of key cases in each run, as compare judges it (a latency-bound case's fastest round, another's "
               "median), relative to the first run that measured them. A triangle marks a "
               f"lasting step (a new level held for {MIN_STEP_RUNS}+ runs and beyond the case's floor, found by ruptures' "
               "change-point search); run-to-run wobble is not marked. A step resets the baseline compare uses.")
    runs = stored.summaries
    incomplete = sum(run.incomplete for run in runs)
    if incomplete:
        caption += f" {incomplete} run(s) did not reach their end (incomplete): their missing cases leave gaps."
    if stored.notes:
        caption += f" {len(stored.notes)} file(s) that are not readable runs were skipped."
    # A run of other hardware (GPUs, CPU) is no point of this machine's trend (its change would be marked a
    # lasting step): left out, as compare leaves it out of a baseline. Other software on it stays (marked below).
    same = [r for r in runs if not hardware_differences(r.machine_info, runs[-1].machine_info)]
    if len(same) < len(runs):
        caption += f" {len(runs) - len(same)} run(s) of another machine than the newest run's are left out."
        runs = same
    if len(runs) < 2:
        return [as_plot("history", "Key cases over runs", caption,
                        f"{len(runs)} run in {folder}; trends need two or more (pytest --benchmark-autosave adds "
                        "one per run).")]
    keys = _key_cases(stored.newest.frame)
    fig, ax = plt.subplots(figsize=(10, 4.8))
    for _, key in keys.iterrows():
        xs, times = _series(runs, key)  # never empty: the key comes from the newest run
        ys = [t / times[0] * 100 for t in times]
        line, = ax.plot(xs, ys, marker="o" if len(runs) <= MAX_MARKED else None, ms=3, lw=1,
                        label=f"{key['path']} {format_bytes(key['nbytes'])}")
        cls = case_class(int(key["nbytes"]), bool(np.isfinite(key["bandwidth_gbps"])))
        steps = lasting_steps(np.log(times), DEFAULT_SPREAD[cls], DEFAULT_FLOOR[cls])
        ax.scatter([xs[i] for i in steps], [ys[i] for i in steps], marker="^", s=110, color=line.get_color(),
                   edgecolors="k", zorder=3)
    if _mark_environment(ax, runs):
        caption += (" A dashed line marks a change of software on this hardware (torch, CUDA, driver, ...), named "
                    "beside it: a step there may be the upgrade's.")
    ax.axhline(100, color="k", lw=0.6)
    ticks = _ticks(len(runs))
    ax.set_xticks(ticks, [runs[i].path.stem[:14] for i in ticks], rotation=45, ha="right", fontsize=7)
    ax.set_ylabel("time, % of first run")
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.grid(True, alpha=0.3)
    return [as_plot("history", "Key cases over runs", caption, fig)]


def _mark_environment(ax: plt.Axes, runs: list[RunSummary]) -> bool:
    """A dashed line, named, between two runs whose software differs (``torch 2.12.0 → 2.13.0``); True if any."""
    marked = False
    for i in range(1, len(runs)):
        before, after = runs[i - 1].machine_info, runs[i].machine_info
        changed = [] if before is after else environment_differences(before, after)
        if changed:
            ax.axvline(i - 0.5, color="0.4", ls="--", lw=0.8)
            ax.annotate("\n".join(changed), (i - 0.5, 0.98), xycoords=("data", "axes fraction"), rotation=90,
                        ha="right", va="top", fontsize=6, color="0.3")
            marked = True
    return marked


#: Runs up to which each run is a dot on the trend's lines: beyond, the dots merge into the line and cost most of
#: the drawing (at 1,000 runs, reading the cached folder and drawing its trend took 5.5 s of CPU with them, 3.8 s without).
MAX_MARKED = 500

#: Run names under the trend plot: beyond this many, evenly spaced ones (10,000 labels are unreadable and slow to draw).
MAX_TICKS = 40


def _ticks(runs: int) -> list[int]:
    """The runs whose names label the x axis: all of them, or ``MAX_TICKS`` evenly spaced, the newest included."""
    if runs <= MAX_TICKS:
        return list(range(runs))
    return sorted({round(i * (runs - 1) / (MAX_TICKS - 1)) for i in range(MAX_TICKS)})


def _series(runs: list[RunSummary], key: pd.Series) -> tuple[list[int], list[float]]:
    """(run indices, times) of one case, matched by its whole identity, across the runs that measured it: the time
    compare judges (``case_time.time_of``: a trend that drew medians while the gate judged fastest rounds would show
    steps the gate never saw), kept in each run's summary."""
    wanted = str(key["case_key"])
    found = [(index, run.times[wanted]) for index, run in enumerate(runs) if wanted in run.times]
    # The loader refuses a time that is not above zero.
    return [index for index, _ in found], [float(time) for _, time in found]
