"""matplotlib figures for the report; each returns a Plot, or the reason there is none.

Figures are inline SVG: they scale with the page, their text is text, and every plotted
point (marker, bar, matrix cell) carries an SVG ``<title>`` with its exact value, which a
browser shows on hover — no script, no network request. A drawing function attaches
those titles to its artists with ``tip``; ``to_svg`` writes them into the SVG.
"""

from __future__ import annotations

import io
import itertools
import math
import textwrap
import weakref
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display: figures are rendered to SVG for the page

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

from ...families import FAMILIES, family, moving_ops
from ...units import drawable, format_bytes, format_seconds, mathtext_safe
from ..ladder import Ladder, percent, short
from ..model import COPY_TOUCHES, Fit, cache_bytes, fit_path
from ..view import RunView
from .figure_text import drawable_text
from .findings import FRESH_SPLIT, cheapest_copy, cliff_cause, noop_call
from .series import case_labels, run_of

__all__ = ["PLOTS", "Plot", "as_plot", "gbps_text", "ladder_figure", "ladder_table", "render",
           "roof_share", "scenario_plot", "tip", "to_svg"]

_SVG = "http://www.w3.org/2000/svg"
_XLINK = "http://www.w3.org/1999/xlink"
ET.register_namespace("", _SVG)
ET.register_namespace("xlink", _XLINK)

#: Width of every figure (inches): the page is 1200 px wide, so text stays legible at 1:1.
WIDTH = 11.0
#: Colours of the calls timed, the same in every figure.
METHOD_COLOURS = {"to": "tab:blue", "cuda": "tab:orange", "copy_": "tab:green", "cpu": "tab:red",
                  "clone": "tab:purple", "empty": "tab:gray", "zeros": "tab:brown", "ones": "tab:pink",
                  "rand": "tab:olive"}


def _colour(op: str) -> str:
    return FAMILIES[op].colour if op in FAMILIES else "tab:gray"


@dataclass(frozen=True)
class Plot:
    key: str
    title: str
    caption: str
    svg: str | None  # None: not drawn, and ``missing`` says why
    missing: str | None = None


_TITLES: weakref.WeakKeyDictionary[Figure, dict[str, list[str]]] = weakref.WeakKeyDictionary()
_GIDS = itertools.count()


def tip(artist: Artist, titles: Sequence[str]) -> None:
    """Attach hover texts to an artist: one per marker of a line or scatter, one for a bar or text."""
    figure = artist.get_figure(root=True)
    if not isinstance(figure, Figure) or not titles:
        return
    gid = f"xfer-tip-{next(_GIDS)}"
    artist.set_gid(gid)
    _TITLES.setdefault(figure, {})[gid] = [drawable(title) for title in titles]  # names from run files


def _add_titles(svg: str, titles: dict[str, list[str]]) -> str:
    """Write each artist's hover texts into the SVG, and drop what an inline SVG must not carry."""
    root = ET.fromstring(svg)
    for metadata in root.findall(f"{{{_SVG}}}metadata"):
        root.remove(metadata)
    parents = {child: parent for parent in root.iter() for child in parent}
    for group in list(root.iter(f"{{{_SVG}}}g")):
        gid = group.get("id", "")
        texts = titles.get(gid)
        if "id" in group.attrib:  # matplotlib's own ids (figure_1, patch_3) repeat across figures of one page
            del group.attrib["id"]
        if texts is None:
            continue
        marks = list(group.iter(f"{{{_SVG}}}use"))
        if not marks:
            title = ET.Element(f"{{{_SVG}}}title")
            title.text = texts[0]
            group.insert(0, title)
            group.set("class", "tip")
            continue
        for mark, text in zip(marks, texts, strict=False):
            parent = parents[mark]
            wrapper = ET.Element(f"{{{_SVG}}}g", {"class": "tip"})
            title = ET.SubElement(wrapper, f"{{{_SVG}}}title")
            title.text = text
            parent[list(parent).index(mark)] = wrapper
            wrapper.append(mark)
    return ET.tostring(root, encoding="unicode")


def to_svg(fig: Figure, key: str = "figure") -> str:
    """The figure as an inline SVG element with its hover titles."""
    buffer = io.StringIO()
    drawable_text(fig)  # labels come from run files: no mathtext, no control character, wherever they were set
    # A salt per figure keeps matplotlib's generated ids (clip paths, markers) unique on a page of many SVGs.
    with matplotlib.rc_context({"svg.hashsalt": key, "svg.fonttype": "none"}):
        fig.savefig(buffer, format="svg", bbox_inches="tight")
    titles = _TITLES.pop(fig, {})
    plt.close(fig)
    return _add_titles(buffer.getvalue(), titles)


def _size_ticks(ax: Axes, sizes: Sequence[float]) -> None:
    """A log2 size axis with at most 7 labelled ticks (powers of 2, evenly spaced), never overlapping."""
    ax.set_xscale("log", base=2)
    low, high = math.floor(math.log2(max(min(sizes), 1))), math.ceil(math.log2(max(max(sizes), 1)))
    step = max(1, math.ceil((high - low + 1) / 7))
    step = next((s for s in (1, 2, 5, 10) if s >= step), 10)  # 1 KiB, 1 MiB, 1 GiB fall on ticks
    ticks = [2.0**e for e in range(low, high + 1) if e % step == 0] or [2.0**low, 2.0**high]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_bytes(v)))
    ax.set_xlim(2.0**low / 1.4, 2.0**high * 1.4)


def _log_y(ax: Axes) -> None:
    """A log y axis labelled in plain numbers (0.01, 10, 1000): quicker to read, and no mathtext to lay out.

    An axis that spans less than a decade may hold no power of ten at all: its minor ticks (2, 3, ... 9 x 10^k)
    are labelled then, decided when the figure is drawn, once the limits are final."""
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if _narrow(ax) else ""))


