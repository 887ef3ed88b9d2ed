"""The report's core figures (bandwidth per family, routes, the matrix, creation, no-ops, wall against device
time), each a Plot or the reason there is none; svg.py writes them as inline SVG with hover titles."""

from __future__ import annotations

import functools
import math
import textwrap
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, NullFormatter

from ...families import FAMILIES, family, moving_ops
from ...units import format_bytes, format_number, format_seconds, mathtext_safe
from ..model import COPY_TOUCHES, Fit, cache_bytes, fit_path
from ..view import RunView
from .ladder_plots import ladder_figure
from .noop_plot import family_colour, noop_vs_copy
from .scenario_plots import scenario_plot
from .series import run_of
from .svg import (
    ON_TICKS,
    WIDTH,
    Plot,
    as_plot,
    bytes_said,
    legend_outside,
    log_y,
    roof_share,
    size_ticks,
    subplots,
    tip,
    tips_for,
    to_svg,
)

__all__ = ["Plot", "as_plot", "ladder_figure", "render", "scenario_plot", "tip", "to_svg"]

#: Colours of the calls timed, the same in every figure.
#: The legend of a point whose bytes set little of its time (``RunView.waits``): its hover says how little.
WAITED_MARK = "×: no bandwidth (‡ in the appendix)"
METHOD_COLOURS = {"to": "tab:blue", "cuda": "tab:orange", "copy_": "tab:green", "cpu": "tab:red",
                  "clone": "tab:purple", "empty": "tab:gray", "zeros": "tab:brown", "ones": "tab:pink",
                  "rand": "tab:olive"}


def _facets(rows: pd.DataFrame, op: str) -> tuple[list[str], list[str | None]]:
    """Panel rows (one per GPU, or the host) and columns (host memory kinds, when there are several)."""
    panel_rows = sorted(set(rows["dst"] if op == "h2d" else rows["src"]), key=lambda d: (d != "cpu", d))
    memories = [m for m in ("pageable", "pinned") if (rows["host_memory"] == m).any()]
    return panel_rows, (list(memories) if op in ("h2d", "d2h") and len(memories) > 1 else [None])


def _line_label(row: pd.Series, op: str) -> str:
    label = f".{row['method']}()" if row["method"] != "copy_" else "copy_()"
    if op == "peer":
        label += f" → {row['dst']}"
    if row["non_blocking"]:
        label += " non_blocking"
    if isinstance(row.get("variant"), str) and op in ("host", "h2d", "d2h"):
        label += f" {row['variant'].replace('_', '-')}"  # copy_() single-thread: its own line and legend entry
    return label


def _largest_size_gbps(rows: pd.DataFrame, view: RunView) -> tuple[float, str]:
    """The highest bandwidth any path of ``rows`` reached at its own largest size (what "share of roof" divides), and
    what the roof's label says of it: the call, or, where the run cannot tell other calls from it, how many calls it
    is the fastest of (no ranking among them)."""
    if rows.empty:
        return float("nan"), ""
    last = rows.sort_values("nbytes").groupby("path").last()
    best = last.loc[last["bandwidth_gbps"].idxmax()]
    tied = sum(_bandwidth_tied(view, best, other) for _, other in last.iterrows())
    if tied > 1:
        return float(best["bandwidth_gbps"]), f"fastest of {tied} calls it cannot be told from, at its largest size"
    return float(best["bandwidth_gbps"]), f"{_line_label(best, str(best['op']))}, the best at its largest size"


def _bandwidth_tied(view: RunView, one: pd.Series, other: pd.Series) -> bool:
    """Whether two paths' bandwidths at their largest sizes can't be ordered: the same row, or the two times at one
    size with their ratio unresolved; at different sizes, bandwidths that lie within 1% (no interval spans sizes)."""
    if one["nbytes"] == other["nbytes"]:
        return _tied(view, one, other)
    low, high = sorted((float(one["bandwidth_gbps"]), float(other["bandwidth_gbps"])))
    return high <= 1.01 * low


