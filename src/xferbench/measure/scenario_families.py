"""Every scenario and concurrent family as one object, registered once: its plan and sizes,
its preparation, its price on the simulated machine, and (through its record) its finding.

In the spirit of nvbandwidth's one class per test plus one line in the list. A family's
title, caption, kind and finding are its record in ``families.py`` (shared with the analysis
side); what it runs is here, one ``ScenarioFamily`` per op:

- ``plan(devices, sizes)``: the cases a machine gets (``Scenario`` or ``Concurrent`` records,
  and ``Skipped`` lines), over ``sizes[profile]``; ``plan(devices, sizes, peers)`` for a family
  that follows the peer plan (``peers=True``: the pairs ``--xfer-peer-pairs`` sweeps);
- ``prepare(case, sync)``: the real calls to time (``scenarios.py``, ``concurrent.py``);
- ``price(case, priced, sync)``: the same calls priced by the simulated machine
  (``simulate_scenarios.py``);
- ``finding``: the record's sentences for the report (``family_findings.py``), or None.

Adding one: a plan, a prepare and a price, one line in ``_FAMILIES``, one record in
``families.py`` and one ``bench/test_*.py`` marked with its op (docs/contributing.md).
This module sits above the three it gathers, which never import it (import-linter checks it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..families import Family, family
from .cases import PROFILES, Case, PeerPlan, PlannedCase, Skipped
from .concurrent import (
    PEER_OPS,
    Concurrent,
    plan_all_gpus_host,
    plan_bidir,
    plan_copy_kind,
    plan_numa,
    plan_peer_all,
    plan_peer_bidir,
    prepare_all_gpus_host,
    prepare_bidir,
    prepare_copy_kind,
    prepare_numa,
    prepare_peer,
    time_concurrent,
)
from .hardware.devices import DeviceBackend, Wedged, accelerator_index
from .scenarios import (
    Prepared,
    Scenario,
    Sync,
    plan_forward,
    plan_module_to,
    plan_on_gpus,
    plan_placement,
    prepare_batching,
    prepare_copy_overlap,
    prepare_cuda_vs_to,
    prepare_forward,
    prepare_module_to,
    prepare_pin_memory,
    prepare_placement,
    prepare_state_dict,
    prepare_sync_stall,
    time_scenario,
)
from .simulate import SimBackend
from .simulate_scenarios import (
    Priced,
    price_all_gpus_host,
    price_batching,
    price_bidir,
    price_copy_kind,
    price_copy_overlap,
    price_cuda_vs_to,
    price_forward,
    price_module_to,
    price_numa,
    price_peer,
    price_pin_memory,
    price_placement,
    price_state_dict,
    price_sync_stall,
)
from .timing import sync_rule

if TYPE_CHECKING:
    from .distributed.operations import DistCase

    #: Every kind of planned case has the one interface (mypy checks each against the protocol here).
    CASE_TYPES: tuple[type[PlannedCase], ...] = (Case, Scenario, Concurrent, DistCase)

__all__ = ["SCENARIO_FAMILIES", "ScenarioFamily", "plan", "run", "simulator_for"]

C = TypeVar("C", bound=PlannedCase)

MiB = 2**20


@dataclass(frozen=True)
class ScenarioFamily(Generic[C]):
    """One scenario or concurrent family: what a machine gets, and how each case is run or priced."""

    op: str
    #: Per --xfer-profile, what ``plan`` sweeps: parameters (module_to, state_dict), images
    #: (placement), a batch of rows (forward), bytes (the others; one payload for concurrent ones).
    sizes: Mapping[str, tuple[int, ...]]
    plan: Callable[[Sequence[str], Sequence[int]], list[C | Skipped]]
    prepare: Callable[[C, Sync], Prepared]
    price: Callable[[C, Priced, Sync], Prepared]
    #: Whether ``plan`` takes the run's peer plan as a third argument (the peer families: its pairs).
    peers: bool = False

    def __post_init__(self) -> None:
        missing = [hook for hook in ("plan", "prepare", "price") if not callable(getattr(self, hook))]
        missing += [f"sizes[{p!r}]" for p in PROFILES if not self.sizes.get(p)]
        if missing:
            raise ValueError(f"scenario family {self.op!r} lacks {', '.join(missing)}")

    @property
    def record(self) -> Family:
        """Its record in the registry: title, caption, kind and finding."""
        return family(self.op)

    @property
    def finding(self) -> Callable[[Any], list[str]] | None:
        return self.record.finding

    def cases(self, devices: Sequence[str], profile: str, peers: PeerPlan | None = None) -> list[C | Skipped]:
        if self.peers:
            return self.plan(devices, self.sizes[profile], peers)  # type: ignore[call-arg]
        return self.plan(devices, self.sizes[profile])

    def prepared(self, case: C, simulator: SimBackend | None, sync: Sync) -> Prepared:
        """The calls to time: the simulated machine's prices when ``simulator`` is given, else the real ones."""
        return self.prepare(case, sync) if simulator is None else self.price(case, Priced(simulator), sync)


