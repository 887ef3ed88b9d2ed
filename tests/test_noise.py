"""The deciding rule, piece by piece (fast: these are the tests mutmut runs against noise.py)."""

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

import synthetic_runs as syn
from strict_json import strict_loads
from xferbench.analyze.gate import noise
from xferbench.analyze.gate.noise import (
    BANDWIDTH_MIN_BYTES,
    DEFAULT_FLOOR,
    DEFAULT_SPREAD,
    FASTER_WITHIN,
    MIN_SPREAD,
    SLOWER_WITHIN,
    Z_BOUND,
    CantTell,
    Case,
    Evidence,
    Noise,
    calibrate,
    case_class,
    judge,
    robust_spread,
    run_tables,
    run_times,
    standard_error,
)
from xferbench.analyze.load.results import ResultsError
from xferbench.cli import main

from hostile_inputs import property_settings, put, small, values


def test_documented_constants():
    """The README states these; a change must change the README too."""
    assert (BANDWIDTH_MIN_BYTES, Z_BOUND, MIN_SPREAD) == (8 * 2**20, 4.0, 0.02)
    assert DEFAULT_SPREAD == {"bandwidth": 0.15, "latency": 0.40}
    assert DEFAULT_FLOOR == {"bandwidth": 0.25, "latency": 1.0}
    assert noise.MIN_RUNS_TO_LEARN == 5 and noise.MAD_TO_SD == 1.4826


@pytest.mark.parametrize(("nbytes", "moves", "expected"), [
    (8 * 2**20, True, "bandwidth"), (8 * 2**20 - 1, True, "latency"), (2**30, False, "latency"), (4, True, "latency"),
])
def test_case_class(nbytes, moves, expected):
    assert case_class(nbytes, moves) == expected


def test_robust_spread_ignores_one_wild_run():
    """MAD x 1.4826: the SD of normal data, and one 100x run does not move it much."""
    assert robust_spread([1.0, 2.0, 3.0, 4.0, 100.0]) == pytest.approx(1.4826)
    assert robust_spread([0.0, 0.0, 0.0]) == 0.0
    assert robust_spread(np.random.default_rng(0).normal(0, 0.1, 20000)) == pytest.approx(0.1, rel=0.03)


def test_standard_error():
    """One or two runs a side: a mean's error; three or more: a median's (pi/2 the variance)."""
    assert standard_error(0.1, 1, 1) == pytest.approx(0.1 * math.sqrt(2))
    assert standard_error(0.1, 2, 2) == pytest.approx(0.1)
    assert standard_error(0.1, 3, 3) == pytest.approx(0.1 * math.sqrt(math.pi / 3))
    assert standard_error(0.2, 1, 3) == pytest.approx(0.2 * math.sqrt(1 + math.pi / 6))