def _draw_roofs(ax: Axes, bounds: list[tuple[float, str]], reached: tuple[float, str],
                practical: tuple[float, float] | None = None) -> bool:
    """Each bound as a horizontal line, labelled directly with its figure and the share of it the panel's paths
    reached at their largest size (``roof_share``, as the table gives it).

    Labels alternate between the left and the right end, so two close roofs do not print over each other;
    the axis leaves room above the highest one for its label's lines. True when a roof was drawn."""
    for index, (peak, name) in enumerate(bounds):
        ax.axhline(peak, color="k", lw=1, ls=(0, (6, 3)), alpha=0.7)
        share = roof_share(reached[0], peak, practical if name.startswith("PCIe") else None)
        said = f"{reached[1]}: {share}" if share != "–" else ""
        # wrapped to about the panel's width in 7.5 pt characters: a longer line runs past its axes into the next
        label = "\n".join([f"{name}: {format_number(peak)} GB/s",
                           *textwrap.wrap(said, 140 // getattr(ax.get_gridspec(), "ncols", 1))])
        text = ax.text((0.01, 0.99)[index % 2], peak, label, transform=ax.get_yaxis_transform(), va="bottom",
                       ha=("left", "right")[index % 2], fontsize=7.5, color="k",
                       bbox={"facecolor": "white", "alpha": 0.7, "lw": 0, "pad": 1})
        tip(text, [f"roof: {name}, {format_number(peak, 4)} GB/s per direction" + (f"; {said}" if said else "")])
        if index == 0:  # the highest (bounds come highest first): room above it, half a decade a line of its label
            ax.set_ylim(ax.get_ylim()[0], max(ax.get_ylim()[1], peak * 3 ** (label.count("\n") + 1)))
    return bool(bounds)


def _cache_line(ax: Axes, view: RunView, op: str, src: str, sizes: pd.Series) -> None:
    """Where a copy's read and write (2n bytes) stop fitting in the cache: a reference line, not a shading, where it
    falls among the sizes drawn (``sizes``; its label, unclipped, would widen the figure past its page).
    Only points faster than memory allows are marked (hollow), whichever side of it they fall on."""
    cache = cache_bytes(view.fingerprint, op, src)
    if cache is None or not sizes.min() < (edge := cache[0] / COPY_TOUCHES) < sizes.max():
        return
    ax.axvline(edge, color="0.6", lw=0.8, ls=":", zorder=0)
    ax.text(edge, 0.02, f"2n = {cache[1]} ({format_bytes(cache[0])}) ", transform=ax.get_xaxis_transform(),
            ha="right", va="bottom", fontsize=7, color="0.35")


def bandwidth_of(view: RunView, op: str, cliff: str | None = None) -> Figure | str:
    """One family's bandwidth against size, faceted by GPU (rows) and host memory (columns), with its roofs; a cliff
    in device-to-host pageable moves is marked with its figures and ``cliff``, its cause in words."""
    frame = view.rows
    rows = frame[(frame["op"] == op) & frame["bandwidth_gbps"].notna()]
    if rows["nbytes"].nunique() < 2:
        return "Fewer than two sizes were measured; a sweep (for example --xfer-sizes=4B..64MiB) draws this plot."
    if view.waiting(rows).all():  # crosses alone under a caption of lines: the loaded run's host copies, 4 B to 1 KiB
        return "no size states a bandwidth in this run (the appendix says why of each size)."
    resident = view.resident.loc[rows.index]
    panel_rows, columns = _facets(rows, op)
    fig, axes = subplots(len(panel_rows), len(columns), figsize=(WIDTH, 2.7 * len(panel_rows) + 0.6),
                         squeeze=False, sharex=True, sharey=True, layout="tight")
    legend: dict[str, Artist] = {}
    roofed = False
    for r, device in enumerate(panel_rows):
        for c, memory in enumerate(columns):
            ax = axes[r][c]
            panel = rows[(rows["dst"] if op == "h2d" else rows["src"]) == device]
            if memory is not None:
                panel = panel[panel["host_memory"] == memory]
            first = panel.iloc[0] if not panel.empty else None
            bounds = [] if first is None else view.roofs(op, str(first["src"]), str(first["dst"]), first["host_memory"])
            _bandwidth_panel(ax, panel, op, resident, legend, min(bounds, default=None), view)
            log_y(ax)
            if first is not None:
                _cache_line(ax, view, op, str(first["src"]), rows["nbytes"])
                practical = view.practical(op, str(first["src"]), str(first["dst"]))
                roofed |= _draw_roofs(ax, bounds, _largest_size_gbps(panel, view), practical if memory == "pinned" else None)
                if op == "d2h" and memory == "pageable":
                    _mark_cliff(ax, view, cliff)
            where = f"{'to' if op == 'h2d' else 'from'} {device}" if op != "host" else "host memory"
            ax.set_title(mathtext_safe(f"{where}" + (f", {memory} host memory" if memory else "")), fontsize=10)
            size_ticks(ax, rows["nbytes"].tolist())
            if r == len(panel_rows) - 1:
                ax.set_xlabel("payload")
        axes[r][0].set_ylabel("GB/s (bytes counted once)")
    if resident.any():
        legend["hollow: faster than memory allows"] = Line2D([], [], marker="o", ls="", mfc="white", mec="0.3")
    if view.waiting(rows).any():
        legend[WAITED_MARK] = Line2D([], [], marker="x", ls="", mec="0.3")
    legend["dotted: fitted t = α + n/β"] = Line2D([], [], color="0.3", ls=":", lw=1)
    if roofed:
        legend["dashed black: roof"] = Line2D([], [], color="k", ls=(0, (6, 3)), lw=1)
    legend_outside(fig, list(legend.values()), list(legend), title="call")
    return fig


def _bandwidth_panel(ax: Axes, panel: pd.DataFrame, op: str, resident: pd.Series, legend: dict[str, Artist],
                     roof: tuple[float, str] | None, view: RunView) -> None:
    """One line per call; each point's hover text gives its GB/s and, under a known roof, its share of it."""

    def value(row: pd.Series) -> str:
        if row.name in view.no_bandwidth:  # the appendix's ‡: no share of a roof for a rate that is no bandwidth
            return (f"no bandwidth (bytes / median gives {format_number(row['bandwidth_gbps'], 4)} GB/s): "
                    f"{bytes_said(view.no_bandwidth[row.name])}")
        share = f" = {row['bandwidth_gbps'] / roof[0]:.0%} of {format_number(roof[0], 4)} GB/s, {roof[1]}" if roof else ""
        return f"{format_number(row['bandwidth_gbps'], 4)} GB/s{share}"

    for _, group in panel.groupby(["path", "run"], sort=False):  # a line is one run's
        group = group.sort_values("nbytes")
        first = group.iloc[0]
        label = _line_label(first, op) + run_of(panel, first)
        colour = METHOD_COLOURS.get(str(first["method"]), family_colour(op))
        if isinstance(first.get("variant"), str):
            colour = "tab:cyan"  # a second way of running the same call (single_thread): never its call's colour
        style = "--" if first["non_blocking"] else "-"
        if op == "peer":
            colour = f"C{sorted(set(panel['dst'])).index(first['dst']) % 10}"
            style = "-" if first["method"] == "to" else "--"
        inside, waited = resident[group.index].to_numpy(), view.waiting(group)
        ax.plot(group["nbytes"], group["bandwidth_gbps"], color=colour, ls=style, lw=1.3)
        # Markers apart from the line, each carrying its hover text: filled beyond the cache, hollow inside it, a cross
        # where the bytes set little of the time (the appendix's ‡: no bandwidth)
        for points, face, marker in ((group[~inside & ~waited], colour, "o"), (group[inside & ~waited], "white", "o"),
                                     (group[waited], colour, "x")):
            if not points.empty:
                marks, = ax.plot(points["nbytes"], points["bandwidth_gbps"], ls="", marker=marker, ms=4, mfc=face, mec=colour)
                tip(marks, tips_for(points, value, resident))
        fit = view.fit_of(str(first["path"])) or fit_path(group, resident)  # the view's fit, as the table states it
        if str(fit["beta_basis"]).startswith("fit"):  # a capped or measured β has no curve to show
            beyond = group[~inside]
            n = np.geomspace(beyond["nbytes"].min(), beyond["nbytes"].max(), 40)
            model = Fit(fit["alpha_us"] / 1e6, fit["beta_gbps"], len(beyond))
            ax.plot(n, n / model.seconds(n) / 1e9, ls=":", lw=1, color=colour, alpha=0.8)
        legend.setdefault(label, Line2D([], [], color=colour, ls=style, marker="o", ms=4))


def _mark_cliff(ax: Axes, view: RunView, cause: str | None) -> None:
    """Label the .cpu() / .to(device) cliff on the figure itself, with its cause as far as this run measured it."""
    if (found := view.cliff) is None:
        return
    low = float(found["gbps_after"].min())
    # Each call's own pair of figures: the highest before and the lowest after came from two calls on the H200 sample.
    calls = ", ".join(f"{_CALLS.get(str(method), method)} {format_number(float(before))} → "
                      f"{format_number(float(found['gbps_after'][method]))}" for method, before in found["gbps_before"].items())
    text = (f"cliff: {calls} GB/s\n"
            f"from {format_bytes(found['before'])} to {format_bytes(found['after'])}"
            + (f"\n{textwrap.fill(cause, 44)}" if cause else ""))
    note = ax.annotate(mathtext_safe(text), xy=(found["after"], low), xytext=(0.36, 0.42), textcoords="axes fraction",
                       va="top", ha="left", fontsize=7.5, color="tab:red",
                       bbox={"facecolor": "white", "alpha": 0.85, "lw": 0.5, "edgecolor": "tab:red", "pad": 2},
                       arrowprops={"arrowstyle": "->", "color": "tab:red", "lw": 1})
    tip(note, [text.replace("\n", " ")])


#: The usual calls back to the CPU by their method.
_CALLS = {"cpu": ".cpu()", "to": ".to(device)"}


def _route(row: pd.Series) -> str:
    """A path without its call: op, host memory, blocking mode, devices."""
    memory = [row["host_memory"]] if isinstance(row["host_memory"], str) else []
    return " ".join([str(row["op"]), *memory, *(["non-blocking"] if row["non_blocking"] else []),
                     row["src"] if row["src"] == row["dst"] else f"{row['src']}->{row['dst']}"])


def _call(row: pd.Series, brackets: str = "") -> str:
    """A call as the route chart names it: ``copy_``, its variant beside it where it has one (``copy_ single_thread``),
    so two calls of one method on a route read apart."""
    variant = row.get("variant")
    return f"{row['method']}{brackets}" + (f" {variant}" if isinstance(variant, str) and variant else "")


def _gbps(row: pd.Series) -> str:
    """``, 3.36 GB/s`` beside a time; none where the bytes set little of it (``waited``: the appendix's ‡) or the row
    states none (``RunView.rows``: on the scheduler's ticks, or of mixed timings)."""
    return "" if row["waited"] or pd.isna(row["bandwidth_gbps"]) else f", {format_number(row['bandwidth_gbps'])} GB/s"


def _route_labels(view: RunView, rows: pd.DataFrame, fastest: pd.DataFrame) -> list[str]:
    """Each bar's label: its route, then its fastest call in brackets, or how many of its calls the run cannot tell
    from that one (no ranking among them); ``≈`` before a route the run cannot tell from the route above it."""
    labels, above = [], None
    for _, row in fastest.iterrows():
        tied = [c for _, c in rows[rows["route"] == row["route"]].iterrows() if _tied(view, c, row)]
        which = f"{len(tied)} calls; fastest: can't tell" if len(tied) > 1 else _call(row)
        labels.append(f"{'≈ ' if above is not None and _tied(view, row, above) else ''}{row['route']}  ({which})")
        above = row
    return labels


def _tied(view: RunView, one: pd.Series, other: pd.Series) -> bool:
    """Whether two cases' order can't tell: the same row, or their ratio unresolved (``RunView.ratio``)."""
    return bool(one.name == other.name or not view.ratio(one, other).resolved)


def cost_at_size(view: RunView) -> Figure | str:
    """One bar per route (op, memory, blocking, devices): its fastest call, solid, in front of its
    slowest, pale, so a call that costs far more on the same route (``.cpu()`` allocating new
    pageable memory, against ``copy_`` into a buffer that exists) is not hidden; every call is in
    the bar's hover text."""
    frame, size = view.rows, view.largest_size
    if size is None:
        return "No copies were measured."
    # torch's copy_ on one thread is the host's roof, not a call a move makes: the first screen's table leaves it out too
    rows = frame[(frame["nbytes"] == size) & frame["op"].isin(moving_ops()) & frame["variant"].ne("single_thread")]
    # waited: its bytes set little of its time (the appendix's ‡); cpu: its rounds waited for the CPU (marked, no GB/s)
    rows = rows.assign(route=[_route(row) for _, row in rows.iterrows()], waited=view.waiting(rows),
                       cpu=view.waited_for_cpu.loc[rows.index])
    fastest = rows.loc[rows.groupby("route")["median_s"].idxmin()].sort_values("median_s")
    slowest = rows.loc[rows.groupby("route")["median_s"].idxmax()].set_index("route").loc[fastest["route"]]
    fig, ax = subplots(figsize=(WIDTH, 0.3 * len(fastest) + 1.2))
    labels = [mathtext_safe(label) for label in _route_labels(view, rows, fastest)]
    colours = [family_colour(op) for op in fastest["op"]]
    ax.barh(labels, slowest["median_s"].to_numpy() * 1e3, color=colours, alpha=0.3)
    bars = ax.barh(labels, fastest["median_s"] * 1e3, color=colours)
    for bar, (_, row), (_, slow) in zip(bars.patches, fastest.iterrows(), slowest.iterrows(), strict=True):
        calls = rows[rows["route"] == row["route"]].sort_values("median_s")
        tip(bar, [f"{row['route']}, {format_bytes(size)}:\n" + "\n".join(
            f".{_call(c)}: median {format_seconds(c['median_s'])}{_gbps(c)}{ON_TICKS * c['cpu']}" for _, c in calls.iterrows())])
        text = f"  {format_seconds(row['median_s'])}{_gbps(row)}{ON_TICKS * row['cpu']}"
        if slow["median_s"] > 1.5 * row["median_s"]:  # worth a word: the same route, a much dearer call
            text += f";  slowest .{_call(slow, '()')}: {format_seconds(slow['median_s'])}{_gbps(slow)}{ON_TICKS * slow['cpu']}"
        ax.text(max(bar.get_width(), slow["median_s"] * 1e3), bar.get_y() + bar.get_height() / 2, mathtext_safe(text),
                va="center", fontsize=8)
    ax.set_xlabel(f"median time to move {format_bytes(size)} (ms, shorter is better); solid: the lowest median of each "
                  "route, pale: its highest; ≈: can't tell from the route above")
    ax.set_xlim(0, slowest["median_s"].max() * 1e3 * 1.6)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_number(v)))  # 1,500 ms, as the tables write it
    ax.set_ylim(len(fastest) - 0.5, -0.5)
    ax.tick_params(axis="y", labelsize=8)
    return fig


def device_matrix(view: RunView) -> Figure | str:
    moves = view.rows[view.rows["op"].isin(moving_ops())]
    devices = sorted(set(moves["src"]) | set(moves["dst"]), key=lambda d: (d != "cpu", d))
    if len(devices) < 2:
        return "Only the CPU was measured: the matrix needs at least two devices (a GPU and the host)."
    if len(devices) < 3:
        return (f"One GPU: the matrix would be 2x2 ({devices[0]} and {devices[1]}), the same figures as the bandwidth "
                "figures above; it carries information from two GPUs on.")
    if (size := view.largest_size) is None:
        return "No copies were measured."
    at = moves[(moves["nbytes"] == size) & ~view.waiting(moves)]  # a ‡ rate is no bandwidth: "–"
    best = at.groupby(["src", "dst"])["bandwidth_gbps"].max()
    grid = best.unstack().reindex(index=devices, columns=devices).to_numpy(dtype=float)
    fig, ax = subplots(figsize=(1.2 * len(devices) + 3, 1.0 * len(devices) + 1.6))
    finite = grid[np.isfinite(grid) & (grid > 0)]
    # Log scale: same-device copies (hundreds of GB/s) and links (tens) differ by an order of magnitude or more.
    norm = LogNorm(vmin=finite.min(), vmax=max(finite.max(), finite.min() * 1.01))
    image = ax.imshow(np.where(np.isfinite(grid) & (grid > 0), grid, np.nan), cmap="viridis", norm=norm)
    for (i, j), value in np.ndenumerate(grid):
        dark = np.isfinite(value) and value > 0 and norm(value) < 0.6
        text = ax.text(j, i, "–" if not np.isfinite(value) else format_number(value), ha="center", va="center",
                       color="w" if dark else "k", fontsize=10)
        if np.isfinite(value):
            tip(text, [f"{devices[i]} → {devices[j]}: best {format_number(value, 4)} GB/s at {format_bytes(size)}"])
    ax.set_xticks(range(len(devices)), [mathtext_safe(str(d)) for d in devices])
    ax.set_yticks(range(len(devices)), [mathtext_safe(str(d)) for d in devices])
    ax.set_xlabel("destination")
    ax.set_ylabel("source")
    bar = fig.colorbar(image, label=f"best GB/s at {format_bytes(size)} (log scale)")
    bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_number(v)))
    bar.ax.yaxis.set_minor_formatter(NullFormatter())
    return fig


