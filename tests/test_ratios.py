"""Every comparison's own interval (xferbench.ratios): exact values on hand-fed numbers."""

import math
import warnings

import numpy as np
import pytest
from scipy import special, stats

from xferbench import ratios
from xferbench.ratios import Drift, Ratio, log_se, median_span, order_bounds, order_se, paired, unpaired


def test_paired_blocks_give_a_t_interval_of_the_log_ratios_around_their_mean():
    a, b = [1.10, 1.21, 1.32, 1.10], [1.0, 1.1, 1.2, 1.0]  # every block exactly 1.1x
    ratio = paired(a, b)
    assert (ratio.value, ratio.low, ratio.high, ratio.basis, ratio.n) == pytest.approx((1.1, 1.1, 1.1, "paired", 4))
    logs = np.log([1.2, 1.0, 1.1, 1.3, 0.9, 1.05])
    found = paired(np.exp(logs), np.ones(6))
    half = stats.t.ppf(0.975, 5) * np.std(logs, ddof=1) / math.sqrt(6)
    assert found.value == pytest.approx(math.exp(logs.mean()))
    assert (found.low, found.high) == pytest.approx((found.value / math.exp(half), found.value * math.exp(half)))
    assert found.resolved is False and found.could_see == pytest.approx(math.exp(half))


@pytest.mark.parametrize("a, b", [([1.0], [1.0]), ([1.0, 2.0], [1.0]), ([1.0, 0.0], [1.0, 1.0])])
def test_paired_refuses_fewer_than_two_blocks_or_a_zero(a, b):
    with pytest.raises(ValueError, match="paired blocks need"):
        paired(a, b)


def test_the_standard_error_of_a_median_comes_from_its_iqr_and_rounds():
    assert log_se(2.0, 1.349, 100) == pytest.approx(math.sqrt(math.pi / 2) * 1 / 2.0 / 10)
    assert log_se(2.0, 0.0, 100) == 0.0 and log_se(2.0, 1.0, 1) == 0.0 and log_se(0.0, 1.0, 9) == 0.0
    low, high = median_span(2.0, log_se(2.0, 1.349, 100))
    assert (low * high, high / 2.0) == pytest.approx((4.0, math.exp(stats.norm.ppf(0.975) * log_se(2.0, 1.349, 100))))


def test_the_order_statistics_hold_the_median_without_a_distribution():
    """31 rounds 1..31: the 10th and 22nd hold the median at 95%; 5 rounds cannot reach it: min and max."""
    z = stats.norm.ppf(0.975)
    assert order_se(np.arange(1, 32)) == pytest.approx(math.log(22 / 10) / (2 * z))
    assert order_se([5.0, 1, 3, 2, 4]) == pytest.approx(math.log(5 / 1) / (2 * z))
    assert order_se([7.0]) == 0.0 and order_se([0.0, 1.0]) == 0.0


def test_unpaired_adds_the_regimes_drift_to_the_rounds():
    """Two 1 ms cases, 30 rounds each: resolved from the rounds alone; a 10% drift over 12 observations hides it."""
    a, b = (1.2e-3, log_se(1.2e-3, 0.1e-3, 30), 30), (1.0e-3, log_se(1.0e-3, 0.1e-3, 30), 30)
    quiet = unpaired(a, b, Drift(0.0, 12))
    se = math.hypot(a[1], b[1])
    assert quiet.resolved and quiet.basis == "rounds" and quiet.n == 30
    assert quiet.high / quiet.value == pytest.approx(math.exp(stats.norm.ppf(0.975) * se))  # no drift: the normal's
    drifting = unpaired(a, b, Drift(0.1, 12))
    assert not drifting.resolved
    assert drifting.high / drifting.value == pytest.approx(math.exp(stats.t.ppf(0.975, 12) * math.hypot(se, 0.1)))
    assert drifting.text() == f"can't tell (could see ≥ {drifting.could_see:.2f}×)"


