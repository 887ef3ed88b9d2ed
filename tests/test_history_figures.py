"""What the history page and the store's dashboard draw, read back from their matplotlib figures (issue 35): a colour
and marker of its own per line, ratios on a log axis, whole run names inside the figure, and a band per line for
its run-to-run noise as compare measures it."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PathCollection, PolyCollection
from matplotlib.colors import to_rgba

from test_compare import BANDWIDTH_SLOWED
from test_history import HOST, write_runs
from test_history import drawn as drawn  # the figures drawn: a fixture, used by name
from xferbench.analyze import store
from xferbench.analyze.gate.compare import compare
from xferbench.analyze.load.results import load
from xferbench.analyze.report import history
from xferbench.analyze.report.history import history_plots

LONG = "0001_c0ffee_20261102_000000_uncommited-changes"


class _Run:
    """What path_trends reads of a run besides its times (run_times, replaced below): its file and machine."""

    def __init__(self, name: str) -> None:
        self.sources, self.machine_info = [name], {}


def _trends(monkeypatch, logs: np.ndarray, names: list[str], path: str = "h2d pinned copy_ cpu->cuda:0"):
    """path_trends over one path whose sizes are the rows of ``logs`` (log seconds, one column per run)."""
    table = pd.DataFrame(logs, index=[f"case{i}" for i in range(len(logs))])
    meta = pd.DataFrame({"path": path, "nbytes": [2**(10 + i) for i in range(len(logs))], "class": "bandwidth"},
                        index=table.index)
    monkeypatch.setattr(store, "run_times", lambda runs: (table, meta))
    return store.path_trends([_Run(f"/store/{name}.json") for name in names])


def _lines(ax):
    return [line for line in ax.get_lines() if not line.get_label().startswith("_")]


def _bands(ax):
    return [c for c in ax.collections if isinstance(c, PolyCollection) and not isinstance(c, PathCollection)]


def _style(line) -> tuple:
    return to_rgba(line.get_color()), line.get_marker()


class TestDistinctLines:
    def test_the_twelve_key_cases_each_have_their_own_colour_and_marker(self, tmp_path, drawn):
        """12 lines on matplotlib's 10-colour cycle, all drawn with "o": two pairs of lines looked alike."""
        history_plots(write_runs(tmp_path / "runs", [1, 1, 1]))
        lines = _lines(drawn[0].axes[0])
        assert len(lines) == 12
        assert len({_style(line) for line in lines}) == 12
        assert len({line.get_marker() for line in lines}) == 12 and "^" not in {line.get_marker() for line in lines}

    def test_a_dashboard_path_of_twelve_sizes_has_twelve_looks(self, monkeypatch, drawn):
        """A full profile measures 12 sizes of a path: its dashboard trend reused two colours of ten."""
        _trends(monkeypatch, np.zeros((12, 3)), ["a", "b", "c"])
        lines = _lines(drawn[0].axes[0])
        assert len(lines) == 12 and len({_style(line) for line in lines}) == 12

    def test_past_five_hundred_runs_every_line_still_shows_its_marker(self, tmp_path):
        """Beyond MAX_MARKED runs a mark per run is too dear to draw: every k-th run keeps one (the legend too)."""
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots()
        line = history.draw_trend(ax, list(range(1000)), np.ones(1000), "bandwidth", 3, "x")
        assert line.get_marker() == history.MARKERS[3] and line.get_markevery() == 25
        plt.close(fig)


class TestLogRatioAxis:
    def test_the_history_ratios_are_on_a_log_axis_in_percent(self, tmp_path, drawn):
        history_plots(write_runs(tmp_path / "runs", [1, 1, 1, 1.5, 1.5, 1.5, 1.5]))
        ax = drawn[0].axes[0]
        assert ax.get_yscale() == "log" and ax.get_ylabel() == "time, % of first run"
        drawn[0].canvas.draw()
        low, high = ax.get_ylim()
        shown = [t.get_text() for t in ax.get_yticklabels() if low <= t.get_position()[1] <= high]
        assert shown == ["90%", "100%", "120%", "140%", "160%", "180%"]  # LogLocator labelled 90% and 100% alone

    def test_a_dashboard_trend_of_a_1600x_slowdown_is_on_a_log_axis(self, monkeypatch, drawn):
        """One dashboard drew 160,000% on a linear axis: every other line was flat at its bottom."""
        logs = np.log(np.array([[1e-3, 1e-3, 1.6], [1e-3, 1.1e-3, 1e-3]]))
        _trends(monkeypatch, logs, ["a", "b", "c"])
        ax = drawn[0].axes[0]
        assert ax.get_yscale() == "log"
        assert max(_lines(ax)[0].get_ydata()) == pytest.approx(160_000)
        low, high = ax.get_ylim()
        assert low < 100 < 160_000 < high and high / low < 1e5


