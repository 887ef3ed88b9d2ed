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
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import ruptures as rpt

from ..contract import environment_differences, hardware_differences
from ..families import order_of
from ..units import format_bytes
from .noise import DEFAULT_FLOOR, DEFAULT_SPREAD, MIN_SPREAD, case_class, time_of
from .plots import Plot, as_plot
from .results import Results, ResultsError, find_json, load, read_text

__all__ = ["MIN_STEP_RUNS", "Stored", "current_segment", "history_plots", "lasting_steps", "load_storage", "runs_in"]

#: Lines in the trend plot: more than this is unreadable.
MAX_KEY_CASES = 12

#: Runs a level must hold on each side of a step for the step to count (and be accepted).
MIN_STEP_RUNS = 3


#: pytest-benchmark's number of a saved run (``0007_name.json``): the order it saved them in.
_NUMBERED = re.compile(r"(\d{4})_.*\.json(\.gz)?")


def _run_files(folder: Path, notes: list[str]) -> list[Path]:
    """The regular ``*.json`` / ``*.json.gz`` files below ``folder``; anything else of that name (a FIFO would
    block the read forever) is skipped with a note."""
    files = find_json(folder) if not folder.is_dir() else sorted({*folder.rglob("*.json"), *folder.rglob("*.json.gz")})
    kept = []
    for path in files:
        try:
            regular = stat.S_ISREG(path.stat().st_mode)
        except OSError as error:
            regular, why = False, error.strerror or type(error).__name__
        else:
            why = "not a regular file (a FIFO, device or socket)"
        if regular:
            kept.append(path)
        else:
            notes.append(f"{path}: skipped, {why}")
    return kept


def _order(files: list[tuple[Path, str]]) -> list[tuple[Path, str]]:
    """Oldest first. pytest-benchmark numbers the runs it saves, and that number, not a clock that may have been
    set back, says which is newest (as ``--benchmark-compare`` reads it); a folder not entirely numbered is
    ordered by each run's datetime, then name."""
    numbers = [_NUMBERED.fullmatch(path.name) for path, _ in files]
    if files and all(numbers):
        return sorted(files, key=lambda run: (run[0].name[:4], run[1], str(run[0])))
    return sorted(files, key=lambda run: (run[1], run[0].name))


def runs_in(folder: Path) -> list[tuple[Path, str]]:
    """Every run file in the folder with its datetime, oldest first; a damaged or foreign one is a ResultsError."""
    runs = []
    for path in find_json(folder):
        try:
            when = json.loads(read_text(path)).get("datetime") or ""
        except (OSError, ValueError, AttributeError, RecursionError):  # ValueError: not JSON, or not UTF-8
            raise ResultsError(f"{path}: not JSON, or cut short") from None
        runs.append((path, str(when)))
    return _order(runs)


@dataclass
class Stored:
    """The runs of a storage folder that could be read, oldest first, and a note for each file skipped."""

    runs: list[Results]
    notes: list[str] = field(default_factory=list)


def load_storage(folder: Path, progress: Callable[[int, int], None] | None = None) -> Stored:
    """Every run in a storage folder (or one file), each file read once. A damaged file (a save cut short by a
    full disk or a power loss) or a foreign one (not a pytest-benchmark run of xferbench) is skipped with a
    one-line note naming it, never refusing the whole folder; with no readable run left it is a ResultsError.
    ``progress(done, total)`` is called before each file (a folder of thousands of runs takes a while)."""
    notes: list[str] = []
    loaded: list[tuple[Path, str]] = []
    results: dict[Path, Results] = {}
    files = _run_files(folder, notes)
    for done, path in enumerate(files, 1):
        if progress is not None:
            progress(done, len(files))
        try:
            run = load([path])
        except ResultsError as error:
            notes.append(f"{error}; skipped")
            continue
        results[path] = run
        loaded.append((path, str(run.frame["datetime"].iloc[0] or "")))
    if not loaded:
        raise ResultsError(f"{folder}: no readable run in it" + (f" ({notes[0]})" if notes else ""))
    return Stored([results[path] for path, _ in _order(loaded)], notes)


#: Candidate boundaries the change-point search weighs per series: PELT with an L1 cost costs about the square
#: of the candidates (17 s per case at 1,000 runs, every run a candidate), so a longer series is searched on a
#: grid of this many points and each boundary found is then placed exactly (``_refine``).
MAX_CANDIDATES = 60