def test_a_run_without_drift_evidence_judges_no_unpaired_comparison():
    never = unpaired((10.0, 0.0, 30), (1.0, 0.0, 30), Drift())
    assert never.basis == "unjudged" and not never.resolved and not never.judged
    assert never.text() == "can't tell (the run repeated no case to measure its drift)"
    assert never.faster().text() == never.text() and never.over(Ratio(2, 1.5, 2.5, "paired", 6)).basis == "unjudged"


def test_text_faster_and_over():
    ratio = Ratio(1.4, 1.2, 1.6, "paired", 6)
    assert ratio.text() == "1.4× (1.2-1.6)" and Ratio(437.0, 400.0, 480.0, "rounds", 9).text() == "437× (400-480)"
    assert ratio.faster() == Ratio(1 / 1.4, 1 / 1.6, 1 / 1.2, "paired", 6) and ratio.faster().resolved
    growth = ratio.over(Ratio(1.0, 1.0 / 1.1, 1.1, "rounds", 9))
    width = math.hypot(math.log(1.6 / 1.4), math.log(1.1))
    assert (growth.value, growth.high, growth.basis) == pytest.approx((1.4, 1.4 * math.exp(width), "rounds"))


@pytest.mark.parametrize("sd, df", [(-0.1, 3), (math.nan, 3), (0.1, -1)])
def test_drift_refuses_what_is_no_spread(sd, df):
    with pytest.raises(ValueError, match="drift needs"):
        Drift(sd, df)


# -- each rule at its edge: exact values on hand-fed numbers -------------------------------------------------------

def test_text_gives_every_bound_that_does_not_round_to_the_figure():
    """Three figures; one figure alone where both bounds round to it; more figures (at most six) where three would
    round a bound that is not 1 to "1"; no decimals from 100 up."""
    assert Ratio(5.47, 5.468, 5.472, "paired", 6).text() == "5.47×"
    assert Ratio(1.4, 1.2, 1.4001, "paired", 6).text() == "1.4× (1.2-1.4)"  # the high bound rounds to the figure
    assert Ratio(1.4, 1.3999, 1.6, "paired", 6).text() == "1.4× (1.4-1.6)"  # the low bound rounds to it
    assert Ratio(1.234, 1.1111, 1.3333, "paired", 6).text() == "1.23× (1.11-1.33)"
    assert Ratio(1.2, 1.0007, 1.4, "paired", 6).text() == "1.2× (1.001-1.4)"  # not "(1-1.4)": it excludes 1
    assert Ratio(1.2, 1.0000006, 1.4, "paired", 6).text() == "1.2× (1-1.4)"  # six figures at most
    assert Ratio(250.4, 200.0, 300.0, "rounds", 9).text() == "250× (200-300)"


def test_over_divides_the_growths_and_keeps_paired_only_where_both_are():
    a, b = Ratio(3.0, 2.0, 4.5, "paired", 6), Ratio(2.0, 1.6, 2.5, "paired", 4)
    width = math.hypot(math.log(1.5), math.log(1.25))
    growth = a.over(b)
    assert (growth.value, growth.low, growth.high, growth.basis, growth.n) == pytest.approx(
        (1.5, 1.5 / math.exp(width), 1.5 * math.exp(width), "paired", 4))
    assert a.over(Ratio(2.0, 1.6, 2.5, "rounds", 4)).basis == "rounds"
    assert Ratio(3.0, 0.0, math.inf, "unjudged", 6).over(b) == Ratio(1.5, 0.0, math.inf, "unjudged", 4)
    # either side unjudged: the quotient is, and says the unjudged side's reason
    assert b.over(Ratio(1.0, 0.0, math.inf, "ticks", 6)) == Ratio(2.0, 0.0, math.inf, "ticks", 4)


def test_faster_of_an_unresolved_ratio_keeps_both_bounds():
    assert Ratio(1.0, 0.8, 1.25, "rounds", 9).faster() == Ratio(1.0, 0.8, 1.25, "rounds", 9)