class TestWholeRunNames:
    @staticmethod
    def _inside(figure) -> list[str]:
        """The x tick labels, each checked to lie wholly inside the figure once it is laid out and drawn."""
        figure.canvas.draw()
        box = figure.bbox
        (ax,) = figure.axes
        labels = ax.get_xticklabels()
        for label in labels:
            extent = label.get_window_extent()
            assert box.x0 - 1 <= extent.x0 and extent.x1 <= box.x1 + 1 and box.y0 - 1 <= extent.y0, label.get_text()
        return [label.get_text().replace("\n", "") for label in labels]

    def test_history_names_each_run_whole_inside_the_figure(self, tmp_path, drawn):
        folder = write_runs(tmp_path / "runs", [1, 1, 1])
        (folder / "0002_run.json").rename(folder / f"{LONG}.json")
        history_plots(folder)
        assert self._inside(drawn[0]) == ["0000_run", "0001_run", LONG]

    def test_the_dashboard_names_each_stored_run_whole_inside_the_figure(self, monkeypatch, drawn):
        """Stored runs are named <datetime>-<commit>-<hash>: cut to 15 characters, only the datetime was left."""
        names = [f"20261201T12000{i}-abcdef1234-1a2b3c4{i}" for i in range(3)]
        _trends(monkeypatch, np.zeros((2, 3)), names)
        assert self._inside(drawn[0]) == names

    def test_many_long_names_leave_room_for_their_lines(self, tmp_path):
        """A name on three lines takes three names' room: at most 40 / 3 labels, the first and newest among them."""
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots()
        ax.plot(range(100), range(100))
        history.run_ticks(ax, [Path(f"{i:04d}_c0ffee_20261102_000000_dirty.json") for i in range(100)])
        labels = [label.get_text() for label in ax.get_xticklabels()]
        assert labels[0] == "0000_c0ffee_\n20261102_000000_\ndirty" and labels[-1].startswith("0099_")
        assert len(labels) == 13
        plt.close(fig)


class TestNoiseBand:
    def _host_bands(self, ax):
        (host,) = [line for line in _lines(ax) if line.get_label() == f"{HOST} 16 MiB"]
        bands = [band for band in _bands(ax) if band.get_label() == f"_noise band of {HOST} 16 MiB"]
        assert all(np.allclose(band.get_facecolor()[0][:3], to_rgba(host.get_color())[:3]) for band in bands)
        return bands

    @staticmethod
    def _extent(band) -> tuple[float, float, float, float]:
        vertices = np.concatenate([path.vertices for path in band.get_paths()])
        return vertices[:, 0].min(), vertices[:, 0].max(), vertices[:, 1].min(), vertices[:, 1].max()

    def test_one_band_per_level_at_the_class_default_under_five_runs(self, tmp_path, drawn):
        """1, 1, 1 then 1.5 x4: two levels of the 16 MiB host copy, each under 5 runs, so its band is the
        bandwidth-bound default spread either side: 100 e^±0.15 over runs 0-2, 150 e^±0.15 over runs 3-6."""
        (plot,) = history_plots(write_runs(tmp_path / "runs", [1, 1, 1, 1.5, 1.5, 1.5, 1.5]))
        bands = sorted(self._extent(b) for b in self._host_bands(drawn[0].axes[0]))
        assert bands == [pytest.approx((0, 2, 100 * math.exp(-0.15), 100 * math.exp(0.15))),
                         pytest.approx((3, 6, 150 * math.exp(-0.15), 150 * math.exp(0.15)))]
        assert "The shaded band around each line is its run-to-run noise as compare measures it" in plot.caption

    def test_the_band_is_the_spread_compare_learns_from_the_same_runs(self, tmp_path, drawn):
        """Eight runs wobbling by known factors: the band is the median level times e^±s, s = 1.4826 × MAD of the
        log times × (1 + 1.17/√8), and compare, judging a run against these eight, uses that same spread."""
        factors = [1.0, 1.08, 0.93, 1.02, 0.97, 1.12, 0.9, 1.04]
        folder = write_runs(tmp_path / "runs", factors)
        history_plots(folder)
        (band,) = self._host_bands(drawn[0].axes[0])
        logs = np.log(factors)
        mad = np.median(np.abs(logs - np.median(logs)))
        spread = 1.4826 * mad * (1 + 1.17 / math.sqrt(8))
        level = 100 * math.exp(np.median(logs))
        assert self._extent(band) == pytest.approx((0, 7, level * math.exp(-spread), level * math.exp(spread)))
        runs = [load([path]) for path in sorted(folder.glob("*.json"))]
        (judged,) = [c for c in compare(runs, runs[-1:]) if c.key.startswith(BANDWIDTH_SLOWED) or
                     (c.path == HOST and c.nbytes == 16 * 2**20)]
        assert judged.spread == pytest.approx(spread) and judged.spread_from == "history"

    def test_the_dashboard_draws_the_same_band(self, monkeypatch, drawn):
        """Six runs of one size, log times known: the dashboard's band is its level e^±s as the history page's."""
        logs = np.log([1.0, 1.1, 0.95, 1.05, 0.9, 1.0]) + math.log(2e-3)
        (plot,) = _trends(monkeypatch, logs[None, :], [str(i) for i in range(6)])
        (band,) = _bands(drawn[0].axes[0])
        relative = logs - logs[0]
        spread = 1.4826 * np.median(np.abs(relative - np.median(relative))) * (1 + 1.17 / math.sqrt(6))
        level = 100 * math.exp(np.median(relative))
        assert self._extent(band) == pytest.approx((0, 5, level * math.exp(-spread), level * math.exp(spread)))
        assert "The shaded band around each line is its run-to-run noise" in plot.caption

