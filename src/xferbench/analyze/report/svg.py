"""A matplotlib figure as inline SVG with a hover title on every point, and the axes every figure shares.

Figures are inline SVG: they scale with the page, their text is text, and every plotted point (marker, bar, matrix
cell) carries an SVG ``<title>`` with its exact value, which a browser shows on hover: no script, no network
request. A drawing function attaches those titles to its artists with ``tip``; ``to_svg`` writes them into the SVG.

Every text of a figure is made drawable as written just before it is drawn (``drawable_text``): labels name paths,
devices, runs and software versions from run files, and many places set them (legends, titles, notes, tick labels);
one missed ``mathtext_safe`` let ``$...$`` or a control character crash a page. Sweeping the figure's texts covers each
place, present and future; the guard is idempotent, so a label that already passed it is unchanged.
"""

from __future__ import annotations

import functools
import io
import itertools
import math
import warnings
import weakref
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import matplotlib

matplotlib.use("Agg")  # no display: figures are rendered to SVG for the page

import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.backends.backend_svg import RendererSVG
from matplotlib.figure import Figure
from matplotlib.layout_engine import TightLayoutEngine
from matplotlib.lines import Line2D
from matplotlib.text import Text
from matplotlib.textpath import TextToPath
from matplotlib.ticker import FixedFormatter, FixedLocator, FuncFormatter, LogLocator, NullLocator
from matplotlib.transforms import Bbox

from ...units import count, drawable, format_bytes, format_number, format_seconds, mathtext_safe
from ..load.rows import flag, round_times

if TYPE_CHECKING:
    from ..model import Wait

__all__ = ["WIDTH", "Plot", "as_plot", "drawable_text", "legend_outside", "log_y", "roof_share", "rounds_text",
           "size_ticks", "subplots", "tip", "tips_for", "to_svg"]

_SVG = "http://www.w3.org/2000/svg"
_XLINK = "http://www.w3.org/1999/xlink"
ET.register_namespace("", _SVG)
ET.register_namespace("xlink", _XLINK)


# A plain text's extent in an SVG depends on the text and its font alone, yet matplotlib measures it again in each new
# SVG renderer (a figure's tight box, then its savefig), with FreeType: 772 measures of 213 texts for the H200 page.
# Mathtext and TeX (which read rcParams too) are measured as matplotlib does.
_plain_extent = functools.lru_cache(maxsize=4096)(TextToPath().get_text_width_height_descent)
_svg_extent = RendererSVG.get_text_width_height_descent
RendererSVG.get_text_width_height_descent = (  # type: ignore[method-assign]
    lambda self, text, prop, ismath: _plain_extent(text, prop.copy(), False) if ismath is False
    else _svg_extent(self, text, prop, ismath))


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
    if isinstance(artist, Line2D):  # a NaN point is not drawn, nor its title
        x, y = np.asarray(artist.get_xdata(), dtype=object), np.asarray(artist.get_ydata(), dtype=object)
        if len(titles) == x.size:
            titles = [title for title, shown in zip(titles, pd.notna(x) & pd.notna(y), strict=True) if shown]
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
        # Each id is dropped: matplotlib's own (figure_1, patch_3) repeat across figures of one page.
        texts = titles.get(group.attrib.pop("id", ""))
        if texts is None:
            continue
        if not (marks := list(group.iter(f"{{{_SVG}}}use"))):
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
    inset = _lay_out(fig)
    # A salt per figure keeps matplotlib's generated ids (clip paths, markers) unique on a page of many SVGs.
    with matplotlib.rc_context({"svg.hashsalt": key, "svg.fonttype": "none"}):
        fig.savefig(buffer, format="svg", bbox_inches=_tight_box(fig, inset))
    return _add_titles(buffer.getvalue(), _TITLES.pop(fig, {}))


def subplots(*grid: int, figsize: tuple[float, float], layout: Literal["tight"] | None = None,
             **options: Any) -> tuple[Figure, Any]:
    """``pyplot.subplots`` without pyplot (its figure manager and backend import: 0.1 s of every report): the page
    draws to SVG alone, and a figure without a manager needs no closing."""
    fig = Figure(figsize=figsize, layout=layout)
    return fig, fig.subplots(*grid, **options)


def _lay_out(fig: Figure) -> float | None:
    """Lay out a figure drawn with a layout engine (``set_layout_engine("tight")``) once, here, and leave it none:
    with one, savefig lays the figure out and draws it (drawing nothing) before it draws it for good. Returns how far
    inside the figure's edges the whole figure's tight layout left every axes' labels (inches); else None."""
    engine, inset = fig.get_layout_engine(), None
    if isinstance(engine, TightLayoutEngine) and tuple((params := engine.get())["rect"]) == (0, 0, 1, 1):
        # The whole figure: matplotlib measures every panel twice, the second time to fit a rect, which the first
        # pass's margins already fill; one pass (no rect) lays it out the same.
        engine = TightLayoutEngine(pad=params["pad"], h_pad=params["h_pad"], w_pad=params["w_pad"],
                                   rect=None)  # type: ignore[arg-type]  # None: no rect, which the stub leaves out
        inset = params["pad"] * matplotlib.rcParams["font.size"] / 72  # as tight_layout reads its pad
    if engine is None:
        return None
    with warnings.catch_warnings(record=True) as unfit:  # labels too large to fit: laid out as they were
        warnings.simplefilter("always")
        engine.execute(fig)
    fig.set_layout_engine(None)
    return None if unfit else inset