def test_an_interval_too_wide_for_a_float_is_capped_not_an_overflow():
    """A log half-width past 700 (e^709 is a float's largest) stops at e^700, either way from the figure."""
    assert Ratio(2.0, 0.0, math.inf, "rounds", 3).over(Ratio(1.0, 0.5, 2.0, "rounds", 3)).high == 2.0 * math.exp(700)
    wild = unpaired((2.0, 0.0, 30), (1.0, 0.0, 30), Drift(1000.0, 5))
    assert (wild.low, wild.high) == (2.0 / math.exp(700), 2.0 * math.exp(700))


def test_the_standard_error_of_short_fast_rounds():
    """A 1 ms median of two rounds with a 0.1 ms IQR: the formula holds below 1 s, at two rounds, below an IQR of 1."""
    assert log_se(1e-3, 0.1e-3, 2) == pytest.approx(math.sqrt(math.pi / 2) * (0.1e-3 / 1.349) / 1e-3 / math.sqrt(2))


def test_order_statistics_of_two_one_and_a_hundred_rounds():
    """100 rounds: the 40th and 61st (binomial 2.5% tail); one or two rounds: min and max."""
    assert order_bounds(np.arange(1.0, 101.0)) == (40.0, 61.0)
    assert order_bounds([7.0]) == (7.0, 7.0) and order_bounds([2.0, 1.0]) == (1.0, 2.0)
    assert order_se([2.0, 1.0]) == pytest.approx(math.log(2.0) / (2 * stats.norm.ppf(0.975)))


def test_paired_from_two_blocks_around_their_mean():
    """Two blocks are enough; the figure and the interval's centre are the block ratios' geometric mean."""
    found = paired([1.1, 1.3], [1.0, 1.0])
    centre, half = math.sqrt(1.1 * 1.3), stats.t.ppf(0.975, 1) * np.std(np.log([1.1, 1.3]), ddof=1) / math.sqrt(2)
    assert (found.value, found.low, found.high, found.n) == pytest.approx((centre, centre / math.exp(half),
                                                                           centre * math.exp(half), 2))


def test_a_busy_run_s_blocks_on_both_sides_of_one_are_no_difference():
    """tests/data/cpu-busy-host.json's 64 MiB copy_, one thread over two, block by block: three of six at or below 1.
    The pooled medians' ratio (1.19x, one side's rounds in three modes) is no paired figure: can't tell."""
    found = paired([1.101, 0.889, 1.218, 1.214, 0.862, 0.991], [1.0] * 6)
    assert found.value == pytest.approx(1.036, abs=1e-3) and not found.resolved
    assert (found.low, found.high) == pytest.approx((0.884, 1.214), abs=2e-3)


def test_paired_refuses_a_zero_block_on_either_side():
    with pytest.raises(ValueError, match="paired blocks need"):
        paired([1.0, 1.0], [1.0, 0.0])


@pytest.mark.parametrize("a, b", [(0.0, 1.0), (1.0, 0.0), (-1.0, -1.0)])
def test_unpaired_refuses_a_median_that_is_not_positive(a, b):
    with pytest.raises(ValueError, match=f"a ratio needs two positive medians, got {a!r} and {b!r}"):
        unpaired((a, 0.0, 5), (b, 0.0, 5), Drift(0.1, 3))


def test_unpaired_without_evidence_keeps_the_ratio_and_no_bound():
    assert unpaired((10.0, 0.1, 30), (2.0, 0.1, 9), Drift()) == Ratio(5.0, 0.0, math.inf, "unjudged", 9)


def test_unpaired_drift_from_one_observation_takes_t_with_one_degree_of_freedom():
    ratio = unpaired((2.0, 0.0, 30), (1.0, 0.0, 30), Drift(0.1, 1))
    assert ratio.high == pytest.approx(2.0 * math.exp(stats.t.ppf(0.975, 1) * 0.1))


