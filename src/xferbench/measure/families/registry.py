"""How the plugin plans and runs a case of any scenario or concurrent family.

Each family is a folder of ``xferbench.families`` (``<op>/run.py`` holds its ``FAMILY``: plan, sizes,
preparation and price), listed once there in report order; this module reads the run modules of that one
list, so a new family needs no line here. The family folders never import one another, nor this module
(import-linter checks both).
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module
from typing import TYPE_CHECKING, Any

from ... import families
from ...families.base import FAMILIES
from ..cases import Case, PeerPlan, PlannedCase, Skipped
from ..hardware.devices import DeviceBackend, Wedged, accelerator_index
from ..simulate import SimBackend
from ..timing import sync_rule
from .base import ScenarioFamily
from .concurrent import PEER_OPS, Concurrent, time_concurrent
from .scenario import Scenario, time_scenario

if TYPE_CHECKING:
    from ..distributed.operations import DistCase

    #: Every kind of planned case has the one interface (mypy checks each against the protocol here).
    CASE_TYPES: tuple[type[PlannedCase], ...] = (Case, Scenario, Concurrent, DistCase)

__all__ = ["SCENARIO_FAMILIES", "plan", "run", "simulator_for"]

#: The kinds of family whose folder has a run.py.
RUN_KINDS = ("scenario", "concurrent")


def _run_of(op: str) -> ScenarioFamily[Any]:
    """The ``FAMILY`` of ``families/<op>/run.py``: imported here, by name, so that importing the records (the
    analysis side) never loads what needs torch."""
    try:
        module = import_module(f"{families.__name__}.{op}.run")
    except ModuleNotFoundError as missing:
        raise ValueError(f"the {FAMILIES[op].kind} family {op!r} has no {families.__name__}.{op}.run "
                         f"({missing}): its plan, preparation and price live there") from None
    return module.FAMILY


def _registered(objects: Sequence[ScenarioFamily[Any]]) -> dict[str, ScenarioFamily[Any]]:
    """By op; an op twice, or one without a scenario or concurrent record in xferbench.families, is refused."""
    table: dict[str, ScenarioFamily[Any]] = {}
    for obj in objects:
        if obj.op in table:
            raise ValueError(f"two scenario families are named {obj.op!r}")
        if obj.record.kind not in RUN_KINDS:
            raise ValueError(f"{obj.op!r} is a {obj.record.kind} family in xferbench.families, not a scenario or concurrent one")
        table[obj.op] = obj
    return table


#: Every scenario and concurrent family, by op, in report order.
SCENARIO_FAMILIES: dict[str, ScenarioFamily[Any]] = _registered(
    [_run_of(op) for op, record in FAMILIES.items() if record.kind in RUN_KINDS])


def plan(op: str, devices: Sequence[str], profile: str, peers: PeerPlan | None = None) -> list[PlannedCase | Skipped]:
    """The cases (and skip lines) of scenario or concurrent family ``op`` on ``devices``; ``peers``: the
    run's peer plan (None: every GPU pair), which the peer families follow."""
    if op not in SCENARIO_FAMILIES:
        raise ValueError(f"unknown scenario family {op!r}; expected one of {', '.join(SCENARIO_FAMILIES)}")
    return SCENARIO_FAMILIES[op].cases(devices, profile, peers)


def run(case: PlannedCase, benchmark: Any, backend: DeviceBackend, profile: str = "quick") -> dict[str, Any]:
    """Time one scenario or concurrent case with ``benchmark``, check it, fill in extra_info.

    Raises CannotRun (the caller skips) when the machine cannot run it, or when one of its
    devices has a stuck copy (a synchronize there would never return)."""
    from ..transfers import mark_wedged, refuse_stuck  # here: transfers imports torch, which loading the plugin must not

    obj = SCENARIO_FAMILIES[case.op]
    if not isinstance(case, Scenario | Concurrent):
        raise TypeError(f"{case.id}: not a scenario or concurrent case")
    refuse_stuck(case.devices)
    simulator = simulator_for(backend, case.devices)
    if (rule := sync_rule(case.devices, case.op in PEER_OPS)) is not None:
        benchmark.extra_info["sync_rule"] = rule  # a peer family's synchronize has a deadline (concurrent._synchronizer)
    try:
        if isinstance(case, Concurrent):
            return time_concurrent(case, lambda sync: obj.prepared(case, simulator, sync), benchmark, backend, simulator)
        return time_scenario(case, lambda sync: obj.prepared(case, simulator, sync), benchmark, backend, simulator, profile)
    except Wedged:  # a stuck peer copy, or a sticky CUDA error on a synchronize: nothing more runs on its devices
        mark_wedged(case.devices, case.id)
        raise


def simulator_for(backend: Any, devices: Sequence[str]) -> SimBackend | None:
    """The simulated machine that prices a case on ``devices`` instead of running it: only a
    simulated backend, and only for a case on its accelerators. None on a real backend."""
    on_accelerator = any(accelerator_index(d) is not None for d in devices)
    return backend if isinstance(backend, SimBackend) and on_accelerator else None