def _grid(panels: int, most: int, height: float) -> tuple[Figure, np.ndarray]:
    """``panels`` panels sharing their y axis, at most ``most`` a row and ``height`` inches each; the grid's spare
    panels hidden."""
    columns = min(panels, most)
    rows = math.ceil(panels / columns)
    fig, axes = subplots(rows, columns, figsize=(WIDTH, height * rows + 0.4), squeeze=False, sharey=True, layout="tight")
    for ax in list(axes.flat)[panels:]:
        ax.set_visible(False)
    return fig, axes


def creation(view: RunView) -> Figure | str:
    created = view.rows[view.rows["op"] == "create"]  # render draws it only where the run created tensors
    devices = sorted(set(created["dst"]), key=lambda d: (d != "cpu", d))
    fig, axes = _grid(len(devices), 3, 2.9)
    legend: dict[str, Artist] = {}
    for ax, device in zip(axes.flat, devices, strict=False):
        for (method, _), group in created[created["dst"] == device].groupby(["method", "run"]):
            group = group.sort_values("nbytes")
            line, = ax.plot(group["nbytes"], group["median_s"] * 1e6, marker="o", ms=4,
                            color=METHOD_COLOURS.get(str(method), "tab:gray"))
            tip(line, tips_for(group, lambda row: f"{format_seconds(row['median_s'])} per call"))
            legend.setdefault(f"torch.{method}{run_of(created, group.iloc[0])}", line)
        size_ticks(ax, created["nbytes"].tolist())
        log_y(ax)
        ax.set_title(mathtext_safe(f"created on {device}"), fontsize=10)
        ax.set_xlabel("payload")
    axes[0][0].set_ylabel("median time (µs)")
    legend_outside(fig, list(legend.values()), list(legend))
    return fig


