import copy
import json
from pathlib import Path

import numpy as np
import pytest

from test_compare import SLOWED, scaled
from xferbench.analyze.history import current_segment, history_plots, lasting_steps, runs_in
from xferbench.cli import main

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
    assert [p.name for p, _ in runs_in(storage)] == ["0001_run.json", "0002_run.json", "0003_run.json"]


class TestSteps:
    """Lasting steps over a case's history (ruptures), seeded noise of known size."""

    noise = np.random.default_rng(0).normal(0, 0.05, 30)

    def test_a_lasting_step_is_found_where_it_starts(self):
        series = self.noise[:14] + np.r_[np.zeros(8), np.full(6, np.log(2))]
        assert lasting_steps(series, 0.05, 0.25) == [8]
        assert current_segment(series, 0.05, 0.25) == 8

    def test_wobble_and_single_wild_runs_are_not_steps(self):
        series = self.noise[:14].copy()
        series[5] += np.log(20)  # one run met a busy neighbour
        assert lasting_steps(series, 0.05, 0.25) == []
        assert current_segment(series, 0.05, 0.25) == 0

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


def test_history_command_writes_report_with_trends(storage, tmp_path):
    out = tmp_path / "index.html"
    assert main(["history", str(storage), "-o", str(out)]) == 0
    html = out.read_text()
    assert 'id="history"' in html and 'data-plot="history"' in html
    assert "0003_run.json" in html  # the newest run is the one reported