class TestJudge:
    def test_regression_needs_both_significance_and_size(self):
        base, slower = [0.0] * 5, [math.log(2.0)] * 3
        j = judge(base, slower, spread=0.05, floor=0.25)
        assert j.verdict == "regression" and j.ratio == pytest.approx(2.0)
        assert j.z == pytest.approx(math.log(2.0) / standard_error(0.05, 5, 3))
        assert j.low < 2.0 < j.high
        assert j.low == pytest.approx(2.0 * math.exp(-1.96 * standard_error(0.05, 5, 3)))
        assert j.high == pytest.approx(2.0 * math.exp(1.96 * standard_error(0.05, 5, 3)))
        assert (j.floor, j.spread) == (0.25, 0.05)
        assert judge(base, slower, spread=0.05, floor=1.5).verdict == SLOWER_WITHIN  # significant, below the floor
        assert judge(base, slower, spread=1.0, floor=0.25).verdict == "can't tell"  # within the spread
        assert judge(base, [math.log(1.05)] * 3, spread=0.05, floor=0.25).verdict == "unchanged"  # neither

    def test_a_slowdown_past_its_noise_inside_its_floor_is_never_unchanged(self):
        """The workflow's design (6 stored runs against one PR run): 1.4x at z +6.6 inside the 2x floor of a
        latency-bound case was called "unchanged"; it is "slower, within the floor (×2)"."""
        j = judge([0.0] * 6, [math.log(1.4)], spread=0.03, floor=1.0)
        assert j.z > Z_BOUND and j.verdict == SLOWER_WITHIN
        assert judge([0.0] * 6, [-math.log(1.4)], spread=0.03, floor=1.0).verdict == FASTER_WITHIN

    def test_a_case_not_gated_is_never_unchanged(self):
        """An infinite floor holds every interval, even 0.07-12.81x: such a case is "not gated", never "unchanged",
        whatever its change."""
        noisy = judge([0.0] * 3, [math.log(1.07)] * 3, spread=1.0, floor=math.inf)
        assert noisy.verdict == "not gated" and math.isinf(noisy.smallest)
        assert judge([0.0] * 3, [0.0] * 3, spread=0.01, floor=math.inf).verdict == "not gated"
        assert judge([0.0] * 3, [math.log(100.0)] * 3, spread=0.01, floor=math.inf).verdict == "not gated"

    def test_improvement_is_the_mirror(self):
        assert judge([0.0] * 5, [math.log(0.5)] * 3, 0.05, 0.25).verdict == "improvement"
        assert judge([0.0] * 5, [math.log(0.5)] * 3, 1.0, 0.25).verdict == "can't tell"
        assert judge([0.0] * 5, [math.log(0.9)] * 3, 0.01, 0.25).verdict == FASTER_WITHIN
        assert judge([0.0] * 5, [math.log(0.98)] * 3, 0.05, 0.25).verdict == "unchanged"

    def test_the_bounds_are_strict(self):
        """Exactly at the floor is a change within it; exactly at the z bound is not yet a change (nor, its interval
        reaching past the floor, unchanged)."""
        at_floor = math.log(1.25)
        assert judge([0.0], [at_floor], 0.001, 0.25).verdict == SLOWER_WITHIN
        assert judge([0.0], [-at_floor], 0.001, 0.25).verdict == FASTER_WITHIN
        assert judge([0.0], [at_floor + 1e-9], 0.001, 0.25).verdict == "regression"
        spread = math.log(3.0) / (Z_BOUND * math.sqrt(2))  # z exactly 4 for a 3x change, one run a side
        assert judge([0.0], [math.log(3.0)], spread, 0.25).verdict == "can't tell"
        assert judge([0.0], [math.log(3.0)], spread * 0.999, 0.25).verdict == "regression"
        assert judge([0.0], [math.log(3.0)], spread * 0.999, 0.25, z_bound=5.0).verdict == "can't tell"

    def test_the_ratio_is_new_over_base(self):
        j = judge([1.0, 1.0, 1.0], [1.0 + math.log(2.0)] * 3, 0.05, 0.25)
        assert j.ratio == pytest.approx(2.0) and j.verdict == "regression"

    def test_medians_not_means(self):
        """One wild new run among three does not make a regression."""
        assert judge([0.0] * 5, [0.0, 0.0, math.log(50)], 0.05, 0.25).verdict == "unchanged"
        assert judge([0.0, 0.0, math.log(50)], [0.0] * 5, 0.05, 0.25).verdict == "unchanged"

    def test_spread_never_below_the_minimum(self):
        """A spread of zero (luck) is taken as 2%: 10% over 1+1 runs is then z = 3.4, not infinite."""
        j = judge([0.0], [math.log(1.1)], 0.0, 0.05)
        assert j.z == pytest.approx(math.log(1.1) / (MIN_SPREAD * math.sqrt(2)))
        assert j.verdict == "can't tell"

    def test_unchanged_only_when_the_interval_lies_within_the_floor(self):
        """A 2x slowdown seen through an interval of 0.66-6.06x is not "unchanged": the runs cannot decide.
        (The issue's case: one run a side, latency class, 1.0 floor, 0.4 spread; not beyond the floor.)"""
        j = judge([0.0], [math.log(2.0)], 0.4, 1.0)
        assert j.verdict == "can't tell" and (round(j.low, 2), round(j.high, 2)) == (0.66, 6.06)
        # a change within the noise with an interval inside the floor [1/2.5, 2.5] is unchanged
        tight = judge([0.0] * 5, [math.log(1.3)] * 5, 0.4, 1.5)
        assert tight.verdict == "unchanged" and 1 / 2.5 <= tight.low and tight.high <= 2.5
        # an interval that reaches just past the floor on either side is not
        se = standard_error(0.4, 5, 5)
        assert judge([0.0] * 5, [math.log(2.5) - 1.95 * se] * 5, 0.4, 1.5).verdict == "can't tell"
        assert judge([0.0] * 5, [math.log(2.5) - 1.97 * se] * 5, 0.4, 1.5).verdict == "unchanged"
        assert judge([0.0] * 5, [-math.log(2.5) + 1.95 * se] * 5, 0.4, 1.5).verdict == "can't tell"

    def test_cant_tell_says_why_an_interval_without_1_is_no_flag(self):
        """A 95% interval that leaves out 1 at |z| within the bound: the rule says so; an interval holding 1 needs no
        word, nor a case one side alone ran."""
        def why(z: float, low: float, high: float) -> str | None:
            return CantTell().why(Case(Evidence(z=z, ratio=1.0, low=low, high=high, floor=1.0, z_bound=4.0)))

        assert why(-2.46, 0.08, 0.73) == "faster at 95% only: |z| 2.46, within 4"
        assert why(3.1, 1.9, 17.5) == "slower at 95% only: |z| 3.10, within 4"
        assert why(3.996, 1.5, 3.5) == "slower at 95% only: |z| 4.00, within 4"  # "+4.0" is within, not at, the bound
        assert why(1.0, 1.0, 3.0) is None and why(-1.0, 0.3, 1.0) is None and why(0.0, 0.5, 2.0) is None
        assert CantTell().why(Case(None)) is None

    def test_cant_tell_says_the_smallest_change_it_could_have_seen(self):
        """The smallest change a comparison can flag: past the floor and past the z bound, whichever is larger."""
        wide = judge([0.0], [math.log(2.0)], 0.4, 1.0)
        assert wide.smallest == pytest.approx(math.expm1(Z_BOUND * standard_error(0.4, 1, 1)))
        narrow = judge([0.0] * 9, [0.0] * 9, 0.02, 0.25)
        assert narrow.smallest == pytest.approx(0.25) and narrow.verdict == "unchanged"
        assert judge([0.0], [0.0], 0.4, math.inf).smallest == math.inf


