"""The run's estimated time, printed before its first case runs, and how good it was, printed at its end.

The estimate follows the plan (the collected cases that are not skipped) and pytest-benchmark's own
rounds rule for each: calibrate loops until a round lasts ``--benchmark-min-time``, then run
``max(ceil(max_time / round), min_rounds)`` rounds; add the suite's warm-up calls and, for a case on an
accelerator, its device-time windows. What one call costs comes from the simulated machine's price
model under ``--xfer-simulate`` (``SimBackend.call_seconds``; a scenario's or concurrent case's own price,
``families.registry.priced``, in the rounds its timing gives it), so the estimate is in simulated seconds
and the end of the run reads it back against the simulated clock. Elsewhere it is a conservative
figure (``CONSERVATIVE_GBPS``, ``CONSERVATIVE_CALL_S``, ``HARNESS_S``), read back against the wall clock;
a distributed case by its own rounds at its world's size, and the world's start-up once (``distributed.price``),
and the harness of a case on a simulated accelerator by what it does for real (``SIMULATED_HARNESS_S``).
"""

from __future__ import annotations

import dataclasses
import math
import os
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from ..cases import Case
from ..distributed.price import Price, case_seconds, price_of
from .blocks import block_of
from .settings import configured
from .settings import settings as settings_of

__all__ = ["Estimate", "Rounds", "benchmark_seconds", "estimate", "estimate_lines", "outcome_lines"]

#: A real machine's call is priced as if it moved this many bytes per second: below a pageable copy
#: on PCIe Gen3 and a host copy on any recent CPU, so the estimate errs long.
CONSERVATIVE_GBPS = 2.0
#: And as if its fixed cost (launch, synchronize, dispatch) were this: above the H200 sample's slowest
#: small copy (a blocking pageable .cpu(), tens of microseconds).
CONSERVATIVE_CALL_S = 100e-6
#: The harness's own time per case on the real clock (pytest, buffers, the verification call), plus
#: HARNESS_COPIES passes over the payload at CONSERVATIVE_GBPS (filling, the verifying copy, comparing):
#: a simulated run on the shared 2-core build machine spent about 0.1 s of CPU a 4 B..1 MiB case.
HARNESS_S, HARNESS_COPIES = 0.25, 4
#: A case on a simulated accelerator moves no data while timed: its harness is pytest's and pytest-benchmark's
#: own time (calibrating and recording rounds, the device-time windows' calls), and HARNESS_COPIES passes
#: over the payload only where it verifies a host call for the first time (transfers._verify_once, which
#: builds the size's shared buffers too). SIMULATED_HARNESS_S: see docs/options.md for the measured figure.
SIMULATED_HARNESS_S = 0.03
#: Calls the suite makes before timing (transfers.WARMUP_CALLS), and calls per no-op round (NOOP_CALLS).
WARMUP_CALLS, NOOP_CALLS = 3, 100
#: The device-time step's budget per case, shared by its three windows (transfers.EVENT_BUDGET_S, repeats 3..100).
EVENT_BUDGET_S, EVENT_WINDOWS = 0.2, 3


@dataclass(frozen=True)
class Rounds:
    """pytest-benchmark's settings that decide how long one benchmark runs."""

    max_time: float
    min_time: float
    min_rounds: int
    calibration_precision: int = 10
    precision: float | None = None  # --benchmark-precision: stop once the mean is this sure
    confidence: float = 0.99
    dist_rounds: int = 30  # a distributed case's own rounds and warm-up calls (distributed.options.Profile)
    dist_warmup: int = 2
    profile: str = "quick"  # --xfer-profile: a scenario's fixed rounds (families.scenario.SETUP_ROUNDS)

    @classmethod
    def of(cls, config: pytest.Config) -> Rounds:
        from ..distributed.options import PROFILES

        precision = config.getoption("benchmark_precision", None)
        dist = PROFILES.get(str(config.getoption("xfer_profile", "quick")), PROFILES["full"])
        return cls(float(config.getoption("benchmark_max_time")), float(config.getoption("benchmark_min_time")),
                   int(config.getoption("benchmark_min_rounds")),
                   int(config.getoption("benchmark_calibration_precision", 10) or 10),
                   float(precision) if precision else None, float(config.getoption("benchmark_confidence", 0.99)),
                   int(config.getoption("xfer_dist_rounds", None) or dist.rounds), dist.warmup,
                   str(config.getoption("xfer_profile", "quick")))

    def needed(self, most: int, spread: float | None) -> int:
        """Rounds run of at most ``most``: all of them without --benchmark-precision or where the rounds'
        relative spread is unknown; else where pytest-benchmark's rule stops (z x spread / sqrt(n) <= precision)."""
        if self.precision is None or spread is None:
            return most
        z = statistics.NormalDist().inv_cdf(0.5 + self.confidence / 2)
        return min(most, max(self.min_rounds, 2, math.ceil((z * spread / self.precision) ** 2)))


