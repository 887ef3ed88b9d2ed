"""Every comparison of two cases of one run: A's time over B's, with that comparison's own interval.

Two ways to an interval, chosen by how the two cases were measured (docs/design.md, "Verdicts"):

- **paired**: both measured in K interleaved blocks (block k of A next to block k of B in time). The per-block log
  ratios give the standard error (their standard deviation over the square root of K) and Student's t with K - 1
  degrees of freedom: drift that moves the two blocks of a pair alike cancels, so what is left is the comparison's
  own noise, and a machine that drifts faster than a block shows up as a wide interval.
- **rounds**: otherwise (one piece each, or runs recorded before blocks). Each median's standard error comes from
  its rounds: distribution-free where the rounds are kept (``order_se``: the order statistics that hold the median
  with 95% confidence, so a few wild rounds of a short case widen it), else from the IQR (``log_se``: 1.2533 sigma /
  sqrt(n)); the drift between the two cases, which the rounds cannot see, comes from the run's own evidence of that
  regime (``Drift``: same-code pairs and reference blocks).
  A run with no such evidence at all cannot bound its drift: its unpaired comparisons are ``unjudged``.

The interval is ``value x exp(+-t se)`` around the figure (paired: the geometric mean of the block ratios; rounds: the
ratio of the two medians the page prints), resolved when it excludes 1; "could see" is ``exp(t se)``, the smallest
ratio these data would tell from 1. Plain numbers in, plain numbers out: the analysis side, the families' findings and
the trace pricer share it. No torch, no pandas.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from .units import format_seconds

__all__ = ["CONFIDENCE", "IQR_SIGMA", "Drift", "Ratio", "Split", "log_se", "median_span", "order_bounds", "order_se", "paired",
           "split_in_time", "unpaired"]

#: Two-sided coverage of every interval.
CONFIDENCE = 0.95
#: The normal quantile of that coverage (1.96).
_Z = NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)
#: The standard error of a median over that of a mean, for normal rounds (sqrt(pi / 2)).
_MEDIAN_SE = math.sqrt(math.pi / 2)
#: An interquartile range over the standard deviation, for normal rounds.
IQR_SIGMA = 1.349


@dataclass(frozen=True)
class Drift:
    """How far the run moves by itself between two cases measured apart: the root mean square of log ratios that
    should be 1 (same-code pairs, a reference's blocks), over ``df`` such observations; 0 with no evidence."""

    sd: float = 0.0
    df: int = 0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.sd) and self.sd >= 0 and self.df >= 0):
            raise ValueError(f"drift needs a finite sd >= 0 and df >= 0, got {self.sd!r}, {self.df!r}")


#: The comparisons a run cannot judge, and why: unpaired in a run with no evidence of its drift, or a side whose rounds
#: waited for the CPU (analyze/load/blocks.py: on the scheduler's ticks, or rounds of many calls far off their fastest).
UNJUDGED = {"unjudged": "the run repeated no case to measure its drift",
            "ticks": "one side's rounds waited for the CPU",
            "waited": "the faster side's rounds waited for the CPU, and the slower side's too"}


#: A ratio this close to 1 is the medians' floating-point rounding, never a difference: a cost model's two equal
#: figures, summed in another order, come out 3.6e-13 apart (the simulated machine's pinned d2h copies).
ROUNDING = 1e-9


