"""The store's own runs bound the floor and spread a calibration gives (compare), on constructed runs: no clocks."""

import json
import math

import numpy as np
import pytest

import synthetic_runs as syn
from xferbench.analyze.gate.bound import STORE_BOUND, bimodal, set_aside, store_baseline, store_swing
from xferbench.analyze.gate.compare import compare, to_markdown, to_text
from xferbench.analyze.gate.noise import Noise, run_times
from xferbench.analyze.gate.verdicts import NOT_GATED
from xferbench.analyze.load.case_time import DEFAULT_FLOOR, MIN_RUNS_TO_LEARN, learned_spread

#: Runs spread in time: bandwidth-bound cases drift 12% between them, latency-bound ones 1%.
DRIFT = {"bandwidth": 0.12, "latency": 0.01}


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


class TestStoreBaseline:
    """store_baseline: runs that disagree with the majority set aside; spread and floor raised to what the others
    show, never past STORE_BOUND."""

    RUNS = np.log([1.0, 1.1, 0.9, 1.05, 0.95, 1.2])

    def test_from_min_runs_to_learn_runs_the_store_shows_a_swing(self):
        assert store_swing(self.RUNS[:MIN_RUNS_TO_LEARN]) is not None
        assert store_swing(self.RUNS[:MIN_RUNS_TO_LEARN - 1]) is None

    def test_a_calibration_below_the_store_is_raised_and_says_so(self):
        b = store_baseline(self.RUNS, "latency", 0.0, "calibrated", 0.0)
        assert (b.spread, b.source) == (learned_spread(self.RUNS, "latency"), "history")
        assert (b.floor, b.floor_from) == (store_swing(self.RUNS), "store spread")
        assert not b.aside.any() and b.swing == store_swing(self.RUNS)

    def test_a_calibration_at_or_above_the_store_stands(self):
        learned, shown = learned_spread(self.RUNS, "latency"), store_swing(self.RUNS)
        assert shown is not None
        for spread, floor in ((learned, shown), (learned * 2, shown * 2)):
            b = store_baseline(self.RUNS, "latency", floor, "calibrated", spread)
            assert (b.spread, b.source, b.floor, b.floor_from) == (spread, "calibration", floor, "calibrated")

    def test_without_a_calibration_the_spread_is_learned_from_the_runs_kept(self):
        b = store_baseline(self.RUNS, "bandwidth", 0.25, "default", None)
        assert (b.spread, b.source) == (learned_spread(self.RUNS, "bandwidth"), "history")
        assert store_baseline(self.RUNS[:2], "bandwidth", 0.25, "default", None).source == "default"

    def test_too_few_runs_leave_the_calibration_alone(self):
        b = store_baseline(self.RUNS[:4], "latency", 0.0, "calibrated", 0.0)
        assert (b.spread, b.source, b.floor, b.floor_from, b.swing) == (0.0, "calibration", 0.0, "calibrated", None)

    @pytest.mark.parametrize("off", [10.0, 0.1, 1.6])
    def test_two_runs_off_the_majority_are_set_aside_and_the_floor_stays(self, off):
        runs = np.log([1.0, 1.02, off, 0.98, 1.01, 0.99, off, 1.03])
        b = store_baseline(runs, "bandwidth", 0.25, "default", None)
        assert b.aside.tolist() == [False, False, True, False, False, False, True, False]
        assert (b.floor, b.floor_from) == (0.25, "default") and b.kept.size == 6

    def test_a_run_within_the_floor_is_never_set_aside(self):
        runs = np.log([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.2])  # 4 robust spreads of nothing, but inside a 25% floor
        assert not set_aside(runs, "bandwidth", 0.25).__invert__().any()

    def test_half_the_runs_are_never_set_aside_they_make_the_case_bimodal_and_not_gated(self):
        runs = np.log([1.0, 3.0, 1.02, 3.1, 0.98, 2.9, 1.01, 3.05])
        b = store_baseline(runs, "bandwidth", 0.25, "default", None)
        assert not b.aside.any()
        assert (b.floor, b.floor_from, b.groups) == (math.inf, "store spread", (4, 4))
        assert b.swing is not None and b.swing > STORE_BOUND["bandwidth"]

    @pytest.mark.parametrize(("cls", "half_width"), [("bandwidth", 0.2), ("bandwidth", 0.5), ("latency", 0.5),
                                                     ("latency", 1.0)])
    def test_the_store_widens_a_floor_up_to_its_bound_and_no_further(self, cls, half_width):
        runs = np.linspace(-half_width, half_width, 8)  # spread evenly: none disagrees with the majority
        b = store_baseline(runs, cls, DEFAULT_FLOOR[cls], "default", None)
        assert not b.aside.any() and b.swing == store_swing(runs)
        within = b.swing <= STORE_BOUND[cls]
        assert b.floor == (max(b.swing, DEFAULT_FLOOR[cls]) if within else math.inf)
        assert within is (half_width == {"bandwidth": 0.2, "latency": 0.5}[cls])  # both sides of the bound

    def test_two_groups_wider_apart_than_either_is_wide(self):
        assert bimodal(np.log([1, 1.1, 3, 3.3])) == (2, 2)
        assert bimodal(np.log([1, 1.1, 1.2, 3])) is None  # a lone run is no group
        assert bimodal(np.log([1, 2, 3, 4, 5])) is None  # a spread, not two groups
        assert bimodal(np.log([1, 2, 3])) is None


