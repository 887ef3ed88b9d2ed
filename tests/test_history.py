import copy
import itertools
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
from matplotlib.markers import MarkerStyle

from test_compare import BANDWIDTH_SLOWED, SLOWED, scaled
from xferbench.analyze.load.history import lasting_steps, load_storage
from xferbench.analyze.load.results import ResultsError
from xferbench.analyze.report.history import BAND_CAPTION, history_plots
from xferbench.analyze.report.plots import as_plot
from xferbench.cli import main

from hostile_inputs import put, small

SAMPLE = Path(__file__).parent / "data" / "cpu-sample.json"


@pytest.fixture
def storage(tmp_path) -> Path:
    """A pytest-benchmark storage folder with three runs; the third slowed two cases 2x."""
    sample = json.loads(SAMPLE.read_text())
    folder = tmp_path / ".benchmarks" / "Linux-CPython-3.11-64bit"
    folder.mkdir(parents=True)
    for number, (data, when) in enumerate([(sample, "2026-11-01"), (sample, "2026-11-02"),
                                           (scaled(sample, 2.0, SLOWED), "2026-11-03")], start=1):
        data = copy.deepcopy(data)
        data["datetime"] = f"{when}T00:00:00"
        (folder / f"{number:04d}_run.json").write_text(json.dumps(data))
    return tmp_path / ".benchmarks"


def test_runs_oldest_first(storage):
    assert [s.path.name for s in load_storage(storage).summaries] == ["0001_run.json", "0002_run.json", "0003_run.json"]


class TestSteps:
    """Lasting steps over a case's history (ruptures), seeded noise of known size."""

    noise = np.random.default_rng(0).normal(0, 0.05, 30)

    def test_a_lasting_step_is_found_where_it_starts(self):
        series = self.noise[:14] + np.r_[np.zeros(8), np.full(6, np.log(2))]
        assert lasting_steps(series, 0.05, 0.25) == [8]

    def test_a_step_of_a_busy_machine_is_found(self):
        """Six runs, the last three on a busy machine 350x slower (1 MiB clone: 11 µs quiet, 3.9 ms busy): ruptures
        finds the level (whether the gate accepts it is noise.current_segment's, tests/test_noise.py)."""
        series = np.r_[np.zeros(3), np.full(3, np.log(350))] + self.noise[:6] / 5
        assert lasting_steps(series, 0.4, 1.0) == [3]

    def test_wobble_and_single_wild_runs_are_not_steps(self):
        series = self.noise[:14].copy()
        series[5] += np.log(20)  # one run met a busy neighbour
        assert lasting_steps(series, 0.05, 0.25) == []

    def test_a_step_below_the_floor_is_not_marked(self):
        series = self.noise[:14] / 5 + np.r_[np.zeros(7), np.full(7, np.log(1.15))]
        assert lasting_steps(series, 0.02, 0.25) == []
        assert lasting_steps(series, 0.02, 0.10) == [7]

    def test_too_short_to_tell(self):
        """A level must hold for 3 runs on each side: 5 runs can show no step."""
        assert lasting_steps(np.r_[0, 0, 0, 1, 1.0], 0.05, 0.25) == []
        assert lasting_steps(np.r_[0, 0, 0, 1, 1, 1.0], 0.05, 0.25) == [3]

    def test_two_steps(self):
        series = self.noise[:15] + np.r_[np.zeros(5), np.full(5, np.log(2)), np.full(5, np.log(4))]
        assert lasting_steps(series, 0.05, 0.25) == [5, 10]


def test_trend_plot_drawn(storage):
    (plot,) = history_plots(storage)
    assert plot.svg and plot.missing is None


def test_one_run_explains_itself(tmp_path):
    (tmp_path / "only.json").write_text(SAMPLE.read_text())
    (plot,) = history_plots(tmp_path)
    assert plot.svg is None and "trends need two or more" in plot.missing


@pytest.mark.slow
def test_history_command_writes_report_with_trends(storage, tmp_path):
    out = tmp_path / "index.html"
    assert main(["report", str(storage), "-o", str(out)]) == 0
    html = out.read_text()
    assert 'id="history"' in html and 'data-plot="history"' in html
    assert "0003_run.json" in html  # the newest run is the one reported


# -- What the history page shows, read back from the figure ------------------------------------------------------

HOST = "host pageable copy_ cpu"
KEYS = ["host pageable clone cpu", HOST, "create empty on cpu", "create ones on cpu", "create rand on cpu",
        "create zeros on cpu", "noop .cpu() on cpu", "noop .to() on cpu", "module_to again cpu", "forward cpu",
        "placement convert_on_cpu cpu", "send_recv gloo x2"]