@dataclass(frozen=True)
class Ratio:
    """A's median time over B's, with its interval: "A is value x B (low-high)"."""

    value: float
    low: float
    high: float
    #: "paired" (per-block ratios of interleaved blocks), "rounds" (unpaired: order drift not controlled, allowed for
    #: by the run's evidence), or one of ``UNJUDGED``'s, never resolved.
    basis: str
    #: Blocks (paired), or the fewer rounds of the two sides (rounds).
    n: int
    #: Where the interval cannot size it but interleaved rounds order it (analyze/drift.py ``rounds_apart``): the
    #: blocks, the slower side's fastest round and the faster side's slowest (seconds); None elsewhere.
    apart: tuple[int, float, float] | None = None

    @property
    def resolved(self) -> bool:
        """Whether the interval excludes 1 by more than ``ROUNDING``: A and B differ, in the direction of ``value``."""
        return self.low > 1.0 + ROUNDING or self.high < 1.0 - ROUNDING

    @property
    def same(self) -> bool:
        """Whether the two took the same time: judged, unresolved, its interval within ±0.5% (``could_see`` prints as
        1.00×; a cost model's figures, alike by design)."""
        return self.judged and not self.resolved and self.could_see < 1.005

    @property
    def judged(self) -> bool:
        """Whether the run could judge it at all (``UNJUDGED``: why not)."""
        return self.basis not in UNJUDGED

    @property
    def could_see(self) -> float:
        """The smallest ratio (at least 1) these data would tell from 1: the interval's half-width as a factor."""
        return math.sqrt(self.high / self.low) if self.low > 0 else math.inf

    @property
    def paired(self) -> bool:
        return self.basis == "paired"

    def text(self) -> str:
        """``1.4× (1.28-1.53)``, ``5.47×`` where the interval rounds to the figure; ``can't tell (could see ≥ 1.15×)``
        where unresolved, ``the same`` where that interval lies within ±0.5% (``could_see`` prints as 1.00×)."""
        if not self.judged:  # a ceiling the slower side's wait leaves (``ticks``), said with it
            bound = f"; {self.figures()}" if self.basis == "ticks" and (self.low > 0 or math.isfinite(self.high)) else ""
            return f"can't tell ({UNJUDGED[self.basis]}{bound})"
        open_end = math.isinf(self.high) or self.low == 0  # analyze/view.py: the faster side's waits only add to it
        if not self.resolved:
            return ("the same" if self.same else f"can't tell ({UNJUDGED['ticks']}; {self.figures()})" if open_end else
                    f"can't tell (could see ≥ {self.could_see:.2f}×)")
        if open_end:
            return f"{self.figures()} (its faster side waited for the CPU)"
        low, value, high = _factor(self.low), _factor(self.value), _factor(self.high)
        return f"{value}×" if low == value == high else f"{value}× ({low}-{high})"

    def order(self, a: str, b: str) -> str:
        """``every round of the code before took longer than every round of the code after, in 6 interleaved blocks
        (quickest 51.3 ms against slowest 23.9 ms); how much, ``, of the sides ``a`` and ``b`` name: the order ``apart`` records,
        else ""."""
        if self.apart is None:
            return ""
        blocks, slow, fast = self.apart
        slower, faster = (a, b) if self.value > 1 else (b, a)
        return (f"every round {slower} took longer than every round {faster}, in {blocks} interleaved blocks "
                f"(quickest {format_seconds(slow)} against slowest {format_seconds(fast)}); how much, ")

    def figures(self) -> str:
        """``5× (0.165-152)``, resolved or not, for a sentence that says which; an open end (``text``) as its bound."""
        if math.isinf(self.high) or self.low == 0:
            return f"at least {_factor(self.low)}×" if math.isinf(self.high) else f"at most {_factor(self.high)}×"
        return f"{self.value:.3g}× ({self.low:.3g}-{self.high:.3g})"

    def over(self, other: Ratio) -> Ratio:
        """This ratio over an independent ``other`` (a growth against another growth): the log half-widths add in
        quadrature; rounds-based unless both are paired."""
        value = self.value / other.value
        if not (self.judged and other.judged):
            return Ratio(value, 0.0, math.inf, other.basis if self.judged else self.basis, min(self.n, other.n))
        width = math.hypot(math.log(self.high / self.value), math.log(other.high / other.value))
        spread = math.exp(min(width, 700.0))
        basis = "paired" if self.paired and other.paired else "rounds"
        return Ratio(value, value / spread, value * spread, basis, min(self.n, other.n))

    def faster(self) -> Ratio:
        """The same comparison the other way round (B over A), so that a sentence can say "k times faster"."""
        return Ratio(1 / self.value, 1 / self.high, 1 / self.low if self.low > 0 else math.inf, self.basis, self.n, self.apart)


@dataclass(frozen=True, eq=False)
class Split:
    """One case's rounds, in the order they ran, parted after a round into two runs that lie apart, every round of one
    slower than every round of the other (``split_in_time``): the machine changed as the case ran, at one size."""

    before: np.ndarray
    after: np.ndarray

    @property
    def ratio(self) -> float:
        """The slower run's median over the faster's."""
        a, b = float(np.median(self.before)), float(np.median(self.after))
        return max(a, b) / min(a, b)