#: Stored runs close together (a quiet runner), so that what a poisoned run does shows alone.
QUIET = {"bandwidth": 0.03, "latency": 0.05}


def everything(row) -> bool:
    return True


class TestPoisonedStore:
    """Runs pushed to the store to switch the gate off: set aside and named, or the case not gated, never quiet."""

    def store(self, off: float, poisoned: int = 2, at: tuple[int, ...] = (3, 6)) -> list:
        honest = syn.runs(0, 8 - poisoned, spread=QUIET)
        bad = [syn.run(50 + i, spread=QUIET, slow=off, which=everything) for i in range(poisoned)]
        for place, run in zip(at, bad, strict=True):
            honest.insert(place, run)
        return honest

    @pytest.mark.parametrize(("off", "slow"), [(10.0, 2.0), (0.1, 2.0), (1.6, 1.5)])
    def test_a_real_slowdown_is_flagged_beside_two_runs_far_off(self, off, slow):
        rows = compare(self.store(off), [syn.run(99, spread=QUIET, slow=slow, which=syn.is_bandwidth)])
        bandwidth = [r for r in rows if r.case_class == "bandwidth"]
        assert bandwidth and all(r.regression for r in bandwidth)
        assert {r.aside for r in bandwidth} == {("synthetic-50.json", "synthetic-51.json")}
        assert all(r.floor == DEFAULT_FLOOR["bandwidth"] for r in bandwidth)
        said = to_text(rows, 8, 1)
        cases = 9 if off == 1.6 else 58  # 1.6x is within a latency-bound case's 2x floor: no disagreement there
        assert ("Set aside, 2 base run(s) that disagree with the others by more than the case's floor and 4 robust "
                f"spreads: synthetic-50.json ({cases} case(s)), synthetic-51.json ({cases} case(s)).") in said

    def test_two_runs_off_at_the_end_are_no_lasting_step(self):
        rows = compare(self.store(10.0, at=(6, 7)), [syn.run(99, spread=QUIET, slow=2.0, which=syn.is_bandwidth)])
        assert all(r.regression for r in rows if r.case_class == "bandwidth")
        assert not any(r.before_step for r in rows)

    def test_three_runs_off_at_the_end_move_the_baseline_said_and_sent_to_ab(self):
        from xferbench.analyze.gate.ab import flagged_of
        from xferbench.analyze.gate.compare import to_json

        rows = compare(self.store(10.0, poisoned=3, at=(5, 6, 7)), [syn.run(99, spread=QUIET)])
        assert all(r.before_step == 5 and r.moved is not None and r.moved > 9 for r in rows)
        assert len(flagged_of(to_json(rows, 8, 1), "first.json").keys) == len(rows)  # confirmed side by side

    def test_half_the_runs_off_make_the_cases_bimodal_not_gated_and_never_unchanged(self):
        base = [syn.run(i, spread=QUIET, slow=3.0 if i % 2 else 1.0, which=everything) for i in range(8)]
        rows = compare(base, [syn.run(99, spread=QUIET, slow=2.0, which=syn.is_bandwidth)])
        assert {r.verdict for r in rows} == {NOT_GATED}
        assert all(r.groups == (4, 4) and r.swing is not None and r.floor == math.inf for r in rows)
        said = to_text(rows, 8, 1)
        assert "0 regression(s), 0 improvement(s), 58 not gated, 0 can't tell, in 58 case(s)" in said
        assert ("Not gated, 58 case(s) (their runs support no floor; a store may widen one to 1.4x bandwidth-bound "
                "and 2x latency-bound at most): ") in said and "and 48 more. compare fails on them" in said

    @pytest.mark.parametrize(("slow_runs", "verdict"), [(4, NOT_GATED), (3, "regression")])
    def test_an_87x_slowdown_behind_a_bimodal_store_is_never_unchanged(self, slow_runs, verdict):
        """The case found: 19.5 µs -> 1.7 ms behind a floor of 1,161x from a bimodal store. Half the runs slow: not
        gated; fewer: they are set aside, and the slowdown is a regression."""
        key = "create zeros on cpu"
        base = [syn.run(i, spread=QUIET, slow=100.0 if i <= slow_runs else 1.0,
                        which=lambda row: row["path"] == key) for i in (1, 5, 2, 6, 3, 7, 4, 8)]
        rows = compare(base, [syn.run(99, spread=QUIET, slow=87.0, which=lambda row: row["path"] == key)])
        slowed = [r for r in rows if r.path == key]
        assert slowed and {r.verdict for r in slowed} == {verdict}

    def test_the_command_fails_on_cases_not_gated_unless_allowed(self, tmp_path, capsys):
        from xferbench.cli import main

        base = tmp_path / "base"
        base.mkdir()
        sample = json.loads(syn.SAMPLE.read_text())
        for i in range(8):
            run = json.loads(json.dumps(sample))
            for bench in run["benchmarks"]:
                factor = (3.0 if i % 2 else 1.0) + i / 100  # two groups of distinct runs
                bench["stats"]["data"] = [t * factor for t in bench["stats"]["data"]]
                for k in ("min", "max", "mean", "median", "q1", "q3", "iqr", "stddev"):
                    bench["stats"][k] *= factor
            (base / f"run-{i}.json").write_text(json.dumps(run))
        assert main(["compare", str(base), str(syn.SAMPLE)]) == 1
        assert main(["compare", str(base), str(syn.SAMPLE), "--allow-not-gated"]) == 0
        assert "compare fails on them unless --allow-not-gated" in capsys.readouterr().out
