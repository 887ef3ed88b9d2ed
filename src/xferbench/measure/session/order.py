"""``--xfer-shuffle=SEED``: the run's cases in a seeded random order, recorded in the run's JSON.

Why: whatever changes during a run (the allocators' caches, the page cache, THP, clocks, other tenants) is read as
a difference between cases run far apart. Shuffled, cases the report sets side by side (a ladder's rungs, a call's
forms, a scenario's variants) are spread over the run alike, so drift hits both sides; the seed repeats an order.
Not pytest-randomly: installed, it reorders every pytest run of the environment (the project's own tests too) and
only within a module, so it never interleaves two families' cases; where it is active anyway, its seed and the
order it made are recorded the same way.

Cases whose module holds a module-scoped fixture (the distributed families' 2-rank world) stay together, shuffled
among themselves: interleaved with others, the world would be set up and torn down again and again.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from .blocks import spread_blocks

__all__ = ["shuffled"]

_ORDER = pytest.StashKey[dict[str, Any]]()
_SEED = pytest.StashKey[int]()
#: Fixture scopes that hold state across a module's tests: their tests stay in one block.
_HELD_SCOPES = ("module", "package", "class")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("xferbench").addoption(
        "--xfer-shuffle", default=None, metavar="SEED",
        help="run the cases in a random order from SEED (a whole number, or 'random': one drawn and recorded), so a "
             "drift during the run hits the cases compared alike; the seed and order go in the JSON's xferbench_run")


def _seed(text: str) -> int:
    if text == "random":
        return random.SystemRandom().randrange(2**32)
    try:
        return int(text)
    except ValueError:
        raise pytest.UsageError(f"argument --xfer-shuffle: expected a whole number or 'random', got {text!r}") from None


def pytest_configure(config: pytest.Config) -> None:
    if (text := config.getoption("xfer_shuffle", None)) is not None:
        config.stash[_SEED] = _seed(str(text))


def _block(item: pytest.Item) -> str:
    """The block an item moves with: its module's where it uses a fixture held across the module, else its own."""
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    held = any(getattr(d, "scope", "function") in _HELD_SCOPES for chain in defs.values() for d in chain)
    return item.nodeid.split("::")[0] if held else item.nodeid


def shuffled(items: Sequence[pytest.Item], seed: int) -> list[pytest.Item]:
    """``items`` in a random order from ``seed``; the items of one held block (``_block``) stay together, in a
    random order of their own."""
    rng = random.Random(seed)
    blocks: dict[str, list[pytest.Item]] = {}
    for item in items:
        blocks.setdefault(_block(item), []).append(item)
    groups = list(blocks.values())
    for group in groups:
        rng.shuffle(group)
    rng.shuffle(groups)
    return [item for group in groups for item in group]


@pytest.hookimpl(trylast=True)  # after every other reordering and deselection (-k, -m)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _SEED in config.stash:
        items[:] = shuffled(items, config.stash[_SEED])
    items[:] = spread_blocks(items, _block)  # each block of a case to its place in the run (blocks.py)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Record the order the cases run in, where it was shuffled (by --xfer-shuffle, or by pytest-randomly)."""
    config = session.config
    if _SEED in config.stash:
        by, seed = "--xfer-shuffle", config.stash[_SEED]
    elif config.pluginmanager.hasplugin("randomly") and config.getoption("randomly_reorganize", True):
        by, seed = "pytest-randomly", config.getoption("randomly_seed", None)
    else:
        return
    config.stash[_ORDER] = {"by": by, "seed": seed, "order": [item.nodeid for item in session.items]}


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [f"xferbench: cases in a shuffled order, --xfer-shuffle={config.stash[_SEED]}"] if _SEED in config.stash else []


@pytest.hookimpl(trylast=True, optionalhook=True)  # after the plugin's own, which writes xferbench_run
def pytest_benchmark_update_json(config: pytest.Config, benchmarks: list[Any], output_json: dict[str, Any]) -> None:
    if _ORDER in config.stash:
        output_json.setdefault("xferbench_run", {})["case_order"] = config.stash[_ORDER]
