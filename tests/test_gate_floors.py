"""The store's own runs bound the floor and spread a calibration gives (compare), on constructed runs: no clocks."""

import math

import numpy as np
import pytest

import synthetic_runs as syn
from xferbench.analyze.gate.bound import store_bound, store_swing
from xferbench.analyze.gate.compare import compare, to_markdown, to_text
from xferbench.analyze.gate.noise import Noise, run_times
from xferbench.analyze.load.case_time import MIN_RUNS_TO_LEARN, learned_spread

#: Runs spread in time: bandwidth-bound cases drift 20% between them, latency-bound ones 1%.
DRIFT = {"bandwidth": 0.2, "latency": 0.01}


def back_to_back(base: list, floor: float = 0.05, spread: float = 0.01) -> Noise:
    """A calibration whose A/A runs agreed closely (back to back): every case at ``floor`` and ``spread``."""
    table, _ = run_times(base)
    return Noise(machine={}, runs=10, target=0.05, per_side=1, z_bound=4.0,
                 floors={"bandwidth": floor, "latency": floor},
                 cases={str(k): {"spread": spread, "floor": floor} for k in table.index})


class TestStoreSwing:
    def test_two_runs_must_reach_it_one_wild_run_does_not_set_it(self):
        calm = [0.0, 0.01, -0.01, 0.0, 0.02, -0.02, 0.0, 0.01]
        wild = store_swing([*calm[:-1], math.log(3.0)])
        assert wild is not None and wild < 0.05
        two = store_swing([*calm[:-2], math.log(1.5), math.log(1.5)])
        assert two == pytest.approx(0.5, rel=0.05)

    def test_each_run_is_measured_from_the_others_median(self):
        assert store_swing([0.0, 0.0, 0.0, 0.0, 0.1, 0.2]) == pytest.approx(math.expm1(0.1))

    def test_too_few_runs_show_no_swing(self):
        assert store_swing([0.0, 0.5, 1.0, 1.5]) is None


class TestFloorNeverBelowTheStore:
    base = syn.runs(0, 8, spread=DRIFT)

    def rows(self, new: list, noise: Noise | None, base: list | None = None, floor: float | None = None) -> dict:
        return {r.key: r for r in compare(base or self.base, new, noise, floor) if r.ratio is not None}

    def test_a_back_to_back_calibration_is_raised_to_the_store_s_swing_and_spread(self):
        rows = self.rows([syn.run(100, spread=DRIFT)], back_to_back(self.base))
        table, meta = run_times(self.base)
        for key, row in rows.items():
            logs = table.loc[key].to_numpy()[row.before_step:]  # after a lasting step, if the gate saw one
            swing = store_swing(logs)
            assert swing is not None
            assert row.floor == pytest.approx(max(0.05, swing))
            assert row.floor_from == ("store spread" if swing > 0.05 else "calibrated")
            assert row.spread == pytest.approx(max(0.01, learned_spread(logs, str(meta.at[key, "class"]))))
        said = {r.floor_from for r in rows.values()}
        assert said == {"store spread", "calibrated"}  # drifting bandwidth cases raised, steady latency ones kept

    def test_an_a_a_candidate_is_no_regression_though_the_calibration_alone_would_flag_it(self):
        new = [syn.run(100 + i, spread=DRIFT) for i in range(3)]
        noise = back_to_back(self.base)
        assert not any(r.regression for r in self.rows(new, noise).values())
        # the same runs judged with the calibration alone (too few base runs to bound it) cry wolf
        assert any(r.regression for r in self.rows(new, noise, base=self.base[:4]).values())

    def test_a_slowdown_past_the_store_s_swing_is_still_flagged(self):
        new = [syn.run(100 + i, spread=DRIFT, slow=3.0, which=syn.is_bandwidth) for i in range(3)]
        rows = self.rows(new, back_to_back(self.base))
        bandwidth = {k for k in rows if k in syn.bandwidth_keys()}
        assert bandwidth and all(rows[k].regression for k in bandwidth)

    def test_without_a_calibration_the_default_floor_still_holds_where_the_store_is_steadier(self):
        rows = self.rows([syn.run(100, spread=DRIFT)], None)
        latency = [r for r in rows.values() if r.case_class == "latency"]
        assert latency and {(r.floor, r.floor_from) for r in latency} == {(1.0, "default")}

    def test_a_threshold_is_the_user_s_word_and_is_not_raised(self):
        rows = self.rows([syn.run(100, spread=DRIFT)], back_to_back(self.base), floor=0.01)
        assert {(r.floor, r.floor_from) for r in rows.values()} == {(0.01, "threshold")}

    def test_the_table_says_which_floor_held(self):
        rows = compare(self.base, [syn.run(100, spread=DRIFT)], back_to_back(self.base))
        for text in (to_text(rows, 8, 1), to_markdown(rows, 8, 1)):
            assert "(store spread)" in text and "5% (calibrated)" in text
        raised = next(r for r in rows if r.floor_from == "store spread")
        assert f"{raised.floor:.0%} (store spread)" in to_text(rows, 8, 1)
        assert np.isfinite(raised.floor)


