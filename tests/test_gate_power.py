"""The CI gate's calibration and design, on runs whose truth is known (synthetic: no clock is read).

``.ci/run`` compares 3 base runs with 3 candidate runs and fails only when 3 fresh pairs flag
the same case again; ``calibrate(per_side=3)`` learns floors for exactly that design. What a
user would see go wrong: a CI job failing on unchanged code, a real slowdown passing, or a
noisy case given a floor no regression could pass instead of being shown as not gated.
"""

import copy
import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

import synthetic_runs as syn
from xferbench.analyze.gate.compare import compare, reproduced, to_json
from xferbench.analyze.gate.noise import (
    FLOOR_CAP,
    FLOOR_GRID,
    Z_BOUND,
    Noise,
    calibrate,
    case_budget,
    mad_margin,
    robust_spread,
    smallest_change,
    standard_error,
)
from xferbench.analyze.load.results import Results
from xferbench.cli import main

pytestmark = pytest.mark.slow  # whole benchmark sessions and worlds: the slow tier (tox -e slow)

GATE_POWER = Path(__file__).resolve().parent.parent / "tools" / "gate_power.py"


@pytest.fixture(scope="module")
def gate_power():
    spec = importlib.util.spec_from_file_location("gate_power", GATE_POWER)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gate_power"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def ci_noise() -> Noise:
    """The CI machine's calibration: 12 A/A runs, floors for 3 runs a side, confirmed."""
    return calibrate(syn.runs(0, 12), per_side=3)


def scaled(run: Results, key: str, factor: float) -> Results:
    """A copy of ``run`` whose case ``key`` took ``factor`` times as long in every round."""
    out = copy.deepcopy(run)
    row = out.frame.index[out.frame["case_key"] == key][0]
    out.frame.at[row, "data"] = [t * factor for t in out.frame.at[row, "data"]]
    return out


def test_case_budget_shares_the_target_and_counts_confirmation():
    """Unconfirmed, 58 cases share 5% (Bonferroni); confirmed, a case must be flagged twice, so each
    comparison may flag it at the square root of its share."""
    assert case_budget(0.05, 50, confirmed=False) == pytest.approx(0.001)
    assert case_budget(0.05, 50, confirmed=True) == pytest.approx(math.sqrt(0.001))
    assert case_budget(0.05, 0, confirmed=False) == pytest.approx(0.05)


def test_calibration_for_the_ci_design(ci_noise):
    """Bandwidth-bound cases of a steady machine get floors that leave a 1.5x slowdown visible; the file
    keeps the z bound and records that its floors assume confirmation."""
    assert ci_noise.per_side == 3 and ci_noise.confirmed and ci_noise.z_bound == Z_BOUND
    bandwidth = [c["floor"] for c in ci_noise.cases.values() if c["class"] == "bandwidth"]
    assert len(bandwidth) == 9 and max(bandwidth) <= 0.3
    assert all(rate <= ci_noise.target for rate in ci_noise.false_alarm_rate.values())


def test_floors_are_a_quantile_not_a_maximum():
    """Bonferroni without confirmation leaves a case ~1 in 1000 draws: its floor is then the largest swing
    seen. With confirmation it may be flagged in ~3% of single comparisons, a high quantile, lower."""
    runs = syn.runs(0, 12)
    strict = calibrate(runs, per_side=3, confirmed=False)
    confirmed = calibrate(runs, per_side=3)
    lower = sum(confirmed.cases[k]["floor"] < strict.cases[k]["floor"] for k in strict.cases)
    higher = sum(confirmed.cases[k]["floor"] > strict.cases[k]["floor"] for k in strict.cases)
    assert higher == 0 and lower >= 20
    assert not strict.confirmed and strict.false_alarm_rate["latency"] <= 0.05


def test_a_case_beyond_its_cap_is_not_gated():
    """A bandwidth-bound case that lands 2.5x off in every third run cannot be gated at a floor a 1.5x
    slowdown could pass: it is not gated (infinite floor), never given a floor between its cap and infinity."""
    runs = syn.runs(0, 12)
    key = sorted(syn.bandwidth_keys())[0]
    runs = [scaled(run, key, 2.5) if i % 3 == 0 else run for i, run in enumerate(runs)]
    learned = calibrate(runs, per_side=3)
    assert learned.cases[key]["floor"] == math.inf and learned.cases[key]["smallest_change"] == math.inf
    for case in learned.cases.values():
        assert case["floor"] in FLOOR_GRID
        assert case["floor"] <= FLOOR_CAP[case["class"]] or case["floor"] == math.inf
    assert all(learned.floors[cls] <= FLOOR_CAP[cls] for cls in FLOOR_CAP)


