"""tools/mutation_score.py, the script behind `tox -e mutation`: which modules it scores and its verdict."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "tools" / "mutation_score.py"


@pytest.fixture
def mutation_score(monkeypatch):
    spec = importlib.util.spec_from_file_location("mutation_score", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "mutation_score", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _fake_run(module, scored: list[str], killed: int = 9, total: int = 10):
    def run(name: str, max_children: int):
        scored.append(name)
        counts = {"killed": killed, "survived": total - killed, "no_tests": 0, "timeout": 0}
        return module.Score(name, killed, total, counts, [f"{name}.x_f__mutmut_1: survived"] * (total - killed))
    return run


def test_no_module_named_scores_every_module(mutation_score, monkeypatch, capsys):
    # A bare `tox -e mutation` passes no MODULE: it must score them all, not stop on argparse's
    # Python 3.11 check of an empty list against choices.
    scored: list[str] = []
    monkeypatch.setattr(mutation_score, "run", _fake_run(mutation_score, scored))
    assert mutation_score.main([]) == 0
    assert scored == list(mutation_score.MODULES)
    out = capsys.readouterr().out
    assert "units" in out and "90.0%" in out


def test_an_unknown_module_is_one_line_and_exit_2(mutation_score, capsys):
    with pytest.raises(SystemExit) as stop:
        mutation_score.main(["unitz"])
    assert stop.value.code == 2
    assert "unknown module unitz" in capsys.readouterr().err


def test_a_module_below_the_bar_fails_and_is_named(mutation_score, monkeypatch, capsys):
    scored: list[str] = []
    monkeypatch.setattr(mutation_score, "run", _fake_run(mutation_score, scored, killed=8))
    assert mutation_score.main(["units", "--fail-under", "85"]) == 1
    out = capsys.readouterr().out
    assert "below 85%: units" in out
    assert "units.x_f__mutmut_1: survived" in out
    assert mutation_score.main(["units", "--fail-under", "80"]) == 0


def test_a_score_made_of_timeouts_is_refused(mutation_score, monkeypatch, capsys):
    # mutmut reports a test run that fails to start (a test id that changed since its stats run) as a
    # timeout, which this script counts as killed: a score of 191 such "kills" out of 505 must not pass.
    def run(name: str, max_children: int):
        counts = {"killed": 309, "survived": 5, "no_tests": 0, "timeout": 191}
        return mutation_score.Score(name, 309 + 191, 505, counts, [])
    monkeypatch.setattr(mutation_score, "run", run)
    assert mutation_score.main(["results", "--fail-under", "85"]) == 1
    assert "timed out in results: the score is not to be trusted" in capsys.readouterr().out


@pytest.mark.hostile
class TestMutationScoreArguments:
    """tools/mutation_score.py is the gate of `tox -e mutation`: an argument that silently disables it
    (--fail-under nan: every score compares False against NaN) or that mutmut cannot run is refused."""

    @pytest.fixture
    def script(self, monkeypatch):
        import importlib.util

        path = Path(__file__).resolve().parent.parent / "tools" / "mutation_score.py"
        spec = importlib.util.spec_from_file_location("mutation_score", path)
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, "mutation_score", module)
        spec.loader.exec_module(module)
        scored: list[str] = []

        def run(name: str, max_children: int):
            scored.append(name)
            return module.Score(name, 5, 10, {"killed": 5, "survived": 5, "no_tests": 0, "timeout": 0}, [])

        monkeypatch.setattr(module, "run", run)
        module.scored = scored
        return module

    @pytest.mark.parametrize("args", [["--fail-under", "nan"], ["--fail-under", "inf"], ["--fail-under", "-5"],
                                      ["--fail-under", "101"], ["--fail-under", "85%"], ["--max-children", "0"],
                                      ["--max-children", "-1"], ["--max-children", "2.5"]])
    def test_refused_before_any_module_is_scored(self, script, capsys, args):
        with pytest.raises(SystemExit) as stop:
            script.main(["units", *args])
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert f"argument {args[0]}" in err and "Traceback" not in err
        assert script.scored == []

    def test_a_50_percent_score_fails_an_85_bar(self, script):
        """What --fail-under nan used to let through."""
        assert script.main(["units", "--fail-under", "85"]) == 1

    def test_a_module_named_twice_is_scored_once(self, script):
        assert script.main(["units", "units", "contract"]) == 0
        assert script.scored == ["units", "contract"]


def test_the_prepared_folder_holds_what_the_tests_read(mutation_score, monkeypatch, tmp_path):
    """Each module runs in a copy of the checkout: it must hold the files its tests read (the real samples,
    the CI's calibration file that noise's tests check), else mutmut's first test run fails and no mutant is
    scored; its pyproject names that one module and its tests."""
    monkeypatch.setattr(mutation_score, "WORK", tmp_path)
    folder = mutation_score.prepare("noise")
    assert (folder / ".ci" / "noise.json").is_file()
    assert (folder / "reports" / "samples" / "h200" / "full.json.gz").is_file()
    config = (folder / "pyproject.toml").read_text()
    assert 'only_mutate = ["src/xferbench/analyze/gate/noise.py"]' in config
    assert 'pytest_add_cli_args_test_selection = ["tests/test_noise.py"]' in config
    # mutmut runs the tests in its own copy (mutants/), of src/, tests/ and also_copy only
    assert ".ci/" in json.loads(next(line for line in config.splitlines() if line.startswith("also_copy")).split("=", 1)[1])