class TestRunMedians:
    def test_one_column_per_run_and_classes(self):
        runs = syn.runs(0, 3)
        table, meta = run_times(runs)
        assert table.shape == (58, 3)
        frame = runs[1].frame.set_index("case_key")
        latency, bandwidth = frame.index[5], sorted(syn.bandwidth_keys())[0]
        # a latency-bound case counts its fastest round, a bandwidth-bound one its median
        assert table.loc[latency, 1] == pytest.approx(math.log(np.min(frame.loc[latency, "data"])))
        assert table.loc[bandwidth, 1] == pytest.approx(math.log(np.median(frame.loc[bandwidth, "data"])))
        assert np.min(frame.loc[bandwidth, "data"]) < np.median(frame.loc[bandwidth, "data"])
        assert (meta["class"] == "bandwidth").sum() == 9
        assert meta.loc[latency, "class"] == "latency" and meta.loc[bandwidth, "class"] == "bandwidth"
        assert meta.loc[latency, "path"] == frame.loc[latency, "path"]

    def test_a_case_missing_from_a_run_is_nan(self):
        runs = syn.runs(0, 2)
        runs[1].frame = runs[1].frame.iloc[1:]
        table, _ = run_times(runs)
        assert table.shape == (58, 2) and table[1].isna().sum() == 1

    @pytest.mark.parametrize(("data", "problem"), [
        ([1.0, math.inf], "non-finite"), ([1.0, 0.0], "non-positive"), ([1.0, -1.0], "non-positive"),
    ])
    def test_unusable_rounds(self, data, problem):
        (run,) = syn.runs(0, 1)
        run.frame.at[2, "data"] = data
        with pytest.raises(ResultsError, match=f"synthetic-0.json: benchmark '.*' .*{problem}"):
            run_times([run])

    @pytest.mark.parametrize("data", [None, []])
    def test_a_case_without_its_rounds_is_judged_from_its_statistics(self, data):
        (run,) = syn.runs(0, 1)
        frame = run.frame
        bandwidth = next(i for i in frame.index if case_class(int(frame.at[i, "nbytes"]),
                                                              bool(np.isfinite(frame.at[i, "bandwidth_gbps"]))) == "bandwidth")
        rows = (0, bandwidth)
        for row in rows:
            run.frame.at[row, "q1_s"], run.frame.at[row, "q3_s"] = 0.9 * run.frame.at[row, "median_s"], \
                1.1 * run.frame.at[row, "median_s"]
            run.frame.at[row, "data"] = data
        table, meta, spreads = run_tables([run])
        for row in rows:
            key, latency = run.frame.at[row, "case_key"], meta.loc[run.frame.at[row, "case_key"], "class"] == "latency"
            assert table.loc[key, 0] == pytest.approx(math.log(run.frame.at[row, "min_s" if latency else "median_s"]))
            assert spreads.loc[key, 0] == pytest.approx(math.log(1.1 / 0.9) / 1.349)
        assert set(meta.loc[[run.frame.at[r, "case_key"] for r in rows], "class"]) == {"latency", "bandwidth"}

    def test_a_run_without_a_source_is_called_run(self):
        (run,) = syn.runs(0, 1)
        run.sources = []
        run.frame.at[2, "data"] = [1.0, math.inf]
        with pytest.raises(ResultsError, match=r"^run: benchmark"):
            run_times([run])