def write_runs(folder: Path, factors: list[float], when=lambda i: f"2026-11-{i + 1:02d}T00:00:00") -> Path:
    """One run per factor, the 16 MiB pageable host copy scaled by it; run i is dated day i + 1."""
    sample = json.loads(SAMPLE.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    for i, factor in enumerate(factors):
        data = scaled(sample, factor, {BANDWIDTH_SLOWED}) | {"datetime": when(i)}
        (folder / f"{i:04d}_run.json").write_text(json.dumps(data))
    return folder


def _marks(ax):
    """The step triangles (scatter collections), not the noise bands (filled polygons)."""
    from matplotlib.collections import PathCollection

    return [c for c in ax.collections if isinstance(c, PathCollection)]


@pytest.fixture
def drawn(monkeypatch):
    """The figures history_plots and the store's path_trends drew (before they became SVG)."""
    from xferbench.analyze import store
    from xferbench.analyze.report import history

    figures = []

    def keep(key, title, caption, figure):
        figures.append(figure)
        return as_plot(key, title, caption, figure)

    monkeypatch.setattr(history, "as_plot", keep)
    monkeypatch.setattr(store, "as_plot", keep)
    return figures


class TestTrendPlot:
    def test_each_key_case_relative_to_its_first_run_with_the_lasting_step_marked(self, tmp_path, drawn):
        """Seven runs, the host copy 1.5x slower from the fourth on: its line reads 100, 100, 100, 150...,
        one triangle where the new level starts (beyond its 25% bandwidth floor, within a latency-bound
        case's 100%); the other cases stay at 100 with no triangle."""
        (plot,) = history_plots(write_runs(tmp_path / "runs", [1, 1, 1, 1.5, 1.5, 1.5, 1.5]))
        assert (plot.key, plot.title, plot.missing) == ("history", "Key cases over runs", None)
        assert plot.caption == (
            "Time of key cases in each run, as compare judges it (a latency-bound case's fastest round, another's "
            "median), relative to the first run that measured them. A triangle marks a "
            "lasting step (a new level held for 3+ runs and beyond the case's floor, found by ruptures' change-point "
            "search); run-to-run wobble is not marked. A step resets the baseline compare uses. " + BAND_CAPTION)
        (ax,) = drawn[0].axes
        labels = [text.get_text() for text in ax.get_legend().get_texts()]
        sizes = {"module_to again cpu": "38.2 MiB", "forward cpu": "256 KiB", "placement convert_on_cpu cpu": "9.19 MiB"}
        assert labels == [f"{path} {sizes.get(path, '16 MiB')}" for path in KEYS]  # each path at its largest size
        lines = {line.get_label(): line for line in ax.get_lines() if not line.get_label().startswith("_")}
        assert list(lines[f"{HOST} 16 MiB"].get_xdata()) == list(range(7))
        assert list(lines[f"{HOST} 16 MiB"].get_ydata()) == pytest.approx([100, 100, 100, 150, 150, 150, 150])
        assert list(lines["noop .cpu() on cpu 16 MiB"].get_ydata()) == pytest.approx([100] * 7)
        assert all(line.get_marker() not in ("None", "^") and line.get_markevery() is None
                   for line in lines.values())  # a point per run: a run missing shows
        steps = [list(map(tuple, c.get_offsets())) for c in _marks(ax)]
        assert sorted(steps, key=len) == [[]] * 11 + [[(3.0, pytest.approx(150.0))]]
        triangle = MarkerStyle("^")
        expected = triangle.get_path().transformed(triangle.get_transform()).vertices
        assert all(np.allclose(c.get_paths()[0].vertices, expected) for c in _marks(ax))  # as the caption says
        assert [tick.get_text() for tick in ax.get_xticklabels()] == [f"{i:04d}_run" for i in range(7)]
        assert ax.get_ylabel() == "time, % of first run"
        assert [line.get_ydata()[0] for line in ax.get_lines() if line.get_label().startswith("_")] == [100]

    def test_readable_step_marks_ticks_and_legend(self, tmp_path, drawn):
        """What keeps the figure readable: a step's triangle has its case's colour, a black edge, stands
        above the lines and is larger than a run's point; run names are slanted, ending at their tick;
        the legend sits right of the plot, never over a line; 100% is a black reference line over a faint grid."""
        from matplotlib.colors import to_rgba

        history_plots(write_runs(tmp_path / "runs", [1, 1, 1, 1.5, 1.5, 1.5, 1.5]))
        (ax,) = drawn[0].axes
        lines = {line.get_label(): line for line in ax.get_lines()}
        host = lines[f"{HOST} 16 MiB"]
        (mark,) = [c for c in _marks(ax) if len(c.get_offsets())]
        assert tuple(mark.get_facecolor()[0]) == to_rgba(host.get_color())
        assert tuple(mark.get_edgecolor()[0]) == to_rgba("k")
        assert mark.get_zorder() > host.get_zorder() and mark.get_sizes()[0] > 4 * host.get_markersize() ** 2
        ticks = ax.get_xticklabels()
        assert {(t.get_rotation(), t.get_horizontalalignment()) for t in ticks} == {(45.0, "right")}
        drawn[0].canvas.draw()
        legend, plot = ax.get_legend().get_window_extent(), ax.get_window_extent()
        assert legend.x0 > plot.x1 and legend.y1 <= plot.y1 + 1  # right of the plot, from its top
        (reference,) = [line for line in ax.get_lines() if line.get_label().startswith("_")]
        assert to_rgba(reference.get_color()) == to_rgba("k") and reference.get_linewidth() < host.get_linewidth()
        grid = ax.get_ygridlines()  # faint lines to read a level off
        assert grid and all(g.get_visible() and g.get_alpha() < 1 for g in grid)

    def test_long_run_names_are_whole_broken_after_a_separator(self, tmp_path, drawn):
        """pytest-benchmark's autosave names were cut to 14 characters ("0001_c0ffee_20", the date cut mid-way)."""
        folder = write_runs(tmp_path / "runs", [1, 1])
        (folder / "0001_run.json").rename(folder / "0001_c0ffee_20261102_000000_uncommited-changes.json")
        history_plots(folder)
        (ax,) = drawn[0].axes
        assert [t.get_text() for t in ax.get_xticklabels()] == [
            "0000_run", "0001_c0ffee_\n20261102_000000_\nuncommited-changes"]

    def test_a_case_a_run_did_not_measure_leaves_a_gap(self, tmp_path, drawn):
        folder = write_runs(tmp_path / "runs", [1, 1, 1])
        data = json.loads((folder / "0001_run.json").read_text())
        data["benchmarks"] = [b for b in data["benchmarks"] if b["name"] != BANDWIDTH_SLOWED]
        (folder / "0001_run.json").write_text(json.dumps(data))
        history_plots(folder)
        (ax,) = drawn[0].axes
        line = next(line for line in ax.get_lines() if line.get_label() == f"{HOST} 16 MiB")
        assert list(line.get_xdata()) == [0, 2]

    def test_two_runs_are_a_trend_relative_to_the_first(self, tmp_path, drawn):
        (plot,) = history_plots(write_runs(tmp_path / "runs", [1, 1.5]))
        assert plot.svg and plot.missing is None
        (ax,) = drawn[0].axes
        line = next(line for line in ax.get_lines() if line.get_label() == f"{HOST} 16 MiB")
        assert list(line.get_ydata()) == pytest.approx([100, 150])

    def test_one_run_says_why_there_is_no_trend(self, tmp_path):
        folder = write_runs(tmp_path / "runs", [1])
        (plot,) = history_plots(folder)
        assert (plot.key, plot.title, plot.svg) == ("history", "Key cases over runs", None)
        assert plot.caption.startswith("Time of key cases in each run, as compare judges it")
        assert plot.missing == f"1 run in {folder}; trends need two or more (pytest --benchmark-autosave adds one per run)."


class TestRunOrder:
    def test_unnumbered_files_by_date_then_name_undated_first(self, tmp_path):
        folder = write_runs(tmp_path / "runs", [1, 1, 1, 1], when=lambda i: ["2026-11-02", "2026-11-01", "", None][i])
        for path in folder.iterdir():
            path.rename(folder / f"run-{path.name[:4]}.json")
        assert [(s.path.name, s.datetime) for s in load_storage(folder).summaries] == [
            ("run-0002.json", ""), ("run-0003.json", ""), ("run-0001.json", "2026-11-01"), ("run-0000.json", "2026-11-02")]

    def test_pytest_benchmark_numbers_win_over_a_clock_set_back(self, tmp_path):
        """Run 0002 was saved after 0001 by a machine whose clock had gone back a day: it is still the newest,
        as --benchmark-compare reads it (it was 0001 before)."""
        folder = write_runs(tmp_path / "runs", [1, 1, 1], when=lambda i: ["2026-11-02", "2026-11-03", "2026-11-01"][i])
        assert [s.path.name for s in load_storage(folder).summaries] == ["0000_run.json", "0001_run.json", "0002_run.json"]
        assert load_storage(folder).runs[-1].sources == [str(folder / "0002_run.json")]


class TestStepRules:
    def test_a_step_down_counts_as_much_as_a_step_up(self):
        series = np.r_[np.zeros(4), np.full(4, -np.log(2))]
        assert lasting_steps(series, 0.05, 0.25) == [4]

    def test_the_penalty_grows_with_the_spread(self):
        """A 40% step over 3+3 runs is a step where runs agree within 5%, not where they swing by 30%."""
        series = np.r_[np.zeros(3), np.full(3, np.log(1.4))]
        assert lasting_steps(series, 0.05, 0.25) == [3]
        assert lasting_steps(series, 0.3, 0.25) == []

    def test_the_spread_is_never_taken_below_its_minimum(self):
        """A spread of 0 (identical runs) still asks a step to beat the smallest spread's price."""
        series = np.r_[np.zeros(3), np.full(3, 0.01), np.full(3, 0.02)]  # two 1% steps
        assert lasting_steps(series, 0.0, 0.0) == lasting_steps(series, 0.001, 0.0) == []
        assert lasting_steps(series * 10, 0.0, 0.0) == [3, 6]  # two 10% steps are worth their price

    def test_a_step_exactly_at_the_floor_is_not_beyond_it(self):
        series = np.r_[np.zeros(4), np.full(4, np.log1p(0.25))]
        assert lasting_steps(series, 0.02, 0.25) == []
        assert lasting_steps(series, 0.02, 0.2499) == [4]

    def test_every_level_holds_three_runs(self):
        """Two runs at a new level are not a level of their own: no segment is shorter than 3 runs."""
        series = np.r_[np.zeros(6), 1.0, 1.0]
        edges = [0, *lasting_steps(series, 0.05, 0.25), len(series)]
        assert all(b - a >= 3 for a, b in itertools.pairwise(edges))

    def test_the_price_of_a_step_is_twice_the_spread_per_log_run(self):
        """Over 3 + 3 runs a step of d saves 3d; the price is 2 x spread x ln 6 (0.36 at spread 0.1)."""
        assert lasting_steps(np.r_[0, 0, 0, 0.15, 0.15, 0.15], 0.1, 0.1) == [3]  # saves 0.45
        assert lasting_steps(np.r_[0, 0, 0, 0.11, 0.11, 0.11], 0.1, 0.1) == []  # saves 0.33

    def test_the_level_before_includes_its_first_run(self):
        """The level before a step is the median of every run since the last step, the first included."""
        series = np.array([1, 0, 0.3, 1, 1, 1.0])  # median before: 0.3, so the step is 0.7
        assert lasting_steps(series, 0.02, np.expm1(0.75)) == []
        assert lasting_steps(series, 0.02, np.expm1(0.65)) == [3]

    def test_only_the_change_counts_not_the_level(self):
        """Log times of real runs sit far from 0 (1 ms is -6.9): the same series there gives the same steps."""
        series = TestSteps.noise[:14] / 5 + np.r_[np.zeros(7), np.full(7, np.log(1.15))]
        for offset in (0.0, np.log(1e-3), np.log(5.0)):
            assert lasting_steps(series + offset, 0.02, 0.25) == []
            assert lasting_steps(series + offset, 0.02, 0.10) == [7]


class TestOneStatisticAndEnvironment:
    """Issue 26: the trend draws what the gate judges (item 6) and marks a software change as a step (item 4)."""

    NOOP = "test_noop[cpu-16MiB-float32-cpu]"

    def test_a_latency_bound_case_is_drawn_by_its_fastest_round_as_compare_judges_it(self, tmp_path, drawn):
        """The no-op's rounds all but its fastest take 3x longer in the last run: the gate sees no change in
        it (its fastest round), so neither does the trend; the bandwidth-bound copy's median moves both."""
        from xferbench.analyze.gate.compare import compare
        from xferbench.analyze.load.results import load

        sample = json.loads(SAMPLE.read_text())
        slower = copy.deepcopy(sample)
        for bench in slower["benchmarks"]:
            if bench["name"] in (self.NOOP, BANDWIDTH_SLOWED):
                stats = bench["stats"]
                fastest = min(stats["data"])
                stats["data"] = [t if t == fastest else t * 3 for t in stats["data"]]
                stats["median"] = float(np.median(stats["data"]))
        folder = tmp_path / "runs"
        folder.mkdir()
        for i, data in enumerate([sample, sample, slower]):
            (folder / f"{i:04d}_run.json").write_text(json.dumps(data | {"datetime": f"2026-11-0{i + 1}T00:00:00"}))
        history_plots(folder)
        (ax,) = drawn[0].axes
        lines = {line.get_label(): line for line in ax.get_lines()}
        rows = {(r.path, r.nbytes): r for r in compare([load([folder / "0000_run.json"])], [load([folder / "0002_run.json"])])}
        for path in ("noop .cpu() on cpu", HOST):
            drawn_ratio = lines[f"{path} 16 MiB"].get_ydata()[-1] / 100
            assert drawn_ratio == pytest.approx(rows[(path, 16 * 2**20)].ratio)
        assert lines["noop .cpu() on cpu 16 MiB"].get_ydata()[-1] == pytest.approx(100)
        assert lines[f"{HOST} 16 MiB"].get_ydata()[-1] == pytest.approx(300, rel=0.05)

    def test_without_rounds_the_statistic_comes_from_pytest_benchmarks_own_min_and_median(self, tmp_path, drawn):
        """An autosaved run keeps no rounds unless asked: its min (latency-bound) or median is drawn."""
        sample = json.loads(SAMPLE.read_text())
        folder = tmp_path / "runs"
        folder.mkdir()
        for i, factor in enumerate([1.0, 2.0]):
            data = copy.deepcopy(sample) | {"datetime": f"2026-11-0{i + 1}T00:00:00"}
            for bench in data["benchmarks"]:
                stats = bench.pop("stats")
                bench["stats"] = {k: v for k, v in stats.items() if k != "data"}
                if bench["name"] == self.NOOP:
                    kept = bench["stats"]
                    kept["min"] *= factor  # the median stays; the quartiles and max stay above the min
                    kept["q1"] = max(kept["q1"], kept["min"])
                    kept["q3"], kept["max"] = max(kept["q3"], kept["q1"]), max(kept["max"], kept["q1"], kept["q3"])
            (folder / f"{i:04d}_run.json").write_text(json.dumps(data))
        history_plots(folder)
        (ax,) = drawn[0].axes
        line = next(line for line in ax.get_lines() if line.get_label() == "noop .cpu() on cpu 16 MiB")
        assert list(line.get_ydata()) == pytest.approx([100, 200])

    def test_a_torch_upgrade_keeps_the_older_runs_and_is_marked(self, tmp_path, drawn):
        sample = json.loads(SAMPLE.read_text())
        folder = tmp_path / "runs"
        folder.mkdir()
        for i in range(6):
            data = copy.deepcopy(scaled(sample, 1.0 if i < 3 else 1.5, {BANDWIDTH_SLOWED}))
            data["machine_info"]["xferbench"]["torch"] = "2.12.0" if i < 3 else "2.13.0"
            (folder / f"{i:04d}_run.json").write_text(json.dumps(data | {"datetime": f"2026-11-0{i + 1}T00:00:00"}))
        (plot,) = history_plots(folder)
        (ax,) = drawn[0].axes
        line = next(line for line in ax.get_lines() if line.get_label() == f"{HOST} 16 MiB")
        assert list(line.get_xdata()) == list(range(6))  # the runs before the upgrade are kept
        marks = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
        assert [list(m.get_xdata()) for m in marks] == [[2.5, 2.5]]
        assert [t.get_text() for t in ax.texts] == ["torch 2.12.0 → 2.13.0"]
        assert "A dashed line marks a change of software on this hardware" in plot.caption
        assert "another machine" not in plot.caption
        steps = [list(map(tuple, c.get_offsets())) for c in _marks(ax) if len(c.get_offsets())]
        assert steps == [[(3.0, pytest.approx(150.0))]]  # the upgrade's step, where the new software starts

    def test_other_hardware_is_still_left_out(self, tmp_path, drawn):
        sample = json.loads(SAMPLE.read_text())
        folder = tmp_path / "runs"
        folder.mkdir()
        for i in range(3):
            data = copy.deepcopy(sample)
            data["machine_info"]["cpu"] = {"brand_raw": "Intel Xeon" if i == 0 else "AMD EPYC"}
            (folder / f"{i:04d}_run.json").write_text(json.dumps(data | {"datetime": f"2026-11-0{i + 1}T00:00:00"}))
        (plot,) = history_plots(folder)
        assert "Left out, of another machine than the newest run's: 1 run." in plot.caption


class TestLongHistories:
    def test_a_long_series_finds_the_step_at_its_exact_run(self):
        """Beyond MAX_CANDIDATES runs PELT searches a grid and the boundary is then placed exactly: a step at
        run 317 of 500 is found at 317, not at the nearest grid point."""
        from xferbench.analyze.load.history import MAX_CANDIDATES

        series = np.random.default_rng(1).normal(0, 0.05, 500) + np.r_[np.zeros(317), np.full(183, np.log(2))]
        assert 500 > MAX_CANDIDATES and 317 % math.ceil(500 / MAX_CANDIDATES)  # off the grid
        assert lasting_steps(series, 0.05, 0.25) == [317]

    def test_a_long_history_labels_at_most_forty_runs_the_first_and_newest_included(self, tmp_path, drawn):
        history_plots(write_runs(tmp_path / "runs", [1] * 100))
        (ax,) = drawn[0].axes
        labels = [t.get_text() for t in ax.get_xticklabels()]
        assert len(labels) == 40 and labels[0] == "0000_run" and labels[-1] == "0099_run"
        assert list(ax.get_lines()[0].get_xdata()) == list(range(100))  # every run is still a point


@pytest.mark.hostile
class TestHistoryOfOneMachine:
    def test_runs_of_another_machine_are_no_points_of_the_trend(self, tmp_path):
        """A storage folder that moved to a new GPU or CPU: the old machine's runs are left out of the trend
        (as compare leaves them out of a baseline), not drawn as a lasting step."""
        from xferbench.analyze.report.history import history_plots

        for i in range(4):
            run = small(4)
            run["datetime"] = f"2026-01-0{i + 1}T00:00:00"
            if i == 0:
                run["machine_info"]["cpu"]["brand_raw"] = "Old CPU"
                for bench in run["benchmarks"]:  # ten times slower there: a "step" if it were drawn
                    bench["stats"] |= {k: bench["stats"][k] * 10 for k in ("min", "max", "mean", "median", "q1", "q3")}
                    bench["stats"]["data"] = [t * 10 for t in bench["stats"]["data"]]
            put(tmp_path / f"{i:04d}_run.json", run)
        plot, = history_plots(tmp_path)
        assert plot.svg is not None
        assert "Left out, of another machine than the newest run's: 1 run." in plot.caption
        assert "0000_run" not in plot.svg and "0003_run" in plot.svg

    def test_only_the_newest_machine_left_says_so(self, tmp_path):
        from xferbench.analyze.report.history import history_plots

        for i in range(3):
            run = small(4)
            run["datetime"] = f"2026-01-0{i + 1}T00:00:00"
            run["machine_info"]["cpu"]["brand_raw"] = "New CPU" if i == 2 else "Old CPU"
            put(tmp_path / f"{i:04d}_run.json", run)
        plot, = history_plots(tmp_path)
        assert plot.svg is None and plot.missing.startswith("1 run in ")
        assert "of another machine than the newest run's: 2 runs." in plot.caption


@pytest.fixture
def parses(monkeypatch):
    """The files the loader parsed, in order (a spy on results._read, which every file read goes through)."""
    from xferbench.analyze.load import results

    seen: list[str] = []
    real = results._read

    def spy(path):
        seen.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(results, "_read", spy)
    return seen


@pytest.fixture
def written(monkeypatch):
    """The results report and history would write (the page itself is not drawn: these tests count reads)."""
    from xferbench.analyze.report import page as report

    pages = []

    def write(results, output, **_):
        pages.append(results)
        return output

    monkeypatch.setattr(report, "write_report", write)
    return pages


class TestOneParsePerFile:
    def test_the_history_command_parses_each_run_once_the_newest_included(self, tmp_path, parses, written):
        folder = write_runs(tmp_path / "runs", [1, 1, 1, 2, 2, 2])
        assert main(["report", str(folder), "-o", str(tmp_path / "r.html")]) == 0
        assert sorted(parses) == [f"{i:04d}_run.json" for i in range(6)]
        assert written[0].sources == [str(folder / "0005_run.json")]

    def test_report_parses_its_input_once(self, tmp_path, parses, monkeypatch, written):
        """kind_of parses a JSON to tell a suite's from nvbandwidth's; the loader takes that document."""
        from xferbench.analyze.load import results

        reads: list[Path] = []
        real = results.bounded_read
        monkeypatch.setattr(results, "bounded_read", lambda path, *a, **k: reads.append(path) or real(path, *a, **k))
        run = tmp_path / "run.json"
        run.write_text(SAMPLE.read_text())
        assert main(["report", str(run), "-o", str(tmp_path / "r.html")]) == 0
        assert reads.count(run) == 1 and parses == [] and len(written[0].rows) == 58

    def test_a_file_named_twice_is_still_one_run(self, tmp_path, written):
        run = tmp_path / "run.json"
        run.write_text(SAMPLE.read_text())
        assert main(["report", str(run), str(tmp_path / "." / "run.json"), "-o", str(tmp_path / "r.html")]) == 0
        assert not any("replaced by the newest" in note for note in written[0].results.notes)


class TestComparesReading:
    def test_compare_reads_in_full_only_the_runs_it_uses(self, tmp_path, parses):
        from xferbench.analyze.gate.compare import load_runs

        folder = write_runs(tmp_path / "runs", [1, 1.01, 1.02, 1.03, 1.04])  # five runs, no two alike (copies count once)
        runs, _ = load_runs(folder, last=2)  # each summarized once, the newest kept as read, the other one read again
        assert sorted(parses) == [f"000{i}_run.json" for i in (0, 1, 2, 3, 3, 4)]
        assert [r.sources for r in runs] == [[str(folder / "0003_run.json")], [str(folder / "0004_run.json")]]


def summary_from_the_loader(path: Path):
    """A run's summary computed the long way, from the full loader's frame: what ``read_summary`` must equal."""
    from xferbench.analyze.gate import noise
    from xferbench.analyze.load.history import RunSummary
    from xferbench.analyze.load.results import load

    run = load([path])
    frame, times = run.frame, {}
    for key, nbytes, gbps, data, low, middle in zip(frame["case_key"], frame["nbytes"], frame["bandwidth_gbps"],
                                                    frame["data"], frame["min_s"], frame["median_s"], strict=True):
        times.setdefault(str(key), noise.time_of(nbytes, gbps, data, low, middle))
    return RunSummary(path, str(frame["datetime"].iloc[0] or ""), run.machine_info, bool(run.incomplete), times)


class TestFirstReading:
    """The first reading of a folder summarizes each run from its rows, without building its frame; the summaries
    are the full loader's."""

    @pytest.mark.parametrize("source", ["cpu-sample", "h200", "sim-2gpu", "cut short", "a case twice", "odd cpu"])
    def test_the_summary_is_the_full_loaders(self, tmp_path, source):
        from xferbench.analyze.load.history import read_summary

        data = Path(__file__).parent / "data"
        files = {"cpu-sample": data / "cpu-sample.json", "sim-2gpu": data / "sim-2gpu.json",
                 "h200": Path(__file__).parents[1] / "reports" / "samples" / "h200" / "full.json.gz"}
        if source in files:
            path = files[source]
        else:
            run = json.loads(SAMPLE.read_text())
            if source == "cut short":
                run["xfer_completeness"] = {"planned": 99, "finished": len(run["benchmarks"]), "complete": False}
            elif source == "a case twice":  # measured again in one file: the last row counts, in the last row's place
                again = copy.deepcopy(run["benchmarks"][0])
                again["stats"] = {**again["stats"], "data": [t * 3 for t in again["stats"]["data"]],
                                  **{k: again["stats"][k] * 3 for k in ("min", "max", "mean", "median", "q1", "q3")}}
                run["benchmarks"].append(again)
            else:
                run["machine_info"]["cpu"] = "not an object"
            path = put(tmp_path / "0001_run.json", run)
        summary, _ = read_summary(path)
        expected = summary_from_the_loader(path)
        assert summary == expected and list(summary.times) == list(expected.times)
        assert summary.incomplete is (source == "cut short")

def gone_before_read(monkeypatch, name: str) -> None:
    """The file ``name`` vanishes after the folder was listed."""
    from xferbench.analyze.load import history

    real = history._run_files

    def listed(folder, notes):
        files = real(folder, notes)
        (folder / name).unlink()
        return files

    monkeypatch.setattr(history, "_run_files", listed)


class TestReadingAFolder:
    """What load_storage decides as it reads a folder: notes, progress, the newest run."""

    def test_a_fifo_is_skipped_with_a_note_beside_the_runs(self, tmp_path):
        folder = write_runs(tmp_path / "runs", [1, 2])
        os.mkfifo(folder / "9999_run.json")
        stored = load_storage(folder)
        assert len(stored.summaries) == 2
        assert stored.notes == [f"{folder / '9999_run.json'}: skipped, not a regular file (a FIFO, device or socket)"]

    def test_a_file_gone_before_it_is_read_is_a_note_and_the_rest_are_read(self, tmp_path, monkeypatch):

        folder = write_runs(tmp_path / "runs", [1, 2, 3])
        gone_before_read(monkeypatch, "0000_run.json")
        stored = load_storage(folder)
        assert [s.path.name for s in stored.summaries] == ["0001_run.json", "0002_run.json"]
        assert stored.notes == [f"{folder / '0000_run.json'}: cannot read it (No such file or directory); skipped"]

    def test_no_readable_run_names_the_first_reason(self, tmp_path):
        folder = tmp_path / "runs"
        folder.mkdir()
        (folder / "0001_run.json").write_text("{")
        (folder / "0002_run.json").write_text("[]")
        with pytest.raises(ResultsError) as error:
            load_storage(folder)
        assert str(error.value).startswith(f"{folder}: no readable run in it ({folder / '0001_run.json'}: not JSON")

    def test_progress_counts_every_file(self, tmp_path):
        folder = write_runs(tmp_path / "runs", [1, 1, 1])
        calls: list[tuple[int, int]] = []
        load_storage(folder, progress=lambda done, total: calls.append((done, total)))
        assert calls == [(1, 3), (2, 3), (3, 3)]

    def test_the_newest_by_datetime_is_parsed_once_when_it_is_not_last_by_name(self, tmp_path, parses):
        """A folder not numbered by pytest-benchmark is ordered by datetime: its newest may be read first."""
        folder = tmp_path / "runs"
        folder.mkdir()
        sample = json.loads(SAMPLE.read_text())
        for name, day in (("a.json", 3), ("b.json", 1), ("c.json", 2)):
            (folder / name).write_text(json.dumps(sample | {"datetime": f"2026-11-0{day}T00:00:00"}))
        stored = load_storage(folder)
        assert stored.newest.sources == [str(folder / "a.json")] and sorted(parses) == ["a.json", "b.json", "c.json"]

    def test_keep_holds_every_run_read_once(self, tmp_path, parses):
        folder = write_runs(tmp_path / "runs", [1, 2, 3])
        runs = load_storage(folder, keep=True).runs
        assert [run.sources for run in runs] == [[str(folder / f"000{i}_run.json")] for i in range(3)]
        assert sorted(parses) == [f"000{i}_run.json" for i in range(3)]

    def test_one_file_is_a_storage_of_one_run(self, tmp_path):
        path = write_runs(tmp_path / "runs", [1]) / "0000_run.json"
        stored = load_storage(path)
        assert [s.path for s in stored.summaries] == [path] and stored.notes == []

    def test_a_gzipped_run_in_a_folder_is_read(self, tmp_path):
        import gzip

        folder = write_runs(tmp_path / "runs", [1, 2])
        (folder / "0002_run.json.gz").write_bytes(gzip.compress((folder / "0001_run.json").read_bytes()))
        stored = load_storage(folder)
        assert [s.path.name for s in stored.summaries] == ["0000_run.json", "0001_run.json", "0002_run.json.gz"]

    def test_a_dangling_link_is_skipped_with_its_reason(self, tmp_path):
        folder = write_runs(tmp_path / "runs", [1, 2])
        (folder / "0002_run.json").symlink_to(tmp_path / "gone.json")
        stored = load_storage(folder)
        assert len(stored.summaries) == 2
        assert stored.notes == [f"{folder / '0002_run.json'}: skipped, No such file or directory"]

    def test_an_error_without_a_reason_is_named_by_its_type(self, tmp_path, monkeypatch):
        """An OSError may carry no strerror: the note then names its type."""
        folder = write_runs(tmp_path / "runs", [1, 2, 3])
        real_stat = Path.stat

        def stat(path, *args, **kwargs):
            if path.name == "0000_run.json":
                raise PermissionError()
            return real_stat(path, *args, **kwargs)

        monkeypatch.setattr(Path, "stat", stat)
        stored = load_storage(folder)
        assert stored.notes == [f"{folder / '0000_run.json'}: skipped, PermissionError"]

    def test_an_empty_folder_says_so_and_no_more(self, tmp_path):
        (tmp_path / "runs").mkdir()
        with pytest.raises(ResultsError) as error:
            load_storage(tmp_path / "runs")
        assert str(error.value) == f"{tmp_path / 'runs'}: no readable run in it"


class TestLongSeriesPlacement:
    """Past ``MAX_CANDIDATES`` runs PELT weighs a grid; each boundary is then moved to its exact run."""

    @pytest.mark.parametrize("n, steps, heights", [
        (100, [47], [-1]), (100, [31, 69], [-1, 2]), (150, [43, 100], [-1, 2]), (150, [44, 101], [-1, 2]),
        (150, [47, 103], [2, 1]),  # a step down that stays above the first level
        (240, [61, 122, 179], [-1, 2, -3])])
    def test_every_step_is_placed_at_its_exact_run(self, n, steps, heights):
        """Levels ``heights`` x ln 2 from each step on (2x, 4x, ...), runs spread 3%: each boundary at its run."""
        levels = np.zeros(n)
        for start, height in zip(steps, heights, strict=True):
            levels[start:] = height * np.log(2)
        series = np.random.default_rng(n + steps[0]).normal(0, 0.03, n) + levels
        assert lasting_steps(series, 0.03, 0.25) == steps