def _tight_box(fig: Figure, inset: float | None = None) -> Bbox:
    """What ``bbox_inches="tight"`` crops to, measured as it does (an SVG renderer at 72 dpi) but without its
    extra pass: "tight" lays out and draws the whole figure once (drawing nothing) before it draws it for good. A
    figure laid out whole (``inset``: ``_lay_out``'s) is the figure less the inset, with its legends (placed outside
    the axes, which the layout does not move): every text measured again would give the same box."""
    dpi, fig.dpi = fig.dpi, 72  # as savefig draws an SVG: text is measured in points
    try:
        width, height = fig.get_size_inches() * 72
        renderer = RendererSVG(width, height, io.StringIO(), None, 72)
        box = fig.get_tightbbox(renderer) if inset is None else Bbox.union(
            [Bbox.from_extents(inset, inset, width / 72 - inset, height / 72 - inset),
             *(legend.get_window_extent(renderer).transformed(fig.dpi_scale_trans.inverted()) for legend in fig.legends)])
    finally:
        fig.dpi = dpi
    return box.padded(matplotlib.rcParams["savefig.pad_inches"])


def as_plot(key: str, title: str, caption: str, figure: Figure | str) -> Plot:
    """A drawn figure as inline SVG, or the reason it could not be drawn."""
    return Plot(key, title, caption, None, figure) if isinstance(figure, str) else Plot(key, title, caption, to_svg(figure, key))


#: Width of every figure (inches): the page is 1200 px wide, so text stays legible at 1:1.
WIDTH = 11.0


def size_ticks(ax: Axes, sizes: Sequence[float]) -> None:
    """A log2 size axis with at most 7 labelled ticks (powers of 2, evenly spaced), never overlapping, and a grid."""
    ax.set_xscale("log", base=2)
    low, high = math.floor(math.log2(max(min(sizes), 1))), math.ceil(math.log2(max(max(sizes), 1)))
    step = next((s for s in (1, 2, 5, 10) if 7 * s >= high - low + 1), 10)  # 1 KiB, 1 MiB, 1 GiB fall on ticks
    ticks = [2.0**e for e in range(low, high + 1) if e % step == 0] or [2.0**low, 2.0**high]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_bytes(v)))
    ax.set_xlim(2.0**low / 1.4, 2.0**high * 1.4)
    ax.grid(True, alpha=0.3)


def log_y(ax: Axes) -> None:
    """A log y axis labelled in plain numbers (0.01, 10, 1000): quicker to read, and no mathtext to lay out.

    An axis that spans less than a decade may hold no power of ten at all: its minor ticks (2, 3, ... 9 x 10^k)
    are labelled then, decided when the figure is drawn, once the limits are final."""
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_number(v)))
    ax.yaxis.set_minor_locator(_NarrowMinor(ax))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: format_number(v)))


class _NarrowMinor(LogLocator):
    """A log axis' minor ticks (2, 3, ... 9 x 10^k) only where it spans less than a decade, where they carry its
    labels; a wider axis has its powers of ten. Each tick is a line and a label laid out at every measure of the
    figure: the minor ticks of wide axes were most of the ticks the H200 page laid out."""

    def __init__(self, ax: Axes) -> None:
        super().__init__(subs="auto")
        self._ax = ax

    def tick_values(self, vmin: float, vmax: float) -> Any:
        low, high = self._ax.get_ylim()  # less than a decade: few or no major ticks fall on it
        return super().tick_values(vmin, vmax) if low > 0 and high / low < 10 else []


def legend_outside(fig: Figure, handles: Sequence[Artist], labels: Sequence[str], title: str | None = None) -> None:
    if handles:  # labels name paths and devices from the data: a '$' in them is text, not mathtext
        fig.legend(handles, [mathtext_safe(str(label)) for label in labels], loc="upper left",
                   bbox_to_anchor=(1.0, 0.98), fontsize=8, title=title, title_fontsize=8, frameon=False)


def tips_for(rows: pd.DataFrame, value: Callable[[pd.Series], str], resident: pd.Series | None = None) -> list[str]:
    return [f"{row['path']}\n{format_bytes(row['nbytes'])}: {value(row)}\nmedian {format_seconds(row['median_s'])}"
            + (" round trip" if flag(row, "round_trip") else "") + f" over {rounds_text(row, ' rounds')}"
            + ("\nfaster than memory allows: ran from a cache" if resident is not None and resident[index] else "")
            for index, row in rows.iterrows()]


