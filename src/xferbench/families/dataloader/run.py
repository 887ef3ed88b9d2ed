"""dataloader: an input pipeline as a training loop runs it. A dataset that decodes every sample; on the first GPU a
step of set GPU work per call, fed per option (workers, pin_memory, non_blocking, prefetch_factor, a side stream);
to the host the loader alone, start-up, a fresh iterator's first batch, and short epochs (persistent_workers, start
methods). Every worker dies with the run (``die_with_run``)."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import math
import multiprocessing
import os
import signal
from collections.abc import Callable, Sequence
from typing import Any

from ...contract import Identity
from ...measure.cases import Skipped, accelerators
from ...measure.families.base import Prepared, Priced, ScenarioFamily, Sync, index, sizes
from ...measure.families.scenario import IMAGE, Scenario, sleep_cycles
from ...measure.simulate import Workers
from . import STEP_S

#: To the host: the loader alone per step, then (timed apart) start-up, first batches and short epochs.
HOST = ("w0", "w1", "w2", "w4", "w2-prefetch4", "first-w0", "first-w2", "epoch-w2", "epoch-w2-persistent")
#: Once, at the first batch size: starting workers does not depend on the batch.
ONCE = ("startup-w2",)
#: The other start methods' epochs: a fresh interpreter per worker, seconds a round (63 s of a 137 s quick CPU run),
#: so only the full profile (its second batch size) measures them.
START_METHODS = ("epoch-w2-forkserver", "epoch-w2-spawn")
#: On the first GPU: the step alone, the base (w2) and each option changed from it.
ON_GPU = ("alone", "w0", "w1", "w2", "w4", "w2-pageable", "w2-blocking", "w2-prefetch4", "w2-sidestream")
#: Distinct images the dataset holds as bytes (each sample decodes one of them).
POOL = 8
#: Batches of a short epoch.
EPOCH_BATCHES = 4
#: ImageNet's per-channel mean and standard deviation, as vision pipelines normalise.
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
PR_SET_PDEATHSIG = 1


class Batch(Scenario):
    """A case of this family: its variant names the loop (``w2-pageable``, ``epoch-w2-spawn``)."""

    @property
    def words(self) -> list[str]:
        return self.variant.split("-")

    @property
    def phase(self) -> str:
        """``steady`` (next() once started), ``alone`` (no loader), ``startup``, ``first`` or ``epoch``."""
        return self.words[0] if self.words[0] in ("alone", "startup", "first", "epoch") else "steady"

    @property
    def workers(self) -> int:
        return next((int(w[1:]) for w in self.words if w[0] == "w" and w[1:].isdigit()), 0)

    @property
    def pinned(self) -> bool:
        return self.dst != "cpu" and self.phase != "alone" and "pageable" not in self.words

    @property
    def non_blocking(self) -> bool:
        return self.dst != "cpu" and "blocking" not in self.words

    @property
    def prefetch(self) -> int:
        return 4 if "prefetch4" in self.words else 2

    @property
    def nbytes(self) -> int:
        return self.size * math.prod(IMAGE) * 4  # decoded: float32

    def identity(self) -> Identity:
        memory = None if self.dst == "cpu" else "pinned" if self.pinned else "pageable"
        return Identity(self.op, self.variant, self.src, self.dst, self.nbytes, "float32", (self.size, *IMAGE),
                        host_memory=memory, non_blocking=self.non_blocking, variant=self.variant)


def plan(devices: Sequence[str], sizes: Sequence[int]) -> list[Batch | Skipped]:
    """The training steps first (a run cut short keeps them), then the loader alone."""
    gpus = accelerators(devices)
    return [*(Batch("dataloader", v, "cpu", gpus[0], n, "images") for n in sizes for v in ON_GPU if gpus),
            *(Batch("dataloader", v, "cpu", "cpu", n, "images") for i, n in enumerate(sizes)
              for v in HOST + (ONCE + (START_METHODS if len(sizes) > 1 else ()) if i == 0 else ())),
            *([] if gpus else [Skipped("dataloader-gpu-half", "dataloader's training steps need an accelerator; the "
                                                              f"devices measured are: {', '.join(devices)}")])]


class Images:
    """A map-style dataset whose every sample is decoded, as a vision pipeline's ToTensor and Normalize do: a uint8
    image made from its bytes (one of ``POOL``), converted to float32 and normalised per channel."""

    def __init__(self, length: int) -> None:
        import torch

        made = torch.Generator().manual_seed(0)
        self.pool = [bytearray(torch.randint(0, 256, (math.prod(IMAGE),), dtype=torch.uint8, generator=made).numpy())
                     for _ in range(POOL)]
        self.mean, self.std = torch.tensor(MEAN).view(3, 1, 1), torch.tensor(STD).view(3, 1, 1)
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> Any:
        import torch

        pixels = torch.frombuffer(self.pool[index % POOL], dtype=torch.uint8).view(IMAGE)
        return pixels.float().div_(255).sub_(self.mean).div_(self.std)


def die_with_run(run: int, worker: int) -> None:
    """A worker's first act: a parent-death signal (SIGKILL when its parent, the run or its forkserver, dies) and,
    should the run be gone already, an exit; so no worker outlives a run that is killed or ended by a signal."""
    with contextlib.suppress(OSError, AttributeError):  # not Linux: torch's own watch on the parent remains
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    try:
        os.kill(run, 0)
    except ProcessLookupError:
        os._exit(0)


def loader(b: Batch) -> Any:
    """The DataLoader of ``b``: its workers forked unless the variant names another start method."""
    from torch.utils.data import DataLoader

    from ...measure.transfers import CannotRun

    start = next((m for m in ("forkserver", "spawn") if m in b.words), "fork")
    if b.workers and start not in multiprocessing.get_all_start_methods():
        raise CannotRun(f"this platform has no {start} start method")
    if b.workers > len(os.sched_getaffinity(0)):
        raise CannotRun(f"{b.workers} workers on {len(os.sched_getaffinity(0))} CPUs would time the scheduler")
    length = EPOCH_BATCHES * b.size if b.phase == "epoch" else 2**40  # steady cases never reach the end
    workers: dict[str, Any] = {"prefetch_factor": b.prefetch, "multiprocessing_context": start,
                               "persistent_workers": "persistent" in b.words,
                               "worker_init_fn": functools.partial(die_with_run, os.getpid())} if b.workers else {}
    dataset: Any = Images(length)  # map-style by its two methods: torch's Dataset would import torch with the plan
    return DataLoader(dataset, batch_size=b.size, num_workers=b.workers, pin_memory=b.pinned, **workers)


def _steps(b: Batch, live: list[Any]) -> Callable[[], Any]:
    """One training step a call: the next batch to the device (with a side stream: the one copied there during the
    step before, the next one's copy queued), the step (it reads the batch, then a kernel of ``STEP_S``), and a
    wait for the step before, as a loop that reads the last loss does: the host loads while the GPU works."""
    import torch

    dev, cycles = torch.device(b.dst), sleep_cycles(b.dst, STEP_S)
    side = torch.cuda.Stream(dev) if "sidestream" in b.words else None
    fixed = torch.stack([Images(b.size)[i] for i in range(b.size)]).to(dev) if b.phase == "alone" else None
    ahead: list[Any] = []
    last: list[Any] = []

    def fetch() -> Any:
        with torch.cuda.stream(side) if side is not None else torch.cuda.device(dev):
            return next(live[0]).to(dev, non_blocking=b.non_blocking)

    def call() -> Any:
        with torch.cuda.device(dev):
            if side is not None:
                if not ahead:
                    ahead.append(fetch())
                torch.cuda.current_stream().wait_stream(side)
                batch = ahead.pop()
                batch.record_stream(torch.cuda.current_stream())
                ahead.append(fetch())
            else:
                batch = fixed if fixed is not None else fetch()
            batch.sum()
            torch.cuda._sleep(cycles)
            last.append(torch.cuda.Event())
            last[-1].record()
            if len(last) > 1:
                last.pop(0).synchronize()
        return batch
    return call


def prepare(b: Batch, sync: Sync) -> Prepared:
    data: Any = loader(b) if b.phase != "alone" else None
    live: list[Any] = []  # the iterator alive now (its workers), shut down by the teardown and by close

    def close() -> None:  # the workers (and pin-memory thread) ended now, joined: not whenever they are collected
        for iterator in [*live, getattr(data, "_iterator", None)]:  # a loader of persistent workers keeps its own
            getattr(iterator, "_shutdown_workers", lambda: None)()  # torch calls it from __del__
        live.clear()
        sync()

    def check(out: Any) -> None:
        if not (str(out.device) == b.dst and tuple(out.shape) == (b.size, *IMAGE) and str(out.dtype) == "torch.float32"):
            raise AssertionError(f"dataloader gave {out.dtype} {tuple(out.shape)} on {out.device}, not "  # survives -O
                                 f"float32 {(b.size, *IMAGE)} on {b.dst}")

    def start() -> Any:  # iter(): with workers, starts them (and the pin-memory thread)
        live.append(iter(data))
        return live[-1]

    if b.phase in ("startup", "first"):
        return Prepared(start if b.phase == "startup" else lambda: next(start()), teardown=close, close=close,
                        check=check if b.phase == "first" else lambda out: None)
    if b.phase == "epoch":
        return Prepared(lambda: list(data)[-1], check=check, close=close)
    try:
        if data is not None:
            for _ in range(b.workers * b.prefetch + 2):  # start-up and every prefetched batch out of the timing
                next(start() if not live else live[0])
        call = _steps(b, live) if b.dst != "cpu" else lambda: next(live[0])
    except BaseException:
        close()
        raise
    return Prepared(call, check=check, close=close)


def price(b: Batch, m: Priced, sync: Sync) -> Prepared:
    """The step priced on the simulated machine: the host takes the next batch from the workers' model
    (``simulate.Workers``: ``decode_GBps`` to make one, ``host_copy_GBps`` to pin it), copies it (waiting where
    pageable or blocking; on a side stream the step waits for it), queues ``STEP_S`` of work, and waits for the step
    before."""
    backend, gpu, n = m.backend, index(b.dst), b.nbytes
    pin = n / (m.spec.host_copy_GBps * 1e9) if b.pinned else 0.0
    workers = Workers(b.workers, n / (m.spec.decode_GBps * 1e9), pin, b.workers * b.prefetch, backend.clock.now)
    stream = "side" if "sidestream" in b.words else None
    before = [backend.clock.now]

    def call() -> None:
        if b.phase != "alone":
            if stream is not None:
                backend.join(gpu, stream)  # this step's batch was copied during the step before
            backend.clock.now = workers.take(backend.clock.now)  # the host waits for the batch (no workers: makes it)
            m.copy("h2d_pinned" if b.pinned else "h2d_pageable", n, b.dst, waits=not (b.pinned and b.non_blocking), stream=stream)
        m.queue(b.dst, STEP_S)
        backend.clock.now, before[0] = max(backend.clock.now, before[0]), backend.done(gpu)  # one step late

    for _ in range(b.workers * b.prefetch + 2):  # as prepare does: start-up and prefetched batches untimed
        call()
    return Prepared(call)


FAMILY = ScenarioFamily("dataloader", sizes((32,), (32, 128)), plan, prepare, price)