def _narrow(ax: Axes) -> bool:
    """Whether a log y axis spans less than a decade (so few or no major ticks fall on it)."""
    low, high = ax.get_ylim()
    return low > 0 and high / low < 10


def _legend_outside(fig: Figure, handles: Sequence[Artist], labels: Sequence[str], title: str | None = None) -> None:
    if handles:  # labels name paths and devices from the data: a '$' in them is text, not mathtext
        fig.legend(handles, [mathtext_safe(str(label)) for label in labels], loc="upper left",
                   bbox_to_anchor=(1.0, 0.98), fontsize=8, title=title, title_fontsize=8, frameon=False)


def _tips_for(rows: pd.DataFrame, value: Callable[[pd.Series], str], resident: pd.Series | None = None) -> list[str]:
    return [f"{row['path']}\n{format_bytes(row['nbytes'])}: {value(row)}\nmedian {format_seconds(row['median_s'])}"
            f" over {row['rounds']} rounds × {row['iterations']}"
            + ("\nfaster than memory allows: ran from a cache" if resident is not None and resident[index] else "")
            for index, row in rows.iterrows()]


def _facets(rows: pd.DataFrame, op: str) -> tuple[list[str], list[str | None]]:
    """Panel rows (one per GPU, or the host) and columns (host memory kinds, when there are several)."""
    device = rows["dst"] if op == "h2d" else rows["src"]
    panel_rows = sorted(set(device), key=lambda d: (d != "cpu", d))
    memories = [m for m in ("pageable", "pinned") if (rows["host_memory"] == m).any()]
    columns: list[str | None] = list(memories) if op in ("h2d", "d2h") and len(memories) > 1 else [None]
    return panel_rows, columns


def _line_label(row: pd.Series, op: str) -> str:
    label = f".{row['method']}()" if row["method"] != "copy_" else "copy_()"
    if op == "peer":
        label += f" → {row['dst']}"
    if row["non_blocking"]:
        label += " non_blocking"
    if isinstance(row.get("variant"), str) and op in ("host", "h2d", "d2h"):
        label += f" {row['variant'].replace('_', '-')}"  # copy_() single-thread: its own line and legend entry
    return label


def gbps_text(value: float) -> str:
    """A bandwidth as people write it: 0.0421, 12.5, 1470 (never 1.47e+03)."""
    return f"{value:,.0f}" if value >= 1000 else f"{value:.3g}"


def roof_share(gbps: float, peak: float, practical: tuple[float, float] | None = None) -> str:
    """The one definition of "share of roof": the bandwidth a path reached at its largest size over the roof's figure,
    the roof printed beside it; against the practical ceiling of pinned copies where one is given."""
    if not (np.isfinite(gbps) and peak > 0):
        return "–"
    text = f"{gbps / peak:.0%} of {gbps_text(peak)} GB/s"
    if practical is not None:
        text += (f" ({gbps / practical[1] * 100:.0f}-{gbps / practical[0]:.0%} of the practical "
                 f"{practical[0]:g}-{practical[1]:g})")
    return text


def _largest_size_gbps(rows: pd.DataFrame) -> tuple[float, str]:
    """The highest bandwidth any path of ``rows`` reached at its own largest size (what "share of roof" divides), and
    that path's call (the roof's label names it: the other calls of the panel reached less)."""
    if rows.empty:
        return float("nan"), ""
    last = rows.sort_values("nbytes").groupby("path").last()
    best = last.loc[last["bandwidth_gbps"].idxmax()]
    return float(best["bandwidth_gbps"]), _line_label(best, str(best["op"]))


def _draw_roofs(ax: Axes, bounds: list[tuple[float, str]], reached: tuple[float, str],
                practical: tuple[float, float] | None = None) -> bool:
    """Each bound as a horizontal line, labelled directly with its figure and the share of it the panel's paths
    reached at their largest size (``roof_share``, as the table gives it).

    Labels alternate between the left and the right end, so two close roofs do not print over each other;
    the axis leaves room above the highest one. True when a roof was drawn."""
    for index, (peak, name) in enumerate(bounds):
        ax.axhline(peak, color="k", lw=1, ls=(0, (6, 3)), alpha=0.7)
        share = roof_share(reached[0], peak, practical if name.startswith("PCIe") else None)
        share = f"\n{reached[1]}, the best at its largest size: {share}" if share != "–" else ""
        left = index % 2 == 0
        text = ax.text(0.01 if left else 0.99, peak, f"{name}: {gbps_text(peak)} GB/s{share}",
                       transform=ax.get_yaxis_transform(), va="bottom", ha="left" if left else "right",
                       fontsize=7.5, color="k", bbox={"facecolor": "white", "alpha": 0.7, "lw": 0, "pad": 1})
        tip(text, [f"roof: {name}, {peak:.4g} GB/s per direction{share.replace(chr(10), '; ')}"])
    if bounds:
        low, high = ax.get_ylim()
        ax.set_ylim(low, max(high, max(peak for peak, _ in bounds) * 3))
    return bool(bounds)


def _cache_line(ax: Axes, view: RunView, op: str, src: str) -> None:
    """Where a copy's read and write (2n bytes) stop fitting in the cache: a reference line, not a shading.
    Only points faster than memory allows are marked (hollow), whichever side of it they fall on."""
    cache = cache_bytes(view.fingerprint, op, src)
    if cache is None:
        return
    edge = cache[0] / COPY_TOUCHES
    ax.axvline(edge, color="0.6", lw=0.8, ls=":", zorder=0)
    ax.text(edge, 0.02, f"2n = {cache[1]} ({format_bytes(cache[0])}) ", transform=ax.get_xaxis_transform(),
            ha="right", va="bottom", fontsize=7, color="0.35")