def _overhead_group(row: pd.Series) -> str:
    memory = f"{row['host_memory']} " if isinstance(row["host_memory"], str) else "device memory, "
    return f"{memory}{'non_blocking' if row['non_blocking'] else 'blocking'}"


def wall_vs_device(view: RunView) -> Figure | str:
    """1 − device time / wall time (two loops: copies back to back against one synchronized call): one panel per
    family, lines coloured by memory and blocking."""
    frame = view.rows
    timed = frame[pd.to_numeric(frame["device_seconds"], errors="coerce").notna() & frame["op"].isin(moving_ops())]
    if timed.empty:
        return "No device-side (CUDA event) times were recorded: no GPU was measured."
    ops = [op for op in moving_ops() if (timed["op"] == op).any()]
    fig, axes = _grid(len(ops), 2, 2.8)
    colours = {g: f"C{i % 10}" for i, g in enumerate(sorted({_overhead_group(row) for _, row in timed.iterrows()}))}
    legend: dict[str, Artist] = {}
    for ax, op in zip(axes.flat, ops, strict=False):
        for _, group in timed[timed["op"] == op].groupby(["path", "run"], sort=False):  # a line is one run's
            group = group.sort_values("nbytes")
            kind = _overhead_group(group.iloc[0])
            share = (group["median_s"] - group["device_seconds"].astype(float)) / group["median_s"] * 100
            line, = ax.plot(group["nbytes"], share, marker="o", ms=3, lw=1, color=colours[kind], alpha=0.85)
            # Two loops, as the caption says: the device time per copy of copies issued back to back against
            # the wall time of one call synchronized after each, never a share of one call.
            tip(line, [f"{row['path']}\n{format_bytes(row['nbytes'])}: 1 − device / wall = {s:.0f}% (device time per "
                       f"copy issued back to back {format_seconds(float(row['device_seconds']))}, wall time of one "
                       f"synchronized call {format_seconds(row['median_s'])}: two loops, not a split of one call)"
                       for (_, row), s in zip(group.iterrows(), share, strict=True)])
            legend.setdefault(kind, line)
        size_ticks(ax, timed["nbytes"].tolist())
        ax.set_ylim(-5, 105)
        ax.set_title(family(op).title if op in FAMILIES else mathtext_safe(str(op)), fontsize=10)
        ax.set_xlabel("payload")
    axes[0][0].set_ylabel("1 − device time / wall time (%)")
    legend_outside(fig, list(legend.values()), list(legend), title="host memory, blocking")
    return fig