class TestCalibrate:
    def test_learns_spread_and_floors_that_hold_the_target(self):
        runs = syn.runs(0, 12)
        learned = calibrate(runs, target=0.05, seed=1)
        assert learned.runs == 12 and learned.per_side == 1 and learned.target == 0.05
        assert learned.z_bound == Z_BOUND and len(learned.cases) == 58
        spreads = {c["class"]: [] for c in learned.cases.values()}
        for case in learned.cases.values():
            spreads[case["class"]].append(case["spread"])
        assert np.median(spreads["bandwidth"]) == pytest.approx(syn.SPREAD["bandwidth"], rel=0.4)
        assert np.median(spreads["latency"]) == pytest.approx(syn.SPREAD["latency"], rel=0.4)
        assert all(rate <= 0.05 for rate in learned.false_alarm_rate.values())
        assert learned.floors["bandwidth"] in noise.FLOOR_GRID and learned.floors["bandwidth"] <= 0.3

    def test_wild_runs_raise_the_floor(self):
        """Where runs land 2-20x off now and then, only a high floor keeps A/A comparisons quiet."""
        calm = calibrate(syn.runs(0, 12), seed=1)
        wild = calibrate(syn.runs(0, 12, wild=0.05), seed=1)
        assert wild.floors["latency"] > calm.floors["latency"]
        assert wild.floors["latency"] >= 1.0

    def test_per_case_floors(self):
        """A case that is bimodal between runs (1000x apart, as 1 MiB allocations are on a busy VM) is not
        gated at all; steady cases keep small floors, and compare reads each case's own floor."""
        runs = syn.runs(0, 12)
        key = runs[0].frame["case_key"].iloc[0]
        for i, run in enumerate(runs):
            if i % 3 == 0:
                run.frame.at[0, "data"] = [t * 1000 for t in run.frame.at[0, "data"]]
        learned = calibrate(runs, seed=1)
        assert learned.cases[key]["floor"] == math.inf and learned.floor(key, "latency") == math.inf
        steady = [c["floor"] for k, c in learned.cases.items() if k != key]
        assert sum(f == math.inf for f in steady) <= 1 and np.median(steady) <= 0.25  # one beyond its class cap
        assert learned.floor("unknown", "latency") == learned.floors["latency"]
        assert noise.FLOOR_GRID[-1] == math.inf and noise.FLOOR_GRID[0] == 0.05

    def test_what_the_file_records(self):
        runs = syn.runs(0, 5)
        runs[-1].machine_info = {"xferbench": {"torch": "9.9", "devices": []}}
        learned = calibrate(runs, seed=1)  # exactly the minimum number of runs
        assert learned.machine["torch"] == "9.9" and learned.runs == 5
        key = runs[0].frame["case_key"].iloc[7]
        assert learned.cases[key]["path"] == runs[0].frame["path"].iloc[7]
        assert learned.cases[key]["nbytes"] == int(runs[0].frame["nbytes"].iloc[7])
        assert set(learned.false_alarm_rate) == {"bandwidth", "latency"}
        assert calibrate(syn.runs(0, 8), per_side=3, seed=1).per_side == 3  # 2 x 3 + 2 runs: enough

    def test_needs_enough_runs(self):
        with pytest.raises(ValueError, match="at least 5 A/A runs, got 4"):
            calibrate(syn.runs(0, 4))
        with pytest.raises(ValueError, match="at least 8 A/A runs, got 7"):
            calibrate(syn.runs(0, 7), per_side=3)

    def test_round_trip_and_spread_lookup(self):
        learned = calibrate(syn.runs(0, 6), seed=1)
        back = Noise.from_json(learned.to_json(), "n.json")
        assert back == learned
        key = next(iter(learned.cases))
        assert back.spread(key, "latency") == learned.cases[key]["spread"]
        assert back.spread("no such case", "latency") == DEFAULT_SPREAD["latency"]
        assert back.spread("no such case", "bandwidth") == DEFAULT_SPREAD["bandwidth"]
        assert json.loads(learned.to_json())["xferbench_noise"] == 1

    def test_a_case_floor_wins_over_its_class_floor(self):
        learned = Noise({}, 8, 0.05, 1, Z_BOUND, {"bandwidth": 0.5, "latency": 2.0},
                        {"k": {"path": "p", "nbytes": 4, "class": "latency", "spread": 0.03, "floor": 0.1},
                         "old": {"path": "p", "nbytes": 8, "class": "latency", "spread": 0.03}})
        assert learned.floor("k", "latency") == 0.1
        assert learned.floor("old", "latency") == 2.0  # a file from before per-case floors
        assert learned.floor("unknown", "bandwidth") == 0.5

    @pytest.mark.parametrize("text", ["{", "[]", '{"xferbench_noise": 2}', '{"xferbench_noise": 1, "runs": 3}'])
    def test_foreign_files_refused(self, text):
        with pytest.raises(ResultsError, match=r"n\.json: not a noise file written by xferbench calibrate"):
            Noise.from_json(text, "n.json")


