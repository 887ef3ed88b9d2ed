"""Cases measured in interleaved blocks spread over the session: what the report compares, the reference cases, and
every case under ``--xfer-blocks=N``.

Why: whatever changes while a run runs (the allocators' caches, the page cache, THP, clocks, other tenants) reads as a
difference between cases measured at different times. Two cases the report sets against each other (a ladder's rungs,
pinned against pageable, a call's same-code twin, one thread against many, a scenario's variants) are measured in
``BLOCKS`` blocks each, block k of every such case in one slot of the run, next to each other in time (xferbench.ratios:
the per-block ratios give each comparison its own interval; drift that hits both blocks of a pair alike cancels).
Inside a slot the order follows the Thue-Morse sequence (A B, B A, B A, A B, ...), so a drift favours neither side.
The paired cases are each family's at the size nearest 64 MiB and the largest planned up to 256 MiB (from 1 MiB up), of
the first dtype and GPUs (``PAIRED``). The reference cases measure the drift itself in the regimes the report
judges: the host ``copy_`` at the smallest size (latency-bound) and at the size nearest 1 MiB, and the pinned blocking
``.to('cuda:i')`` of the first GPU nearest 64 MiB (bandwidth-bound). ``--xfer-blocks=N`` splits every core, scenario
and concurrent case into N blocks (the distributed cases' 2-rank world stays in one piece); ``--xfer-blocks=1`` leaves
only the references in blocks.

A block is a benchmark of its own (pytest id ``<case>-block2of6``, contract.BLOCK in extra_info) timed for
``--benchmark-max-time`` / N, at least ``BLOCK_ROUNDS`` rounds (a reference's) or ``PAIRED_ROUNDS`` (any other's).
analyze/load/blocks.py merges a case's blocks into one
row and keeps each block's median.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest

from ...contract import Block
from ..cases import PlannedCase, Skipped

__all__ = ["BLOCKS", "BLOCK_ROUNDS", "PAIRED", "PAIRED_ROUNDS", "REFERENCES", "block_of", "block_params", "blocked_ids",
           "spread_blocks"]

#: Blocks of a paired or reference case, spread from the run's start to its end.
BLOCKS = 6
#: The fewest rounds of a reference's block: its median, against its own rounds' noise, is the drift evidence.
BLOCK_ROUNDS = 10
#: The fewest rounds of any other block. A paired comparison's interval comes from the spread of its six per-block
#: ratios, which a noisier block median widens honestly; 10 rounds a block of a 100 ms fresh 64 MiB clone or zeros
#: cost a sixth of the quick CPU run. Only calls slower than max-time / BLOCKS / 10 (4 ms in the quick profile) are
#: held to this.
PAIRED_ROUNDS = 5
#: The size a bandwidth-bound pair or reference is chosen nearest to (both profiles plan it), the largest paired size.
_BANDWIDTH_BYTES = 64 * 2**20
_LARGEST_PAIRED = 256 * 2**20
_SMALLEST_PAIRED = 2**20
_MOST_BLOCKS = 100
#: The reference cases: which of a family's cases, and the sizes they are chosen nearest to (0: the smallest).
REFERENCES: dict[str, tuple[Any, tuple[int, ...]]] = {
    "host": (lambda case: case.method == "copy_" and case.variant is None, (0, 2**20)),
    "h2d": (lambda case: case.method == "to" and case.host_memory == "pinned" and not case.non_blocking
            and case.variant is None, (_BANDWIDTH_BYTES,)),
}
#: The families whose cases the report sets against each other, and which of a family's cases it compares.
PAIRED: dict[str, Any] = {
    "host": lambda case: True,  # clone against copy_ (a fresh destination), copy_ on its threads against one
    "create": lambda case: case.method in ("empty", "zeros"),  # zeros against empty: the first touch of pages
    "placement": lambda case: case.variant != "convert_on_cpu",  # where to convert: the first screen's change
    "h2d": lambda case: True,  # pinned against pageable, blocking against not, .cuda(i) against .to('cuda:i')
    "d2h": lambda case: True,  # the .cpu() ladder's rungs, the fix, .cpu() against .to('cpu')
    **{op: lambda case: True for op in ("bidir", "copy_kind", "copy_overlap", "cuda_vs_to", "module_to", "pin_memory",
                                         "d2h_kept", "d2h_registered")},  # each scenario's variants
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("xferbench").addoption(
        "--xfer-blocks", default="paired", metavar="N",
        help="'paired' (default): the cases the report compares and a few references in 6 interleaved blocks each; "
             "N (2 to 100): every case in N blocks; 1: only the references (comparisons then unpaired). Blocks are "
             "timed for --benchmark-max-time / N each and merged into one row on load")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "xfer_block(index, count, case_id): one block of a case measured in blocks")
    if isinstance(text := config.getoption("xfer_blocks", None), str) and text != "paired":
        value = int(text) if text.isdecimal() else 0  # every decimal digit int() reads, nothing else
        if not 1 <= value <= _MOST_BLOCKS:
            raise pytest.UsageError(f"argument --xfer-blocks: expected a whole number from 1 to {_MOST_BLOCKS}, got {text!r}")
        config.option.xfer_blocks = value


def blocked_ids(op: str, planned: Sequence[PlannedCase | Skipped], paired: bool = True) -> dict[str, int]:
    """The ids of ``op``'s cases measured in ``BLOCKS`` blocks, each with its blocks' fewest rounds: the paired cases
    (``PAIRED``, unless not ``paired``; ``PAIRED_ROUNDS``) and the references (``REFERENCES``; ``BLOCK_ROUNDS``), each
    of the first dtype and GPUs their first planned case touches."""
    if not (cases := [c for c in planned if not isinstance(c, Skipped)]):
        return {}
    def where(case: Any) -> tuple[Any, ...]:  # the dtype and the GPUs a case touches (both directions of one GPU alike)
        return getattr(case, "dtype", None), frozenset({case.src, case.dst} - {"cpu"})

    def alike(group: list[Any]) -> list[Any]:  # those of the group's first dtype and GPUs
        return [c for c in group if where(c) == where(group[0])]

    pairs = alike([c for c in cases if paired and op in PAIRED and PAIRED[op](c)])  # placement's first touches no GPU
    chosen = {c.id: PAIRED_ROUNDS for c in pairs if c.nbytes in _paired_sizes(pairs)}
    cases = alike(cases)
    if op in REFERENCES:
        is_reference, targets = REFERENCES[op]
        references = [c for c in cases if is_reference(c)]
        sizes = [c.nbytes for c in references]
        wanted = {min(sizes) if target == 0 else _nearest(sizes, target) for target in targets} if sizes else set()
        chosen |= {c.id: BLOCK_ROUNDS for c in references if c.nbytes in wanted}
    return chosen


def _nearest(sizes: Sequence[int], target: int) -> int:
    return min(sizes, key=lambda n: (abs(math.log2(max(n, 1) / target)), n))


def _paired_sizes(cases: Sequence[PlannedCase]) -> set[int]:
    """The size nearest 64 MiB and the largest up to 256 MiB among ``cases`` of 1 MiB or more (the bandwidth-bound
    sizes the report compares at; a run of small sizes only pairs nothing)."""
    if not (sizes := sorted({c.nbytes for c in cases if c.nbytes >= _SMALLEST_PAIRED})):
        return set()
    return {_nearest(sizes, _BANDWIDTH_BYTES), max([n for n in sizes if n <= _LARGEST_PAIRED], default=sizes[0])}


def block_params(case: PlannedCase, count: int, max_time: float, min_rounds: int = PAIRED_ROUNDS) -> list[Any]:
    """``case`` as ``count`` pytest params, one per block, each timed for ``max_time / count``, ``min_rounds`` at
    least."""
    timing = pytest.mark.benchmark(max_time=max_time / count, min_rounds=min_rounds)
    return [pytest.param(case, id=Block(index, count, case.id).param_id,
                         marks=[pytest.mark.xfer_block(index, count, case.id), timing]) for index in range(count)]


def block_of(item: pytest.Item) -> Block | None:
    """The block an item is, or None for a case measured whole."""
    marker = item.get_closest_marker("xfer_block") if hasattr(item, "get_closest_marker") else None
    return Block(*marker.args) if marker is not None else None


def _alternating(entry: tuple[float, int, pytest.Item]) -> tuple[float, int]:
    """Blocks of one slot by their place in the run, in their given order or reversed as the Thue-Morse sequence
    says (A B, B A, B A, A B, B A, A B): a drift whose slope changes over the run favours neither side, where plain
    alternation lets the steeper early slots favour the case that runs first."""
    where, at, item = entry
    block = block_of(item)
    return where, -at if block is not None and bin(block.index).count("1") % 2 else at


def _held_apart(before: Any, after: Any, together: Any) -> bool:
    """Whether a block may run between ``before`` and ``after``: not inside a run of items held together."""
    return before is None or after is None or together(before) != together(after)


def spread_blocks(items: Sequence[pytest.Item], together: Any) -> list[pytest.Item]:
    """``items`` with block k of n placed k/(n-1) of the way through the other items (the first at the start, the
    last at the end), never inside a run of items ``together`` keeps as one (a module-scoped world); blocks placed at
    one spot run in their given order, lower blocks first, the order of one block index reversed at every other
    index as the Thue-Morse sequence says (A B, B A, B A, A B, ...). The other items keep their order."""
    plain = [item for item in items if block_of(item) is None]
    slots: dict[int, list[tuple[float, int, pytest.Item]]] = {}
    for at, item in enumerate(items):
        if (block := block_of(item)) is None:
            continue
        where = block.index / (block.count - 1) if block.count > 1 else 0.0
        slot = round(where * len(plain))
        while not _held_apart(plain[slot - 1] if slot else None, plain[slot] if slot < len(plain) else None, together):
            slot += 1
        slots.setdefault(slot, []).append((where, at, item))
    placed: list[pytest.Item] = []
    for slot in range(len(plain) + 1):
        placed += [item for _, _, item in sorted(slots.get(slot, []), key=_alternating)]
        if slot < len(plain):
            placed.append(plain[slot])
    return placed