def split_in_time(times: Sequence[float]) -> Split | None:
    """Where the rounds part so (the H200's module move to cuda:0 at 3.82 MiB: 6 rounds at 74-79 µs a call, then 143
    at 42.6-54.6 µs), at the widest gap between the two sides; else None. Were the rounds in no order, a split that clean
    after round k comes by chance with odds at most 2(n-1)/C(n, k), either way at any k: kept only under 5% (the CPU
    sample's send_recv of 1 MiB: clean after rounds 17 and 18 of 20, kept at 17, 0.033, not at the wider 18, 0.2)."""
    rounds = np.asarray(times, dtype=float)
    n = len(rounds)
    # two rounds at least to part (the chance rule keeps none under 11); a round of no time has no ratio to another
    if n < 2 or not np.isfinite(rounds).all() or rounds.min() <= 0:
        return None
    ahead, behind = np.maximum.accumulate, np.minimum.accumulate
    before_max, before_min = ahead(rounds)[:-1], behind(rounds)[:-1]
    after_max, after_min = ahead(rounds[::-1])[::-1][1:], behind(rounds[::-1])[::-1][1:]
    with np.errstate(over="ignore"):  # a hostile file's 1e300 over 1e-300: an infinite gap
        gaps = np.maximum(before_min / after_max, after_min / before_max)
    # every clean split whose odds pass counts (the bound holds at any k); the widest gap among them places it
    clean = [k for k in np.flatnonzero(gaps > 1) + 1 if 2 * (n - 1) / math.comb(n, int(k)) < 0.05]
    k = int(max(clean, key=lambda k: gaps[k - 1])) if clean else 0
    return Split(rounds[:k], rounds[k:]) if k else None


def _factor(value: float) -> str:
    """Three figures, more where three would round a bound that is not 1 to 1 (1.0007 is not "1")."""
    if value >= 100:
        return f"{value:,.0f}"
    digits = 3
    while f"{value:.{digits}g}" == "1" and value != 1 and digits < 6:
        digits += 1
    return f"{value:.{digits}g}"


def log_se(median: float, iqr: float, rounds: int) -> float:
    """The standard error of log(median) of ``rounds`` rounds with that IQR (0 for one round or no spread)."""
    if median <= 0 or rounds < 2 or not iqr > 0:
        return 0.0
    return _MEDIAN_SE * (iqr / IQR_SIGMA) / median / math.sqrt(rounds)


