"""Between-run noise, and the rule that tells a change from it.

Why runs and not rounds: the rounds of one run share its machine state (clock
boost, cache, neighbours' load), so they are not independent samples; two runs of
the same code on a shared 2-core machine differ by far more than rounds within a
run do. The unit of evidence here is therefore one value per run and case (its
median round, or for a latency-bound case its fastest: ``run_times``), on a log
scale (a slowdown is a ratio). A case counts as changed only when both hold:

* **significant**: the robust z of the log ratio, ``z = (median(log new) -
  median(log base)) / se``, exceeds ``Z_BOUND``, where ``se`` comes from the case's
  between-run spread (1.4826 x MAD of log run-medians, learned from history or a
  calibration file, or a class default);
* **large**: the ratio is beyond the case's floor (a default per case class, or
  learned by ``calibrate``: a high quantile of the case's own A/A swings in the design
  it will gate, at most its class's ``FLOOR_CAP``; a case that needs more is not gated).

A case is *bandwidth-bound* when it moves a payload of at least
``BANDWIDTH_MIN_BYTES``: there the link's bandwidth, not a per-call overhead of
microseconds, decides its time (and on a quiet machine it varies less between runs;
on a busy one its runs land on whole scheduler ticks, see docs/regression-tracking.md). Everything else is
*latency-bound*. No torch here.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np
import pandas as pd

from ...contract import hardware_identity, software_environment
from ...ratios import IQR_SIGMA
from ..load.case_time import (
    BANDWIDTH_MIN_BYTES,
    DEFAULT_FLOOR,
    DEFAULT_SPREAD,
    MAD_MARGIN,
    MAD_TO_SD,
    MIN_RUNS_TO_LEARN,
    MIN_SPREAD,
    case_class,
    robust_spread,
    time_of,
)
from ..load.history import lasting_steps
from ..load.results import Results, ResultsError
from .verdicts import CANT_TELL, FASTER_WITHIN, IMPROVEMENT, NOT_GATED, REGRESSION, SLOWER_WITHIN, UNCHANGED

__all__ = ["BANDWIDTH_MIN_BYTES", "DEFAULT_FLOOR", "DEFAULT_SPREAD", "FLOOR_CAP", "MIN_RUNS_TO_LEARN", "MIN_SPREAD",
           "Z_BOUND", "JUDGED", "Case", "Evidence", "Judgement", "Noise", "VerdictRule", "calibrate",
           "current_segment", "case_budget", "decide", "case_class", "mad_margin", "smallest_change", "judge",
           "run_times", "time_of", "weigh", "robust_spread", "run_tables", "standard_error"]

#: Robust z beyond which a change is significant. 4 rather than the textbook 2-3:
#: between-run times have heavier tails than a normal, and ~60 cases are judged at once.
Z_BOUND = 4.0


def standard_error(spread: float, n_base: int, n_new: int) -> float:
    """Standard error of median(log new) - median(log base) for runs of this spread.

    The median of one or two values is their mean; from three on it is less efficient
    than a mean by pi/2 in variance (normal data), which this takes as the price of
    not letting one wild run decide.
    """
    return spread * math.sqrt(sum((1.0 if n <= 2 else math.pi / 2) / n for n in (n_base, n_new)))


@dataclass(frozen=True)
class Judgement:
    """One case judged: ratio new/base with its 95% interval, robust z, and the verdict."""

    ratio: float
    low: float
    high: float
    z: float
    floor: float
    spread: float
    verdict: str  # regression, improvement, slower/faster within the floor, can't tell, unchanged
    smallest: float = math.inf  # the smallest change (0.5: 1.5x) this comparison could have flagged


@dataclass(frozen=True)
class Evidence:
    """What the runs say of one case: the robust z of its log ratio, the ratio with its 95% interval, and the floor and
    z bound it is held to."""

    z: float
    ratio: float
    low: float
    high: float
    floor: float
    z_bound: float

    @property
    def significant(self) -> bool:
        """Past the case's noise: |z| beyond the bound (exactly at it is not yet)."""
        return abs(self.z) > self.z_bound

    @property
    def beyond(self) -> bool:
        """Past the floor, either way (exactly at it is within)."""
        return self.ratio > 1 + self.floor or self.ratio < 1 / (1 + self.floor)