def test_an_interval_within_half_a_percent_that_holds_one_reads_the_same():
    """A cost model's two times alike by design read "can't tell (could see ≥ 1.00×)": within ±0.5% they are the same;
    wider, or resolved, as before."""
    assert Ratio(1.0, 1.0, 1.0, "rounds", 5).text() == Ratio(1.0, 0.996, 1.004, "rounds", 5).text() == "the same"
    assert Ratio(1.0, 0.99, 1.01, "rounds", 5).text() == "can't tell (could see ≥ 1.01×)"
    assert Ratio(1.003, 1.001, 1.005, "rounds", 5).text() == "1.003× (1.001-1.005)"


def test_two_figures_apart_by_their_rounding_alone_are_the_same():
    """The simulated machine's pinned d2h copies: 1.231162163636 ms, one 4.4e-16 s above the rest (summed in another
    order); with the cost model's drift of 0 the interval is that one point, which is no difference."""
    value = 1 + 4.4e-16 / 1.231162163636e-3
    assert not Ratio(value, value, value, "rounds", 5).resolved and Ratio(value, value, value, "rounds", 5).text() == "the same"
    assert not Ratio(1 / value, 1 / value, 1 / value, "rounds", 5).resolved
    assert Ratio(1 + 2e-9, 1 + 2e-9, 1 + 2e-9, "rounds", 5).resolved and Ratio(1 - 2e-9, 1 - 2e-9, 1 - 2e-9, "rounds", 5).resolved


@pytest.mark.parametrize("df", [*range(1, 40), 99, 100, 439, 499, 500, 501, 1000, 10_000, 10**6, 10**9])
def test_student_t_quantile_is_scipys(df):
    """The report leaves scipy.special unimported: its t quantile is scipy's stdtrit to 1e-13 at every df."""
    assert ratios._t_quantile(df) == pytest.approx(float(special.stdtrit(df, 0.975)), rel=1e-13)


@pytest.mark.parametrize("n", [*range(0, 60), 99, 100, 1001, 100_000])
def test_order_statistic_rank_is_scipys_binomial_quantile(n):
    """The rank that holds the median is the least k whose binomial(n, 1/2) CDF reaches 2.5% (scipy's bdtr)."""
    assert ratios._order_rank(n) == int(np.searchsorted(special.bdtr(np.arange(n + 1), n, 0.5), 0.025))


def test_a_ratio_open_at_one_end_reads_as_a_bound_or_cant_tell():
    """A faster side on the scheduler's ticks leaves its ratio open at one end (analyze/view.py): resolved, it reads
    "at least" (open above) or "at most" (open below), never a figure with two ends; unresolved, "can't tell" with the
    reason, never "could see ≥ inf×". A closed interval reads as before."""
    why = "(its faster side waited for the CPU)"
    assert Ratio(5.0, 4.44, math.inf, "paired", 6).text() == f"at least 4.44× {why}"
    assert Ratio(0.2, 0.0, 0.225, "paired", 6).text() == f"at most 0.225× {why}"
    assert Ratio(5.0, 4.44, math.inf, "paired", 6).faster().text() == f"at most 0.225× {why}"
    for unresolved, bound in ((Ratio(1.2, 0.9, math.inf, "rounds", 5), "at least 0.9×"),
                              (Ratio(0.8, 0.0, 1.1, "rounds", 5), "at most 1.1×"),
                              (Ratio(3.0, 0.0, 6.24, "ticks", 5), "at most 6.24×")):  # the slower side waited
        assert not unresolved.resolved
        assert unresolved.text() == f"can't tell (one side's rounds waited for the CPU; {bound})"
    assert Ratio(3.0, 0.0, math.inf, "ticks", 5).text() == "can't tell (one side's rounds waited for the CPU)"
    assert Ratio(5.0, 4.44, 5.6, "paired", 6).text() == "5× (4.44-5.6)"
    # the faster side on the ticks, the slower side's rounds spread too (analyze/view.py): no bound, and why
    waited = Ratio(5.0, 0.0, math.inf, "waited", 6)
    assert not waited.judged and waited.text() == ("can't tell (the faster side's rounds waited for the CPU,"
                                                   " and the slower side's too)")


