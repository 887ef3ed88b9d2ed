"""What every scenario and concurrent family is: a plan, a preparation and a price, with its sizes.

In the spirit of nvbandwidth's one class per testcase plus one line in ``createTestcases()``:
each family is one folder of ``xferbench.families``, listed there once; its ``run.py`` holds a
``FAMILY`` (a ``ScenarioFamily``) and the code it names, its ``__init__.py`` its title, caption,
kind and finding (its record, shared with the analysis side):

- ``plan(devices, sizes)``: the cases a machine gets (``Scenario`` or ``Concurrent`` records,
  and ``Skipped`` lines), over ``sizes[profile]``; ``plan(devices, sizes, peers)`` for a family
  that follows the peer plan (``peers=True``: the pairs ``--xfer-peer-pairs`` sweeps);
- ``prepare(case, sync)``: the real calls to time, as a ``Prepared``;
- ``price(case, priced, sync)``: the same calls priced by the simulated machine (``Priced``);
- ``finding``: the record's sentences for the report (its folder's ``__init__.py``), or None.

``Priced`` holds the simulated calls a price is made of, in the spec's terms
(docs/simulated-machine.md): a copy is a launch (``launch_us``) and ``alpha + n/GBps`` of
device time on its path, waited for when blocking or pageable; a copy kernel costs the ``d2d``
path's time for the bytes it writes, times ``kernel_slowdown``; a host-side copy the bytes it
writes at ``host_copy_GBps``; page-locking fresh memory, the bytes at ``pin_GBps``. No data
moves in a price; its figures, like every simulated one, are never measurements.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ...families import Family, family
from ..cases import PROFILES, PeerPlan, PlannedCase, Skipped
from ..hardware.devices import accelerator_index
from ..simulate import SimBackend
from ..timing import synchronized

__all__ = ["MiB", "Prepared", "Priced", "ScenarioFamily", "Sync", "device_sync", "sizes", "synced", "then_sync"]

C = TypeVar("C", bound=PlannedCase)

Sync = Callable[[], None]

#: The unit the families' sizes are written in.
MiB = 2**20


@dataclass
class Prepared:
    """What to time: a target, an untimed setup run before every round (to put state back, e.g. move a
    module home), an untimed teardown, a check run on the result after timing, and extra_info to add.
    ``close`` runs once after the case's last call, also when timing fails: what the calls hold across
    rounds (a DataLoader's worker processes) must not outlive the case."""

    target: Callable[[], Any]
    setup: Callable[[], None] | None = None
    teardown: Callable[[], None] | None = None
    check: Callable[[Any], None] = lambda result: None
    extra: dict[str, Any] = field(default_factory=dict)
    close: Callable[[], None] | None = None


class Priced:
    """The calls a simulated variant is made of, each charged to the simulated clocks."""

    def __init__(self, backend: SimBackend) -> None:
        self.backend, self.spec = backend, backend.spec

    def copy(self, path: str, nbytes: int, device: str, *, waits: bool, stream: str | None = None,
             cap: float | None = None) -> None:
        """One copy on ``path`` (its bandwidth capped at ``cap``), queued on ``device``."""
        seconds = self.spec.paths[path].capped(cap).seconds(nbytes)
        self.backend.issue(self.spec.launch_us * 1e-6, index(device), seconds, waits, stream)

    def kernel(self, written: int, device: str) -> None:
        """A copy kernel on ``device`` writing ``written`` bytes (queued, the host does not wait)."""
        seconds = self.spec.paths["d2d"].seconds(written) * self.spec.kernel_slowdown
        self.backend.issue(self.spec.launch_us * 1e-6, index(device), seconds, False)

    def host_copy(self, written: int) -> None:
        self.backend.issue(written / (self.spec.host_copy_GBps * 1e9), None, 0.0, False)

    def pin(self, nbytes: int) -> None:
        self.backend.issue(nbytes / (self.spec.pin_GBps * 1e9), None, 0.0, False)

    def dispatch(self, calls: int = 1) -> None:
        self.backend.issue(calls * self.spec.dispatch_ns * 1e-9, None, 0.0, False)

    def queue(self, device: str, seconds: float) -> None:
        """Device work of ``seconds`` (a sleep kernel) queued on ``device``."""
        self.backend.issue(self.spec.launch_us * 1e-6, index(device), seconds, False)


def index(device: str) -> int:
    """The simulated accelerator ``device`` names."""
    found = accelerator_index(device)
    assert found is not None, f"{device} is not a simulated accelerator"
    return found


def device_sync(devices: Sequence[str], backend: Any, deadline_s: float | None = None) -> Sync:
    """A synchronize of every accelerator among ``devices`` on ``backend`` (a real one or the simulated machine);
    with ``deadline_s``, each gives up after that long and raises Wedged (``timing.synchronized``)."""
    return synchronized(lambda: None, devices, backend, deadline_s)


def synced(fn: Callable[[], Any], sync: Sync) -> Callable[[], Any]:
    """``fn`` followed by a synchronize of every device the case touches; returns fn's result."""
    def call() -> Any:
        result = fn()
        sync()
        return result
    return call


def then_sync(sync: Sync, *steps: Callable[[], None]) -> Callable[[], None]:
    """Each of ``steps`` in turn, then a synchronize (a price's call)."""
    def call() -> None:
        for step in steps:
            step()
        sync()
    return call


def sizes(quick: tuple[int, ...], full: tuple[int, ...]) -> dict[str, tuple[int, ...]]:
    """What a family sweeps per --xfer-profile."""
    return {"quick": quick, "full": full}


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