def benchmark_seconds(call_s: float, rounds: Rounds, spread: float | None = None) -> float:
    """Timer seconds pytest-benchmark spends on a benchmark whose function takes ``call_s``: its
    calibration (loops x10 until a round lasts min_time, or one estimate once half-way) and its rounds
    (``Rounds.needed``; ``spread``: the rounds' relative standard deviation, None where unknown)."""
    call_s = max(call_s, 1e-9)
    estimate_at = rounds.min_time * 5 / rounds.calibration_precision
    loops, spent = 1, 0.0
    while True:
        duration = loops * call_s
        spent += duration
        if duration >= rounds.min_time:
            break
        if duration >= estimate_at:
            loops = math.ceil(rounds.min_time * loops / duration)
            if loops == 1:
                break
        else:
            loops *= 10
    return spent + rounds.needed(max(math.ceil(rounds.max_time / duration), rounds.min_rounds), spread) * duration


@dataclass
class Estimate:
    """Seconds the planned cases take: on the simulated clock (cases on a simulated accelerator) and on
    the real one (everything else, harness included)."""

    simulated_s: float = 0.0
    real_s: float = 0.0
    cases: Counter[str] = field(default_factory=Counter)  # planned cases per family


def _core_seconds(case: Case, backend: Any, rounds: Rounds) -> tuple[float, bool]:
    """One core case's seconds and whether they are simulated."""
    on_accelerator = any(d != "cpu" for d in case.devices)
    spread = None  # unknown on a real machine: every round max_time allows is counted
    if backend.simulated and on_accelerator:
        call, queued = backend.call_seconds(case)
        spread = backend.spec.noise  # a round's jitter is at most one call's
    else:
        # A no-op and torch.empty touch no byte of their payload: a fixed cost alone.
        moved = 0 if case.op == "noop" or case.method == "empty" else case.nbytes
        call = CONSERVATIVE_CALL_S + moved / (CONSERVATIVE_GBPS * 1e9)
        queued = call
    timed = call * NOOP_CALLS if case.op == "noop" else call
    seconds = benchmark_seconds(timed, rounds, spread) + WARMUP_CALLS * call
    if on_accelerator and case.op not in ("noop", "sync") and case.host_memory != "pageable":
        repeats = max(3, min(100, int(EVENT_BUDGET_S / EVENT_WINDOWS / call)))
        seconds += EVENT_WINDOWS * repeats * queued
    return seconds, backend.simulated and on_accelerator


def _distributed(item: Any) -> bool:
    from ...families import FAMILIES

    return item.op in FAMILIES and FAMILIES[item.op].kind == "distributed"


def _world_price(item: Any) -> Price:
    """The price of the world inside pytest: its ranks all on this host, whose CPUs they share."""
    return price_of(item.backend, ["this node"] * item.world_size, cpus=os.cpu_count())


def _distributed_seconds(item: Any, rounds: Rounds, started: set[tuple[str, int]]) -> float:
    """A distributed case's seconds (distributed.world.World.run): its warm-up calls, its rounds of
    ``calls_for(nbytes)`` calls each and one verified call, priced at its world's size (the harness is
    HARNESS_S); and its world's start-up, once a world (``started``: the worlds counted so far)."""
    price = _world_price(item)
    world = (item.backend, item.world_size)
    startup = 0.0 if world in started else price.startup_s
    started.add(world)
    return startup + case_seconds(item, rounds.dist_rounds, rounds.dist_warmup, price, overhead_s=0.0)


def _on_accelerator(item: Any) -> bool:
    """Whether a scenario or concurrent case runs on an accelerator (the 2-rank world runs on the host
    under --xfer-simulate)."""
    if _distributed(item):
        return False
    return any(d != "cpu" for d in (getattr(item, "src", "cpu"), getattr(item, "dst", "cpu")))


def _host_call(case: Case) -> Case:
    """What a simulated case runs on the host (transfers._verify_once): the case with both ends on it."""
    return dataclasses.replace(case, src="cpu", dst="cpu")


def _harness_seconds(item: Any, simulated: bool, verified: set[Case]) -> float:
    """The harness's real seconds for one planned item: a fixed cost and passes over the bytes it moves
    for real. On a simulated accelerator, a scenario or concurrent case moves none (it is priced), and a
    core case only when it is the first of its host call (``verified``: those seen so far)."""
    nbytes = int(getattr(item, "nbytes", 0) or 0)
    if not simulated:
        return HARNESS_S + HARNESS_COPIES * nbytes / (CONSERVATIVE_GBPS * 1e9)
    if not isinstance(item, Case) or _host_call(item) in verified:
        return SIMULATED_HARNESS_S
    verified.add(_host_call(item))
    return SIMULATED_HARNESS_S + HARNESS_COPIES * nbytes / (CONSERVATIVE_GBPS * 1e9)