def _sizes(quick: tuple[int, ...], full: tuple[int, ...]) -> dict[str, tuple[int, ...]]:
    return {"quick": quick, "full": full}


_FAMILIES: tuple[ScenarioFamily[Any], ...] = (
    ScenarioFamily("module_to", _sizes((10**3, 10**5, 10**7), (10**3, 10**4, 10**5, 10**6, 10**7, 10**8)),
                   plan_module_to, prepare_module_to, price_module_to),
    ScenarioFamily("forward", _sizes((64,), (1, 64, 512)),
                   plan_forward, prepare_forward, price_forward),
    ScenarioFamily("sync_stall", _sizes((4,), (4, MiB)),
                   plan_on_gpus("sync_stall", ("item", "cpu", "tolist", "str", "nonblocking_event"), "bytes",
                                to_host=True),
                   prepare_sync_stall, price_sync_stall),
    ScenarioFamily("pin_memory", _sizes((MiB, 64 * MiB), (2**16, MiB, 16 * MiB, 64 * MiB, 256 * MiB)),
                   plan_on_gpus("pin_memory", ("pin_cold", "pin_cached", "to", "pin_cached_then_to",
                                               "reused_pinned_to", "pinned_to"), "bytes"),
                   prepare_pin_memory, price_pin_memory),
    ScenarioFamily("placement", _sizes((8, 64), (8, 32, 64, 256)),
                   plan_placement, prepare_placement, price_placement),
    ScenarioFamily("cuda_vs_to", _sizes((64 * MiB,), (MiB, 64 * MiB)),
                   plan_on_gpus("cuda_vs_to", ("cuda", "to_str", "to_device", "to_nonblocking", "module_to",
                                               "module_cuda"), "bytes"),
                   prepare_cuda_vs_to, price_cuda_vs_to),
    ScenarioFamily("batching", _sizes((4 * MiB,), (256 * 2**10, 4 * MiB, 16 * MiB)),
                   plan_on_gpus("batching", ("many_small", "cat_then_one", "one_copy"), "bytes"),
                   prepare_batching, price_batching),
    ScenarioFamily("copy_overlap", _sizes((64 * MiB,), (MiB, 16 * MiB, 64 * MiB, 256 * MiB)),
                   plan_on_gpus("copy_overlap", ("kernel_alone", "copy_alone", "sequential", "overlapped"), "bytes"),
                   prepare_copy_overlap, price_copy_overlap),
    ScenarioFamily("state_dict", _sizes((10**5, 10**7), (10**4, 10**5, 10**6, 10**7, 10**8)),
                   plan_on_gpus("state_dict", ("cpu", "nonblocking"), "params", to_host=True),
                   prepare_state_dict, price_state_dict),
    # Copies at once, copy paths and NUMA: sizes are one payload (one GPU, one direction).
    ScenarioFamily("bidir", _sizes((64 * MiB,), (4 * MiB, 64 * MiB, 256 * MiB)),
                   plan_bidir, prepare_bidir, price_bidir),
    ScenarioFamily("all_gpus_host", _sizes((64 * MiB,), (4 * MiB, 64 * MiB, 256 * MiB)),
                   plan_all_gpus_host, prepare_all_gpus_host, price_all_gpus_host),
    ScenarioFamily("copy_kind", _sizes((64 * MiB,), (MiB, 16 * MiB, 256 * MiB)),
                   plan_copy_kind, prepare_copy_kind, price_copy_kind),
    ScenarioFamily("numa", _sizes((256 * MiB,), (64 * MiB, 256 * MiB)),
                   plan_numa, prepare_numa, price_numa),
    # Between GPUs: sizes where the copies are at their bandwidth, not the peer family's whole sweep. A ring's
    # call launches and synchronizes every GPU in turn: at 256 MiB (0.7 ms at 370 GB/s) that costs it a few
    # percent against one copy alone, at 64 MiB a third. peer_bidir's figures alone at the ring's sizes are
    # its one-way reference. Pairs: the peer plan's.
    ScenarioFamily("peer_bidir", _sizes((256 * MiB,), (64 * MiB, 256 * MiB, 2**30)),
                   plan_peer_bidir, prepare_peer, price_peer, peers=True),
    ScenarioFamily("peer_all", _sizes((256 * MiB,), (256 * MiB, 2**30)),
                   plan_peer_all, prepare_peer, price_peer, peers=True),
)