def bandwidth_of(view: RunView, op: str) -> Figure | str:
    """One family's bandwidth against size, faceted by GPU (rows) and host memory (columns), with its roofs."""
    frame = view.rows
    rows = frame[(frame["op"] == op) & frame["bandwidth_gbps"].notna()]
    if rows["nbytes"].nunique() < 2:
        return "Fewer than two sizes were measured; a sweep (for example --xfer-sizes=4B..64MiB) draws this plot."
    resident = view.resident.loc[rows.index]
    panel_rows, columns = _facets(rows, op)
    fig, axes = plt.subplots(len(panel_rows), len(columns), figsize=(WIDTH, 2.7 * len(panel_rows) + 0.6),
                             squeeze=False, sharex=True, sharey=True)
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
            _bandwidth_panel(ax, panel, op, resident, legend, min(bounds) if bounds else None, view)
            _log_y(ax)
            if first is not None:
                _cache_line(ax, view, op, str(first["src"]))
                practical = view.practical(op, str(first["src"]), str(first["dst"]))
                roofed |= _draw_roofs(ax, bounds, _largest_size_gbps(panel), practical if memory == "pinned" else None)
                if op == "d2h" and memory == "pageable":
                    _mark_cliff(ax, view)
            where = f"{'to' if op == 'h2d' else 'from'} {device}" if op != "host" else "host memory"
            ax.set_title(mathtext_safe(f"{where}" + (f", {memory} host memory" if memory else "")), fontsize=10)
            _size_ticks(ax, rows["nbytes"].tolist())
            ax.grid(True, which="major", alpha=0.3)
            if r == len(panel_rows) - 1:
                ax.set_xlabel("payload")
        axes[r][0].set_ylabel("GB/s (bytes counted once)")
    if resident.any():
        legend["hollow: faster than memory allows"] = Line2D([], [], marker="o", ls="", mfc="white", mec="0.3")
    legend["dotted: fitted t = α + n/β"] = Line2D([], [], color="0.3", ls=":", lw=1)
    if roofed:
        legend["dashed black: roof"] = Line2D([], [], color="k", ls=(0, (6, 3)), lw=1)
    _legend_outside(fig, list(legend.values()), list(legend), title="call")
    fig.tight_layout()
    return fig


def _bandwidth_panel(ax: Axes, panel: pd.DataFrame, op: str, resident: pd.Series, legend: dict[str, Artist],
                     roof: tuple[float, str] | None, view: RunView) -> None:
    """One line per call; each point's hover text gives its GB/s and, under a known roof, its share of it."""

    def value(row: pd.Series) -> str:
        share = f" = {row['bandwidth_gbps'] / roof[0]:.0%} of {roof[0]:.4g} GB/s, {roof[1]}" if roof else ""
        return f"{row['bandwidth_gbps']:.4g} GB/s{share}"

    for _, group in panel.groupby(["path", "run"], sort=False):  # a line is one run's
        group = group.sort_values("nbytes")
        first = group.iloc[0]
        label = _line_label(first, op) + run_of(panel, first)
        colour = METHOD_COLOURS.get(str(first["method"]), _colour(op))
        if isinstance(first.get("variant"), str):
            colour = "tab:cyan"  # a second way of running the same call (single_thread): never its call's colour
        style = "--" if first["non_blocking"] else "-"
        if op == "peer":
            colour = f"C{sorted(set(panel['dst'])).index(first['dst']) % 10}"
            style = "-" if first["method"] == "to" else "--"
        inside = resident[group.index].to_numpy()
        ax.plot(group["nbytes"], group["bandwidth_gbps"], color=colour, ls=style, lw=1.3)
        # Markers apart from the line, each carrying its hover text: filled beyond the cache, hollow inside it.
        for points, face in ((group[~inside], colour), (group[inside], "white")):
            if not points.empty:
                marks, = ax.plot(points["nbytes"], points["bandwidth_gbps"], ls="", marker="o", ms=4, mfc=face,
                                 mec=colour)
                tip(marks, _tips_for(points, value, resident))
        fit = view.fit_of(str(first["path"])) or fit_path(group, resident)  # the view's fit, as the table states it
        if str(fit["beta_basis"]).startswith("fit"):  # a capped or measured β has no curve to show
            beyond = group[~inside]
            n = np.geomspace(beyond["nbytes"].min(), beyond["nbytes"].max(), 40)
            model = Fit(fit["alpha_us"] / 1e6, fit["beta_gbps"], len(beyond))
            ax.plot(n, n / model.seconds(n) / 1e9, ls=":", lw=1, color=colour, alpha=0.8)
        legend.setdefault(label, Line2D([], [], color=colour, ls=style, marker="o", ms=4))


def _mark_cliff(ax: Axes, view: RunView) -> None:
    """Label the .cpu() / .to('cpu') cliff on the figure itself, with its cause as far as this run measured it."""
    found = view.cliff
    if found is None:
        return
    low = float(found["gbps_after"].min())
    # Each call's own pair of figures: the highest before and the lowest after came from two calls on the H200 sample.
    calls = ", ".join(f"{_CALLS.get(str(method), method)} {gbps_text(float(before))} → "
                      f"{gbps_text(float(found['gbps_after'][method]))}" for method, before in found["gbps_before"].items())
    text = (f"cliff: {calls} GB/s\n"
            f"from {format_bytes(found['before'])} to {format_bytes(found['after'])}\n"
            + textwrap.fill(_cliff_note(found, view), 44))
    note = ax.annotate(mathtext_safe(text), xy=(found["after"], low), xytext=(0.36, 0.42), textcoords="axes fraction",
                       va="top", ha="left", fontsize=7.5, color="tab:red",
                       bbox={"facecolor": "white", "alpha": 0.85, "lw": 0.5, "edgecolor": "tab:red", "pad": 2},
                       arrowprops={"arrowstyle": "->", "color": "tab:red", "lw": 1})
    tip(note, [text.replace("\n", " ")])


