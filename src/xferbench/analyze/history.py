"""Trends over the runs in a pytest-benchmark storage folder (``--benchmark-autosave``).

Lasting steps, not every difference: between consecutive runs a shared machine
differs by chance all the time, so the history page marks a *step* only where a
change-point search over a case's whole series finds a level that held for at least
``MIN_STEP_RUNS`` runs on each side and moved by more than the case's floor. The
search is ruptures' PELT with an L1 (median) cost: ruptures is maintained, pip-
installable with wheels, has no service to run (unlike Apache Otava) and no MongoDB
tooling to pull in (unlike signal-processing-algorithms), and the L1 cost keeps one
wild run from making a step. A step that has lasted that long is accepted: it resets
the baseline that ``compare`` measures the case against (``current_segment``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import ruptures as rpt

from ..contract import environment_differences, hardware_differences
from ..families import order_of
from ..units import format_bytes
from .noise import DEFAULT_FLOOR, DEFAULT_SPREAD, MIN_SPREAD, case_class, run_time
from .plots import Plot, as_plot
from .results import Results, ResultsError, find_json, load, read_text

__all__ = ["MIN_STEP_RUNS", "current_segment", "history_plots", "lasting_steps", "runs_in"]

#: Lines in the trend plot: more than this is unreadable.
MAX_KEY_CASES = 12

#: Runs a level must hold on each side of a step for the step to count (and be accepted).
MIN_STEP_RUNS = 3


def runs_in(folder: Path) -> list[tuple[Path, str]]:
    """Every run file in the folder with its datetime, oldest first."""
    runs = []
    for path in find_json(folder):
        try:
            when = json.loads(read_text(path)).get("datetime") or ""
        except (OSError, ValueError, AttributeError, RecursionError):  # ValueError: not JSON, or not UTF-8
            raise ResultsError(f"{path}: not JSON, or cut short") from None
        runs.append((path, str(when)))
    return sorted(runs, key=lambda run: (run[1], run[0].name))


def lasting_steps(log_times: np.ndarray, spread: float, floor: float) -> list[int]:
    """Indices where a lasting step starts a new level in one case's series of log run-medians.

    PELT's penalty is 2 x spread x ln(n): in L1 units, what chance alone rarely buys
    (a BIC-like price per extra segment); a found boundary is kept only when the
    medians on its two sides differ by more than the floor.
    """
    x = np.asarray(log_times, dtype=float)
    if x.size < 2 * MIN_STEP_RUNS:
        return []
    penalty = 2 * max(spread, MIN_SPREAD) * math.log(x.size)
    bounds = rpt.Pelt(model="l1", min_size=MIN_STEP_RUNS, jump=1).fit(x.reshape(-1, 1)).predict(pen=penalty)
    edges = [0, *bounds]
    steps = []
    for i in range(1, len(edges) - 1):
        before, after = x[edges[i - 1]:edges[i]], x[edges[i]:edges[i + 1]]
        if abs(float(np.median(after) - np.median(before))) > math.log1p(floor):
            steps.append(edges[i])
    return steps


def current_segment(log_times: np.ndarray, spread: float, floor: float) -> int:
    """Where the case's current level starts: after its last lasting step (0 if none)."""
    steps = lasting_steps(log_times, spread, floor)
    return steps[-1] if steps else 0


def _key_cases(latest: pd.DataFrame) -> pd.DataFrame:
    """Each path at its largest size, the busiest paths first."""
    largest = latest.loc[latest.groupby("path")["nbytes"].idxmax()]
    largest = largest.assign(_o=largest["op"].map(order_of)).sort_values(["_o", "path"])
    return largest.head(MAX_KEY_CASES)


def history_plots(folder: Path) -> list[Plot]:
    runs = runs_in(folder)
    caption = ("Time of key cases in each run, as compare judges it (a latency-bound case's fastest round, another's "
               "median), relative to the first run that measured them. A triangle marks a "
               f"lasting step (a new level held for {MIN_STEP_RUNS}+ runs and beyond the case's floor, found by ruptures' "
               "change-point search); run-to-run wobble is not marked. A step resets the baseline compare uses.")
    results = [load([path]) for path, _ in runs]
    # A run of other hardware (GPUs, CPU) is no point of this machine's trend (its change would be marked a
    # lasting step): left out, as compare leaves it out of a baseline. Other software on it stays (marked below).
    same = [r for r in results if not hardware_differences(r.machine_info, results[-1].machine_info)]
    if len(same) < len(results):
        caption += f" {len(results) - len(same)} run(s) of another machine than the newest run's are left out."
        results = same
    if len(results) < 2:
        return [as_plot("history", "Key cases over runs", caption,
                        f"{len(results)} run in {folder}; trends need two or more (pytest --benchmark-autosave adds "
                        "one per run).")]
    keys = _key_cases(results[-1].frame)
    fig, ax = plt.subplots(figsize=(10, 4.8))
    for _, key in keys.iterrows():
        xs, times = _series(results, key)  # never empty: the key comes from the newest run
        ys = [t / times[0] * 100 for t in times]
        line, = ax.plot(xs, ys, marker="o", ms=3, lw=1, label=f"{key['path']} {format_bytes(key['nbytes'])}")
        cls = case_class(int(key["nbytes"]), bool(np.isfinite(key["bandwidth_gbps"])))
        steps = lasting_steps(np.log(times), DEFAULT_SPREAD[cls], DEFAULT_FLOOR[cls])
        ax.scatter([xs[i] for i in steps], [ys[i] for i in steps], marker="^", s=110, color=line.get_color(),
                   edgecolors="k", zorder=3)
    if _mark_environment(ax, results):
        caption += (" A dashed line marks a change of software on this hardware (torch, CUDA, driver, ...), named "
                    "beside it: a step there may be the upgrade's.")
    ax.axhline(100, color="k", lw=0.6)
    ax.set_xticks(range(len(results)), [Path(r.sources[0]).stem[:14] for r in results], rotation=45, ha="right",
                  fontsize=7)
    ax.set_ylabel("time, % of first run")
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.grid(True, alpha=0.3)
    return [as_plot("history", "Key cases over runs", caption, fig)]


def _series(results: list[Results], key: pd.Series) -> tuple[list[int], list[float]]:
    """(run indices, times) of one case, matched by its whole identity, across the runs that measured it.

    Each run's time is the one compare judges (``noise.run_time``): a trend that drew medians
    while the gate judged fastest rounds would show steps the gate never saw, and miss its flags.
    """
    xs, times = [], []
    for index, run in enumerate(results):
        row = run.frame[run.frame["case_key"] == key["case_key"]]
        if not row.empty:  # the loader refuses a time that is not above zero
            xs.append(index)
            times.append(run_time(row.iloc[0]))
    return xs, times


def _mark_environment(ax: plt.Axes, results: list[Results]) -> bool:
    """A dashed line, named, between two runs whose software differs (``torch 2.12.0 → 2.13.0``); True if any."""
    marked = False
    for i in range(1, len(results)):
        changed = environment_differences(results[i - 1].machine_info, results[i].machine_info)
        if changed:
            ax.axvline(i - 0.5, color="0.4", ls="--", lw=0.8)
            ax.annotate("\n".join(changed), (i - 0.5, 0.98), xycoords=("data", "axes fraction"), rotation=90,
                        ha="right", va="top", fontsize=6, color="0.3")
            marked = True
    return marked