class TestCalibrationRules:
    """The arithmetic behind each floor, on inputs whose answer is known."""

    def test_mad_margin_widens_a_spread_learned_from_few_runs(self):
        assert noise.mad_margin(1) == pytest.approx(1 + noise.MAD_MARGIN)  # one run: its MAD says nothing
        assert noise.mad_margin(4) == pytest.approx(1 + noise.MAD_MARGIN / 2)
        assert noise.mad_margin(0) == 1.0  # no runs to learn from: nothing to widen, not a division by zero

    def test_case_budget_shares_the_target_out_and_confirmation_squares_it(self):
        assert noise.case_budget(0.05, 1, confirmed=False) == 0.05
        assert noise.case_budget(0.05, 0, confirmed=False) == 0.05
        assert noise.case_budget(0.04, 4, confirmed=False) == pytest.approx(0.01)
        assert noise.case_budget(0.04, 4, confirmed=True) == pytest.approx(0.1)  # flagged twice: sqrt

    def test_a_z_bound_too_large_for_a_float_makes_the_smallest_change_infinite(self):
        """A calibration file's z bound of 1255 (with a wide spread) or 1e6 used to overflow math.expm1 (compare exit
        3); no change can be seen."""
        assert noise.smallest_change(0.05, 0.1, 3, z_bound=1e6) == math.inf
        assert noise.judge([0.0, 0.01, 0.02], [0.5, 0.51, 0.52], 0.1, 0.05, z_bound=1e6).smallest == math.inf
        assert noise.smallest_change(0.05, 0.1, 3, z_bound=5.0) < math.inf

    def test_smallest_change_is_the_floor_or_the_z_bound_whichever_is_larger(self):
        past_z = math.expm1(Z_BOUND * standard_error(0.1, 3, 3))
        assert noise.smallest_change(0.05, 0.1, 3) == pytest.approx(past_z)  # a quiet floor: z decides
        assert noise.smallest_change(1.0, 0.1, 3) == pytest.approx(1.0)  # a 2x floor decides
        assert noise.smallest_change(0.05, 0.0, 3) == pytest.approx(math.expm1(Z_BOUND * standard_error(MIN_SPREAD, 3, 3)))
        assert noise.smallest_change(math.inf, 0.1, 3) == math.inf  # not gated

    def test_a_swing_at_the_floor_is_not_past_it_and_a_rate_at_the_budget_is_allowed(self):
        swings = np.array([0.0, 0.0, 0.0, math.log1p(0.3)])  # one draw in four swings by exactly 30%
        assert noise._smallest_floor(swings, 0.25) == (0.05, 0.25)
        assert noise._smallest_floor(swings, 0.2) == (0.3, 0.0)
        assert noise._smallest_floor(np.array([math.log(1e6)]), 0.0) == (math.inf, 0.0)

    def test_each_case_is_judged_by_its_own_spread(self):
        # Case 1 sits still but for one run 2.7x off; case 0 swings wildly every run. Judged with
        # a spread pooled over both, case 1's outlier would hide in case 0's noise.
        values = np.array([[0.0, 2.0] * 6, [0.0] * 11 + [1.0]])
        swing = noise._aa_swings(values, per_side=1, draws=300, z_bound=Z_BOUND, seed=3)
        assert set(np.unique(swing[:, 1])) == {0.0, 1.0}  # the outlier against any other run: |log ratio| 1
        assert (swing[:, 1] > 0).mean() == pytest.approx(2 / 12, abs=0.06)  # drawn as base or new

    def test_calibration_is_repeatable_with_its_seed(self):
        runs = syn.runs(0, 6)
        assert calibrate(runs, seed=5) == calibrate(runs, seed=5)

    def test_the_file_records_how_it_was_judged(self):
        runs = syn.runs(0, 6)
        assert calibrate(runs, seed=1).confirmed is True
        assert calibrate(runs, seed=1, confirmed=False).confirmed is False

    def test_recorded_spread_and_smallest_change(self):
        runs = syn.runs(0, 6)
        learned = calibrate(runs, per_side=1, seed=1)
        table, _ = run_times(runs)
        for key in list(learned.cases)[:5]:
            case = learned.cases[key]
            spread = max(robust_spread(table.loc[key].to_numpy()) * noise.mad_margin(6), MIN_SPREAD)
            assert case["spread"] == round(spread, 5)
            assert case["smallest_change"] == pytest.approx(noise.smallest_change(case["floor"], spread, 1), abs=5e-4)

    def test_noise_file_keys_are_sorted_for_reviewable_diffs(self):
        text = calibrate(syn.runs(0, 6), seed=1).to_json()
        top = list(json.loads(text))
        assert top == sorted(top) and "\n" in text


