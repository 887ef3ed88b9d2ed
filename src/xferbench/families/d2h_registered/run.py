"""d2h_registered: ``.cpu()`` taken apart. A device-to-host copy into fresh pageable memory (``.cpu()``), into a
pageable buffer touched before timing (``copy_``), into that kind of buffer registered with the driver
(``cudaHostRegister`` through ``torch.cuda.cudart()``, as ``torch.cuda._pin_memory_utils`` does), and into
pinned memory (``cudaHostAlloc``).

Each step removes one factor of the ``.cpu()`` ladder: ``cpu`` - ``pageable`` is the fresh destination (its
allocation and page faults); ``pageable`` - ``registered`` is the driver's staging copy through its own pinned
buffer, on the same kind of memory; ``registered`` against ``pinned`` says whether registering a buffer is as
good as allocating it pinned. The rows carry what the ladder reads in their identity: ``method`` (``cpu`` or
``copy_``) and ``host_memory`` (``pageable``, ``registered`` or ``pinned``).
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import Any

from ...contract import Identity
from ...measure.families.base import MiB, Prepared, Priced, ScenarioFamily, Sync, sizes, synced, then_sync
from ...measure.families.scenario import Scenario, plan_on_gpus

#: Each variant's call and host memory, as the ladder reads them, from the call users make down.
LADDER = {"cpu": ("cpu", "pageable"), "pageable": ("copy_", "pageable"), "registered": ("copy_", "registered"),
          "pinned": ("copy_", "pinned")}
#: cudaHostRegisterPortable: the registration holds in every CUDA context, as torch's own.
PORTABLE = 1


class RegisteredCopy(Scenario):
    """A case of this family: a scenario whose identity says its call and its host memory."""

    def identity(self) -> Identity:
        method, memory = LADDER[self.variant]
        return dataclasses.replace(super().identity(), method=method, host_memory=memory)


plan = plan_on_gpus("d2h_registered", tuple(LADDER), "bytes", to_host=True, kind=RegisteredCopy)


def register(host: Any) -> None:
    """Page-lock ``host``'s memory where it lies (cudaHostRegister), until ``host`` is gone.

    Raises CannotRun with the driver's error: a machine that refuses to lock this much memory
    (a container's limit on locked memory, say) cannot run the case."""
    import torch

    from ...measure.transfers import CannotRun

    cudart = torch.cuda.cudart()
    storage = host.untyped_storage()
    if error := int(cudart.cudaHostRegister(storage.data_ptr(), storage.nbytes(), PORTABLE)):
        raise CannotRun(f"cudaHostRegister of {storage.nbytes()} bytes failed with cudaError {error}")
    # The finalizer holds the storage, not the tensor: the memory is unregistered before it is freed.
    weakref.finalize(host, _unregister, cudart, storage).atexit = False


def _unregister(cudart: Any, storage: Any) -> None:
    cudart.cudaHostUnregister(storage.data_ptr())


def prepare(s: Scenario, sync: Sync) -> Prepared:
    import torch

    n = s.size // 4
    src = torch.ones(n, device=s.src)
    dst = torch.zeros(n, pin_memory=s.variant == "pinned")  # zeros: every page touched before timing
    if s.variant == "registered":
        register(dst)
    call = synced(src.cpu if s.variant == "cpu" else lambda: dst.copy_(src), sync)

    def check(out: Any) -> None:
        if not (out.device.type == "cpu" and out.numel() == n and bool((out == 1).all())):
            raise AssertionError(f"{s.id}: the host buffer does not hold the device's values")
        if s.variant == "registered" and not out.is_pinned():  # torch asks the driver: page-locked, as registered
            raise AssertionError(f"{s.id}: the registered buffer is not page-locked")
    return Prepared(call, check=check)


def price(s: Scenario, m: Priced, sync: Sync) -> Prepared:
    """Fresh or touched pageable memory: the pageable path, waited for (a fresh destination's faults are not
    priced); registered or pinned memory: the pinned path, waited for (copy_ blocks)."""
    path = "d2h_pageable" if LADDER[s.variant][1] == "pageable" else "d2h_pinned"
    return Prepared(then_sync(sync, lambda: m.copy(path, s.size, s.src, waits=True)))


FAMILY = ScenarioFamily("d2h_registered", sizes((64 * MiB,), (MiB, 64 * MiB, 2**30)), plan, prepare, price)
