"""matplotlib figures for the report; each returns a Plot, or the reason there is none."""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")  # no display: figures are rendered to PNG for the page

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from ..families import FAMILIES, family, moving_ops
from ..units import format_bytes
from .model import fit_alpha_beta, largest_common_size

__all__ = ["PLOTS", "Plot", "as_plot", "distributed", "render", "scenario_plot", "to_png"]


def _colour(op: str) -> str:
    return FAMILIES[op].colour if op in FAMILIES else "tab:gray"


@dataclass(frozen=True)
class Plot:
    key: str
    title: str
    caption: str
    png_base64: str | None  # None: not drawn, and ``missing`` says why
    missing: str | None = None


def _bytes_axis(ax: plt.Axes) -> None:
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_bytes(v).replace(" ", "")))


def to_png(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def bandwidth_vs_size(frame: pd.DataFrame) -> Figure | str:
    moves = frame[frame["op"].isin(moving_ops())]
    if moves["nbytes"].nunique() < 2:
        return "Only one size was measured; a sweep (for example --xfer-sizes=4B..64MiB) draws this plot."
    ops = [op for op in moving_ops() if op in set(moves["op"])]
    fig, axes = plt.subplots(1, len(ops), figsize=(5.2 * len(ops), 4.2), squeeze=False, sharey=True)
    for ax, op in zip(axes[0], ops, strict=True):
        for path, group in moves[moves["op"] == op].groupby("path", sort=False):
            group = group.sort_values("nbytes")
            line, = ax.plot(group["nbytes"], group["bandwidth_gbps"], marker="o", ms=3, lw=1.2, label=path)
            fit = fit_alpha_beta(group["nbytes"].to_numpy(), group["median_s"].to_numpy())
            if fit is not None:
                n = np.geomspace(group["nbytes"].min(), group["nbytes"].max(), 60)
                ax.plot(n, n / fit.seconds(n) / 1e9, ls="--", lw=0.8, color=line.get_color())
        _bytes_axis(ax)
        ax.set_yscale("log")
        ax.set_title(op)
        ax.set_xlabel("payload")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6, loc="upper left")
    axes[0][0].set_ylabel("bandwidth (GB/s, bytes counted once)")
    return fig


def cost_at_size(frame: pd.DataFrame) -> Figure | str:
    size = largest_common_size(frame)
    if size is None:
        return "No copies were measured."
    rows = frame[(frame["nbytes"] == size) & frame["op"].isin(moving_ops())].sort_values("median_s")
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(rows) + 1.4))
    ax.barh(rows["path"], rows["median_s"] * 1e3, color=[_colour(op) for op in rows["op"]])
    for y, (ms, gbps) in enumerate(zip(rows["median_s"] * 1e3, rows["bandwidth_gbps"], strict=True)):
        ax.text(ms, y, f"  {ms:.3g} ms, {gbps:.3g} GB/s", va="center", fontsize=7)
    ax.set_xlabel(f"median time to move {format_bytes(size)} (ms, shorter is better)")
    ax.set_xlim(0, rows["median_s"].max() * 1e3 * 1.45)
    ax.invert_yaxis()
    ax.tick_params(axis="y", labelsize=7)
    return fig


def device_matrix(frame: pd.DataFrame) -> Figure | str:
    moves = frame[frame["op"].isin(moving_ops())]
    devices = sorted(set(moves["src"]) | set(moves["dst"]), key=lambda d: (d != "cpu", d))
    if len(devices) < 2:
        return "Only the CPU was measured: the matrix needs at least two devices (a GPU and the host)."
    size = largest_common_size(frame)
    best = moves[moves["nbytes"] == size].groupby(["src", "dst"])["bandwidth_gbps"].max()
    grid = np.full((len(devices), len(devices)), np.nan)
    for (src, dst), gbps in best.items():
        grid[devices.index(src), devices.index(dst)] = gbps
    fig, ax = plt.subplots(figsize=(1.3 * len(devices) + 2.5, 1.1 * len(devices) + 1.5))
    image = ax.imshow(grid, cmap="viridis")
    for i in range(len(devices)):
        for j in range(len(devices)):
            text = "-" if np.isnan(grid[i, j]) else f"{grid[i, j]:.3g}"
            ax.text(j, i, text, ha="center", va="center", color="w", fontsize=9)
    ax.set_xticks(range(len(devices)), devices)
    ax.set_yticks(range(len(devices)), devices)
    ax.set_xlabel("destination")
    ax.set_ylabel("source")
    fig.colorbar(image, label=f"best GB/s at {format_bytes(size)}")
    return fig