#: The usual calls back to the CPU by their method.
_CALLS = {"cpu": ".cpu()", "to": ".to('cpu')"}


def _cliff_note(found: dict[str, Any], view: RunView) -> str:
    """The cliff's cause, short enough for the figure: the key findings give every call's figures."""
    cause = cliff_cause(found, view)
    if cause.startswith(FRESH_SPLIT):
        return "calls that write a fresh pageable host destination fall here; copy_ into a reused buffer holds (key findings)"
    return cause


def _route(row: pd.Series) -> str:
    """A path without its call: op, host memory, blocking mode, devices."""
    parts = [str(row["op"])]
    if isinstance(row["host_memory"], str):
        parts.append(row["host_memory"])
    if row["non_blocking"]:
        parts.append("non-blocking")
    parts.append(row["src"] if row["src"] == row["dst"] else f"{row['src']}->{row['dst']}")
    return " ".join(parts)


def cost_at_size(view: RunView) -> Figure | str:
    """One bar per route (op, memory, blocking, devices): its fastest call, solid, in front of its
    slowest, pale, so a call that costs far more on the same route (``.cpu()`` allocating new
    pageable memory, against ``copy_`` into a buffer that exists) is not hidden; every call is in
    the bar's hover text."""
    frame, size = view.rows, view.largest_size
    if size is None:
        return "No copies were measured."
    rows = frame[(frame["nbytes"] == size) & frame["op"].isin(moving_ops())]
    rows = rows.assign(route=[_route(row) for _, row in rows.iterrows()])
    fastest = rows.loc[rows.groupby("route")["median_s"].idxmin()].sort_values("median_s")
    slowest = rows.loc[rows.groupby("route")["median_s"].idxmax()].set_index("route").loc[fastest["route"]]
    fig, ax = plt.subplots(figsize=(WIDTH, 0.3 * len(fastest) + 1.2))
    labels = [mathtext_safe(f"{row['route']}  ({row['method']})") for _, row in fastest.iterrows()]
    colours = [_colour(op) for op in fastest["op"]]
    ax.barh(labels, slowest["median_s"].to_numpy() * 1e3, color=colours, alpha=0.3)
    bars = ax.barh(labels, fastest["median_s"] * 1e3, color=colours)
    for bar, (_, row), (_, slow) in zip(bars.patches, fastest.iterrows(), slowest.iterrows(), strict=True):
        calls = rows[rows["route"] == row["route"]].sort_values("median_s")
        tip(bar, [f"{row['route']}, {format_bytes(size)}:\n" + "\n".join(
            f".{c['method']}: median {format_seconds(c['median_s'])}, {gbps_text(c['bandwidth_gbps'])} GB/s"
            for _, c in calls.iterrows())])
        text = f"  {row['median_s'] * 1e3:.3g} ms, {gbps_text(row['bandwidth_gbps'])} GB/s"
        if slow["median_s"] > 1.5 * row["median_s"]:  # worth a word: the same route, a much dearer call
            text += (f";  slowest .{slow['method']}(): {slow['median_s'] * 1e3:.3g} ms, "
                     f"{gbps_text(slow['bandwidth_gbps'])} GB/s")
        ax.text(max(bar.get_width(), slow["median_s"] * 1e3), bar.get_y() + bar.get_height() / 2, mathtext_safe(text),
                va="center", fontsize=8)
    ax.set_xlabel(f"median time to move {format_bytes(size)} (ms, shorter is better); solid: the fastest call of each "
                  "route, pale: its slowest")
    ax.set_xlim(0, slowest["median_s"].max() * 1e3 * 1.6)
    ax.set_ylim(len(fastest) - 0.5, -0.5)
    ax.tick_params(axis="y", labelsize=8)
    return fig


def device_matrix(view: RunView) -> Figure | str:
    frame = view.rows
    moves = frame[frame["op"].isin(moving_ops())]
    devices = sorted(set(moves["src"]) | set(moves["dst"]), key=lambda d: (d != "cpu", d))
    if len(devices) < 2:
        return "Only the CPU was measured: the matrix needs at least two devices (a GPU and the host)."
    if len(devices) < 3:
        return (f"One GPU: the matrix would be 2x2 ({devices[0]} and {devices[1]}), the same figures as the bandwidth "
                "figures above; it carries information from two GPUs on.")
    size = view.largest_size
    if size is None:
        return "No copies were measured."
    best = moves[moves["nbytes"] == size].groupby(["src", "dst"])["bandwidth_gbps"].max()
    grid = np.full((len(devices), len(devices)), np.nan)
    for (src, dst), gbps in best.items():
        grid[devices.index(src), devices.index(dst)] = gbps
    fig, ax = plt.subplots(figsize=(1.2 * len(devices) + 3, 1.0 * len(devices) + 1.6))
    finite = grid[np.isfinite(grid) & (grid > 0)]
    # Log scale: same-device copies (hundreds of GB/s) and links (tens) differ by an order of magnitude or more.
    norm = LogNorm(vmin=finite.min(), vmax=max(finite.max(), finite.min() * 1.01))
    image = ax.imshow(np.where(np.isfinite(grid) & (grid > 0), grid, np.nan), cmap="viridis", norm=norm)
    for i in range(len(devices)):
        for j in range(len(devices)):
            value = grid[i, j]
            dark = np.isfinite(value) and value > 0 and norm(value) < 0.6
            text = ax.text(j, i, "–" if not np.isfinite(value) else gbps_text(value), ha="center", va="center",
                           color="w" if dark else "k", fontsize=10)
            if np.isfinite(value):
                tip(text, [f"{devices[i]} → {devices[j]}: best {value:.4g} GB/s at {format_bytes(size)}"])
    ax.set_xticks(range(len(devices)), [mathtext_safe(str(d)) for d in devices])
    ax.set_yticks(range(len(devices)), [mathtext_safe(str(d)) for d in devices])
    ax.set_xlabel("destination")
    ax.set_ylabel("source")
    bar = fig.colorbar(image, label=f"best GB/s at {format_bytes(size)} (log scale)")
    bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: gbps_text(v)))
    bar.ax.yaxis.set_minor_formatter(NullFormatter())
    return fig


