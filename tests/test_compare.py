import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from xferbench.analyze.compare import compare, machine_differences, parse_threshold, to_markdown
from xferbench.analyze.results import load
from xferbench.cli import main

SAMPLE = Path(__file__).parent / "data" / "cpu-sample.json"


@pytest.fixture
def sample() -> dict:
    return json.loads(SAMPLE.read_text())


def save(tmp_path: Path, name: str, data: dict) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def scaled(data: dict, factor: float, names: set[str]) -> dict:
    """The same run with some cases' every round (and summary) scaled by factor."""
    data = copy.deepcopy(data)
    for bench in data["benchmarks"]:
        if bench["name"] in names:
            stats = bench["stats"]
            stats["data"] = [t * factor for t in stats["data"]]
            for key in ("min", "max", "mean", "median", "q1", "q3", "iqr", "stddev"):
                stats[key] *= factor
    return data


def drawn(data: dict, seed: int, shift: float = 1.0) -> dict:
    """Rounds drawn afresh from one lognormal distribution per case (5% spread)."""
    rng = np.random.default_rng(seed)
    data = copy.deepcopy(data)
    for bench in data["benchmarks"]:
        stats = bench["stats"]
        rounds = (stats["median"] * shift * rng.lognormal(0, 0.05, 200)).tolist()
        stats["data"] = rounds
        stats.update(min=min(rounds), max=max(rounds), mean=float(np.mean(rounds)), median=float(np.median(rounds)),
                     rounds=len(rounds))
    return data


SLOWED = {"test_host[pageable-copy_-16MiB-float32-cpu->cpu]", "test_noop[cpu-4B-float32-cpu]"}


class TestCompare:
    def test_injected_regression_is_found(self, tmp_path, sample):
        """Two cases of a real run made 2x slower are the regressions, and only they."""
        rows = compare(load([SAMPLE]), load([save(tmp_path, "new.json", scaled(sample, 2.0, SLOWED))]))
        regressions = {(r.path, r.nbytes) for r in rows if r.regression}
        assert regressions == {("host pageable copy_ cpu", 16 * 2**20), ("noop .cpu() on cpu", 4)}
        assert all(r.change == "2.00x slower" for r in rows if r.regression)

    def test_same_distribution_is_not_a_regression(self, tmp_path, sample):
        """Two runs drawn from the same distributions report no regression."""
        base = load([save(tmp_path, "a.json", drawn(sample, seed=1))])
        new = load([save(tmp_path, "b.json", drawn(sample, seed=2))])
        assert not [r for r in compare(base, new) if r.verdict in ("regression", "improvement")]

    def test_big_but_noisy_is_not_significant(self, tmp_path, sample):
        """A 15% slower median from only 3 noisy rounds each is not called a regression."""
        base, new = copy.deepcopy(sample), copy.deepcopy(sample)
        for b_old, b_new in zip(base["benchmarks"], new["benchmarks"], strict=True):
            b_old["stats"]["data"] = [1.0, 2.0, 3.0]
            b_new["stats"]["data"] = [1.2, 2.3, 3.3]
            b_new["stats"]["median"] = b_old["stats"]["median"] * 1.15
        rows = compare(load([save(tmp_path, "a.json", base)]), load([save(tmp_path, "b.json", new)]))
        assert {r.verdict for r in rows} == {"not significant"}

    def test_matched_by_identity_not_name(self, tmp_path, sample):
        """Renaming a test does not lose its case; new and gone cases are listed as such."""
        new = copy.deepcopy(sample)
        new["benchmarks"][0]["name"] = "renamed"
        gone = new["benchmarks"].pop(1)["name"]
        rows = compare(load([SAMPLE]), load([save(tmp_path, "n.json", new)]))
        assert [r.verdict for r in rows].count("gone") == 1
        assert gone.startswith("test_create")
        assert len(rows) == 58

    def test_no_case_in_common(self, tmp_path, sample):
        other = copy.deepcopy(sample)
        for bench in other["benchmarks"]:
            bench["extra_info"]["dtype"] = "float64"
        with pytest.raises(ValueError, match="no case in common"):
            compare(load([SAMPLE]), load([save(tmp_path, "o.json", other)]))


class TestMachines:
    def test_differences_are_listed(self):
        base = {"xferbench": {"devices": [{"name": "NVIDIA H100"}], "torch": "2.4.0", "driver": "550"}}
        new = {"xferbench": {"devices": [{"name": "NVIDIA H200"}], "torch": "2.5.1", "driver": "550"}}
        assert machine_differences(base, new) == ["GPUs [NVIDIA H100] -> [NVIDIA H200]", "torch 2.4.0 -> 2.5.1"]

    def test_unknown_fields_are_not_compared(self):
        """A run that does not record a field is not refused for it."""
        assert machine_differences({}, {"xferbench": {"devices": [], "torch": "2.5.1"}}) == []