class TestFloorsAndRatesFromKnownSwings:
    """calibrate with the A/A draws replaced by a known swing matrix: the floors, caps and rates follow."""

    @pytest.fixture
    def runs_and_keys(self):
        runs = syn.runs(0, 6)
        table, meta = run_times(runs)
        latency = [k for k in table.index if meta.at[k, "class"] == "latency"]
        return runs, list(table.index), latency

    def _with_swings(self, monkeypatch, keys, swings_by_key, draws=100):
        def fake(values, per_side, draws_, z_bound, seed):
            swing = np.zeros((draws, len(keys)))
            for key, column in swings_by_key.items():
                swing[:, keys.index(key)] = column
            return swing
        monkeypatch.setattr(noise, "_aa_swings", fake)

    def test_confirmed_rate_is_each_case_flagged_twice(self, monkeypatch, runs_and_keys):
        runs, keys, latency = runs_and_keys
        a, b = np.zeros(100), np.zeros(100)
        a[:2], b[50] = 0.3, 0.3  # 2% and 1% of draws, both under the confirmed budget sqrt(0.05 / cases)
        self._with_swings(monkeypatch, keys, {latency[0]: a, latency[1]: b})
        learned = calibrate(runs, seed=1)
        assert learned.cases[latency[0]]["floor"] == 0.05 and learned.cases[latency[1]]["floor"] == 0.05
        assert learned.false_alarm_rate["latency"] == pytest.approx(1 - (1 - 0.02 ** 2) * (1 - 0.01 ** 2))
        assert learned.false_alarm_rate["bandwidth"] == 0.0

    def test_unconfirmed_rate_is_the_share_of_draws_that_flag_any_case(self, monkeypatch, runs_and_keys):
        runs, keys, latency = runs_and_keys
        a, b = np.zeros(100), np.zeros(100)
        a[:2], b[50] = math.log1p(0.3), 0.3  # a: 2%, over the budget 1/cases, so floored at 30%; b: 1%, gated at 5%
        self._with_swings(monkeypatch, keys, {latency[0]: a, latency[1]: b})
        learned = calibrate(runs, target=1.0, seed=1, confirmed=False)
        assert learned.cases[latency[0]]["floor"] == 0.3 and learned.cases[latency[1]]["floor"] == 0.05
        assert learned.false_alarm_rate == {"bandwidth": 0.0, "latency": pytest.approx(0.01)}

    def test_each_class_floor_pools_its_own_cases_swings(self, monkeypatch, runs_and_keys):
        runs, keys, latency = runs_and_keys
        swing = np.zeros(100)
        swing[:10] = 0.25  # every latency case 25% off in a tenth of the draws; bandwidth cases steady
        self._with_swings(monkeypatch, keys, dict.fromkeys(latency, swing))
        learned = calibrate(runs, seed=1)
        assert learned.floors == {"bandwidth": 0.05, "latency": 0.3}

    def test_a_case_that_needs_more_than_its_class_cap_is_not_gated(self, monkeypatch, runs_and_keys):
        runs, keys, latency = runs_and_keys
        a = np.zeros(100)
        a[:20] = math.log(5.0)  # a fifth of the draws 5x apart: needs a 5.0 floor, past the latency cap of 2x
        self._with_swings(monkeypatch, keys, {latency[0]: a})
        learned = calibrate(runs, seed=1)
        assert learned.cases[latency[0]]["floor"] == math.inf
        assert learned.cases[latency[0]]["smallest_change"] == math.inf
        assert learned.floors["latency"] <= noise.FLOOR_CAP["latency"]  # a new case is still gated


def test_a_class_with_no_case_has_no_false_alarms_and_its_capped_floor():
    runs = syn.runs(0, 6)
    for run in runs:
        run.frame = run.frame[run.frame["nbytes"] < BANDWIDTH_MIN_BYTES]
    for confirmed in (True, False):
        learned = calibrate(runs, seed=1, confirmed=confirmed)
        assert learned.false_alarm_rate["bandwidth"] == 0.0
        assert learned.floors["bandwidth"] == noise.FLOOR_CAP["bandwidth"]


def test_case_facts_line_up_with_the_table_whatever_order_a_run_lists_its_cases():
    runs = syn.runs(0, 2)
    runs[1].frame = runs[1].frame.iloc[::-1]
    table, meta = run_times(runs)
    assert list(meta.index) == list(table.index)


