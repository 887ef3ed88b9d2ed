"""What the two families of copies between GPUs share (peer_bidir, peer_all): the GPUs they need, one
queued GPU-to-GPU copy, the call that queues every leg, and its price on the simulated machine.

Copies between GPUs at once share each GPU's link (``peer_copy_caps``): a GPU sending (or
receiving) k of them gives each 1/k of the ``peer`` path's bandwidth, and both directions count
together unless ``peer_duplex``; all of them together get ``shared_peer_GBps`` at most (a PCIe
switch; none: a non-blocking NVSwitch).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from ..cases import Skipped
from .base import Prepared, Priced, Sync, then_sync
from .concurrent import Concurrent, Planned, cuda_gpus, equal, pattern, require_cuda, streamed

__all__ = ["peer_copy_caps", "peer_gpus", "prepare_peer", "price_peer"]


def peer_gpus(op: str, devices: Sequence[str], least: int, why: str) -> tuple[list[str], list[Planned]]:
    """The GPUs a peer family runs on, or the one skip line saying why there are none (the host is not needed)."""
    gpus, skip = cuda_gpus(op, devices, host=False)
    if not skip and len(gpus) < least:
        count = {2: "two", 3: "three"}[least]
        skip = [Skipped(f"{op}-needs-{count}-accelerators", f"{op} {why}; it needs {least} or more GPUs, found "
                                                             f"{len(gpus)} ({', '.join(gpus)})")]
    return (gpus, []) if not skip else ([], skip)


def _peer_leg(src: str, dst: str, shape: tuple[int, ...]) -> tuple[Callable[[], None], Any, Any]:
    """One GPU-to-GPU copy, queued on a stream of its own on its source, with its source and destination.

    PyTorch queues a copy between GPUs on the source's current stream, which first waits for the
    destination's current stream, and then makes that stream wait for the copy (its
    copy_device_to_device). The destination's current stream stays its default one: nothing of this
    call is queued there before the copy, so no copy waits for another, and after it the default
    stream holds the copy, so the deadline's event there (``DeviceBackend.wait``) ends with it."""
    import torch

    source, target = pattern(shape, src), pattern(shape, dst).zero_()
    send = streamed(src)

    def copy() -> None:
        with torch.cuda.stream(send):
            target.copy_(source, non_blocking=True)
    return copy, source, target


def prepare_peer(c: Concurrent, sync: Sync) -> Prepared:
    """Every leg of ``c`` queued, then every GPU synchronized. The check zeroes every destination and
    makes one more call, so what it compares is that call's doing."""
    require_cuda(c)
    import torch

    legs = [_peer_leg(src, dst, c.shape) for src, dst in c.legs]
    access = all(torch.cuda.can_device_access_peer(torch.device(s).index, torch.device(d).index) for s, d in c.legs)
    sync()

    def call() -> None:
        for copy, _, _ in legs:  # every copy is queued before any is waited for, so they all run at once
            copy()
        sync()

    def check(_: Any) -> None:
        for _, _, target in legs:
            target.zero_()
        sync()
        call()
        for (src, dst), (_, source, target) in zip(c.legs, legs, strict=True):
            equal(target, source, f"{c.id} {src}->{dst}")
    return Prepared(call, check=check, extra={"peer_access": access})


def peer_copy_caps(legs: Sequence[tuple[str, str]], GBps: float, duplex: bool, shared: float | None) -> list[float]:
    """The bandwidth each of ``legs`` (GPU-to-GPU copies running at once, (source, destination)) gets: the
    ``peer`` path's ``GBps`` shared fairly by the copies on its busiest end (the copies its source sends and its
    destination receives; with ``duplex`` off, every copy either end takes part in), and ``shared / len(legs)``
    at most. A copy alone keeps the path's bandwidth."""
    sends, receives = Counter(s for s, _ in legs), Counter(d for _, d in legs)

    def load(gpu: str, sending: bool) -> int:
        return (sends[gpu] if sending else receives[gpu]) if duplex else sends[gpu] + receives[gpu]

    caps = [GBps / max(load(src, True), load(dst, False)) for src, dst in legs]
    return [min(cap, shared / len(legs)) if shared is not None else cap for cap in caps]


def price_peer(c: Concurrent, m: Priced, sync: Sync) -> Prepared:
    """Each leg queued on its source, on a stream of its own, at its share of the links."""
    caps = peer_copy_caps(c.legs, m.spec.paths["peer"].GBps, m.spec.peer_duplex, m.spec.shared_peer_GBps)
    legs = [lambda src=src, dst=dst, cap=cap: m.copy("peer", c.size, src, waits=False, stream=f"peer->{dst}", cap=cap)
            for (src, dst), cap in zip(c.legs, caps, strict=True)]
    return Prepared(then_sync(sync, *legs), extra={"peer_access": True})
