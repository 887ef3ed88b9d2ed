"""The history page's trend figure: key cases over a storage folder's runs, each lasting step marked.

The runs are read and their steps found on the loading side (load/history.py); this draws them. The store's
dashboard draws its per-path trends with the same pieces (``draw_trend``, ``ratio_axis``, ``run_ticks``), so both
pages read alike: a colour and marker of its own per line, ratios on a log axis, whole run names, and a band for
each line's run-to-run noise as compare measures it.
"""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, Locator, NullFormatter

from ...contract import environment_differences, hardware_differences
from ...families import order_of
from ...units import count, format_bytes, mathtext_safe
from ..load.case_time import DEFAULT_FLOOR, DEFAULT_SPREAD, case_class, learned_spread
from ..load.history import MIN_STEP_RUNS, RunSummary, Stored, lasting_steps, load_storage
from .svg import Plot, as_plot, subplots

__all__ = ["BAND_CAPTION", "COLOURS", "MARKERS", "MAX_KEY_CASES", "draw_trend", "history_plots", "ratio_axis",
           "run_label", "run_ticks"]

#: Lines in the trend plot: more than this is unreadable.
MAX_KEY_CASES = 12

#: matplotlib's ten qualitative colours (tab10), and a marker per line: twelve, so that the key cases (and the sizes
#: of one path, twelve in a full profile) never share one, and with the colours no two of 60 lines look alike. The
#: triangle is left out: it marks a lasting step.
COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:gray",
           "tab:olive", "tab:cyan")
MARKERS = ("o", "s", "D", "v", "P", "X", "*", "<", ">", "h", "p", "d")

#: What the shaded band around each trend line is, for the captions of both pages.
BAND_CAPTION = (
    "The shaded band around each line is its run-to-run noise as compare measures it: the line's level (the median "
    "of its runs since its last step) times e^±s, s the between-run spread of those runs' log times (1.4826 × their "
    "MAD, widened by 1 + 1.17/√n; not below the case's default, 0.15 or 0.40, under 5 runs, and that default under "
    "3). The y axis is logarithmic: a halving and a doubling are as far from 100%.")


#: Where a ratio axis puts its labelled ticks, per decade, coarsest first: the first that labels at least
#: ``RATIO_TICKS`` values in view is taken (10% to 1,000,000% by decades; 95% to 105% by single percents).
RATIO_STEPS: tuple[tuple[float, ...], ...] = (
    (1.0,), (1.0, 2.0, 5.0), (1.0, 1.5, 2.0, 3.0, 5.0, 7.0),
    (1.0, 1.2, 1.4, 1.6, 1.8, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0),
    tuple(np.round(np.arange(1.0, 10.0, 0.1), 1)), tuple(np.round(np.arange(1.0, 10.0, 0.01), 2)))
RATIO_TICKS = 4


class _RatioLocator(Locator):
    """Labelled ticks of a log ratio axis: matplotlib's LogLocator labels at most two values between 83% and 180%."""

    def __call__(self) -> list[float]:
        assert self.axis is not None
        return self.tick_values(*self.axis.get_view_interval())

    def tick_values(self, vmin: float, vmax: float) -> list[float]:
        low, high = sorted((max(vmin, 1e-9), max(vmax, 1e-9)))
        decades = range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
        ticks: list[float] = []
        for steps in RATIO_STEPS:
            ticks = [float(round(step * 10.0**k, 6 - k)) for k in decades for step in steps if low <= step * 10.0**k <= high]
            if len(ticks) >= RATIO_TICKS:
                break
        return ticks


def _percent(value: float, _position: object = None) -> str:
    return f"{value:,.0f}%" if value >= 10 else f"{value:.2g}%"


def ratio_axis(ax: Axes, label: str) -> None:
    """A y axis of ratios to a first run, in percent, on a log scale: a 1,600x slowdown stays on the page beside a
    1.1x one, and 50% lies as far below 100% as 200% above it."""
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(_RatioLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(_percent))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.tick_params(axis="y", which="both", labelsize=7)
    ax.set_ylabel(label)


