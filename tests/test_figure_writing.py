"""How a figure becomes SVG: cropped as matplotlib's ``bbox_inches="tight"`` crops it (nothing clipped), and, while a
page is built, written in a forked process (report/aside.py) exactly as it would be written in place; a child that
fails leaves its figures to the parent, and what writing a figure warns or raises reaches the caller."""

from __future__ import annotations

import io
import os
import warnings
import xml.etree.ElementTree as ET

import matplotlib
import matplotlib.pyplot as plt
import pytest
from matplotlib.figure import Figure

from xferbench.analyze.report import aside, svg
from xferbench.analyze.report.aside import Aside
from xferbench.analyze.report.svg import as_plot, legend_outside, log_y, tip, to_svg

_SVG = "{http://www.w3.org/2000/svg}"


def _figure(index: int = 0) -> Figure:
    """Two panels laid out tight, a legend outside the right edge, a long tick label, hover texts."""
    fig, axes = plt.subplots(2, 1, figsize=(5, 4))
    for ax in axes:
        line, = ax.plot([1, 2, 3], [1, 10, 100 * (index + 1)], marker="o", label="x")
        tip(line, ["one", "two", "three"])
        log_y(ax)
        ax.set_title(f"panel {index}")
        ax.set_yticks([1, 100], ["one", "a hundred, a long tick label"])
    legend_outside(fig, [line], [f"a legend entry far outside the axes, figure {index}"])
    fig.set_layout_engine("tight")
    return fig


def _frame(svg_text: str) -> tuple[str | None, str | None, str | None]:
    root = ET.fromstring(svg_text)
    return root.get("width"), root.get("height"), root.get("viewBox")


def test_the_crop_is_matplotlib_tight_crop_with_every_text() -> None:
    """One draw instead of "tight"'s two, the same frame: a legend outside the axes and long labels are not clipped."""
    reference = _figure()
    reference.tight_layout()
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": "k", "svg.fonttype": "none"}):
        reference.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(reference)
    written = to_svg(_figure(), "k")
    assert _frame(written) == _frame(buffer.getvalue())
    texts = ["".join(text.itertext()) for text in ET.fromstring(written).iter(f"{_SVG}text")]
    assert "a legend entry far outside the axes, figure 0" in texts and "a hundred, a long tick label" in texts
    assert [title.text for title in ET.fromstring(written).iter(f"{_SVG}title")] == ["one", "two", "three"] * 2


def _page(count: int) -> tuple[str, int]:
    """``count`` figures' SVGs written inside an ``Aside``, and how many children it forked."""
    forks = 0
    real_fork = os.fork

    def counted() -> int:
        nonlocal forks
        forks += 1
        return real_fork()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "fork", counted)
        patch.setattr(aside, "_spare_core", lambda: True)  # whatever else runs on the machine
        with Aside() as written:
            plots = [as_plot(f"k{i}", "title", "caption", _figure(i)) for i in range(count)]
    return written.fill("\n".join(str(plot.svg) for plot in plots)), forks


def _in_place(count: int) -> str:
    return "\n".join(to_svg(_figure(i), f"k{i}") for i in range(count))


def test_figures_written_aside_are_those_written_in_place() -> None:
    before = set(plt.get_fignums())  # figures another test of this worker left open are not this test's
    page, forks = _page(4)
    assert forks >= 1 and "<!--xferbench-figure-" not in page
    assert page == _in_place(4)
    assert set(plt.get_fignums()) <= before  # every figure closed, the forked ones too


def test_a_child_that_fails_leaves_its_figures_to_the_parent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aside, "_write", lambda jobs, result: os._exit(3))
    page, forks = _page(3)
    assert forks >= 1 and page == _in_place(3)


def test_warnings_and_errors_of_writing_a_figure_reach_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    real = svg.to_svg

    def warning(fig: Figure, key: str) -> str:
        warnings.warn(f"written {key}", UserWarning, stacklevel=1)
        return real(fig, key)

    monkeypatch.setattr(svg, "to_svg", warning)
    with pytest.warns(UserWarning) as caught:
        _, forks = _page(3)
    assert forks >= 1 and sorted(str(w.message) for w in caught) == ["written k0", "written k1", "written k2"]

    def failing(fig: Figure, key: str) -> str:
        raise ValueError(f"cannot write {key}")

    monkeypatch.setattr(svg, "to_svg", failing)
    with pytest.raises(ValueError, match="cannot write k0"):
        _page(2)
    plt.close("all")


def test_without_fork_figures_are_written_where_they_are_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows has no os.fork."""
    monkeypatch.delattr(os, "fork")
    with Aside() as written:
        plot = as_plot("k0", "title", "caption", _figure(0))
    assert plot.svg == written.fill(str(plot.svg)) == _in_place(1)


def test_with_every_core_busy_figures_are_written_where_they_are_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aside, "_spare_core", lambda: False)
    monkeypatch.setattr(os, "fork", lambda: pytest.fail("forked with every core busy"))
    with Aside() as written:
        plots = [as_plot(f"k{i}", "title", "caption", _figure(i)) for i in range(2)]
    assert written.fill("\n".join(str(plot.svg) for plot in plots)) == _in_place(2)
