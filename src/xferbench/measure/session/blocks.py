"""Cases measured in blocks spread over the session: the reference cases, and every case under ``--xfer-blocks=N``.

Why: whatever changes while a run runs (the allocators' caches, the page cache, THP, clocks, other tenants) reads as a
difference between cases measured at different times. A few reference cases measured again at the start, the middle
and the end of the run show how far the run moved by itself: analyze/drift.py's floor counts the spread of their
blocks. The references are cheap and every profile runs them, on a CPU-only machine and with a GPU: the pageable host
``clone`` and the pinned blocking ``.to('cuda:i')`` of the first GPU, each at the smallest planned size (latency-bound)
and at the one nearest 64 MiB (bandwidth-bound). ``--xfer-blocks=N`` splits every core, scenario and concurrent case
into N blocks (the distributed cases' 2-rank world stays in one piece); with ``--xfer-shuffle`` each pass over the
cases runs in an order of its own, so drift hits both sides of a comparison alike.

A block is a benchmark of its own (pytest id ``<case>-block2of3``, contract.BLOCK in extra_info) timed for
``--benchmark-max-time`` / N: a case's blocks together take about the time the case alone would, so the references
add only their setup and warm-up, twice more each. analyze/load/blocks.py merges a case's blocks into one row.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest

from ...contract import Block
from ..cases import Case, PlannedCase, Skipped

__all__ = ["REFERENCE_BLOCKS", "block_of", "block_params", "reference_ids", "spread_blocks"]

#: Blocks of a reference case: the run's start, middle and end.
REFERENCE_BLOCKS = 3
#: The size a bandwidth-bound reference is chosen nearest to: both profiles plan it.
_BANDWIDTH_BYTES = 64 * 2**20
_MOST_BLOCKS = 100


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("xferbench").addoption(
        "--xfer-blocks", default="1", metavar="N",
        help="measure every case in N blocks spread over the run (1 to 100; default 1), each timed for "
             "--benchmark-max-time / N and merged into one row on load; a few reference cases always run in 3")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "xfer_block(index, count, case_id): one block of a case measured in blocks")
    text = config.getoption("xfer_blocks", None)
    if isinstance(text, str):
        try:
            value = int(text)
        except ValueError:
            value = 0
        if not 1 <= value <= _MOST_BLOCKS:
            raise pytest.UsageError(f"argument --xfer-blocks: expected a whole number from 1 to {_MOST_BLOCKS}, got "
                                    f"{text!r}")
        config.option.xfer_blocks = value


def reference_ids(op: str, planned: Sequence[PlannedCase | Skipped]) -> set[str]:
    """The ids of ``op``'s reference cases among ``planned`` (none for other families): the smallest size and the one
    nearest 64 MiB, of the first dtype, on the first GPU."""
    cases = [c for c in planned if isinstance(c, Case) and _reference(op, c)]
    if not cases:
        return set()
    first = cases[0]
    cases = [c for c in cases if c.dtype == first.dtype and c.dst == first.dst]
    nearest = min(cases, key=lambda c: abs(math.log2(max(c.nbytes, 1) / _BANDWIDTH_BYTES)))
    return {min(cases, key=lambda c: c.nbytes).id, nearest.id}


def _reference(op: str, case: Case) -> bool:
    if op == "host":
        return case.method == "clone" and case.variant is None
    if op == "h2d":
        return case.method == "to" and case.host_memory == "pinned" and not case.non_blocking and case.variant is None
    return False


def block_params(case: PlannedCase, count: int, max_time: float) -> list[Any]:
    """``case`` as ``count`` pytest params, one per block, each timed for ``max_time / count``."""
    blocks = [Block(index, count, case.id) for index in range(count)]
    return [pytest.param(case, id=block.param_id, marks=[pytest.mark.xfer_block(block.index, block.count, case.id),
                                                         pytest.mark.benchmark(max_time=max_time / count)])
            for block in blocks]


def block_of(item: pytest.Item) -> Block | None:
    """The block an item is, or None for a case measured whole."""
    marker = item.get_closest_marker("xfer_block") if hasattr(item, "get_closest_marker") else None
    return Block(*marker.args) if marker is not None else None


def _held_apart(before: Any, after: Any, together: Any) -> bool:
    """Whether a block may run between ``before`` and ``after``: not inside a run of items held together."""
    return before is None or after is None or together(before) != together(after)


def spread_blocks(items: Sequence[pytest.Item], together: Any) -> list[pytest.Item]:
    """``items`` with block k of n placed k/(n-1) of the way through the other items (the first at the start, the
    last at the end), never inside a run of items ``together`` keeps as one (a module-scoped world); blocks placed at
    one spot run in their given order, lower blocks first. The other items keep their order."""
    plain = [item for item in items if block_of(item) is None]
    slots: dict[int, list[tuple[float, int, pytest.Item]]] = {}
    for at, item in enumerate(items):
        block = block_of(item)
        if block is None:
            continue
        where = block.index / (block.count - 1) if block.count > 1 else 0.0
        slot = round(where * len(plain))
        while not _held_apart(plain[slot - 1] if slot else None, plain[slot] if slot < len(plain) else None, together):
            slot += 1
        slots.setdefault(slot, []).append((where, at, item))
    placed: list[pytest.Item] = []
    for slot in range(len(plain) + 1):
        placed += [item for _, _, item in sorted(slots.get(slot, []), key=lambda s: s[:2])]
        if slot < len(plain):
            placed.append(plain[slot])
    return placed