def creation(frame: pd.DataFrame) -> Figure | str:
    created = frame[frame["op"] == "create"]
    if created.empty:
        return "No creation benchmarks were run."
    devices = sorted(set(created["dst"]), key=lambda d: (d != "cpu", d))
    fig, axes = plt.subplots(1, len(devices), figsize=(5 * len(devices), 4), squeeze=False, sharey=True)
    for ax, device in zip(axes[0], devices, strict=True):
        for method, group in created[created["dst"] == device].groupby("method"):
            group = group.sort_values("nbytes")
            ax.plot(group["nbytes"], group["median_s"] * 1e6, marker="o", ms=3, label=f"torch.{method}")
        _bytes_axis(ax)
        ax.set_yscale("log")
        ax.set_title(f"created on {device}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("median time (µs)")
    return fig


def noop_vs_copy(frame: pd.DataFrame) -> Figure | str:
    noops = frame[frame["op"] == "noop"]
    copies = frame[frame["op"].isin(moving_ops())]
    if noops.empty:
        return "No no-op benchmarks were run."
    per_call = noops.groupby(["method", "src"])["median_s"].median().reset_index()
    labels = [f".{m}() on {d}" if m != "to" else f".to({d}) on {d}" for m, d in zip(per_call["method"], per_call["src"],
                                                                                      strict=True)]
    values = list(per_call["median_s"] * 1e6)
    colours = [_colour("noop")] * len(values)
    if not copies.empty:
        cheapest = copies.loc[copies["median_s"].idxmin()]
        labels.append(f"cheapest real copy: {cheapest['path']} ({format_bytes(cheapest['nbytes'])})")
        values.append(cheapest["median_s"] * 1e6)
        colours.append(_colour(cheapest["op"]))
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(values) + 1.3))
    ax.barh(labels, values, color=colours)
    for y, v in enumerate(values):
        ax.text(v, y, f"  {v * 1e3:.0f} ns", va="center", fontsize=8)
    ax.set_xlim(0, max(values) * 1.3)
    ax.invert_yaxis()
    ax.set_xlabel("median time per call (µs)")
    return fig


def wall_vs_device(frame: pd.DataFrame) -> Figure | str:
    timed = frame[pd.to_numeric(frame["device_seconds"], errors="coerce").notna() & frame["op"].isin(moving_ops())]
    if timed.empty:
        return "No device-side (CUDA event) times were recorded: no GPU was measured."
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for path, group in timed.groupby("path", sort=False):
        group = group.sort_values("nbytes")
        overhead = (group["median_s"] - group["device_seconds"].astype(float)) / group["median_s"]
        ax.plot(group["nbytes"], overhead * 100, marker="o", ms=3, lw=1, label=path)
    _bytes_axis(ax)
    ax.set_ylim(-5, 105)
    ax.set_ylabel("share of wall time not spent on the device (%)")
    ax.set_xlabel("payload")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6)
    return fig


#: key, title, caption, drawing function.
PLOTS: list[tuple[str, str, str, Callable[[pd.DataFrame], Figure | str]]] = [
    ("bandwidth", "Bandwidth against payload size",
     "Each line is one transfer path; dashed lines are the fitted t = α + n/β model. Where a line still climbs, "
     "moves of that size are latency-bound (fixed cost dominates); where it flattens, they are bandwidth-bound. "
     "Compare the d2h pageable lines with the pinned ones. Host copies that fit in the CPU's caches run faster "
     "than memory allows, which bends their fit.", bandwidth_vs_size),
    ("cost", "What one large move costs, path by path",
     "Time for the same payload along every path, shortest first. Device-to-host into pageable memory sits near "
     "the bottom: the driver stages it through a pinned bounce buffer and the call waits for queued GPU work.",
     cost_at_size),
    ("matrix", "Source to destination bandwidth",
     "Best bandwidth measured for each source (row) and destination (column), like p2pBandwidthLatencyTest's matrix. "
     "The diagonal is same-device copy bandwidth; off-diagonal GPU pairs are peer copies.", device_matrix),
    ("create", "Creating tensors on each device", family("create").caption, creation),
    ("noop", "No-op moves next to the cheapest real copy", family("noop").caption, noop_vs_copy),
    ("overhead", "Wall time against device time",
     "How much of each move's wall time is spent outside the device (launch, driver, synchronization). Near 100% "
     "at small sizes: small moves are pure overhead, so batch them.", wall_vs_device),
]


