"""How far a run moves by itself, per regime: the margin an unpaired comparison's interval adds (xferbench.ratios).

Whatever changes while a run runs (the allocators' caches, the page cache, THP, clocks, other tenants) reads as a
difference between cases measured at different times, and the rounds of one case cannot see it. Two kinds of cases
measure it: calls that run the same PyTorch code (each family's ``same_code``: ``.cpu()`` and ``.to('cpu')``,
``.cuda(i)`` and ``.to('cuda:i')``, the cuda_vs_to scenario's forms, ``Module.to`` and ``Module.cuda``), measured apart;
and a case measured in blocks spread over the run (a paired or reference case, measure/session/blocks.py), whose blocks
are the same case at different times. Each gives log ratios that should be 0; what they hold beyond their own rounds'
noise is drift.

Drift depends on the regime: on the H200 sample, pinned copies' same-code pairs agree within 0.9% from 16 MiB up while
a pageable 16 MiB ``.to`` lies 30% from its twin. So the evidence is pooled per regime (``regime``: pageable host
memory or not, below 1 MiB or not), and a comparison takes its regimes' (the wider, where its two cases differ); a
regime without evidence takes the run's whole pool. A same-code pair measured in paired blocks is not drift evidence
(its blocks ran side by side) but the run's A/A check: its own interval should hold 1. No torch here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..families import FAMILIES
from ..ratios import Drift, log_se, median_span, order_bounds, order_se
from .load.rows import flag

__all__ = ["SAME_CODE", "Evidence", "Pair", "RunDrift", "median_bounds", "regime", "regimes_of", "run_drift", "side"]

#: Per family: the column and the values whose calls run the same code, in words for a sentence (its ``same_code``).
SAME_CODE = tuple((op, *same) for op, family in FAMILIES.items() for same in family.same_code)
#: What else must match for two rows to be one pair: the same case but for the call's spelling.
_SAME = ["run", "src", "dst", "host_memory", "non_blocking", "dtype", "nbytes"]
#: Below this payload a case is latency-bound: its drift is of another kind than a bandwidth-bound copy's.
LATENCY_BYTES = 2**20


def regime(row: pd.Series) -> tuple[str, str]:
    """(``pageable`` where the case touches host memory that is not pinned, as a user's own tensor is, or stages through
    it, ``simulated`` where a cost model timed it, else ``device``; ``latency`` below 1 MiB, else ``bandwidth``). A
    no-op of a large tensor stays ``bandwidth``: the latency regime's evidence (a 4 B copy's blocks) says nothing of how
    far a no-op's medians wander under load (206 ns at 4 B to 1 µs at 64 MiB for .cpu() in one busy run), so it would
    judge no-ops too strongly."""
    # a family's staged methods (copy_kind's blocking convert and strided) go through a pageable host buffer
    op, method = row.get("op"), row.get("method")  # each read once: a Series' get is most of a ratio's cost
    staged = (family := FAMILIES.get(str(op))) is not None and method in family.staged
    # a rank's host memory reads "rank0:cpu", a gloo collective's "all:cpu"
    host = any(str(end).split(":")[-1] == "cpu" for end in (row.get("src"), row.get("dst"))) \
        and (row.get("host_memory") != "pinned" or staged)
    # torch.empty touches no byte at any size: its blocks say nothing of how a copy's bandwidth drifts
    untouched = op == "create" and method == "empty"
    small = int(row.get("nbytes") or 0) < LATENCY_BYTES or untouched
    # a cost model's pairs drift by nothing: evidence for its own figures, never for a real row beside them
    memory = "simulated" if row.get("clock") == "simulated" else "pageable" if host else "device"
    return memory, "latency" if small else "bandwidth"


def regimes_of(frame: pd.DataFrame) -> set[tuple[str, str]]:
    """Every ``regime`` of ``frame``'s rows, read once per kind of row: the columns ``regime`` reads, and its size."""
    kinds = frame.assign(small=frame["nbytes"] < LATENCY_BYTES)
    kinds = kinds.drop_duplicates([c for c in ("op", "method", "src", "dst", "host_memory", "clock", "small") if c in kinds])
    return {regime(row) for _, row in kinds.iterrows()}


def side(row: pd.Series) -> tuple[float, float, int]:
    """(median, standard error of its log, rounds) of one side of a comparison: from the rounds where the row kept them
    (``ratios.order_se``), else from its IQR; a row without a spread (hand-fed, or a statistic alone) counts as one
    round without error."""
    median, iqr, rounds, data = row["median_s"], row.get("iqr_s"), row.get("rounds"), row.get("data")
    if isinstance(data, list) and len(data) > 1:
        return float(median), order_se(data), len(data)
    if iqr is None or rounds is None or pd.isna(iqr) or pd.isna(rounds):
        return float(median), 0.0, 1
    return float(median), log_se(float(median), float(iqr), int(rounds)), int(rounds)