def test_smallest_change_is_the_floor_or_the_z_bound():
    """What the gate can see: past the floor and past z standard errors, whichever is further."""
    assert smallest_change(0.1, 0.02, 3) == pytest.approx(0.1)
    se = standard_error(0.3, 3, 3)
    assert smallest_change(0.1, 0.3, 3) == pytest.approx(math.expm1(Z_BOUND * se))
    assert smallest_change(math.inf, 0.02, 3) == math.inf
    steady = calibrate(syn.runs(0, 12), per_side=3)
    for case in steady.cases.values():
        assert case["smallest_change"] >= case["floor"]


def test_confirmed_rate_is_of_a_case_flagged_twice():
    """The false-alarm rate a confirmed calibration reports is below the single comparisons' rate."""
    runs = syn.runs(0, 12, wild=0.05)
    learned = calibrate(runs, per_side=3)
    assert 0 < learned.false_alarm_rate["latency"] <= learned.target


def _gate(base, new, again_base, again_new, noise):
    """``.ci/run``'s gate: (failed, cases flagged at first, cases confirmed on fresh runs), as "path nbytes"."""
    first = compare(base, new, noise)
    flagged = {f"{r.path} {r.nbytes}" for r in first if r.regression}
    if not flagged:
        return False, flagged, set()
    again = reproduced(compare(again_base, again_new, noise), to_json(first, 3, 3, noise), "first")
    confirmed = {f"{r.path} {r.nbytes}" for r in again if r.regression}
    return bool(confirmed), flagged, confirmed


class TestCiDesign:
    """The gate of ``.ci/run`` (3 + 3 runs, a flag confirmed on 3 + 3 fresh ones) on synthetic runs."""

    def test_aa_never_fails(self, ci_noise):
        """30 A/A trials, 3 + 3 runs, confirmed on 3 + 3 fresh ones, 2% of cases 2-20x off in a run: no failure."""
        failed = 0
        for t in range(30):
            runs = syn.runs(10_000 + 100 * t, 12, wild=0.02)
            failed += _gate(runs[0:3], runs[3:6], runs[6:9], runs[9:12], ci_noise)[0]
        assert failed == 0

    @pytest.mark.parametrize(("factor", "at_least"), [(2.0, 20), (1.5, 18)])
    def test_slowed_bandwidth_cases_are_caught(self, ci_noise, factor, at_least):
        """A slowdown of the bandwidth-bound cases fails the gate, naming only slowed cases: 2x in every one
        of 20 trials, 1.5x in at least 90%."""
        caught = 0
        for t in range(20):
            base = syn.runs(20_000 + 100 * t, 6)
            new = syn.runs(20_050 + 100 * t, 6, slow=factor, which=syn.is_bandwidth)
            failed, _flagged, confirmed = _gate(base[:3], new[:3], base[3:], new[3:], ci_noise)
            paths = {name.rsplit(" ", 1)[0] for name in confirmed}
            assert paths <= {p for p, k in zip(syn._BASE.frame["path"], syn._BASE.frame["case_key"], strict=True)
                             if k in syn.bandwidth_keys()}
            caught += failed
        assert caught >= at_least

    def test_a_flagged_case_must_be_flagged_again(self, ci_noise):
        """Slowed in the first candidate runs only: flagged, but the gate does not fail."""
        key = next(iter(syn.bandwidth_keys()))
        runs = syn.runs(30_000, 12)
        slow = [scaled(r, key, 3.0) for r in runs[3:6]]
        failed, flagged, confirmed = _gate(runs[0:3], slow, runs[6:9], runs[9:12], ci_noise)
        assert flagged and not failed and not confirmed
        assert compare(runs[0:3], slow, ci_noise)[0].regression


