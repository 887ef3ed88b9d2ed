"""One figure per scenario or concurrent family: GB/s bars, time bars, or time against size, from its rows."""

from __future__ import annotations

import itertools

import matplotlib
import pandas as pd
from matplotlib.figure import Figure

from ...units import format_bytes, format_number, format_seconds, mathtext_safe
from ..view import RunView
from .series import case_labels
from .svg import WIDTH, legend_outside, log_y, size_ticks, subplots, tip, tips_for

__all__ = ["scenario_plot"]


def scenario_plot(view: RunView, op: str) -> Figure | str:
    """One scenario's figure: bandwidth bars where each call moves one payload size (bidir's both ways
    at once against one way), time bars where all share one size, else time against size."""
    rows = view.rows[view.rows["op"] == op]
    if rows.empty:
        return f"No {op} benchmarks were run."
    if op == "numa" and rows["host_numa_node"].nunique() < 2:
        return ("One NUMA placement was measured (one node): there is no other node to compare it with, so the "
                "figure is left out.")
    if rows["bandwidth_gbps"].notna().all() and (rows.groupby("path")["nbytes"].nunique() == 1).all():
        return _scenario_bandwidth_bars(rows)
    return _scenario_time_bars(rows) if rows["nbytes"].nunique() == 1 else _scenario_lines(rows)


def _scenario_bandwidth_bars(rows: pd.DataFrame) -> Figure:
    # One dot per call on a time-against-size chart says nothing when the calls move different
    # payloads (both directions at once move twice one direction's bytes): GB/s compares them.
    fig, ax = subplots(figsize=(WIDTH, 0.3 * len(rows) + 1.0))
    bars = ax.barh(range(len(rows)), rows["bandwidth_gbps"], color="tab:cyan")
    ax.set_yticks(range(len(rows)), [mathtext_safe(label) for label in case_labels(rows)])
    for y, (bar, (_, row)) in enumerate(zip(bars.patches, rows.iterrows(), strict=True)):
        tip(bar, [f"{row['path']}: {format_number(row['bandwidth_gbps'])} GB/s, {format_bytes(row['nbytes'])} "
                  f"in {format_seconds(row['median_s'])} (median)"])
        ax.text(row["bandwidth_gbps"], y, f"  {format_number(row['bandwidth_gbps'])} GB/s ({format_bytes(row['nbytes'])})",
                va="center", fontsize=8)
    low, high = rows["bandwidth_gbps"].min(), rows["bandwidth_gbps"].max()
    log = 0 < 20 * low < high  # host links and device memory in one figure (copy_kind): linear hides the host bars
    if log:
        ax.set_xscale("log")
        ax.set_xlim(low / 2, high * 6)
    else:
        ax.set_xlim(0, max(high, 1e-9) * 1.35)
    ax.invert_yaxis()
    ax.set_xlabel("bandwidth (GB/s): bytes moved / median time" + (", log scale" if log else ""))
    return fig


def _scenario_time_bars(rows: pd.DataFrame) -> Figure:
    rows = rows.sort_values("median_s")
    fig, ax = subplots(figsize=(WIDTH, 0.3 * len(rows) + 1.0))
    bars = ax.barh(range(len(rows)), rows["median_s"] * 1e3, color="tab:cyan")
    ax.set_yticks(range(len(rows)), [mathtext_safe(label) for label in case_labels(rows)])
    for y, (bar, path, seconds) in enumerate(zip(bars.patches, rows["path"], rows["median_s"], strict=True)):
        tip(bar, [f"{path}: median {format_seconds(seconds)}"])
        ax.text(seconds * 1e3, y, f"  {seconds * 1e3:.3g} ms", va="center", fontsize=8)
    ax.set_xlim(0, rows["median_s"].max() * 1e3 * 1.35)
    ax.invert_yaxis()
    ax.set_xlabel(f"median time (ms) at {format_bytes(rows['nbytes'].iloc[0])}")
    return fig


def _scenario_device(row: pd.Series) -> str:
    return str(row["dst"] if row["dst"] != "cpu" else row["src"])


def _scenario_lines(rows: pd.DataFrame) -> Figure:
    # A colour per variant, a line style per device: identical GPUs draw the same curve, and
    # a colour per path would hide all but the last one's colour under it.
    devices = list(dict.fromkeys(_scenario_device(row) for _, row in rows.iterrows()))
    styles = dict(zip(devices, itertools.cycle(["-", "--", ":", "-."]), strict=False))
    variants = list(dict.fromkeys(str(v) for v in rows["variant"]))
    colours = dict(zip(variants, itertools.cycle(matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]), strict=False))
    fig, ax = subplots(figsize=(WIDTH * 0.7, 2.5))
    handles, labels = [], []
    for path, group in rows.groupby(case_labels(rows, sized=False), sort=False):
        group = group.sort_values("nbytes")
        first = group.iloc[0]
        line, = ax.plot(group["nbytes"], group["median_s"] * 1e3, marker="o", ms=4,
                        color=colours[str(first["variant"])], linestyle=styles[_scenario_device(first)])
        tip(line, tips_for(group, lambda row: f"median {format_seconds(row['median_s'])}"))
        handles.append(line)
        labels.append(str(path))
    size_ticks(ax, rows["nbytes"].tolist())
    if rows["median_s"].max() > 3 * rows["median_s"].min():
        log_y(ax)
    else:  # nearly flat (a second module.to): a log axis would magnify noise into a slope
        ax.set_ylim(0, rows["median_s"].max() * 1e3 * 1.2)
    ax.set_xlabel("payload (bytes moved or held)")
    ax.set_ylabel("median time (ms)")
    legend_outside(fig, handles, labels)
    return fig