class TestCurrentSegment:
    """Where a case's current level starts: after its last lasting step that the gate would flag, judged
    with the spread of the runs about their own levels (seeded noise of known size)."""

    noise = np.random.default_rng(0).normal(0, 0.05, 30)

    def test_a_lasting_step_starts_the_level(self):
        series = self.noise[:14] + np.r_[np.zeros(8), np.full(6, np.log(2))]
        assert noise.current_segment(series, 0.05, 0.25) == 8

    def test_a_faster_level_is_a_step_too(self):
        series = self.noise[:14] + np.r_[np.zeros(8), np.full(6, np.log(0.5))]
        assert noise.current_segment(series, 0.05, 0.25) == 8

    def test_the_last_of_two_steps(self):
        series = self.noise[:21] + np.r_[np.zeros(7), np.full(7, np.log(2)), np.full(7, np.log(4))]
        assert noise.current_segment(series, 0.05, 0.25) == 14

    def test_no_step_no_segment(self):
        assert noise.current_segment(self.noise[:14], 0.05, 0.25) == 0
        assert noise.current_segment(np.zeros(0), 0.05, 0.25) == 0

    def test_a_busy_step_on_an_assumed_spread_moves_no_baseline(self):
        """Six runs, the last three on a busy machine 350x slower: with three runs a side the spread is
        assumed, and a busy run makes the step "can't tell", as compare says; quiet, the gate flags it."""
        series = np.r_[np.zeros(3), np.full(3, np.log(350))] + self.noise[:6] / 5
        assert noise.current_segment(series, 0.4, 1.0) == 3
        assert noise.current_segment(series, 0.4, 1.0, busy=[False, False, False, True, True, True]) == 0
        assert noise.current_segment(series, 0.4, 1.0, busy=[True, False, False, False, False, False]) == 0
        # five runs a side: the spread is learned from them, busy or not, and a clear step is accepted
        clear = np.r_[np.zeros(5), np.full(5, np.log(3))] + self.noise[:10] / 5
        assert noise.current_segment(clear, 0.4, 1.0, busy=[True] * 10) == 5

    def test_levels_as_wide_as_their_gap_are_not_a_step(self):
        wide = np.r_[0.0, 3.0, 0.5, 6.0, 2.5, 5.5, 3.0, 6.5]
        assert noise.current_segment(wide, 0.4, 1.0) == 0

    def test_an_assumed_spread_wider_than_the_step_keeps_the_baseline(self):
        """Three quiet runs a side 1.5x apart: flagged against a 5% spread, not against an assumed 50% one
        (fewer than five runs a side never judge below the case's spread)."""
        series = np.r_[np.zeros(3), np.full(3, np.log(1.5))] + self.noise[:6] / 50
        assert noise.current_segment(series, 0.05, 0.25) == 3
        assert noise.current_segment(series, 0.5, 0.25) == 0

    def test_the_z_bound_decides_a_close_step(self):
        """A step the gate flags at its default bound is kept at a stricter one only if it clears it."""
        series = self.noise[:14] + np.r_[np.zeros(7), np.full(7, np.log(1.3))]
        assert noise.current_segment(series, 0.05, 0.25) == 7
        assert noise.current_segment(series, 0.05, 0.25, z_bound=1e6) == 0


CI_NOISE = json.loads((Path(__file__).resolve().parents[1] / ".ci" / "noise.json").read_text())
A_CASE = next(iter(CI_NOISE["cases"]))


def noise_file(**changes) -> str:
    """The CI's calibration file with top-level fields changed (``case`` changes its first case's fields)."""
    data = json.loads(json.dumps(CI_NOISE))
    data["cases"][A_CASE] |= changes.pop("case", {})
    return json.dumps(data | changes)


class TestNoiseFileFields:
    """A field no calibration writes is named when the file is read: a NaN bound or a negative floor would make
    the gate silently never, or always, fire."""

    @pytest.mark.parametrize(("changes", "field"), [
        ({"machine": []}, "machine"), ({"runs": 0}, "runs"), ({"runs": 8.0}, "runs"), ({"runs": True}, "runs"),
        ({"target": 1}, "target"), ({"target": 0}, "target"), ({"target": "0.05"}, "target"),
        ({"per_side": 0}, "per_side"), ({"per_side": 3.0}, "per_side"), ({"z_bound": 0}, "z_bound"),
        ({"z_bound": -4.0}, "z_bound"), ({"floors": {"bandwidth": 0.1}}, "floors"), ({"floors": []}, "floors"),
        ({"floors": {"bandwidth": 0.1, "latency": -0.1}}, "floors"), ({"cases": []}, "cases"),
        ({"cases": {"k": 1}}, "cases"), ({"case": {"spread": -0.01}}, "cases"), ({"case": {"spread": "0.1"}}, "cases"),
        ({"case": {"spread": None}}, "cases"), ({"case": {"floor": 0}}, "cases"), ({"case": {"floor": -1.0}}, "cases"),
        ({"false_alarm_rate": 0.05}, "false_alarm_rate"), ({"confirmed": 1}, "confirmed"), ({"note": None}, "note"),
    ])
    def test_a_field_no_calibration_writes_is_named(self, changes, field):
        with pytest.raises(ResultsError) as error:
            noise.Noise.from_json(noise_file(**changes), "n.json")
        assert str(error.value) == (f"n.json: not a usable noise file (field {field!r}); run xferbench calibrate "
                                    "again")

    @pytest.mark.parametrize("changes", [
        {}, {"runs": 1, "per_side": 1}, {"target": 0.999}, {"z_bound": 1e300}, {"confirmed": False},
        {"floors": {"bandwidth": None, "latency": 1e-9}}, {"case": {"spread": 0, "floor": None}},
        {"case": {"spread": 5}}, {"case": {"floor": 2}},
    ])
    def test_what_calibration_writes_is_read(self, changes):
        """At the bounds too: one run a side, a spread of 0, a floor of null (a case not gated, infinite)."""
        read = noise.Noise.from_json(noise_file(**changes), "n.json")
        assert read.runs == changes.get("runs", 8)
        if changes.get("case", {}).get("floor", 0) is None:
            assert read.cases[A_CASE]["floor"] == math.inf

    @pytest.mark.parametrize("version", [2, "1", 1.0, True, None])
    def test_another_version_is_not_a_noise_file(self, version):
        with pytest.raises(ResultsError, match=r"^n\.json: not a noise file written by xferbench calibrate$"):
            noise.Noise.from_json(noise_file(xferbench_noise=version), "n.json")

    def test_written_and_read_back_the_same(self):
        read = noise.Noise.from_json(noise_file(case={"floor": None}), "n.json")
        assert json.loads(read.to_json()) == json.loads(noise_file(case={"floor": None}))
        assert noise.Noise.from_json(read.to_json(), "again.json") == read