class TestWhatTheGateCanSee:
    def row(self, cls: str, smallest: float | None, ratio: float | None = 1.0):
        from xferbench.analyze.gate.comparison import Comparison
        return Comparison("case", 1, cls, 1.0, 1.0, ratio, 0.9, 1.1, 0.0, 0.25, 0.1, "history", "unchanged",
                          smallest)

    def test_per_class_the_best_and_the_median_and_those_not_gated(self):
        from xferbench.analyze.gate.comparison import can_see
        rows = [self.row("latency", 0.05), self.row("latency", 0.3), self.row("latency", 1.0),
                self.row("bandwidth", 0.5), self.row("bandwidth", math.inf), self.row("bandwidth", None, None)]
        said = can_see(rows)
        assert said is not None
        assert "latency-bound, 3 case(s): 1.05x at best, 1.30x for half of them" in said
        assert "bandwidth-bound, 2 case(s): 1.50x; 1 not gated" in said
        assert said.endswith("A smaller slowdown is not flagged.")

    def test_nothing_compared_says_nothing(self):
        from xferbench.analyze.gate.comparison import can_see
        assert can_see([self.row("latency", None, None)]) is None

    def test_the_comparison_s_summary_says_it_from_the_bounded_floors(self):
        base = syn.runs(0, 8, spread=DRIFT)
        rows = compare(base, [syn.run(100, spread=DRIFT)], back_to_back(base))
        text = to_text(rows, 8, 1)
        assert "What these runs can flag here" in text
        best = min(r.smallest for r in rows if r.case_class == "bandwidth" and r.smallest is not None)
        assert best > 0.05  # the store's swing, not the calibration's 5%, bounds what it can see
        assert f"bandwidth-bound, 9 case(s): {1 + best:.2f}x at best" in text


class TestStoreBound:
    """store_bound raises a calibration's spread and floor to what the stored runs show, and names the source."""

    RUNS = np.log([1.0, 1.1, 0.9, 1.05, 0.95, 1.2])

    def test_from_min_runs_to_learn_runs_the_store_shows_a_swing(self):
        assert store_swing(self.RUNS[:MIN_RUNS_TO_LEARN]) is not None
        assert store_swing(self.RUNS[:MIN_RUNS_TO_LEARN - 1]) is None

    def test_a_calibration_below_the_store_is_raised_and_says_so(self):
        spread, source, floor, floor_from = store_bound(self.RUNS, "latency", 0.0, "noise", 0.0, "calibrated")
        assert (spread, source) == (learned_spread(self.RUNS, "latency"), "history")
        assert (floor, floor_from) == (store_swing(self.RUNS), "store spread")

    def test_a_calibration_at_or_above_the_store_stands(self):
        learned, shown = learned_spread(self.RUNS, "latency"), store_swing(self.RUNS)
        assert shown is not None
        for spread, floor in ((learned, shown), (learned * 2, shown * 2)):
            assert store_bound(self.RUNS, "latency", spread, "noise", floor, "calibrated") == (
                spread, "noise", floor, "calibrated")

    def test_too_few_runs_leave_the_calibration_alone(self):
        assert store_bound(self.RUNS[:4], "latency", 0.0, "noise", 0.0, "calibrated") == (0.0, "noise", 0.0,
                                                                                           "calibrated")