def creation(view: RunView) -> Figure | str:
    created = view.rows[view.rows["op"] == "create"]
    if created.empty:
        return "No creation benchmarks were run."
    devices = sorted(set(created["dst"]), key=lambda d: (d != "cpu", d))
    columns = min(len(devices), 3)
    panel_rows = math.ceil(len(devices) / columns)
    fig, axes = plt.subplots(panel_rows, columns, figsize=(WIDTH, 2.9 * panel_rows + 0.4), squeeze=False,
                             sharey=True)
    legend: dict[str, Artist] = {}
    for ax, device in zip(axes.flat, devices, strict=False):
        for (method, _), group in created[created["dst"] == device].groupby(["method", "run"]):
            group = group.sort_values("nbytes")
            line, = ax.plot(group["nbytes"], group["median_s"] * 1e6, marker="o", ms=4,
                            color=METHOD_COLOURS.get(str(method), "tab:gray"))
            tip(line, _tips_for(group, lambda row: f"{format_seconds(row['median_s'])} per call"))
            legend.setdefault(f"torch.{method}{run_of(created, group.iloc[0])}", line)
        _size_ticks(ax, created["nbytes"].tolist())
        _log_y(ax)
        ax.set_title(mathtext_safe(f"created on {device}"), fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
        ax.set_xlabel("payload")
    for ax in list(axes.flat)[len(devices):]:
        ax.set_visible(False)
    axes[0][0].set_ylabel("median time (µs)")
    _legend_outside(fig, list(legend.values()), list(legend))
    fig.tight_layout()
    return fig


def noop_vs_copy(view: RunView) -> Figure | str:
    frame = view.rows
    noops = frame[frame["op"] == "noop"]
    if noops.empty:
        return "No no-op benchmarks were run."
    per_call = noops.groupby(["method", noops["variant"].fillna(""), "src", "run"])["median_s"].median().reset_index()
    labels = [f"{noop_call(row['method'], row['src'], row['variant'] or None)} on {row['src']}{run_of(per_call, row)}"
              for _, row in per_call.iterrows()]
    values = list(per_call["median_s"] * 1e6)
    colours = [_colour("noop")] * len(values)
    # The synchronize a careless caller adds around a no-op or a small move (the sync family), when measured.
    for (device, run), seconds in (sync := frame[frame["op"] == "sync"]).groupby(["src", "run"])["median_s"].median().items():
        labels.append(f"torch.cuda.synchronize({device}) on an idle device{f' ({run})' if sync['run'].nunique() > 1 else ''}")
        values.append(seconds * 1e6)
        colours.append(_colour("sync"))
    cheapest = cheapest_copy(view)
    if cheapest is not None:
        labels.append(f"cheapest real copy: {cheapest['path']} ({format_bytes(cheapest['nbytes'])})")
        values.append(cheapest["median_s"] * 1e6)
        colours.append(_colour(cheapest["op"]))
    fig, ax = plt.subplots(figsize=(WIDTH, 0.4 * len(values) + 1.2))
    bars = ax.barh([mathtext_safe(label) for label in labels], values, color=colours)
    for bar, label, v in zip(bars.patches, labels, values, strict=True):
        tip(bar, [f"{label}: {v * 1e3:.4g} ns per call"])
        ax.text(v, bar.get_y() + bar.get_height() / 2, f"  {v * 1e3:.0f} ns", va="center", fontsize=8)
    ax.set_xlim(0, max(values) * 1.3)
    ax.invert_yaxis()
    ax.set_xlabel("median time per call (µs)")
    return fig


def _overhead_group(row: pd.Series) -> str:
    memory = f"{row['host_memory']} " if isinstance(row["host_memory"], str) else "device memory, "
    return f"{memory}{'non_blocking' if row['non_blocking'] else 'blocking'}"


def wall_vs_device(view: RunView) -> Figure | str:
    """Share of wall time outside the device: one panel per family, lines coloured by memory and blocking."""
    frame = view.rows
    timed = frame[pd.to_numeric(frame["device_seconds"], errors="coerce").notna() & frame["op"].isin(moving_ops())]
    if timed.empty:
        return "No device-side (CUDA event) times were recorded: no GPU was measured."
    ops = [op for op in moving_ops() if (timed["op"] == op).any()]
    columns = min(len(ops), 2)
    panel_rows = math.ceil(len(ops) / columns)
    fig, axes = plt.subplots(panel_rows, columns, figsize=(WIDTH, 2.8 * panel_rows + 0.4), squeeze=False,
                             sharey=True)
    groups = sorted({_overhead_group(row) for _, row in timed.iterrows()})
    colours = {g: f"C{i % 10}" for i, g in enumerate(groups)}
    legend: dict[str, Artist] = {}
    for ax, op in zip(axes.flat, ops, strict=False):
        for _, group in timed[timed["op"] == op].groupby(["path", "run"], sort=False):  # a line is one run's
            group = group.sort_values("nbytes")
            kind = _overhead_group(group.iloc[0])
            share = (group["median_s"] - group["device_seconds"].astype(float)) / group["median_s"] * 100
            line, = ax.plot(group["nbytes"], share, marker="o", ms=3, lw=1, color=colours[kind], alpha=0.85)
            tip(line, [f"{row['path']}\n{format_bytes(row['nbytes'])}: {s:.0f}% outside the device "
                       f"(wall {format_seconds(row['median_s'])}, device {format_seconds(float(row['device_seconds']))})"
                       for (_, row), s in zip(group.iterrows(), share, strict=True)])
            legend.setdefault(kind, line)
        _size_ticks(ax, timed["nbytes"].tolist())
        ax.set_ylim(-5, 105)
        ax.set_title(family(op).title if op in FAMILIES else mathtext_safe(str(op)), fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.set_xlabel("payload")
    for ax in list(axes.flat)[len(ops):]:
        ax.set_visible(False)
    axes[0][0].set_ylabel("1 − device time / wall time (%)")
    _legend_outside(fig, list(legend.values()), list(legend), title="host memory, blocking")
    fig.tight_layout()
    return fig


#: Each factor a ladder step removes, in one colour in every ladder; a step the run cannot tell from zero is hatched.
_FACTOR_COLOURS = {"fresh": "tab:orange", "staging": "tab:gray", "launch": "tab:blue", "DMA": "tab:red",
                   "copy": "tab:green"}


def _factor_colour(factor: str) -> str:
    for word, colour in _FACTOR_COLOURS.items():
        if word in factor:
            return colour
    return "tab:purple"


def _ladder_bar(ax: Axes, y: int, ladder: Ladder, legend: dict[str, Artist]) -> None:
    """One ladder as a bar of its steps and its bottom rung: each segment the difference of two medians of the run,
    so the segments add up to the call; a step whose interval holds zero is drawn hatched, without a share."""
    left, total = 0.0, ladder.top.median_s
    steps = [*ladder.steps, None]
    for (factor, seconds, _low, _high, told), step in zip(ladder.parts(), steps, strict=True):
        width = max(seconds, 0.0) * 1e3
        colour = _factor_colour(factor)
        bar = ax.barh([y], [width], left=left, color=colour if told else "white", edgecolor=colour if not told else
                      "white", hatch=None if told else "//")
        label = ladder.sentence(step) if step is not None else f"{factor}: {format_seconds(seconds)} ({ladder.base.case})"
        what = f"\n{step.above.case} − {step.below.case}" if step is not None else ""
        tip(bar.patches[0], [label + what])
        if told and seconds / total >= 0.15:
            ax.text(left + width / 2, y, format_seconds(seconds), ha="center", va="center", fontsize=7.5, color="white")
        legend.setdefault(short(factor) if told else "can't tell (interval holds zero, or within the drift floor)",
                          bar.patches[0])
        left += width


def ladder_figure(view: RunView) -> Figure | str:
    """Every ladder of the run (analyze/ladder.py), one bar each, in ms, labelled with its call, size and run."""
    found = view.ladders
    if {"d2h-cpu", "d2h-to"} <= {ladder.key for ladder in found}:  # the same lower rungs: one bar, both in the table
        found = [ladder for ladder in found if ladder.key != "d2h-to"]
    if not found:
        return ("No call and its controls were measured at one size in one run (.cpu() with copy_ into a touched "
                "buffer, or host clone() with copy_).")
    fig, ax = plt.subplots(figsize=(WIDTH * 0.62, 0.36 * len(found) + 0.8))
    legend: dict[str, Artist] = {}
    for y, ladder in enumerate(found):
        _ladder_bar(ax, y, ladder, legend)
    ax.set_yticks(range(len(found)), [mathtext_safe(f"{ladder.top.label}, {format_bytes(ladder.size)} "
                                                    f"({format_seconds(ladder.top.median_s)})") for ladder in found])
    ax.invert_yaxis()
    ax.set_xlabel("ms: each segment is one rung's median minus the next one's (same run, same size)", fontsize=8)
    ax.tick_params(labelsize=8)
    ax.grid(True, axis="x", alpha=0.3)
    fig.legend(list(legend.values()), [mathtext_safe(label) for label in legend], loc="center left",
               bbox_to_anchor=(1.0, 0.5), fontsize=7.5, frameon=False)
    fig.tight_layout()
    return fig


def _cell(ladder: Ladder, seconds: float, low: float, high: float, told: bool, cases: str,
          split: str | None) -> dict[str, str]:
    span = f"{format_seconds(low)} to {format_seconds(high)}"
    if not told:
        return {"text": "can't tell", "title": f"{format_seconds(seconds)}, interval {span}: {cases}"}
    text = f"{format_seconds(seconds)} ({percent(seconds / ladder.top.median_s)})"
    if split is not None:  # the step the run's fault counts split
        text += f", {split}"
    return {"text": text, "title": f"interval {span}: {cases}"}


def ladder_table(view: RunView) -> dict[str, Any] | None:
    """The ladders as a table for the page and the Markdown: one row per call, one column per factor removed (in
    ladder order), each cell the step read from its two cases (named in its hover title with the interval)."""
    found = view.ladders
    if not found:
        return None
    factors = list(dict.fromkeys(factor for ladder in found for factor, *_ in ladder.parts()))
    rows = []
    for ladder in found:
        cases = [("" if s.told else f"{ladder.why_not(s)}; ") + f"{s.above.case} − {s.below.case}"
                 for s in ladder.steps] + [ladder.base.case]
        splits = [ladder.split_text(s) for s in ladder.steps] + [None]
        cells = {factor: _cell(ladder, seconds, low, high, told, case, split)
                 for (factor, seconds, low, high, told), case, split in zip(ladder.parts(), cases, splits, strict=True)}
        rows.append({"call": f"{ladder.top.label}, {format_bytes(ladder.size)}: {format_seconds(ladder.top.median_s)}",
                     "title": f"{ladder.top.path}, {ladder.run}",
                     "cells": [cells.get(factor, {"text": "–", "title": "not a rung of this call"}) for factor in factors]})
    return {"columns": [short(factor) for factor in factors], "rows": rows, "runs": sorted({ladder.run for ladder in found})}


Drawing = Callable[[RunView], "Figure | str"]


#: Said under the route chart only where the run has the .cpu() ladder it points to.
_WHY_D2H = " Why device-to-host into pageable memory sits near the bottom is read from the ladder above."
_HOLLOW = ("Hollow markers ran faster than memory allows (2n bytes fit in the cache, left of the grey dotted line), left "
           "out of β. ")
#: Sizes up to which the overhead caption reads the share of wall time outside the device.
SMALL_MOVE = 16 * 2**10


def _overhead_caption(view: RunView, caption: str) -> str:
    """The overhead figure's caption with the share it shows at small sizes, read from the run (72-89% on the H200
    sample, where a fixed caption said "near 100%")."""
    frame = view.rows
    timed = frame[pd.to_numeric(frame["device_seconds"], errors="coerce").notna() & frame["op"].isin(moving_ops())
                  & (frame["nbytes"] <= SMALL_MOVE)]
    if timed.empty:
        return caption
    share = 1 - timed["device_seconds"].astype(float) / timed["median_s"]
    return caption + (f" At {format_bytes(SMALL_MOVE)} and below it is {share.min():.0%}-{share.max():.0%}: small "
                      "moves are mostly fixed cost.")


#: Each no-op form, as the caption names it: (method, variant) of its rows.
_NOOP_FORMS = {("cuda", ""): ".cuda(i)", ("to", ""): ".to(torch.device)", ("to", "str"): ".to('device')",
               ("cpu", ""): ".cpu()"}


def _noop_text(view: RunView) -> tuple[str, str]:
    """The no-op figure's title and caption, naming only the forms and the synchronize the run measured."""
    frame = view.rows
    noops = frame[frame["op"] == "noop"]
    found = set(zip(noops["method"], noops["variant"].fillna("").replace({"cuda": "", "cpu": "", "to": ""}), strict=True))
    forms = [name for form, name in _NOOP_FORMS.items() if form in found]
    named = ", ".join(forms[:-1]) + f" and {forms[-1]}" if len(forms) > 1 else "".join(forms) or "No-op moves"
    synced = (frame["op"] == "sync").any()
    title = "No-op moves next to " + ("a synchronize and " if synced else "") + "the cheapest real copy"
    string = ("to", "str") in found
    caption = (f"{named} on a tensor already there return the very same object; what they cost is PyTorch's dispatch"
               + (" (parsing the string is part of it)" if string else "") + ", shown next to "
               + ("an idle synchronize and " if synced else "") + "the cheapest real copy measured"
               + ("." if string else " (no string form, .to('device'), ran)."))
    return title, caption


def _caption(view: RunView, key: str, caption: str) -> str:
    """A figure's caption, each sentence kept only where the run has what it speaks of."""
    op = key.removeprefix("bandwidth-")
    if key.startswith("bandwidth-") and _HOLLOW in caption and not view.resident[view.rows["op"] == op].any():
        caption = caption.replace(_HOLLOW, "")
    if key == "cost" and not any(ladder.key.startswith("d2h") for ladder in view.ladders):
        caption = caption.replace(_WHY_D2H, "")
    if key == "overhead":
        caption = _overhead_caption(view, caption)
    return caption


LADDER_CAPTION = (
    "Each call read down a ladder of cases of one run at one size, each rung removing one factor (the table's columns, "
    "left to right). A segment is the difference of two medians: the segments add up to the call, though they overlap "
    "in time. A step whose interval (the medians' order-statistic intervals, 95%; min to max with 5 rounds or fewer) holds "
    "zero, or whose two rungs lie within this run's drift floor, is hatched: can't tell. The launch + synchronize rung "
    "also swaps blocking for non-blocking (that copy's device time is the DMA). Hover a cell for its cases and interval.")
HOST_LADDER_CAPTION = (
    "clone() on the host read against copy_ into a buffer that was already touched, same run, same size: the "
    "difference is the fresh destination clone() allocates on every call (its pages fault in on first touch), the rest "
    "is the copy itself. With a GPU, .cpu() is read down the same kind of ladder (this run measured none). A step's "
    "interval joins the two medians' order-statistic intervals (95%; min to max with 5 rounds or fewer): one that holds "
    "zero reads \"can't tell\", never a share.")
_BANDWIDTH_CAPTION = (
    "Each line is one call (solid: blocking, dashed: non_blocking); dotted, the fitted t = α + n/β of a loop that "
    "synchronizes after every call. " + _HOLLOW + "Dashed black lines are roofs, labelled with their figure and the "
    "share of it the panel's best call reached at its largest size (the table gives each path's): the link's theoretical "
    "peak, with the practical ceiling of pinned copies (docs/design.md section 5) on pinned panels; for pageable memory, "
    "this run's single-thread host memcpy, the copy the driver stages with. Hover a point for its value.")
_NO_HOST_ROOF = " The pageable panels draw no host roof: {why}."


#: The host panel draws no roof: its caption says nothing of roofs.
_HOST_CAPTION = (
    "Each line is one call on host memory (torch's clone and copy_; copy_ single-thread runs on one thread, the "
    "reference a GPU driver's staging of a pageable transfer is compared with). Dotted lines are the fitted "
    "t = α + n/β (a loop that synchronizes after every "
    "call). Hollow markers are sizes that ran faster than memory allows (their read and write, 2n bytes, fit in the "
    "cache), left out of β. Hover a point for its exact value.")


def _bandwidth_drawing(op: str) -> Drawing:
    return lambda view: bandwidth_of(view, op)


def _bandwidth_plots() -> list[tuple[str, str, str, Drawing]]:
    return [(f"bandwidth-{op}", f"Bandwidth: {family(op).title}", _HOST_CAPTION if op == "host" else _BANDWIDTH_CAPTION,
             _bandwidth_drawing(op)) for op in moving_ops()]


#: key, title, caption, drawing function (the run's view).
PLOTS: list[tuple[str, str, str, Drawing]] = [
    *_bandwidth_plots(),
    ("ladder", "Where the time of one call goes: a ladder of this run's controls", LADDER_CAPTION, ladder_figure),
    ("cost", "What one large move costs, route by route",
     "Time for the same payload along every route (family, host memory, blocking mode, devices), shortest first, "
     "with the fastest call of each in brackets and, pale behind it, the slowest call of the same route (named when "
     "it costs over 1.5x as much); hover a bar for every call's time." + _WHY_D2H,
     cost_at_size),
    ("matrix", "Source to destination bandwidth",
     "Best bandwidth measured for each source (row) and destination (column), like p2pBandwidthLatencyTest's matrix, "
     "on a log colour scale. The diagonal is same-device copy bandwidth; off-diagonal GPU pairs are peer copies.",
     device_matrix),
    ("create", "Creating tensors on each device", family("create").caption, creation),
    ("noop", "No-op moves next to a synchronize and the cheapest real copy", family("noop").caption, noop_vs_copy),
    ("overhead", "Wall time against device time",
     "1 − device time per copy of copies issued back to back (events) / wall time of one call synchronized after "
     "every call: two loops, not a split of one call. One panel per family, colour by host memory and blocking mode, "
     "each thin line one call (hover for which).",
     wall_vs_device),
]


def as_plot(key: str, title: str, caption: str, figure: Figure | str) -> Plot:
    """A drawn figure as inline SVG, or the reason it could not be drawn."""
    if isinstance(figure, str):
        return Plot(key, title, caption, None, figure)
    return Plot(key, title, caption, to_svg(figure, key))


def render(view: RunView) -> list[Plot]:
    """Every core figure; a bandwidth figure only for the families this run measured."""
    frame = view.rows
    present = set(frame["op"])
    pageable = frame["host_memory"].eq("pageable")
    plots = []
    for key, title, caption, draw in PLOTS:
        op = key.removeprefix("bandwidth-")
        if key.startswith("bandwidth-") and op not in present:
            continue
        why = view.host_ceiling_missing
        if op in ("h2d", "d2h") and why is not None and (pageable & frame["op"].eq(op)).any():
            caption += _NO_HOST_ROOF.format(why=why)
        if key == "ladder" and not view.ladders:
            continue  # no call with its controls in the run: nothing to explain, and nothing to say
        if key == "ladder" and all(ladder.key.startswith("host") for ladder in view.ladders):
            caption = HOST_LADDER_CAPTION
        if key == "noop":
            title, caption = _noop_text(view)
        plots.append(as_plot(key, title, _caption(view, key, caption), draw(view)))
    return plots


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
    if rows["nbytes"].nunique() == 1:
        return _scenario_time_bars(rows)
    return _scenario_lines(rows)


def _scenario_bandwidth_bars(rows: pd.DataFrame) -> Figure:
    # One dot per call on a time-against-size chart says nothing when the calls move different
    # payloads (both directions at once move twice one direction's bytes): GB/s compares them.
    fig, ax = plt.subplots(figsize=(WIDTH, 0.3 * len(rows) + 1.0))
    labels = case_labels(rows)
    bars = ax.barh(range(len(rows)), rows["bandwidth_gbps"], color="tab:cyan")
    ax.set_yticks(range(len(rows)), [mathtext_safe(label) for label in labels])
    for bar, (_, row) in zip(bars.patches, rows.iterrows(), strict=True):
        tip(bar, [f"{row['path']}: {gbps_text(row['bandwidth_gbps'])} GB/s, {format_bytes(row['nbytes'])} "
                  f"in {format_seconds(row['median_s'])} (median)"])
    for y, (_, row) in enumerate(rows.iterrows()):
        ax.text(row["bandwidth_gbps"], y, f"  {gbps_text(row['bandwidth_gbps'])} GB/s ({format_bytes(row['nbytes'])})",
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
    fig, ax = plt.subplots(figsize=(WIDTH, 0.3 * len(rows) + 1.0))
    bars = ax.barh(range(len(rows)), rows["median_s"] * 1e3, color="tab:cyan")
    ax.set_yticks(range(len(rows)), [mathtext_safe(label) for label in case_labels(rows)])
    for bar, (_, row) in zip(bars.patches, rows.iterrows(), strict=True):
        tip(bar, [f"{row['path']}: median {format_seconds(row['median_s'])}"])
    for y, ms in enumerate(rows["median_s"] * 1e3):
        ax.text(ms, y, f"  {ms:.3g} ms", va="center", fontsize=8)
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
    colours = dict(zip(variants, itertools.cycle(plt.rcParams["axes.prop_cycle"].by_key()["color"]), strict=False))
    fig, ax = plt.subplots(figsize=(WIDTH * 0.7, 2.5))
    handles, labels = [], []
    for path, group in rows.groupby(case_labels(rows, sized=False), sort=False):
        group = group.sort_values("nbytes")
        first = group.iloc[0]
        line, = ax.plot(group["nbytes"], group["median_s"] * 1e3, marker="o", ms=4,
                        color=colours[str(first["variant"])], linestyle=styles[_scenario_device(first)])
        tip(line, _tips_for(group, lambda row: f"median {format_seconds(row['median_s'])}"))
        handles.append(line)
        labels.append(str(path))
    _size_ticks(ax, rows["nbytes"].tolist())
    if rows["median_s"].max() > 3 * rows["median_s"].min():
        _log_y(ax)
    else:  # nearly flat (a second module.to): a log axis would magnify noise into a slope
        ax.set_ylim(0, rows["median_s"].max() * 1e3 * 1.2)
    ax.set_xlabel("payload (bytes moved or held)")
    ax.set_ylabel("median time (ms)")
    ax.grid(True, which="major", alpha=0.3)
    _legend_outside(fig, handles, labels)
    return fig