class TestStrictJson:
    """Issue 26, item 10: a noise file is strict JSON (JSON.parse refuses Infinity); older files still read."""

    def noise(self) -> Noise:
        return Noise(machine={"CPU": "EPYC"}, runs=8, target=0.05, per_side=1, z_bound=4.0,
                     floors={"bandwidth": 0.4, "latency": math.inf},
                     cases={"k": {"spread": 0.1, "floor": math.inf, "smallest_change": math.inf},
                            "j": {"spread": 0.1, "floor": 0.2, "smallest_change": 0.3}})

    def test_infinite_floors_are_written_null_and_read_back_infinite(self):
        text = self.noise().to_json()
        data = strict_loads(text)
        assert data["floors"]["latency"] is None and data["cases"]["k"]["floor"] is None
        assert data["cases"]["k"]["smallest_change"] is None and data["cases"]["j"]["floor"] == 0.2
        back = Noise.from_json(text, "n.json")
        assert back == self.noise() and back.floor("k", "latency") == math.inf

    def test_a_file_written_with_infinity_still_reads(self):
        old = json.dumps({"xferbench_noise": 1, **dataclasses.asdict(self.noise())})
        assert "Infinity" in old and Noise.from_json(old, "old.json") == self.noise()

    def test_a_nan_is_never_written(self):
        with pytest.raises(ValueError):
            dataclasses.replace(self.noise(), false_alarm_rate={"latency": math.nan}).to_json()

    def test_the_ci_noise_file_is_strict_json(self):
        path = Path(__file__).parents[1] / ".ci" / "noise.json"
        text = path.read_text()
        strict_loads(text)
        assert Noise.from_json(text, str(path)).to_json() + "\n" in (text, text + "\n")  # as calibrate writes it


@pytest.mark.hostile
class TestProperties:
    """Hypothesis, modest example counts (the cores are shared): any noise file is used or refused in one
    line; any nvbandwidth document gives finite positive figures or one ResultsError."""

    @property_settings(40, HealthCheck.function_scoped_fixture)
    @given(field=st.sampled_from(["machine", "runs", "target", "per_side", "z_bound", "floors", "cases",
                                  "false_alarm_rate", "confirmed", "note"]), value=values)
    def test_noise_file_with_any_field(self, tmp_path, field, value):
        import contextlib
        import io

        from xferbench.analyze.gate.noise import Noise
        from xferbench.analyze.load.results import ResultsError

        text = json.dumps({"xferbench_noise": 1, "machine": {}, "runs": 10, "target": 0.05, "per_side": 3,
                           "z_bound": 4.0, "floors": {"bandwidth": 0.25, "latency": 1.0}, "cases": {},
                           "false_alarm_rate": {}, "confirmed": True, "note": ""} | {field: value})
        try:
            noise = Noise.from_json(text, "noise.json")
        except ResultsError as error:
            assert str(error).startswith("noise.json: ") and "\n" not in str(error)
            return
        assert noise.z_bound > 0 and all(noise.floors[c] > 0 for c in ("bandwidth", "latency"))
        base = tmp_path / "base.json"
        if not base.exists():
            put(base, small(4))
        path = put(tmp_path / "noise.json", text)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["compare", str(base), str(base), "--noise", str(path)])
        assert code == 0, err.getvalue()  # a run against itself: no change, whatever the usable file says