def test_calibrate_command_keeps_the_note_and_says_what_it_can_see(tmp_path, capsys):
    """xferbench calibrate --per-side 3 --note: the file says where it was calibrated and that its floors assume
    confirmation; the summary line counts the cases that can flag 1.5x."""
    sample = json.loads(syn.SAMPLE.read_text())
    rng = np.random.default_rng(3)
    for i in range(10):
        data = copy.deepcopy(sample)
        for bench in data["benchmarks"]:
            move = float(np.exp(rng.normal(0, 0.03)))
            stats = bench["stats"]  # every time moves together: a run whose median is not its rounds' is refused
            stats["data"] = [t * move for t in stats["data"]]
            for key in ("min", "max", "mean", "stddev", "median", "iqr", "q1", "q3", "ld15iqr", "hd15iqr", "total"):
                if isinstance(stats.get(key), float):
                    stats[key] *= move
            if isinstance(stats.get("ops"), float):
                stats["ops"] /= move
        (tmp_path / "aa").mkdir(exist_ok=True)
        (tmp_path / "aa" / f"{i:04d}.json").write_text(json.dumps(data))
    out = tmp_path / "noise.json"
    assert main(["calibrate", str(tmp_path / "aa"), "-o", str(out), "--per-side", "3", "--note", "CI VM, load 5"]) == 0
    learned = json.loads(out.read_text())
    assert learned["note"] == "CI VM, load 5" and learned["confirmed"] is True and learned["per_side"] == 3
    said = capsys.readouterr().out
    assert "58 can flag a 1.5x slowdown with 3 run(s) a side, a flag confirmed on fresh runs" in said
    assert Noise.from_json(out.read_text(), "n.json").note == "CI VM, load 5"


def test_spread_is_taken_at_the_upper_end_of_its_uncertainty():
    """A case's spread from 12 runs is their MAD-based SD x (1 + 1.17 / sqrt(12)): of ~60 cases calibrated on a
    dozen runs some are quiet by luck, and an unmargined spread gives them floors and z a real run breaks."""
    runs = syn.runs(0, 12)
    learned = calibrate(runs, per_side=3)
    key = sorted(syn.bandwidth_keys())[0]
    values = np.log([float(np.median(r.frame.loc[r.frame["case_key"] == key, "data"].iloc[0])) for r in runs])
    assert mad_margin(12) == pytest.approx(1 + 1.17 / math.sqrt(12)) and mad_margin(0) == 1.0
    assert learned.cases[key]["spread"] == pytest.approx(max(robust_spread(values) * mad_margin(12), 0.02), abs=1e-5)


class TestGatePowerCounts:
    """``tools/gate_power.py summary`` counts what the trials' files say (hand-made trials: nothing is run)."""

    def trial(self, pool: Path, name: str, slowed: bool, compare_code: int, ab_code: int | None,
              confirmed: list[tuple[str, int]]) -> None:
        folder = pool / "trials" / name
        folder.mkdir(parents=True)
        (folder / "candidate.json").write_text(syn.SAMPLE.read_text())
        (folder / "trial.json").write_text(json.dumps({"slowed": slowed, "compare": compare_code, "ab": ab_code,
                                                       "seconds": {"run": 100, "compare": 5, "ab": 300}}))
        if ab_code is not None:
            (folder / "ab.json").write_text(json.dumps({"cases": [
                {"path": p, "nbytes": n, "verdict": "regression"} for p, n in confirmed]}))

    def test_false_alarms_every_slowed_case_and_job_times(self, gate_power, tmp_path, capsys, monkeypatch):
        monkeypatch.setattr(gate_power, "SLOWDOWN", "host@16MiB=2")  # the sample's largest host copies
        both = [("host pageable clone cpu", 16 * 2**20), ("host pageable copy_ cpu", 16 * 2**20)]
        self.trial(tmp_path, "00-aa", False, 1, 0, [])  # compare flagged, ab did not confirm: passed
        self.trial(tmp_path, "01-slowed", True, 1, 1, both)
        self.trial(tmp_path, "02-aa", False, 1, 1, [both[0]])  # a false alarm
        self.trial(tmp_path, "03-slowed", True, 1, 1, both[:1])  # one slowed case missed
        self.trial(tmp_path, "04-aa", False, 0, None, [])  # nothing sent: compare's exit is the job's
        (tmp_path / "log.tsv").write_text("10:00:00\ttrials/00-aa/candidate\t0\t100\t1.50\t2.50\n")
        gate_power.summary(tmp_path, None)
        out = capsys.readouterr().out
        assert ("A/A: 1 false alarm(s) in 3 trials; slowed 2x: every slowed case confirmed in 1 of 2; job wall time "
                "405-405 s") in out
        assert "load average (1 min) before and after each command: candidate 1.5-2.5 (median 2.5)" in out
