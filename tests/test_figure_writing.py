"""How a figure becomes SVG: cropped as matplotlib's ``bbox_inches="tight"`` crops it (nothing clipped)."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET

import matplotlib
import matplotlib.pyplot as plt
import pytest
from matplotlib.figure import Figure

from xferbench.analyze.report.svg import legend_outside, log_y, tip, to_svg

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


def _frame(svg_text: str) -> tuple[float, float]:
    root = ET.fromstring(svg_text)
    return float(root.get("width", "").removesuffix("pt")), float(root.get("height", "").removesuffix("pt"))


def _tight(fig: Figure) -> tuple[float, float]:
    """matplotlib's own frame of ``fig``: laid out, then drawn with ``bbox_inches="tight"``."""
    fig.tight_layout()
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": "k", "svg.fonttype": "none"}):
        fig.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(fig)
    return _frame(buffer.getvalue())


def test_the_crop_holds_matplotlib_tight_crop_with_every_text() -> None:
    """One draw instead of "tight"'s two, and the layout's margins instead of a second measure of every text: the frame
    holds matplotlib's tight crop, a few points wider at most (a legend outside the axes and long labels are not clipped)."""
    (width, height), (tight_width, tight_height) = _frame(written := to_svg(_figure(), "k")), _tight(_figure())
    assert tight_width - 0.01 <= width <= tight_width + 8 and tight_height - 0.01 <= height <= tight_height + 8
    texts = ["".join(text.itertext()) for text in ET.fromstring(written).iter(f"{_SVG}text")]
    assert "a legend entry far outside the axes, figure 0" in texts and "a hundred, a long tick label" in texts
    assert [title.text for title in ET.fromstring(written).iter(f"{_SVG}title")] == ["one", "two", "three"] * 2


def test_labels_the_layout_cannot_fit_are_measured_as_matplotlib_crops_them() -> None:
    """Where tight layout cannot fit the labels (it warns and leaves the figure as it was), they reach past its edges:
    the crop is measured, as "tight" measures it, not taken from the layout's margins."""
    def crowded() -> Figure:
        fig, axes = plt.subplots(1, 2, figsize=(2, 1.5))
        for ax in axes:
            ax.set_yticks([1, 2], ["a tick label far wider than its panel", "2"])
        fig.set_layout_engine("tight")
        return fig

    with pytest.warns(UserWarning, match="Tight layout not applied"):
        tight = _tight(crowded())
    assert _frame(to_svg(crowded(), "k")) == pytest.approx(tight, abs=0.01)


def _minor_labels(low: float, high: float) -> list[str]:
    fig, ax = plt.subplots()
    ax.plot([1, 2], [low, high])
    log_y(ax)
    ax.set_ylim(low, high)
    fig.canvas.draw()
    ticks = [(loc, t.get_text()) for loc, t in zip(ax.yaxis.get_minorticklocs(), ax.yaxis.get_minorticklabels(), strict=True)
             if low <= loc <= high]
    plt.close(fig)
    return [text for _, text in ticks] if ticks else ["no minor ticks"]


def test_a_log_axis_under_a_decade_labels_its_minor_ticks_and_a_wider_one_has_none() -> None:
    """A y axis from 2 to 5 holds no power of ten: its minor ticks carry its labels. One from 1 to 1000 has its powers
    of ten, and no minor ticks to lay out at every measure of the figure."""
    assert _minor_labels(2.0, 5.0) == ["2", "3", "4", "5"]
    assert _minor_labels(1.0, 1000.0) == ["no minor ticks"]


def test_an_svg_text_is_measured_as_matplotlib_measures_it():
    """The page caches each plain text's SVG extent (svg.py): the cached figure is FreeType's own, for each font size
    and text (a key that left out the font would give the first size's extent to the second), and mathtext goes to
    matplotlib's own measure."""
    from matplotlib.backends.backend_svg import RendererSVG
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    renderer, truth = RendererSVG(100, 100, io.StringIO()), TextToPath()
    for text, size, ismath in [("64 MiB", 6, False), ("64 MiB", 12, False), ("1.07 GB/s", 12, False),
                               ("64 MiB", 12, False), (r"$\alpha$", 12, True)]:
        prop = FontProperties(size=size)
        assert renderer.get_text_width_height_descent(text, prop, ismath) == pytest.approx(
            truth.get_text_width_height_descent(text, prop, ismath))


def test_a_cache_line_beyond_the_sizes_drawn_is_left_out(tmp_path):
    """The loaded run's host copies kept to 1 KiB and below: the cache's edge (2n past the 32 MiB L3) lies far right of
    every size drawn, and its label, unclipped, widened the figure past what tight layout could lay out. Where the
    edge falls among the sizes (the threads run, 4 B to 1 GiB; cpu-sample's sizes up to 1 KiB) the line stays."""
    import json
    import warnings
    from pathlib import Path

    from xferbench.analyze.load.results import load
    from xferbench.analyze.report.plots import bandwidth_of
    from xferbench.analyze.view import RunView

    run = json.loads((Path(__file__).parent / "data" / "cpu-sample.json").read_text())
    whole = to_svg(bandwidth_of(RunView.of(load([Path(__file__).parent / "data" / "cpu-threads-sample.json"])), "host"))
    run["benchmarks"] = [b for b in run["benchmarks"] if b["extra_info"]["nbytes"] <= 1024]
    (tmp_path / "small.json").write_text(json.dumps(run))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib: "Tight layout not applied"
        small = to_svg(bandwidth_of(RunView.of(load([tmp_path / "small.json"])), "host"))
    assert "2n = " in whole and "2n = " not in small


def test_a_point_not_drawn_takes_no_hover_from_the_next():
    """matplotlib draws no marker for a NaN (a waited size's masked GB/s): its title goes with it, so each drawn marker
    keeps its own (the quick run's gloo all_reduce 16 MiB was hovered as its 1 KiB, "busbw –")."""
    fig, ax = plt.subplots()
    line, = ax.plot([1, 2, 3, 4], [1.0, float("nan"), 3.0, 4.0], ls="", marker="o")
    tip(line, ["one", "two", "three", "four"])
    root = ET.fromstring(to_svg(fig))
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert titles == ["one", "three", "four"]
    plt.close(fig)
