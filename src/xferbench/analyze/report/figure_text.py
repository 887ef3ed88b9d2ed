"""Every text of a figure made drawable as written, in one place, just before it is drawn.

Labels name paths, devices, runs and software versions from run files, and many places set them (legends, titles,
notes, tick labels): one missed ``mathtext_safe`` let ``$...$`` or a control character crash a page. Sweeping the
figure's texts when it is drawn covers each place, present and future; the guard is idempotent, so a label that
already passed it is unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator

from matplotlib.artist import Artist
from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import FixedFormatter

from ...units import mathtext_safe

__all__ = ["drawable_text"]


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