@pytest.mark.parametrize(("text", "value"), [("10%", 0.1), ("0.25", 0.25), (" 5 % ".strip(), 0.05)])
def test_parse_threshold(text, value):
    assert parse_threshold(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["ten", "0", "-5%", "2000%"])
def test_parse_threshold_rejects(text):
    with pytest.raises(ValueError):
        parse_threshold(text)


class TestCli:
    def test_exit_1_and_outputs(self, tmp_path, sample, capsys):
        """A regression exits 1 and writes the terminal, Markdown and JSON tables."""
        new = save(tmp_path, "new.json", scaled(sample, 2.0, SLOWED))
        md, js = tmp_path / "c.md", tmp_path / "c.json"
        assert main(["compare", str(SAMPLE), str(new), "--markdown", str(md), "--json", str(js)]) == 1
        out = capsys.readouterr().out
        assert "host pageable copy_ cpu" in out and "2.00x slower" in out
        assert ("2 regression(s), 0 improvement(s) in 58 case(s) (threshold 10%, significance p < 0.01 after "
                "Benjamini-Hochberg)") in out
        assert "| host pageable copy_ cpu | 16 MiB |" in md.read_text()
        assert json.loads(js.read_text())["regressions"] == 2

    def test_exit_0_when_same(self, capsys):
        assert main(["compare", str(SAMPLE), str(SAMPLE)]) == 0

    def test_threshold_above_the_change(self, tmp_path, sample):
        """A 2x slowdown is not a regression at a 150% threshold."""
        new = save(tmp_path, "new.json", scaled(sample, 2.0, SLOWED))
        assert main(["compare", str(SAMPLE), str(new), "--threshold", "150%"]) == 0

    def test_different_machines_refused(self, tmp_path, sample, capsys):
        """Runs from different machines exit 2 with what differs, unless allowed."""
        other = copy.deepcopy(sample)
        other["machine_info"]["xferbench"]["torch"] = "2.99.0"
        path = save(tmp_path, "other.json", other)
        assert main(["compare", str(SAMPLE), str(path)]) == 2
        err = capsys.readouterr().err
        assert err.strip() == ("xferbench compare: the runs come from different machines (torch 2.13.0+cpu -> 2.99.0); "
                               "pass --allow-different-machines to compare anyway")
        assert main(["compare", str(SAMPLE), str(path), "--allow-different-machines"]) == 0

    @pytest.mark.parametrize(("args", "message"), [
        (["missing.json"], "missing.json: no such file"),
        (["bad.json"], "bad.json: not JSON, or cut short"),
        ([str(SAMPLE), "--threshold", "lots"], "--threshold: 'lots' is not a threshold"),
    ])
    def test_bad_input_exit_2_one_line(self, tmp_path, capsys, monkeypatch, args, message):
        monkeypatch.chdir(tmp_path)
        (tmp_path / "bad.json").write_text("{")
        argv = ["compare", str(SAMPLE), *args] if args[0] != str(SAMPLE) else ["compare", *args[:1], str(SAMPLE), *args[1:]]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1

    def test_no_traceback_from_the_console_script(self, tmp_path):
        """The installed command prints one line and exits 2 on a missing file."""
        proc = subprocess.run([sys.executable, "-m", "xferbench.cli", "report", str(tmp_path / "nope.json")],
                              capture_output=True, text=True)
        assert proc.returncode == 2
        assert proc.stderr == f"xferbench report: {tmp_path / 'nope.json'}: no such file\n"


def test_p_values_adjusted_across_cases():
    """One p = 0.009 among 50 cases is not significant once adjusted (Benjamini-Hochberg)."""
    from xferbench.analyze.compare import _adjust

    raw = {"lucky": 0.009} | {f"case{i}": 0.5 for i in range(49)} | {"no data": None}
    adjusted = _adjust(raw)
    assert adjusted["lucky"] == pytest.approx(0.45)
    assert adjusted["no data"] is None


def test_without_rounds_the_threshold_decides(tmp_path, sample):
    """Files without per-round data: a 2x slowdown is a regression on the threshold alone, p shown as '-'."""
    base, new = copy.deepcopy(sample), scaled(sample, 2.0, SLOWED)
    for data in (base, new):
        for bench in data["benchmarks"]:
            bench["stats"].pop("data")
    rows = compare(load([save(tmp_path, "a.json", base)]), load([save(tmp_path, "b.json", new)]))
    regressions = [r for r in rows if r.regression]
    assert len(regressions) == 2 and all(r.p_value is None for r in regressions)
    assert "| - | regression |" in to_markdown(regressions, 0.1).replace("🔴 ", "")
