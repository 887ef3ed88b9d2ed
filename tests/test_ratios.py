"""Every comparison's own interval (xferbench.ratios): exact values on hand-fed numbers."""

import math

import numpy as np
import pytest
from scipy import stats

from xferbench.ratios import Drift, Ratio, log_se, median_span, order_se, paired, unpaired


def test_paired_blocks_give_a_t_interval_of_the_log_ratios_around_the_medians_ratio():
    a, b = [1.10, 1.21, 1.32, 1.10], [1.0, 1.1, 1.2, 1.0]  # every block exactly 1.1x
    ratio = paired(a, b, value=1.1)
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
    assert never.text() == "can't tell (the run gives no evidence of its drift)"
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