def rounds_text(row: pd.Series, rounds: str = "") -> str:
    """``80 × 100``: rounds × calls a round, ``rounds`` after the first (a hover's ``80 rounds × 100``); a row whose
    blocks timed different calls a round gives their range (``90 × 1,000-1,058``: no one count was all of it), and each
    block's with its median where they lie 2× or more apart, for the median of all its rounds mixes two timings
    (``80 × 1-100, its blocks' calls a round (median): 100 (14 µs), 100 (15 µs), 1 (12 ms), ...``); rounds on the
    scheduler's ticks, and blocks left out for lying on them (analyze/load/blocks.py), are named."""
    blocks = row.get("block_iterations")  # NaN for a row measured in one block
    calls = [int(n) for n in (blocks if isinstance(blocks, list) else [row["iterations"]]) if n == n]  # NaN: not run
    text = f"{int(row['rounds']):,}{rounds} × {min(calls):,}" + (f"-{max(calls):,}" if max(calls) > min(calls) else "")
    if pd.notna(row.get("on_ticks", math.nan)):
        text += f", {ticks_said(row, 'them')}"
    if pd.notna(left := row.get("tick_blocks", 0)) and left > 0:  # NaN for a row measured in one block
        text += f", {count(left, 'block')} of one call a round on the scheduler's ticks left out"
    if not flag(row, "mixed_iterations"):
        return text
    medians = [format_seconds(m) for m, n in zip(row["block_medians"], blocks, strict=True) if n == n]
    return text + ", its blocks' calls a round (median): " + ", ".join(f"{n} ({m})" for n, m in zip(calls, medians, strict=True))


#: The mark beside a time whose rounds waited for the CPU (``on_ticks``), in the first screen's table and the hovers alike.
ON_TICKS = " (its rounds waited for the CPU)"


def ticks_said(row: pd.Series, of: str = "its time") -> str:
    """``its median and a quarter or more of its rounds lie on the scheduler's 4 ms ticks: a wait for the CPU is part of
    its time``: a row's ``on_ticks`` (analyze/load/blocks.py), for hovers and sentences alike; of rounds of many calls,
    how its median round stood off its fastest."""
    if (times := round_times(row))[0] < 2:
        return f"its median and a quarter or more of its rounds lie on the scheduler's {format_seconds(row['on_ticks'])} " \
               f"ticks: a wait for the CPU is part of {of}"
    return (f"its median round of {times[0]:,} calls took {format_seconds(float(np.median(times[1])))}, its fastest "
            f"{format_seconds(float(times[1].min()))}: a wait for the CPU is part of {of}")


def left_said(row: pd.Series, wait: Wait | None, of: str = "its time") -> str | None:
    """What a ladder's bottom rung (``row``) carries beside its time: its rounds on the scheduler's ticks, else the most
    of it its bytes set where they set little (``Ladder.waited``); None where its bytes set it."""
    if pd.notna(row.get("on_ticks", math.nan)):
        return ticks_said(row, of)
    return None if wait is None else bytes_said(wait, of)


def bytes_said(wait: Wait, of: str = "its time") -> str:
    """``the bytes set at most 9% of its time`` (``Wait.share``), for hovers and sentences alike; where the smaller size
    took longer beyond the interval the line fails, and no share is read (the H200's pageable h2d 1 KiB: 0.73x its
    64 B's time)."""
    if wait.growth.high < 1:
        took = "more bytes took less" if wait.larger else "fewer bytes took longer"
        return f"no share of {of} shows as the bytes' (a size with {wait.factor:,.0f}× {took})"
    return f"the bytes set {'under 1%' if wait.share < 0.005 else f'at most {wait.share:.0%}'} of {of}"


def roof_share(gbps: float, peak: float, practical: tuple[float, float] | None = None) -> str:
    """The one definition of "share of roof", as the figures label roofs and the α/β table gives it: the bandwidth a
    path reached at its largest size over the roof's figure, the roof printed beside it; against the practical
    ceiling of pinned copies where one is given."""
    if not (math.isfinite(gbps) and peak > 0):
        return "–"
    text = f"{gbps / peak:.0%} of {format_number(peak)} GB/s"
    if practical is not None:
        text += (f" ({gbps / practical[1] * 100:.0f}-{gbps / practical[0]:.0%} of the practical "
                 f"{practical[0]:g}-{practical[1]:g})")
    return text


def drawable_text(fig: Figure) -> None:
    """Pass each text of ``fig`` through ``mathtext_safe``: its artists, and the fixed tick labels, which matplotlib
    writes into the tick artists only as it draws."""
    for text in _texts(fig):
        text.set_text(mathtext_safe(text.get_text()))
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for formatter in (axis.get_major_formatter(), axis.get_minor_formatter()):
                if isinstance(formatter, FixedFormatter):
                    formatter.seq = [mathtext_safe(str(label)) for label in formatter.seq]


def _texts(fig: Figure) -> Iterator[Text]:
    """Each text artist of ``fig`` but the tick labels: drawing writes those from the axis's formatter (a fixed one
    is swept above), and asking an axis for its ticks runs its locators and makes tick artists, which took more
    time than drawing some figures."""
    stack: list[Artist] = [fig]
    while stack:
        artist = stack.pop()
        if isinstance(artist, Text):
            yield artist
        if isinstance(artist, Axis):
            stack += [artist.label, artist.offsetText]
        else:
            stack += artist.get_children()