#: Characters of a run's name per line under the axis: its name is broken after a separator, never cut.
LABEL_WIDTH = 20


def run_label(path: Path) -> str:
    """A run's whole file name (without ``.json`` / ``.json.gz``) on lines of at most ``LABEL_WIDTH`` characters,
    broken after its separators (``_``, ``-``, ``.``) and never inside a word."""
    name = path.name.removesuffix(".gz").removesuffix(".json")
    lines = [""]
    for part in re.findall(r"[^_.-]+[_.-]*|[_.-]+", name):
        if lines[-1] and len(lines[-1]) + len(part) > LABEL_WIDTH:
            lines.append("")
        lines[-1] += part
    return mathtext_safe("\n".join(lines))


def run_ticks(ax: Axes, paths: list[Path]) -> None:
    """The x axis's run names, whole and slanted, as many as fit (``_ticks``), and the figure laid out so that none
    is cut off at its edge."""
    labels = [run_label(path) for path in paths]
    ticks = _ticks(len(paths), max(label.count("\n") + 1 for label in labels))
    ax.set_xticks(ticks, [labels[i] for i in ticks], rotation=45, ha="right", rotation_mode="anchor", fontsize=7)
    if (figure := ax.get_figure(root=True)) is not None:
        figure.set_layout_engine("tight")