def as_plot(key: str, title: str, caption: str, figure: Figure | str) -> Plot:
    """A drawn figure as an inline PNG, or the reason it could not be drawn."""
    if isinstance(figure, str):
        return Plot(key, title, caption, None, figure)
    return Plot(key, title, caption, to_png(figure))


def render(frame: pd.DataFrame) -> list[Plot]:
    return [as_plot(key, title, caption, draw(frame)) for key, title, caption, draw in PLOTS]


def scenario_plot(frame: pd.DataFrame, op: str) -> Figure | str:
    """Median time per variant and device for one scenario, against its size."""
    rows = frame[frame["op"] == op]
    if rows.empty:
        return f"No {op} benchmarks were run."
    if rows["nbytes"].nunique() == 1:
        rows = rows.sort_values("median_s")
        fig, ax = plt.subplots(figsize=(8, 0.4 * len(rows) + 1.3))
        ax.barh(rows["path"], rows["median_s"] * 1e3, color="tab:cyan")
        for y, ms in enumerate(rows["median_s"] * 1e3):
            ax.text(ms, y, f"  {ms:.3g} ms", va="center", fontsize=8)
        ax.set_xlim(0, rows["median_s"].max() * 1e3 * 1.35)
        ax.invert_yaxis()
        ax.set_xlabel(f"median time (ms) at {format_bytes(rows['nbytes'].iloc[0])}")
        return fig
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for path, group in rows.groupby("path", sort=False):
        group = group.sort_values("nbytes")
        ax.plot(group["nbytes"], group["median_s"] * 1e3, marker="o", ms=3, label=path)
    _bytes_axis(ax)
    if rows["median_s"].max() > 3 * rows["median_s"].min():
        ax.set_yscale("log")
    else:  # nearly flat (a second module.to): a log axis would magnify noise into a slope
        ax.set_ylim(0, rows["median_s"].max() * 1e3 * 1.2)
    ax.set_xlabel("payload (bytes moved or held)")
    ax.set_ylabel("median time (ms)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return fig


def distributed(frame: pd.DataFrame) -> Figure | str:
    """Bus bandwidth of each collective and point-to-point op against size."""
    rows = frame[frame["world_size"].notna()]
    if rows.empty:
        return "No distributed benchmarks were run."
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.3))
    for path, group in rows.groupby("path", sort=False):
        group = group.sort_values("nbytes")
        left.plot(group["nbytes"], group["busbw_gbps"], marker="o", ms=3, label=path)
    p2p = rows[rows["op"].isin(("send_recv", "isend_irecv"))]
    for path, group in p2p.groupby("path", sort=False):
        group = group.sort_values("nbytes")
        right.plot(group["nbytes"], group["transfer_s"] * 1e6, marker="o", ms=3, label=path)
    for ax in (left, right):
        _bytes_axis(ax)
        ax.set_yscale("log")
        ax.set_xlabel("payload")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    left.set_ylabel("bus bandwidth (GB/s, nccl-tests convention)")
    right.set_ylabel("one-way time, half a round trip (µs)")
    return fig


DISTRIBUTED_TEXT = (
    "Between processes (torch.distributed)",
    "Left: bus bandwidth, nccl-tests' convention: algbw = bytes / time, busbw = algbw x 2(n-1)/n for all_reduce, "
    "(n-1)/n for all_gather and reduce_scatter, 1 for broadcast and point-to-point, so figures compare with the link's "
    "speed whatever the number of ranks. Right: point-to-point one-way time (half of a ping-pong round trip): the "
    "latency floor of every message. The link between ranks is not in the fingerprint (loopback or a network), so "
    "no efficiency is claimed.",
)
