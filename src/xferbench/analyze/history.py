"""Trends over the runs in a pytest-benchmark storage folder (``--benchmark-autosave``)."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from ..families import order_of
from ..units import format_bytes
from .compare import ALPHA, compare
from .plots import Plot, as_plot
from .results import Results, ResultsError, find_json, load

__all__ = ["history_plots", "runs_in"]

#: Lines in the trend plot: more than this is unreadable.
MAX_KEY_CASES = 12


def runs_in(folder: Path) -> list[tuple[Path, str]]:
    """Every run file in the folder with its datetime, oldest first."""
    runs = []
    for path in find_json(folder):
        try:
            when = json.loads(path.read_text()).get("datetime") or ""
        except (OSError, json.JSONDecodeError, AttributeError):
            raise ResultsError(f"{path}: not JSON, or cut short") from None
        runs.append((path, str(when)))
    return sorted(runs, key=lambda run: (run[1], run[0].name))


def _key_cases(latest: pd.DataFrame) -> pd.DataFrame:
    """Each path at its largest size, the busiest paths first."""
    largest = latest.loc[latest.groupby("path")["nbytes"].idxmax()]
    largest = largest.assign(_o=largest["op"].map(order_of)).sort_values(["_o", "path"])
    return largest.head(MAX_KEY_CASES)


def history_plots(folder: Path, threshold: float = 0.10) -> list[Plot]:
    runs = runs_in(folder)
    caption = (f"Median time of key cases in each run, relative to the first run that measured them. A red ring marks a "
               f"regression against the run before (over {threshold:.0%} slower and significant, p < {ALPHA}).")
    if len(runs) < 2:
        return [as_plot("history", "Key cases over runs", caption,
                        f"{len(runs)} run in {folder}; trends need two or more (pytest --benchmark-autosave adds one per run).")]
    results = [load([path]) for path, _ in runs]
    keys = _key_cases(results[-1].frame)
    fig, ax = plt.subplots(figsize=(10, 4.8))
    for _, key in keys.iterrows():
        series = []
        for index, run in enumerate(results):
            row = run.frame[(run.frame["path"] == key["path"]) & (run.frame["nbytes"] == key["nbytes"])]
            if not row.empty:
                series.append((index, float(row["median_s"].iloc[0])))
        if not series:
            continue
        first = series[0][1]
        xs, ys = [i for i, _ in series], [t / first * 100 for _, t in series]
        ax.plot(xs, ys, marker="o", ms=3, lw=1, label=f"{key['path']} {format_bytes(key['nbytes'])}")
        marks = _regressions(results, key, threshold)
        ax.scatter([xs[xs.index(i)] for i in marks if i in xs], [ys[xs.index(i)] for i in marks if i in xs],
                   s=90, facecolors="none", edgecolors="red", linewidths=1.5, zorder=3)
    ax.axhline(100, color="k", lw=0.6)
    ax.set_xticks(range(len(results)), [Path(r.sources[0]).stem[:14] for r in results], rotation=45, ha="right",
                  fontsize=7)
    ax.set_ylabel("median time, % of first run")
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.grid(True, alpha=0.3)
    return [as_plot("history", "Key cases over runs", caption, fig)]


def _regressions(results: list[Results], key: pd.Series, threshold: float) -> list[int]:
    """Run indices at which this case regressed against the run before."""
    marks = []
    for index in range(1, len(results)):
        before, after = (_only(results[index - 1], key), _only(results[index], key))
        if before is None or after is None:
            continue
        rows = compare(before, after, threshold)
        if any(r.regression for r in rows):
            marks.append(index)
    return marks


def _only(run: Results, key: pd.Series) -> Results | None:
    frame = run.frame[(run.frame["path"] == key["path"]) & (run.frame["nbytes"] == key["nbytes"])]
    if frame.empty:
        return None
    return Results(frame, run.machine_info, run.commit_info, run.sources)