@dataclass(frozen=True)
class Case:
    """What a verdict rule looks at: the evidence of a case both sides ran; None where one side alone ran it."""

    evidence: Evidence | None


#: What a rule reads: a ``Case``, or a richer one (compare's, which also knows the sides).
C = TypeVar("C", bound=Case, contravariant=True)


class VerdictRule(Generic[C]):
    """One verdict and when it is a case's (the shape of pytest-benchmark's ``RegressionCheck``, whose ``fails`` says
    why; here ``fires`` says whether). In an ordered list the first rule that fires decides (``decide``); a rule may
    say ``why`` beside its verdict."""

    verdict: str = ""  # its words, one of verdicts.TABLE's

    def fires(self, case: C) -> bool:
        raise NotImplementedError

    def why(self, case: C) -> str | None:
        return None


class Significant(VerdictRule[Case]):
    """Significant, ``slower`` or faster, and (where ``beyond``) beyond the floor: a regression or an improvement;
    else said as a change within the floor, never "unchanged" (a 1.4x slowdown at z +9 inside a 2x floor is a
    slowdown). Within the floor is asked after the floor rules, so it never takes a flag's case."""

    def __init__(self, verdict: str, slower: bool, beyond: bool) -> None:
        self.verdict, self.slower, self.beyond = verdict, slower, beyond

    def fires(self, case: Case) -> bool:
        e = case.evidence
        return e is not None and e.significant and (e.beyond or not self.beyond) and (e.z > 0) == self.slower


class NotGated(VerdictRule[Case]):
    """An infinite floor: the runs cannot support any floor (a store that swings past its bound, a calibration that
    found the case too noisy), so no change is ruled out and none flagged."""

    verdict = NOT_GATED

    def fires(self, case: Case) -> bool:
        return case.evidence is not None and math.isinf(case.evidence.floor)


class Unchanged(VerdictRule[Case]):
    """The whole 95% interval lies within the floor (a finite one: ``NotGated`` comes first)."""

    verdict = UNCHANGED

    def fires(self, case: Case) -> bool:
        e = case.evidence
        return e is not None and 1 / (1 + e.floor) <= e.low and e.high <= 1 + e.floor


class CantTell(VerdictRule[Case]):
    """Anything else the runs cannot decide: the last word."""

    verdict = CANT_TELL

    def fires(self, case: Case) -> bool:
        return True

    def why(self, case: Case) -> str | None:
        """Where the 95% interval leaves out 1, which way it points and why that is no flag: |z| within its bound, the
        stricter test each case of many is held to (a busy run's 1 MiB copy_, 4.17x faster, 1.38-12.65x, at |z| 2.53:
        a reading took a bare "can't tell" beside that interval for a contradiction)."""
        e = case.evidence
        if e is None or e.low <= 1 <= e.high:
            return None
        return f"{'slower' if e.low > 1 else 'faster'} at 95% only: |z| {abs(e.z):.2f}, within {e.z_bound:g}"


#: The verdicts of a case both sides ran, in the order they are asked: the first that fires decides.
JUDGED: list[VerdictRule[Case]] = [
    Significant(REGRESSION, slower=True, beyond=True), Significant(IMPROVEMENT, slower=False, beyond=True), NotGated(),
    Significant(SLOWER_WITHIN, slower=True, beyond=False), Significant(FASTER_WITHIN, slower=False, beyond=False),
    Unchanged(), CantTell()]


def decide(rules: Sequence[VerdictRule[C]], case: C) -> VerdictRule[C]:
    """The first of ``rules`` that fires for ``case`` (the list ends with a rule that always does)."""
    return next(rule for rule in rules if rule.fires(case))