def _registered(objects: Sequence[ScenarioFamily[Any]]) -> dict[str, ScenarioFamily[Any]]:
    """By op; an op twice, or one without a scenario or concurrent record in families.py, is refused."""
    table: dict[str, ScenarioFamily[Any]] = {}
    for obj in objects:
        if obj.op in table:
            raise ValueError(f"two scenario families are named {obj.op!r}")
        if obj.record.kind not in ("scenario", "concurrent"):
            raise ValueError(f"{obj.op!r} is a {obj.record.kind} family in families.py, not a scenario or concurrent one")
        table[obj.op] = obj
    return table


#: Every scenario and concurrent family, by op.
SCENARIO_FAMILIES: dict[str, ScenarioFamily[Any]] = _registered(_FAMILIES)


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
    from .transfers import mark_wedged, refuse_stuck  # here: transfers imports torch, which loading the plugin must not

    obj = SCENARIO_FAMILIES[case.op]
    if not isinstance(case, Scenario | Concurrent):
        raise TypeError(f"{case.id}: not a scenario or concurrent case")
    refuse_stuck(case.devices)
    simulator = simulator_for(backend, case.devices)
    if (rule := sync_rule(case.devices, case.op in PEER_OPS)) is not None:
        benchmark.extra_info["sync_rule"] = rule  # a peer family's synchronize has a deadline (concurrent._synchronizer)
    if isinstance(case, Concurrent):
        return time_concurrent(case, lambda sync: obj.prepared(case, simulator, sync), benchmark, backend,
                               simulator)
    try:
        return time_scenario(case, lambda sync: obj.prepared(case, simulator, sync), benchmark, backend,
                             simulator, profile)
    except Wedged:  # a sticky CUDA error on a synchronize: nothing more runs on its devices, as after a stuck copy
        mark_wedged(case.devices, case.id)
        raise


def simulator_for(backend: Any, devices: Sequence[str]) -> SimBackend | None:
    """The simulated machine that prices a case on ``devices`` instead of running it: only a
    simulated backend, and only for a case on its accelerators. None on a real backend."""
    on_accelerator = any(accelerator_index(d) is not None for d in devices)
    return backend if isinstance(backend, SimBackend) and on_accelerator else None