def draw_trend(ax: Axes, xs: list[int], times: np.ndarray, cls: str, index: int, label: str) -> Line2D:
    """One case's line (its time in each run, relative to the first run), a triangle at each lasting step and a
    band per level for its run-to-run noise (``BAND_CAPTION``), all in the line's own colour."""
    logs = np.log(np.asarray(times, dtype=float))
    ys = np.exp(logs - logs[0]) * 100
    colour = COLOURS[index % len(COLOURS)]  # the ``index``-th line's colour and marker
    # Beyond MAX_MARKED runs a mark per run costs most of the drawing: every k-th run is marked, enough to tell lines.
    every = None if len(xs) <= MAX_MARKED else -(-len(xs) // MAX_TICKS)
    line, = ax.plot(xs, ys, ms=3, lw=1, markevery=every, label=label, color=colour, marker=MARKERS[index % len(MARKERS)])
    steps = lasting_steps(logs, DEFAULT_SPREAD[cls], DEFAULT_FLOOR[cls])
    ax.scatter([xs[i] for i in steps], [ys[i] for i in steps], marker="^", s=110, color=colour, edgecolors="k", zorder=3)
    for start, end in itertools.pairwise([0, *steps, len(xs)]):
        if end - start < 2:
            continue  # one run: no band to draw
        level, spread = float(np.median(logs[start:end]) - logs[0]), learned_spread(logs[start:end], cls)
        ax.fill_between([xs[start], xs[end - 1]], 100 * np.exp(level - spread), 100 * np.exp(level + spread),
                        color=colour, alpha=0.1, lw=0, zorder=1, label=f"_noise band of {label}")
    return line


def history_plots(folder: Path, stored: Stored | None = None) -> list[Plot]:
    """The trend plot over a storage folder's runs (``stored``: the folder already loaded)."""
    stored = stored or load_storage(folder)
    caption = ("Time of key cases in each run, as compare judges it (a latency-bound case's fastest round, another's "
               "median), relative to the first run that measured them. A triangle marks a "
               f"lasting step (a new level held for {MIN_STEP_RUNS}+ runs and beyond the case's floor, found by ruptures' "
               "change-point search); run-to-run wobble is not marked. A step resets the baseline compare uses.")
    runs = stored.summaries
    if incomplete := sum(run.incomplete for run in runs):
        caption += f" Incomplete (not at the run's end): {count(incomplete, 'run')}; the cases missing leave gaps."
    if stored.notes:
        caption += f" Skipped, not readable runs: {count(len(stored.notes), 'file')}."
    # A run of other hardware (GPUs, CPU) is no point of this machine's trend (its change would be marked a
    # lasting step): left out, as compare leaves it out of a baseline. Other software on it stays (marked below).
    same = [r for r in runs if not hardware_differences(r.machine_info, runs[-1].machine_info)]
    if len(same) < len(runs):
        caption += f" Left out, of another machine than the newest run's: {count(len(runs) - len(same), 'run')}."
        runs = same
    if len(runs) < 2:
        return [as_plot("history", "Key cases over runs", caption,
                        f"{len(runs)} run in {folder}; trends need two or more (pytest --benchmark-autosave adds "
                        "one per run).")]
    # The key cases: each path at its largest size, the busiest paths first.
    latest = stored.newest.frame
    keys = latest.loc[latest.groupby("path")["nbytes"].idxmax()]
    keys = keys.assign(_o=keys["op"].map(order_of)).sort_values(["_o", "path"]).head(MAX_KEY_CASES)
    fig, ax = subplots(figsize=(10, 4.8))
    for index, (_, key) in enumerate(keys.iterrows()):
        # Each run that measured the case, matched by its whole identity, with the time compare judges
        # (``case_time.time_of``, kept in each run's summary: a trend that drew medians while the gate judged fastest
        # rounds would show steps the gate never saw); never none: the key comes from the newest run.
        wanted = str(key["case_key"])
        xs = [i for i, run in enumerate(runs) if wanted in run.times]
        cls = case_class(int(key["nbytes"]), bool(np.isfinite(key["bandwidth_gbps"])))
        draw_trend(ax, xs, np.asarray([float(runs[i].times[wanted]) for i in xs]), cls, index,
                   f"{key['path']} {format_bytes(key['nbytes'])}")
    caption += " " + BAND_CAPTION
    if _mark_environment(ax, runs):
        caption += (" A dashed line marks a change of software on this hardware (torch, CUDA, driver, ...), named "
                    "beside it: a step there may be the upgrade's.")
    ax.axhline(100, color="k", lw=0.6)
    ratio_axis(ax, "time, % of first run")
    run_ticks(ax, [run.path for run in runs])
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.grid(True, alpha=0.3)
    return [as_plot("history", "Key cases over runs", caption, fig)]


def _mark_environment(ax: Axes, runs: list[RunSummary]) -> bool:
    """A dashed line, named, between two runs whose software differs (``torch 2.12.0 → 2.13.0``); True if any."""
    marked = False
    for i in range(1, len(runs)):
        before, after = runs[i - 1].machine_info, runs[i].machine_info
        if before is not after and (changed := environment_differences(before, after)):
            ax.axvline(i - 0.5, color="0.4", ls="--", lw=0.8)
            ax.annotate("\n".join(changed), (i - 0.5, 0.98), xycoords=("data", "axes fraction"), rotation=90,
                        ha="right", va="top", fontsize=6, color="0.3")
            marked = True
    return marked


#: Runs up to which each run is a dot on the trend's lines: beyond, the dots merge into the line and cost most of
#: the drawing (at 1,000 runs, reading the cached folder and drawing its trend took 5.5 s of CPU with them, 3.8 s without).
MAX_MARKED = 500

#: Run names of one line under the trend plot: beyond this many, evenly spaced ones (10,000 labels are unreadable
#: and slow to draw); a name on several lines takes as many lines' room.
MAX_TICKS = 40


def _ticks(runs: int, lines: int = 1) -> list[int]:
    """The runs whose names label the x axis: all of them, or as many as fit evenly spaced (``MAX_TICKS`` names of
    one line, fewer of several), the first and newest included."""
    most = max(2, MAX_TICKS // lines)
    return list(range(runs)) if runs <= most else sorted({round(i * (runs - 1) / (most - 1)) for i in range(most)})