def order_bounds(rounds: Sequence[float]) -> tuple[float, float]:
    """The k-th lowest and k-th highest round, which hold the median at ``CONFIDENCE`` whatever the rounds'
    distribution (binomial(n, 1/2) tails; min and max where n is too small to reach it)."""
    x = np.sort(np.asarray(rounds, dtype=float))
    k = min(max(_order_rank(x.size), 1), (x.size + 1) // 2)
    return float(x[k - 1]), float(x[x.size - k])


# The three quantiles below are scipy's (special.bdtr, stdtrit), written out: importing scipy.special costs a report
# a quarter of a second of CPU, more than all the comparisons it judges. tests/test_ratios.py holds them to scipy's.
@functools.lru_cache(maxsize=1024)
def _order_rank(n: int) -> int:
    """binom.ppf((1 - CONFIDENCE) / 2, n, 1/2): the least k whose binomial(n, 1/2) CDF reaches the lower tail."""
    j = np.arange(1, n + 1)
    log_comb = np.concatenate(([0.0], np.cumsum(np.log((n - j + 1) / j))))  # log C(n, k), k = 0..n
    return int(np.searchsorted(np.cumsum(np.exp(log_comb - n * math.log(2))), (1 - CONFIDENCE) / 2))


def _t_cdf(t: float, df: int) -> float:
    """Student's t CDF at ``t`` for a whole number of degrees of freedom, in closed form (Abramowitz and Stegun
    26.7.3-4: a finite series in cos(theta), theta = atan(t / sqrt(df)))."""
    theta = math.atan(t / math.sqrt(df))
    c2, term, total, odd = math.cos(theta) ** 2, 1.0, 1.0, df % 2
    for k in range(1, df // 2):  # (df - 2) / 2 terms after the first where df is even, (df - 3) / 2 where odd
        term *= c2 * ((2 * k) / (2 * k + 1) if odd else (2 * k - 1) / (2 * k))
        total += term
    return 0.5 + ((theta + (math.sin(theta) * math.cos(theta) * total if df > 1 else 0.0)) / math.pi if odd
                  else 0.5 * math.sin(theta) * total)


@functools.lru_cache(maxsize=1024)
def _t_quantile(df: int) -> float:
    """Student's t quantile at ``0.5 + CONFIDENCE / 2`` (stdtrit): the Cornish-Fisher series in 1 / df (A&S 26.7.5),
    within 1e-14 of it from 500 degrees of freedom, polished below that by Newton steps on ``_t_cdf`` (the CDF is
    concave there, so they climb to the root from below)."""
    z = _Z
    x = z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2) + (
        3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3) + (
        79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / (92160 * df**4)
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    for _ in range(100 if df < 500 else 0):
        density = math.exp(log_norm - (df + 1) / 2 * math.log1p(x * x / df))
        x += (step := (0.5 + CONFIDENCE / 2 - _t_cdf(x, df)) / density)
        if abs(step) <= 1e-15 * x:
            break
    return x


def order_se(rounds: Sequence[float]) -> float:
    """The standard error of log(median) from the rounds themselves: ``order_bounds``' log ratio spans two normal
    quantiles. 0 for fewer than two rounds or a zero round."""
    if len(rounds) < 2 or min(rounds) <= 0:
        return 0.0
    low, high = order_bounds(rounds)
    return math.log(high / low) / (2 * _Z)


def median_span(median: float, se: float) -> tuple[float, float]:
    """The interval of one median whose log has standard error ``se`` (``order_se``, ``log_se``), at ``CONFIDENCE``."""
    spread = math.exp(_Z * se)
    return median / spread, median * spread


def _interval(value: float, se: float, df: float, basis: str, n: int) -> Ratio:
    t = _t_quantile(int(df)) if math.isfinite(df) else _Z
    spread = math.exp(min(t * se, 700.0))
    return Ratio(value, value / spread, value * spread, basis, n)


def paired(a_blocks: Sequence[float], b_blocks: Sequence[float]) -> Ratio:
    """A over B from K >= 2 pairs of block medians (block k of each measured next to each other): the geometric mean
    of the block ratios and Student's t interval around it. Never the pooled medians' ratio: where a side's rounds
    have several modes, that can lie beyond most block ratios (1.19x over blocks whose mean is 1.04x)."""
    a, b = np.asarray(a_blocks, dtype=float), np.asarray(b_blocks, dtype=float)
    if a.shape != b.shape or a.size < 2 or not (np.all(a > 0) and np.all(b > 0)):
        raise ValueError(f"paired blocks need two equal lists of >= 2 positive times, got {a.size} and {b.size}")
    logs = np.log(a / b)
    se = float(np.std(logs, ddof=1)) / math.sqrt(a.size)
    return _interval(float(np.exp(np.mean(logs))), se, a.size - 1, "paired", int(a.size))


def unpaired(a: tuple[float, float, int], b: tuple[float, float, int], drift: Drift) -> Ratio:
    """A over B from each side's (median, standard error of its log, rounds) and the drift the run showed in their
    regime: the standard errors and the drift's add in quadrature, with the drift evidence's degrees of freedom (the
    normal's where that evidence showed none beyond noise); ``unjudged`` without any evidence (``drift.df`` 0)."""
    (ma, sa, na), (mb, sb, nb) = a, b
    if not (ma > 0 and mb > 0):
        raise ValueError(f"a ratio needs two positive medians, got {ma!r} and {mb!r}")
    if drift.df == 0:
        return Ratio(ma / mb, 0.0, math.inf, "unjudged", int(min(na, nb)))
    se = math.sqrt(sa ** 2 + sb ** 2 + drift.sd ** 2)
    df = drift.df if drift.sd > 0 and drift.df > 0 else math.inf
    return _interval(ma / mb, se, df, "rounds", int(min(na, nb)))