#: The largest log change a float can raise e to (math.expm1 overflows past it).
MAX_LOG_CHANGE = math.log(sys.float_info.max)


def _visible(floor: float, se: float, z_bound: float) -> float:
    """The smallest change a comparison of standard error ``se`` can flag: past the floor and past the z bound."""
    log_change = max(math.log1p(floor), z_bound * se)
    # A calibration file may hold any finite z bound: past e^709 the change no float can hold is "infinitely large".
    return math.inf if math.isinf(floor) or log_change > MAX_LOG_CHANGE else math.expm1(log_change)


def weigh(base: Sequence[float] | np.ndarray, new: Sequence[float] | np.ndarray, spread: float, floor: float,
             z_bound: float = Z_BOUND) -> tuple[Evidence, float]:
    """What one case's runs (their log times, one value per run) say, and the smallest change they could flag."""
    b, n = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    diff = float(np.median(n) - np.median(b))
    se = standard_error(max(spread, MIN_SPREAD), len(b), len(n))
    found = Evidence(diff / se, math.exp(diff), math.exp(diff - 1.96 * se), math.exp(diff + 1.96 * se), floor, z_bound)
    return found, _visible(floor, se, z_bound)


def judge(base: Sequence[float] | np.ndarray, new: Sequence[float] | np.ndarray, spread: float, floor: float,
          z_bound: float = Z_BOUND) -> Judgement:
    """Judge one case from its runs' log times (one value per run), by the rules of ``JUDGED``.

    A change is a regression (improvement) when it is significant and beyond the floor; significant but
    within the floor it is "slower (faster), within the floor": a change past the case's noise is never
    "unchanged", whatever the floor; "unchanged" only when it is not significant and the whole 95% interval
    lies within the floor; anything else the
    runs cannot decide: "can't tell", with the smallest change this comparison could have
    flagged (a 2x slowdown seen through an interval of 0.66-6.06x is not "unchanged"). A case
    with an infinite floor (calibration found it too noisy to gate) is "not gated", never "unchanged":
    every interval lies within an infinite floor, even 0.07-12.81x.
    """
    e, smallest = weigh(base, new, spread, floor, z_bound)
    return Judgement(e.ratio, e.low, e.high, e.z, floor, spread, decide(JUDGED, Case(e)).verdict, smallest)


_COLUMNS = ["case_key", "name", "path", "nbytes", "bandwidth_gbps", "op", "data", "min_s", "median_s", "q1_s", "q3_s"]


def _run_column(run: Results) -> pd.DataFrame:
    """One run's value per case (log seconds; see ``run_times``); ResultsError for unusable rounds.

    The time is ``time_of``'s: the median round of a bandwidth-bound case, the fastest of a latency-bound one, from
    the rounds the run kept. A case without its rounds (blocks that kept them in part, a run saved without them) is
    judged from its statistics: the median or min, and the quartiles' spread (an IQR of the logs is 1.349 SDs). The
    columns are read as plain tuples: a Series per row made this loop half of what a comparison cost.
    """
    source = run.sources[0] if run.sources else "run"
    rows = []
    for case_key, name, path, nbytes, gbps, op, data, min_s, median_s, q1_s, q3_s in \
            run.frame[_COLUMNS].itertuples(index=False):
        if isinstance(data, list) and data:
            rounds = np.asarray(data, dtype=float)
            if not np.all(np.isfinite(rounds)) or not np.all(rounds > 0):
                raise ResultsError(f"{source}: benchmark {name!r} has non-finite or non-positive times")
            spread = robust_spread(np.log(rounds))
        else:
            spread = math.log(q3_s / q1_s) / IQR_SIGMA if q1_s > 0 else 0.0
        rows.append({"case_key": case_key, "name": name, "path": path, "nbytes": int(nbytes), "moves": bool(np.isfinite(gbps)),
                     "op": op, "log_median": float(np.log(time_of(nbytes, gbps, data, min_s, median_s))),
                     "round_spread": spread})
    return pd.DataFrame(rows).set_index("case_key")