def _family_seconds(item: Any, backend: Any, rounds: Rounds, on_simulated: bool) -> tuple[float, bool]:
    """A scenario's or concurrent case's seconds and whether they are simulated. On a simulated accelerator,
    its calls as the spec prices them (its family's price, families.registry.priced), in the rounds the run
    gives them: a fixed number where a round has an untimed setup, else pytest-benchmark's after the suite's
    warm-up calls. Elsewhere a conservative call of ``CONSERVATIVE_CALL_S`` plus its bytes at ``CONSERVATIVE_GBPS``."""
    if on_simulated:
        from ..families.registry import fixed_rounds, priced

        price = priced(item, backend.spec)
        if price is None:  # the spec has no price for it: the run skips it
            return 0.0, True
        if (fixed := fixed_rounds(item, price, rounds.profile)) is not None:
            return fixed * (price.call_s + price.around_s), True
        return benchmark_seconds(price.call_s, rounds, backend.spec.noise) + WARMUP_CALLS * price.call_s, True
    call = CONSERVATIVE_CALL_S + int(getattr(item, "nbytes", 0) or 0) / (CONSERVATIVE_GBPS * 1e9)
    return benchmark_seconds(call, rounds), False


def estimate(planned: Sequence[Any], backend: Any, rounds: Rounds) -> Estimate:
    """The estimate of these planned items (core cases, scenarios, concurrent and distributed cases)."""
    result = Estimate()
    verified: set[Case] = set()
    worlds: set[tuple[str, int]] = set()
    for item in planned:
        result.cases[item.op] += 1
        on_simulated = bool(backend.simulated) and (
            any(d != "cpu" for d in item.devices) if isinstance(item, Case) else _on_accelerator(item))
        result.real_s += _harness_seconds(item, on_simulated, verified)
        if isinstance(item, Case):
            seconds, simulated = _core_seconds(item, backend, rounds)
        elif _distributed(item):
            seconds, simulated = _distributed_seconds(item, rounds, worlds), False
        else:
            seconds, simulated = _family_seconds(item, backend, rounds, on_simulated)
        if simulated:
            result.simulated_s += seconds
        else:
            result.real_s += seconds
    return result


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.1f} s"


def estimate_lines(found: Estimate, peers: dict[str, Any] | None) -> list[str]:
    """What is printed before the first case runs."""
    total = sum(found.cases.values())
    families = ", ".join(f"{op} {n}" for op, n in sorted(found.cases.items()))
    lines = [f"xferbench: {total} cases planned ({families})"]
    if peers:
        lines.append(f"xferbench: peer pairs {peers['mode']} ({peers['reason']}); swept at every size: "
                     f"{len(peers['swept_pairs'])} of {len(peers['classes'])} pairs, the others at up to 4 sizes")
    if found.simulated_s:
        lines.append(f"xferbench: estimated run time {_minutes(found.simulated_s)} of simulated clock "
                     f"+ {_minutes(found.real_s)} on the real clock (host and distributed cases, the harness: a conservative "
                     "figure)")
    else:
        lines.append(f"xferbench: estimated run time {_minutes(found.real_s)} (a conservative figure: "
                     f"{CONSERVATIVE_CALL_S * 1e6:.0f} us + bytes at {CONSERVATIVE_GBPS:g} GB/s a call, "
                     f"{HARNESS_S:g} s + {HARNESS_COPIES} passes over the bytes of harness a case)")
    return lines


def outcome_lines(found: Estimate, simulated_s: float, wall_s: float) -> list[str]:
    """What is printed at the end: the estimate against the clocks that ran."""
    lines = []
    if found.simulated_s:
        ratio = simulated_s / found.simulated_s
        lines.append(f"xferbench: simulated clock {_minutes(simulated_s)} against {_minutes(found.simulated_s)} "
                     f"estimated (actual / estimate = {ratio:.2f})")
    lines.append(f"xferbench: wall clock {_minutes(wall_s)} against {_minutes(found.real_s)} estimated on the real clock "
                 f"(actual / estimate = {wall_s / found.real_s:.2f})" if found.real_s else
                 f"xferbench: wall clock {_minutes(wall_s)}")
    return lines


_ESTIMATE = pytest.StashKey[tuple[Estimate, Any, float, float]]()


def _planned(items: Sequence[pytest.Item]) -> list[Any]:
    """The xferbench case each collected, unskipped item runs."""
    found = []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        names = ("xfer_case", "xfer_dist_case")
        case = next((params[name] for name in names if name in params), None)
        block = block_of(item)
        if block is not None and block.index > 0:
            continue  # a case's blocks share its --benchmark-max-time (blocks.py): priced once, as the case
        if case is not None and item.get_closest_marker("skip") is None:
            found.append(case)
    return found


def pytest_collection_finish(session: pytest.Session) -> None:
    config = session.config
    if not configured(config) or not hasattr(config.option, "benchmark_max_time"):
        return
    settings = settings_of(config)
    found = estimate(_planned(session.items), settings.backend, Rounds.of(config))
    clock = getattr(settings.backend, "clock", None)  # the simulated machine's
    config.stash[_ESTIMATE] = (found, clock, clock.now if clock else 0.0, time.perf_counter())
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        for line in estimate_lines(found, settings.peers.as_json() if settings.peers else None):
            reporter.write_line(line)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if _ESTIMATE not in config.stash or config.getoption("collectonly"):
        return
    found, clock, simulated_start, wall_start = config.stash[_ESTIMATE]
    simulated = clock.now - simulated_start if clock else 0.0
    for line in outcome_lines(found, simulated, time.perf_counter() - wall_start):
        terminalreporter.write_line(line)
