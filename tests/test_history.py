import copy
import json
from pathlib import Path

import pandas as pd
import pytest

from test_compare import SLOWED, scaled
from xferbench.analyze.history import _regressions, history_plots, runs_in
from xferbench.analyze.results import load
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


def test_regression_marked_at_the_run_it_happened(storage):
    """The slowed case is marked at run 3 only; an untouched case is never marked."""
    runs = [load([p]) for p, _ in runs_in(storage)]
    slowed = pd.Series({"path": "host pageable copy_ cpu", "nbytes": 16 * 2**20})
    untouched = pd.Series({"path": "host pageable clone cpu", "nbytes": 16 * 2**20})
    assert _regressions(runs, slowed, 0.10) == [2]
    assert _regressions(runs, untouched, 0.10) == []


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
