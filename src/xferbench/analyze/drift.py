"""The run's drift floor: how far two calls that run the same code lie apart in this run.

Nothing interleaves a run's cases, so whatever changes while it runs (the allocators' caches, the page cache, THP,
clocks, other tenants) reads as a difference between the cases measured at different times. Calls that run the same
PyTorch code measure exactly that: ``.cpu()`` and ``.to('cpu')``, ``.cuda(i)`` and ``.to('cuda:i')``, and the
cuda_vs_to scenario's ``.cuda(i)``, ``.to('cuda:i')`` and ``.to(torch.device)``. On the H200 sample they lie up to
30% apart with rounds that never overlap (256 MiB ``.cpu()`` 181 ms against ``.to('cpu')`` 217 ms).

The floor is the largest relative difference (slower median over faster, minus one) among those same-code pairs,
each pair within one run and one size. The largest, not a percentile: with a few dozen pairs a percentile would call
the widest drift the run showed a difference, and that drift may hit any two cases. A pair is judged against the
others only (leave-one-out): a figure never vouches for itself. The no-op forms (``.to('cpu')`` against ``.cpu()`` on
a tensor already there) are left out: at 0.3 µs their difference is the argument parsing each does, a cost of the
call, not drift. A case measured in blocks (a reference case again at the run's start, middle and end, or every
case under ``--xfer-blocks``: load/blocks.py merges them into one row) adds its blocks' spread, the slowest block over
the fastest, minus one: the same case at different times. The runs recorded before had none: their floor rests on the
same-code pairs alone. The floor in words is report/drift_text.py. No torch here.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

__all__ = ["SAME_CODE", "Drift", "Pair", "Repeat", "repeated_references", "same_code_pairs"]

#: Per family, the column and the values whose calls run the same code, in words for a sentence.
SAME_CODE: dict[str, tuple[str, tuple[str, ...], str]] = {
    "d2h": ("method", ("cpu", "to"), ".cpu() and .to('cpu')"),
    "h2d": ("method", ("cuda", "to"), ".cuda(i) and .to('cuda:i')"),
    "cuda_vs_to": ("variant", ("cuda", "to_str", "to_device"), ".cuda(i), .to('cuda:i') and .to(torch.device)"),
}
#: What else must match for two rows to be one pair: the same case but for the call's spelling.
_SAME = ["run", "src", "dst", "host_memory", "non_blocking", "dtype", "nbytes"]


@dataclass(frozen=True)
class Pair:
    """Two or more rows of one run and size that run the same code: how far their medians lie apart."""

    op: str
    calls: str
    nbytes: int
    run: str
    paths: tuple[str, ...]
    #: Slower median over faster, minus one.
    spread: float

    @property
    def key(self) -> tuple[str, str, int, tuple[str, ...]]:
        return self.op, self.run, self.nbytes, self.paths


def same_code_pairs(frame: pd.DataFrame) -> tuple[Pair, ...]:
    """Every same-code pair the rows hold, each within one run and size, largest spread first."""
    pairs = []
    for op, (column, values, calls) in SAME_CODE.items():
        rows = frame[(frame["op"] == op) & frame[column].isin(values) & (frame["median_s"] > 0)]
        if column == "variant":
            rows = rows.assign(method=rows["variant"])
        keys = [c for c in _SAME if c in rows]
        for _, group in rows.groupby(keys, dropna=False, sort=True):
            if group["method"].nunique() < 2:
                continue
            slow, fast = float(group["median_s"].max()), float(group["median_s"].min())
            pairs.append(Pair(op, calls, int(group["nbytes"].iloc[0]), str(group["run"].iloc[0]),
                              tuple(sorted(group["path"].astype(str))), slow / fast - 1))
    return tuple(sorted(pairs, key=lambda p: -p.spread))


@dataclass(frozen=True)
class Repeat:
    """A case measured in blocks at different times of its run: how far the blocks' medians lie apart."""

    path: str
    nbytes: int
    blocks: int
    #: Slowest block's median over the fastest's, minus one.
    spread: float


def repeated_references(frame: pd.DataFrame) -> tuple[Repeat, ...]:
    """Every case the rows hold that was measured in two or more blocks (load/blocks.py), largest spread first."""
    if "block_spread" not in frame:
        return ()
    rows = frame[pd.to_numeric(frame["block_spread"], errors="coerce").notna()]
    repeats = [Repeat(str(row["path"]), int(row["nbytes"]), int(row["blocks"]), float(row["block_spread"]))
               for _, row in rows.iterrows()]
    return tuple(sorted(repeats, key=lambda r: -r.spread))


@dataclass(frozen=True)
class Drift:
    """The run's same-code pairs and repeated references, and the floor they set on every comparison of two of its
    cases."""

    pairs: tuple[Pair, ...]
    repeats: tuple[Repeat, ...] = ()

    def floor(self, judged: Pair | None = None) -> float | None:
        """The largest spread among the repeated references and the pairs, but ``judged``'s own; None when nothing
        else was measured."""
        others = [p.spread for p in self.pairs if judged is None or p.key != judged.key]
        others += [r.spread for r in self.repeats]
        return max(others) if others else None

    @property
    def widest(self) -> Pair | None:
        return self.pairs[0] if self.pairs else None

    def within(self, slow_s: float, fast_s: float, judged: Pair | None = None) -> bool:
        """Whether two times lie within the floor (their relative difference at most it): "can't tell".
        False without a floor (a run without same-code pairs gives no drift verdict) or with a floor of 0 (the same
        code timed alike: a machine that does not drift, such as the simulated one without ``drift`` or ``noise``)."""
        floor = self.floor(judged)
        low, high = sorted((float(slow_s), float(fast_s)))
        return bool(floor) and low > 0 and high / low - 1 <= (floor or 0.0)

    def pairs_of(self, op: str) -> tuple[Pair, ...]:
        return tuple(p for p in self.pairs if p.op == op)
