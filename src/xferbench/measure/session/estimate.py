"""The run's estimated time, printed before its first case runs, and read back against the wall clock at its end.

Each planned test (a case, or one block of it) takes its timed budget: ``--benchmark-max-time``, shared by a
case's blocks (pytest-benchmark sets its rounds to fill it, on a busy machine too), and the device-time windows'
budget where it has them; a distributed case's rounds are its own and count as harness. And it takes its harness:
pytest's setup and teardown, the buffers, calibration, warm-up and verifying calls, HARNESS_S by kind and
HARNESS_S_PER_GB of its payload on an idle core (fitted to a quick CPU run on an idle 2-core machine), stretched
on a busy one by this process's wall time over its CPU time while it started (its imports and collection): how
much of a core it got. Under ``--xfer-simulate`` the simulated cases run on the simulated clock, which this does
not price: no time is estimated.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from ..cases import Case
from .blocks import block_of
from .settings import configured
from .settings import settings as settings_of

__all__ = ["Estimate", "estimate", "estimate_lines", "outcome_lines"]

#: A test's harness on an idle core, by kind of case: a core case's, a scenario's or concurrent case's (each
#: prepares more: a model, a DataLoader's workers), a distributed case's (its own rounds of gloo calls between two
#: processes). Fitted, with HARNESS_S_PER_GB, to the quick CPU profile on a 2-core machine at rest (load 1-2).
HARNESS_S = {"core": 0.03, "family": 0.17, "distributed": 0.57}
HARNESS_S_PER_GB = 2.5
#: A case on an accelerator timed on its device too: the device-time windows' budget (transfers.EVENT_BUDGET_S).
EVENT_BUDGET_S = 0.2
#: When this module was loaded (pytest's start), on the wall clock and this process's CPU clock.
_STARTED = (time.perf_counter(), time.process_time())


@dataclass
class Estimate:
    """The planned tests per family, their timed budget, their harness on an idle core, and how much longer CPU
    work takes on this machine now."""

    cases: Counter[str]
    budget_s: float
    harness_s: float
    slowdown: float
    simulated: bool

    @property
    def seconds(self) -> float:
        return self.budget_s + self.harness_s * self.slowdown


def _kind(item: Any) -> str:
    from ...families import FAMILIES

    return "core" if isinstance(item, Case) else "distributed" if FAMILIES[item.op].kind == "distributed" else "family"


def _device_timed(item: Any) -> bool:
    """Whether the case's device time is measured too (transfers._device_time): a core case on an accelerator,
    but for a no-op, a synchronize and a pageable copy."""
    return (isinstance(item, Case) and any(d != "cpu" for d in item.devices) and item.op not in ("noop", "sync")
            and item.host_memory != "pageable")


def estimate(planned: Sequence[tuple[Any, int]], max_time: float, slowdown: float = 1.0, simulated: bool = False) -> Estimate:
    """The estimate of ``planned``: each planned case and the blocks it is measured in (a test each, which share
    the case's --benchmark-max-time and each pay their own harness and device-time windows)."""
    budget = harness = 0.0
    for item, blocks in planned:
        kind = _kind(item)
        budget += 0.0 if kind == "distributed" else max_time + blocks * EVENT_BUDGET_S * _device_timed(item)
        harness += blocks * (HARNESS_S[kind] + HARNESS_S_PER_GB * int(getattr(item, "nbytes", 0) or 0) / 1e9)
    return Estimate(Counter(item.op for item, blocks in planned), budget, harness, slowdown, simulated)


def slowdown_now(started: tuple[float, float] = _STARTED, now: tuple[float, float] | None = None) -> float:
    """How much longer CPU work takes here now than on an idle core: wall time over this process's CPU time from
    ``started`` to ``now`` (each a wall and a CPU clock reading; now: this moment), at least 1."""
    now = now or (time.perf_counter(), time.process_time())
    wall, cpu = now[0] - started[0], now[1] - started[1]
    return max(1.0, wall / cpu) if cpu > 0 else 1.0


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.1f} s"


def estimate_lines(found: Estimate, peers: dict[str, Any] | None) -> list[str]:
    """What is printed before the first case runs."""
    families = ", ".join(f"{op} {n}" for op, n in sorted(found.cases.items()))
    lines = [f"xferbench: {found.cases.total()} cases planned ({families})"]
    if peers:
        lines.append(f"xferbench: peer pairs {peers['mode']} ({peers['reason']}); swept at every size: "
                     f"{len(peers['swept_pairs'])} of {len(peers['classes'])} pairs, the others at up to 4 sizes")
    if found.simulated:
        lines.append("xferbench: no run time estimated: the simulated machine's cases run on its own clock")
    else:
        lines.append(f"xferbench: estimated run time {_minutes(found.seconds)} ({_minutes(found.budget_s)} timed, "
                     f"{_minutes(found.harness_s)} of harness on an idle core x{found.slowdown:.1f} for this "
                     "machine's load now)")
    return lines


def outcome_lines(found: Estimate, wall_s: float) -> list[str]:
    """What is printed at the end: the estimate against the wall clock (none: nothing was planned, or simulated)."""
    if found.simulated or not found.seconds:
        return [f"xferbench: wall clock {_minutes(wall_s)}"]
    return [f"xferbench: wall clock {_minutes(wall_s)} against {_minutes(found.seconds)} estimated "
            f"(actual / estimate = {wall_s / found.seconds:.2f})"]


_ESTIMATE = pytest.StashKey[tuple[Estimate, float]]()


def _planned(items: Sequence[pytest.Item]) -> list[tuple[Any, int]]:
    """The xferbench case each collected, unskipped item runs (its first block, for a case in blocks), with the
    blocks it is measured in."""
    found = []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        case = next((params[name] for name in ("xfer_case", "xfer_dist_case") if name in params), None)
        block = block_of(item)
        if case is not None and item.get_closest_marker("skip") is None and (block is None or block.index == 0):
            found.append((case, block.count if block is not None else 1))
    return found


def pytest_collection_finish(session: pytest.Session) -> None:
    config = session.config
    if not configured(config) or not hasattr(config.option, "benchmark_max_time"):
        return
    found = estimate(_planned(session.items), float(config.getoption("benchmark_max_time")), slowdown_now(),
                     bool(settings_of(config).backend.simulated))
    config.stash[_ESTIMATE] = (found, time.perf_counter())
    if (reporter := config.pluginmanager.get_plugin("terminalreporter")) is not None:
        peers = settings_of(config).peers
        for line in estimate_lines(found, peers.as_json() if peers else None):
            reporter.write_line(line)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if _ESTIMATE not in config.stash or config.getoption("collectonly"):
        return
    found, started = config.stash[_ESTIMATE]
    for line in outcome_lines(found, time.perf_counter() - started):
        terminalreporter.write_line(line)