def run_times(runs: Sequence[Results]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(cases x runs table of each run's log time per case, per-case path/nbytes/class); NaN where a run lacks a case.

    A run's time for a bandwidth-bound case is its median round; for a latency-bound
    case it is its *fastest* round. A busy neighbour only ever adds time, and a
    microsecond call's uncontended cost is what is left when it did not (Chen & Revels,
    "Robust benchmarking in noisy environments", 2016). Measured over 17 A/A quick runs
    on our 2-core CI machine under load: the between-run spread of no-ops, creation and
    module_to fell from 0.4-1.6 (median round) to 0.01-0.03 (fastest). A round of a
    large copy is long enough to be contended throughout, so its median is kept.
    """
    return run_tables(runs)[:2]


def run_tables(runs: Sequence[Results]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``run_times``'s two tables and a third, cases x runs: the spread of each run's own rounds (1.4826 x MAD of
    their logs; its per-case meta also names the op). Where one run a side is all there is, two runs cannot be
    taken to differ by less noise than each one's own rounds show."""
    columns = [_run_column(run) for run in runs]
    table = pd.concat([c["log_median"].rename(i) for i, c in enumerate(columns)], axis=1)
    spreads = pd.concat([c["round_spread"].rename(i) for i, c in enumerate(columns)], axis=1)
    meta = pd.concat([c[["path", "nbytes", "moves", "op", "name"]] for c in columns])
    meta = meta[~meta.index.duplicated(keep="last")].reindex(table.index)
    meta["class"] = [case_class(int(n), bool(m)) for n, m in zip(meta["nbytes"], meta["moves"], strict=True)]
    return table, meta, spreads


@dataclass
class Noise:
    """What calibration learned on one machine; ``compare --noise`` reads it back."""

    machine: dict[str, Any]
    runs: int
    target: float
    per_side: int
    z_bound: float
    floors: dict[str, float]  # by case class
    # case_key -> path, nbytes, class, spread, floor, smallest_change
    cases: dict[str, dict[str, Any]] = field(default_factory=dict)
    false_alarm_rate: dict[str, float] = field(default_factory=dict)  # by class, at the floors chosen
    confirmed: bool = False  # floors assume a flag counts only when fresh runs reproduce it (compare --confirm)
    note: str = ""  # where and under what load the A/A runs were made

    def spread(self, key: str, cls: str) -> float:
        case = self.cases.get(key)
        return float(case["spread"]) if case else DEFAULT_SPREAD[cls]

    def floor(self, key: str, cls: str) -> float:
        case = self.cases.get(key)
        return float(case["floor"]) if case and "floor" in case else self.floors[cls]

    def to_json(self) -> str:
        """Strict JSON (``JSON.parse`` refuses ``Infinity``): an infinite floor (a case not gated) is written null."""
        data = asdict(self)
        data["floors"] = _infinite(data["floors"], math.inf, None)
        data["cases"] = {key: _infinite(case, math.inf, None) for key, case in data["cases"].items()}
        return json.dumps({"xferbench_noise": 1, **data}, indent=1, sort_keys=True, allow_nan=False)

    @classmethod
    def from_json(cls, text: str, source: str) -> Noise:
        """Read a noise file back: null floors are infinite, and ``Infinity`` (files written before) still reads."""
        try:
            data = json.loads(text)
            version = data.pop("xferbench_noise")
            if type(version) is not int or version != 1:
                raise ValueError
            if isinstance(data.get("floors"), dict):
                data["floors"] = _infinite(data["floors"], None, math.inf)
            if isinstance(data.get("cases"), dict):
                data["cases"] = {k: _infinite(c, None, math.inf) if isinstance(c, dict) else c for k, c in data["cases"].items()}
            noise = cls(**data)
        except (RecursionError, ValueError, KeyError, TypeError, AttributeError):
            raise ResultsError(f"{source}: not a noise file written by xferbench calibrate") from None
        if problem := noise._problem():  # a NaN z bound or a negative floor would make the gate silently never, or always, fire
            raise ResultsError(f"{source}: not a usable noise file ({problem}); run xferbench calibrate again")
        return noise

    def _problem(self) -> str | None:
        """The first field read back from a file that no calibration writes, or None."""
        def positive(value: Any, infinite: bool = False) -> bool:
            return type(value) in (int, float) and value > 0 and (infinite or math.isfinite(value))

        checks = [
            ("machine", isinstance(self.machine, dict)),
            ("runs", type(self.runs) is int and self.runs >= 1),
            ("target", positive(self.target) and self.target < 1),
            ("per_side", type(self.per_side) is int and self.per_side >= 1),
            ("z_bound", positive(self.z_bound)),
            ("floors", isinstance(self.floors, dict) and all(positive(self.floors.get(c), True) for c in DEFAULT_FLOOR)),
            ("cases", isinstance(self.cases, dict) and all(
                isinstance(c, dict) and type(c.get("spread")) in (int, float) and 0 <= c["spread"] < math.inf
                and ("floor" not in c or positive(c["floor"], True)) for c in self.cases.values())),
            ("false_alarm_rate", isinstance(self.false_alarm_rate, dict)),
            ("confirmed", type(self.confirmed) is bool),
            ("note", isinstance(self.note, str)),
        ]
        return next((f"field {name!r}" for name, ok in checks if not ok), None)


#: Fields of a noise file that may be infinite (a case not gated), written as null.
_MAY_BE_INFINITE = ("floor", "smallest_change", "bandwidth", "latency")


def _infinite(record: dict[str, Any], was: float | None, becomes: float | None) -> dict[str, Any]:
    """``record`` with its may-be-infinite fields that are ``was`` (inf, or None) made ``becomes``."""
    def same(value: Any) -> bool:
        return value is None if was is None else (type(value) is float and value == was)

    return {k: becomes if k in _MAY_BE_INFINITE and same(v) else v for k, v in record.items()}


#: Floors calibrate tries, smallest first: 5% up to 10x, then infinity ("not gated").
FLOOR_GRID = (0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, math.inf)

#: The largest floor calibration gives a case, by class. A bandwidth-bound case must stay able
#: to show a 1.5x slowdown (a 40% floor) and a latency-bound one a 2x slowdown; a case whose
#: A/A swings need more than its cap is *not gated* on this machine (shown so), rather than
#: gated at a floor no real regression could pass (the 1x-10x floors a max over 400 draws
#: once gave every bandwidth-bound case on a busy CI machine).
FLOOR_CAP = {"bandwidth": 0.4, "latency": 1.0}


def _smallest_floor(swings: np.ndarray, budget: float) -> tuple[float, float]:
    """The smallest floor on the grid that at most ``budget`` of the A/A swings exceed, with the rate there."""
    rates = ((floor, float(np.mean(swings > math.log1p(floor)))) for floor in FLOOR_GRID[:-1])
    return next(((floor, rate) for floor, rate in rates if rate <= budget),
                (math.inf, 0.0))  # nothing exceeds an infinite floor: the case is not gated


def mad_margin(runs: int) -> float:
    """A spread learned as the MAD of ``runs`` runs, taken at the upper end of its own uncertainty.

    The MAD's relative standard error is about 1.17 / sqrt(n): of ~60 cases calibrated on a
    dozen runs, some are always quiet by luck, and their floors and z would be too tight
    (seen on a synthetic machine judged at a z bound of 2: 7 of 30 confirmed A/A failures,
    all on such cases). compare takes a spread learned from history with the same margin.
    """
    return 1.0 + MAD_MARGIN / math.sqrt(runs) if runs > 0 else 1.0


def smallest_change(floor: float, spread: float, per_side: int, z_bound: float = Z_BOUND) -> float:
    """The smallest slowdown (0.5: 1.5x) a comparison of ``per_side`` runs a side can flag: past the floor
    and past the z bound (infinity for a case that is not gated)."""
    return _visible(floor, standard_error(max(spread, MIN_SPREAD), per_side, per_side), z_bound)


def case_budget(target: float, cases: int, confirmed: bool) -> float:
    """The A/A flag rate one case may have so that a comparison of ``cases`` stays under ``target``.

    The family's target shared out evenly (Bonferroni); when a flag counts only once it is
    reproduced on fresh runs (``compare --confirm``, as CI does), a case must be flagged twice
    by independent comparisons, rate r**2, so each comparison may flag it at sqrt(target / cases).
    """
    share = target / max(cases, 1)
    return math.sqrt(share) if confirmed else share


def _aa_swings(values: np.ndarray, per_side: int, draws: int, z_bound: float, seed: int) -> np.ndarray:
    """swing[d, c]: in A/A draw d, case c's |log ratio| if it was past the z bound, else 0.

    Each draw compares ``per_side`` random runs with ``per_side`` others and judges them with
    a spread learned from the runs it does not use (so the rate is not flattered by judging
    runs against their own noise).
    """
    rng = np.random.default_rng(seed)
    swing = np.zeros((draws, values.shape[0]))
    for d in range(draws):
        order = rng.permutation(values.shape[1])
        base, new, rest = order[:per_side], order[per_side:2 * per_side], order[2 * per_side:]
        rest_values = values[:, rest]
        spread = np.maximum(MAD_TO_SD * np.median(np.abs(rest_values - np.median(rest_values, axis=1)[:, None]), axis=1)
                            * mad_margin(rest.size), MIN_SPREAD)
        diff = np.median(values[:, new], axis=1) - np.median(values[:, base], axis=1)
        z = diff / (spread * standard_error(1.0, per_side, per_side))
        swing[d] = np.where(np.abs(z) > z_bound, np.abs(diff), 0.0)
    return swing


def calibrate(runs: Sequence[Results], target: float = 0.05, per_side: int = 1, draws: int = 1000,
              seed: int = 0, confirmed: bool = True, z_bound: float = Z_BOUND) -> Noise:
    """Learn per-case spread and floors, and per-class floors, from A/A runs (the same code, run after run).

    Over ``draws`` random A/A comparisons of ``per_side`` runs against ``per_side`` others
    (``_aa_swings``), a case's floor is the smallest on ``FLOOR_GRID`` that its swings exceed
    in at most ``case_budget`` of the draws: a high quantile of its own A/A swings, robust to
    a few wild runs (a maximum over the draws is not), and bounded by the class's
    ``FLOOR_CAP``: beyond it the case is not gated (infinity). A class's floor, for cases the
    calibration did not see, is the same quantile of all its cases' swings pooled, at most
    the cap (a new case is gated, conservatively, rather than silently not).
    ``false_alarm_rate`` is, per class, the estimated rate of A/A comparisons that fail at
    the floors chosen: the share of draws that flagged any case of the class, or,
    ``confirmed``, the chance that some case is flagged by two independent comparisons.
    """
    if len(runs) < max(MIN_RUNS_TO_LEARN, 2 * per_side + 2):
        raise ValueError(f"calibration needs at least {max(MIN_RUNS_TO_LEARN, 2 * per_side + 2)} A/A runs, got {len(runs)}")
    table, meta = run_times(runs)
    table = table.dropna()
    meta = meta.loc[table.index]
    values = table.to_numpy()
    classes = meta["class"].to_numpy()
    swing = _aa_swings(values, per_side, draws, z_bound, seed)
    budget = case_budget(target, len(classes), confirmed)

    found = [_smallest_floor(swing[:, c], budget)[0] for c in range(len(classes))]
    case_floors = [floor if floor <= FLOOR_CAP[str(cls)] else math.inf for floor, cls in zip(found, classes, strict=True)]
    floors, rates = {}, {}
    for cls in ("bandwidth", "latency"):
        mine = classes == cls
        pooled = _smallest_floor(swing[:, mine].ravel(), budget)[0] if mine.any() else math.inf
        floors[cls] = min(pooled, FLOOR_CAP[cls])
        flags = swing[:, mine] > np.log1p(np.asarray(case_floors, dtype=float)[mine])
        if confirmed:  # flagged in two independent comparisons: each case at its own rate, twice
            rates[cls] = 1.0 - float(np.prod(1.0 - flags.mean(axis=0) ** 2))
        else:
            rates[cls] = float(np.mean(np.any(flags, axis=1))) if mine.any() else 0.0
    spreads = [max(robust_spread(row) * mad_margin(values.shape[1]), MIN_SPREAD) for row in values]
    cases = {key: {"path": str(meta.at[key, "path"]), "nbytes": int(meta.at[key, "nbytes"]),
                   "class": str(meta.at[key, "class"]), "spread": round(s, 5), "floor": f,
                   "smallest_change": round(smallest_change(f, s, per_side, z_bound), 3)}
             for key, s, f in zip(table.index, spreads, case_floors, strict=True)}
    machine = runs[-1].machine_info
    # The hardware must match where the file is used; the software is kept to say when it changed since.
    return Noise({**hardware_identity(machine), **software_environment(machine)}, len(runs), target, per_side, z_bound,
                 floors, cases, rates, confirmed)


# --- lasting steps the gate accepts ------------------------------------------------------------------------------

def current_segment(log_times: np.ndarray, spread: float, floor: float, z_bound: float = Z_BOUND,
                    busy: Sequence[bool] | None = None) -> int:
    """Where the case's current level starts: after its last lasting step that the gate would flag (0 if none).

    The step's runs before and after are judged (``judge``) with the spread of the runs about their own
    levels (the MAD's margin for their number), not below ``spread`` (the case's assumed or calibrated spread)
    while either side has fewer than ``MIN_RUNS_TO_LEARN`` runs; a step that rests on that assumed spread while
    a run of it was on a busy machine (``busy``, one flag per value) is not accepted, as compare calls such a
    flag "can't tell"; nor is a new level that one of its own runs disagrees with (past the floor and the z bound)."""
    x = np.asarray(log_times, dtype=float)
    flags = np.zeros(x.size, dtype=bool) if busy is None else np.asarray(busy, dtype=bool)
    edges = [0, *lasting_steps(x, spread, floor), x.size]
    for i in range(len(edges) - 2, 0, -1):
        before, after = x[edges[i - 1]:edges[i]], x[edges[i]:edges[i + 1]]
        if _flagged(before, after, spread, floor, z_bound, bool(flags[edges[i - 1]:edges[i + 1]].any())):
            return edges[i]
    return 0


def _flagged(before: np.ndarray, after: np.ndarray, spread: float, floor: float, z_bound: float, busy: bool) -> bool:
    """Whether the gate would flag ``after`` against ``before`` (see ``current_segment``)."""
    residuals = np.concatenate([before - np.median(before), after - np.median(after)])
    learned = max(robust_spread(residuals) * mad_margin(residuals.size), MIN_SPREAD)
    assumed = min(before.size, after.size) < MIN_RUNS_TO_LEARN
    if assumed and busy:
        return False
    # A level holds only when every run of it does: two runs pushed 10x off beside one honest run are no level
    # (their median is), however far it moved from the runs before.
    if np.any(np.abs(after - np.median(after)) > max(math.log1p(floor), z_bound * max(learned, spread))):
        return False
    verdict = judge(before, after, max(learned, spread) if assumed else learned, floor, z_bound).verdict
    return verdict in (REGRESSION, IMPROVEMENT)