def test_a_ratio_s_figures_give_both_ends_or_its_one_bound():
    """Sentences that print an unresolved ratio's figures (a module's growth, the threads' blocks) never print "inf"
    or "0" for an open end: they give the bound that holds."""
    assert Ratio(5.0, 0.165, 152.0, "paired", 6).figures() == "5× (0.165-152)"
    assert Ratio(1.4, 0.9, math.inf, "paired", 6).figures() == "at least 0.9×"
    assert Ratio(0.7, 0.0, 1.2, "rounds", 5).figures() == "at most 1.2×"


@pytest.mark.parametrize(("value", "said"), [
    (3.0, "every round A took longer than every round B, in 6 interleaved blocks (quickest 51.3 ms against slowest 23.9 ms); "
          "how much, "),
    (0.5, "every round B took longer than every round A, in 6 interleaved blocks (quickest 51.3 ms against slowest 23.9 ms); "
          "how much, "),
])
def test_an_order_names_the_slower_side_first_with_its_blocks_and_rounds(value, said):
    """The busy run's clone against copy_ at 64 MiB: no interval sizes it, yet in each of 6 interleaved blocks every
    clone round (51.3 ms at fastest) lay above every copy_ round (23.9 ms at most). The order keeps through ``faster``
    (the same comparison the other way round); a ratio without one says nothing."""
    ratio = Ratio(value, 0.0, math.inf, "ticks", 5, (6, 0.0513, 0.0239))
    assert ratio.order("A", "B") == said
    assert ratio.faster().order("B", "A") == said and ratio.faster().apart == (6, 0.0513, 0.0239)
    assert Ratio(value, 0.0, math.inf, "ticks", 5).order("A", "B") == ""


def test_a_split_in_time_is_every_round_of_one_run_beyond_every_round_of_the_other_and_no_chance():
    """The rounds part after round k, either way, at the widest gap; kept only where a split that clean comes by chance
    with odds 2(n-1)/C(n, k) under 5% (2 rounds of 8: 14/28; 3 of 15: 28/455; 3 of 17: 32/680)."""
    split = ratios.split_in_time([3.0] * 6 + [2.0, 1.0] * 10)
    assert split is not None and (len(split.before), len(split.after)) == (6, 20) and split.ratio == 2.0
    up = ratios.split_in_time([1.0] * 20 + [1.5, 2.0, 2.5])  # a step up, at its widest gap (after the 20th round)
    assert up is not None and len(up.before) == 20 and up.ratio == 2.0
    assert ratios.split_in_time([2.0] * 2 + [1.0] * 6) is None
    assert ratios.split_in_time([2.0] * 3 + [1.0] * 7) is None
    assert ratios.split_in_time([2.0] * 3 + [1.0] * 12) is None
    assert ratios.split_in_time([2.0] * 3 + [1.0] * 14) is not None
    # a round equal across the cut is no split; nor are too few rounds, a zero, NaN or infinity (none warns)
    assert ratios.split_in_time([2.0, 2.5] * 7 + [2.0] + [1.0] * 14 + [2.0]) is None
    # a clean split whose odds pass counts though a wider one's do not (after 3 of 17: 32/680; after 15, wider: 32/136)
    late = ratios.split_in_time([3.0] * 3 + [2.0] * 12 + [1.0] * 2)
    assert late is not None and len(late.before) == 3
    assert ratios.split_in_time([2.0] * 5 + [1.0] * 5) is None and ratios.split_in_time([2.0] * 5 + [1.0] * 6) is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for rounds in ([], [1.0], [2.0, 2.0, 1.0], [0.0] * 5 + [1.0] * 20, [float("nan")] * 4 + [1.0] * 20,
                       [math.inf] * 5 + [1.0] * 20):
            assert ratios.split_in_time(rounds) is None, rounds
        assert (far := ratios.split_in_time([1e-300] * 6 + [1e300] * 24)) is not None and far.ratio == math.inf