def median_bounds(row: pd.Series) -> tuple[float, float]:
    """The interval of a row's median time of one call: its rounds' own order statistics (``ratios.order_bounds``),
    scaled from a round to a call, where the row kept them; else from its spread (``side``)."""
    data = row.get("data")
    if isinstance(data, list) and len(data) > 1:
        low, high = (bound * float(row["median_s"]) / float(np.median(data)) for bound in order_bounds(data))
        return low, high
    return median_span(*side(row)[:2])


def _blocks(row: pd.Series) -> np.ndarray:
    """A row's block medians where it was measured in blocks (NaN where a block is missing), else empty."""
    blocks = row.get("block_medians")
    return np.asarray(blocks, dtype=float) if isinstance(blocks, (list, tuple, np.ndarray)) else np.empty(0)


def paired_blocks(a: pd.Series, b: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """The block medians two rows of one run share by index (block k of each ran in one slot), or two empty arrays
    where they were not both measured in the same number of blocks. Where a row's blocks timed calls a round 2x or more
    apart (``mixed_iterations``), only the pairs timed alike (calls a round under 2x apart) are kept, where 2 or more
    are: the busy run's 1 MiB copy_ ran 2 blocks of 100 calls a round (15 µs) and 4 of one (12 ms), beside 64 MiB's
    six of one (12 ms), and only those four say how the same timing grew with the bytes."""
    x, y = _blocks(a), _blocks(b)
    if x.size < 2 or x.size != y.size or a.get("run") != b.get("run"):
        return np.empty(0), np.empty(0)
    both = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    if flag(a, "mixed_iterations") or flag(b, "mixed_iterations"):
        i, j = _calls(a, x.size), _calls(b, y.size)
        alike = both & (np.maximum(i, j) < 2 * np.minimum(i, j))
        both = alike if alike.sum() >= 2 else both
    return (x[both], y[both]) if both.sum() >= 2 else (np.empty(0), np.empty(0))


def rounds_order(a: pd.Series, b: pd.Series) -> tuple[float, float] | None:
    """(the slower side's fastest round, the faster side's slowest) where every round of one row lies above every round
    of the other; else None (a row that kept no rounds among them)."""
    x, y = (np.asarray(d if isinstance(d := row.get("data"), list) else [], dtype=float) for row in (a, b))
    if not (x.size and y.size and (x.min() > y.max() or y.min() > x.max())):
        return None
    return float(max(x.min(), y.min())), float(min(x.max(), y.max()))


def rounds_apart(a: pd.Series, b: pd.Series) -> tuple[int, float, float] | None:
    """(blocks, the slower side's fastest round, the faster side's slowest) where every round of one row lies above
    every round of the other (``rounds_order``) and both were measured in interleaved blocks (``paired_blocks``); else
    None. A wait only adds, and the blocks shared their slots, so the machine's waits cannot order them so: the order is
    the calls' own (the busy, loaded and quick runs' clone against copy_, a second and a third reading), though no
    interval sizes it."""
    blocks = paired_blocks(a, b)[0].size
    return (blocks, *order) if blocks and (order := rounds_order(a, b)) is not None else None


def _calls(row: pd.Series, size: int) -> np.ndarray:
    """A row's calls a round per block (``block_iterations``); NaN where not recorded."""
    calls = row.get("block_iterations")
    return np.asarray(calls, dtype=float) if isinstance(calls, (list, tuple, np.ndarray)) else np.full(size, np.nan)


@dataclass(frozen=True)
class Pair:
    """Calls of one run and size that run the same code: the slowest and the fastest of them."""

    op: str
    calls: str
    nbytes: int
    run: str
    slow: pd.Series
    fast: pd.Series

    @property
    def spread(self) -> float:
        """Slower median over faster, minus one."""
        return float(self.slow["median_s"]) / float(self.fast["median_s"]) - 1

    @property
    def paired(self) -> bool:
        """Measured in paired blocks: the run's A/A check, not drift evidence."""
        return paired_blocks(self.slow, self.fast)[0].size >= 2

    @property
    def key(self) -> str:
        return f"{self.op} {self.calls} {self.run} {self.nbytes}"


@dataclass(frozen=True)
class Evidence:
    """One source of drift evidence: its regime, squared log ratios beyond noise (summed) and degrees of freedom."""

    key: str
    regime: tuple[str, str]
    square: float
    df: int


def same_code_pairs(frame: pd.DataFrame) -> tuple[Pair, ...]:
    """Every same-code pair the rows hold, each within one run and size, largest spread first."""
    pairs = []
    for op, column, values, calls in SAME_CODE:
        rows = frame[(frame["op"] == op) & frame[column].isin(values) & (frame["median_s"] > 0)]
        keys = [c for c in _SAME if c in rows]
        for _, group in rows.groupby(keys, dropna=False, sort=True):
            if group[column].nunique() < 2:
                continue
            ordered = group.sort_values("median_s")
            pairs.append(Pair(op, calls, int(group["nbytes"].iloc[0]), str(group["run"].iloc[0]), ordered.iloc[-1],
                              ordered.iloc[0]))
    return tuple(sorted(pairs, key=lambda p: -p.spread))


def _of_blocks(frame: pd.DataFrame) -> Iterable[Evidence]:
    """Each case measured in blocks: the spread of its blocks' log medians beyond what each block's rounds explain."""
    if "block_medians" not in frame:
        return
    for _, row in frame.iterrows():
        medians, errors = _blocks(row), np.asarray(row.get("block_log_se") or [], dtype=float)
        kept = np.isfinite(medians) & (medians > 0)
        if kept.sum() < 2 or errors.size != medians.size or flag(row, "mixed_iterations"):
            continue
        logs = np.log(medians[kept])
        beyond = float(np.sum((logs - logs.mean()) ** 2) - (kept.sum() - 1) * np.mean(errors[kept] ** 2))
        # Two blocks' difference has twice one block's variance: what an unpaired pair of cases would see.
        yield Evidence(f"{row['path']} {row['run']} {row['nbytes']}", regime(row), 2 * max(beyond, 0.0), int(kept.sum()) - 1)


@dataclass(frozen=True)
class RunDrift:
    """The run's same-code pairs and its drift evidence by regime."""

    pairs: tuple[Pair, ...]
    evidence: tuple[Evidence, ...]

    def of(self, *rows: pd.Series, leave_out: str | None = None) -> Drift:
        """The drift an unpaired comparison of ``rows`` must allow for: the widest of their regimes' (a regime
        without evidence takes the whole run's, the cost model's for a simulated row, the rest for a real one),
        ``leave_out``'s own evidence left out (a pair never vouches for itself)."""
        kept = [e for e in self.evidence if e.key != leave_out]
        regimes = list(map(regime, rows))
        calls = [int(row.get("iterations") or 1) for row in rows]
        if max(calls) >= 2 * min(calls):  # loops 2x apart (one call a round against many): the latency evidence (many
            regimes += [(memory, "bandwidth") for memory, _ in regimes]  # calls a round) does not reach; the wider does
        pooled = [self._pooled([e for e in kept if e.regime == where]) or self._pooled(
            [e for e in kept if (e.regime[0] == "simulated") == (where[0] == "simulated")]) for where in regimes]
        found = [f for f in pooled if f is not None]
        # the widest, on the fewest: conservative
        return Drift(max(f.sd for f in found), min(f.df for f in found)) if found else Drift()

    @staticmethod
    def _pooled(evidence: list[Evidence]) -> Drift | None:
        df = sum(e.df for e in evidence)
        return Drift(math.sqrt(sum(e.square for e in evidence) / df), df) if df else None

    def pairs_of(self, op: str) -> tuple[Pair, ...]:
        return tuple(p for p in self.pairs if p.op == op)

    @property
    def regimes(self) -> dict[tuple[str, str], Drift]:
        """Each regime's pooled drift, for the page's one line on method."""
        found = {e.regime for e in self.evidence}
        return {r: d for r in sorted(found) if (d := self._pooled([e for e in self.evidence if e.regime == r]))}


def run_drift(frame: pd.DataFrame) -> RunDrift:
    """The run's drift: same-code pairs measured apart (beyond their rounds' noise) and cases measured in blocks."""
    pairs = same_code_pairs(frame)
    # each pair's squared log spread beyond its rounds' noise (the squared standard errors of its two medians' logs)
    evidence = [Evidence(p.key, regime(p.slow), max(math.log1p(p.spread) ** 2 - side(p.slow)[1] ** 2 - side(p.fast)[1] ** 2,
                                                    0.0), 1) for p in pairs if not p.paired]
    return RunDrift(pairs, (*evidence, *_of_blocks(frame)))