Drawing = Callable[[RunView], "Figure | str"]


def _drawings(cliff: str | None) -> dict[str, Drawing]:
    """Each core figure's drawing by its key, in page order: a bandwidth figure per moving family first."""
    return {**{f"bandwidth-{op}": functools.partial(bandwidth_of, op=op, cliff=cliff) for op in moving_ops()},
            "ladder": ladder_figure, "cost": cost_at_size, "matrix": device_matrix, "create": creation,
            "noop": noop_vs_copy, "overhead": wall_vs_device}


def render(view: RunView, words: Mapping[str, tuple[str, str]], cliff: str | None = None) -> list[Plot]:
    """Every core figure the run can draw, with its title and caption from ``words`` (captions.figure_words, through
    the story): a bandwidth, creation or no-op figure only for the families this run measured, the ladder only where
    it has one.
    ``cliff``: the cliff's cause, noted on the device-to-host figure beside its figures."""
    present = set(view.rows["op"])  # a bandwidth figure (its key "bandwidth-OP") needs its family's rows
    drawn = {"create": "create" in present, "noop": "noop" in present, "cost": True,
             "ladder": bool(view.ladders),  # a ladder needs a call with its controls
             "matrix": view.has_accelerator, "overhead": view.has_accelerator}  # no GPU: no GPU-only figure, not drawn
    return [as_plot(key, *words[key], draw(view)) for key, draw in _drawings(cliff).items()
            if drawn.get(key, key.removeprefix("bandwidth-") in present)]