def lasting_steps(log_times: np.ndarray, spread: float, floor: float) -> list[int]:
    """Indices where a lasting step starts a new level in one case's series of log run-medians.

    PELT's penalty is 2 x spread x ln(n): in L1 units, what chance alone rarely buys
    (a BIC-like price per extra segment); a found boundary is kept only when the
    medians on its two sides differ by more than the floor. Up to ``MAX_CANDIDATES`` runs every run is a
    candidate; beyond, PELT weighs every ``jump``-th run and each boundary is moved to the exact run
    within a ``jump`` of it that best splits its two neighbouring levels, so the cost grows about linearly.
    """
    x = np.asarray(log_times, dtype=float)
    if x.size < 2 * MIN_STEP_RUNS:
        return []
    penalty = 2 * max(spread, MIN_SPREAD) * math.log(x.size)
    jump = max(1, math.ceil(x.size / MAX_CANDIDATES))
    bounds = rpt.Pelt(model="l1", min_size=max(MIN_STEP_RUNS, jump), jump=jump).fit(x.reshape(-1, 1)).predict(pen=penalty)
    edges = [0, *bounds]
    if jump > 1:
        for i in range(1, len(edges) - 1):
            edges[i] = _refine(x, edges[i - 1], edges[i], edges[i + 1], jump)
    steps = []
    for i in range(1, len(edges) - 1):
        before, after = x[edges[i - 1]:edges[i]], x[edges[i]:edges[i + 1]]
        if abs(float(np.median(after) - np.median(before))) > math.log1p(floor):
            steps.append(edges[i])
    return steps


def _refine(x: np.ndarray, start: int, bound: int, end: int, jump: int) -> int:
    """The split of ``x[start:end]`` within ``jump`` of ``bound`` with the least L1 cost (each side about its median),
    keeping ``MIN_STEP_RUNS`` runs a side."""
    def cost(split: int) -> float:
        left, right = x[start:split], x[split:end]
        return float(np.abs(left - np.median(left)).sum() + np.abs(right - np.median(right)).sum())

    lowest, highest = max(start + MIN_STEP_RUNS, bound - jump), min(end - MIN_STEP_RUNS, bound + jump)
    return min(range(lowest, highest + 1), key=cost, default=bound)


def current_segment(log_times: np.ndarray, spread: float, floor: float) -> int:
    """Where the case's current level starts: after its last lasting step (0 if none)."""
    steps = lasting_steps(log_times, spread, floor)
    return steps[-1] if steps else 0


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
    results = stored.runs
    incomplete = sum(bool(r.incomplete) for r in results)
    if incomplete:
        caption += f" {incomplete} run(s) did not reach their end (incomplete): their missing cases leave gaps."
    if stored.notes:
        caption += f" {len(stored.notes)} file(s) that are not readable runs were skipped."
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
    times_by_run = _run_times(results, set(keys["case_key"].astype(str)))
    for _, key in keys.iterrows():
        xs, times = _series(times_by_run, key)  # never empty: the key comes from the newest run
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
    ticks = _ticks(len(results))
    ax.set_xticks(ticks, [Path(results[i].sources[0]).stem[:14] for i in ticks], rotation=45, ha="right", fontsize=7)
    ax.set_ylabel("time, % of first run")
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.grid(True, alpha=0.3)
    return [as_plot("history", "Key cases over runs", caption, fig)]


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


#: Run names under the trend plot: beyond this many, evenly spaced ones (10,000 labels are unreadable and slow to draw).
MAX_TICKS = 40


def _ticks(runs: int) -> list[int]:
    """The runs whose names label the x axis: all of them, or ``MAX_TICKS`` evenly spaced, the newest included."""
    if runs <= MAX_TICKS:
        return list(range(runs))
    return sorted({round(i * (runs - 1) / (MAX_TICKS - 1)) for i in range(MAX_TICKS)})


def _run_times(results: list[Results], keys: set[str]) -> list[dict[str, float]]:
    """Each run's time of the drawn cases, by their whole identity: the one compare judges (``noise.run_time``:
    a trend that drew medians while the gate judged fastest rounds would show steps the gate never saw). Built
    once, from the drawn cases only, so a series is a lookup per run, not a table scan; a case's first row
    where two share an identity."""
    def by_case(run: Results) -> dict[str, float]:
        frame, found = run.frame, {}
        for key, nbytes, gbps, data, low, middle in zip(frame["case_key"], frame["nbytes"], frame["bandwidth_gbps"],
                                                        frame["data"], frame["min_s"], frame["median_s"], strict=True):
            if key in keys and key not in found:
                found[key] = time_of(nbytes, gbps, data, low, middle)
        return found

    return [by_case(run) for run in results]


def _series(times: list[dict[str, float]], key: pd.Series) -> tuple[list[int], list[float]]:
    """(run indices, times) of one case, matched by its whole identity, across the runs that measured it."""
    wanted = str(key["case_key"])
    found = [(index, run[wanted]) for index, run in enumerate(times) if wanted in run]
    # The loader refuses a time that is not above zero.
    return [index for index, _ in found], [float(time) for _, time in found]
