"""A small training step run on the simulated machine and written as torch.profiler writes a trace (Kineto's current
format), so that ``xferbench price`` can be checked against costs known in advance, without a GPU.

The step (``STEP``): a forward kernel is queued; pinned copies are issued on a side stream the host never waits
for; a pageable batch is copied to the device (the host waits for the forward to drain first, as CUDA makes it);
a loss kernel is queued and ``.item()`` reads it back (a 4-byte copy to pageable memory, then a synchronize).
Every cost is the spec's (docs/simulated-machine.md), without its noise and drift; the trace is marked simulated.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path
from typing import Any

from xferbench.measure.simulate import MachineSpec, SimBackend, SimClock
from xferbench.output import write_atomic

__all__ = ["BATCH_BYTES", "FORWARD_S", "LOSS_S", "SIDE_BYTES", "SIDE_COPIES", "step_trace", "write_step_trace"]

#: The step's known work: the forward and loss kernels' device time, the pageable batch, the side-stream copies.
FORWARD_S, LOSS_S = 2e-3, 1e-3
BATCH_BYTES, SIDE_BYTES, SIDE_COPIES = 16 << 20, 1 << 20, 4
_PID, _TID = 1, 1


class _Recorder:
    """The trace's events as the simulated backend runs the step: host spans on one thread, GPU spans per stream."""

    def __init__(self, spec: MachineSpec) -> None:
        quiet = dataclasses.replace(spec, noise=0.0, drift=0.0)
        self.backend = SimBackend(quiet, SimClock())
        self.events: list[dict[str, Any]] = []
        self.correlations = itertools.count(1)

    @property
    def now(self) -> float:
        return self.backend.clock.now

    def span(self, cat: str, name: str, start: float, end: float, **args: Any) -> None:
        pid, tid = (0, args["stream"]) if cat in ("kernel", "gpu_memcpy") else (_PID, _TID)
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": start * 1e6,
                            "dur": (end - start) * 1e6, "args": args})

    def gpu(self, cat: str, name: str, call: str, device_s: float, waits: bool, stream: str | None = None,
            **args: Any) -> None:
        """One runtime call and the GPU work it queues on the default stream (7) or a side one."""
        backend, start, correlation = self.backend, self.now, next(self.correlations)
        backend.issue(self.backend.spec.launch_us * 1e-6, 0, device_s, waits, stream)
        done = backend.side_streams[(0, stream)] if stream else backend.busy_until[0]
        self.span("cuda_runtime", call, start, self.now if waits else start + backend.spec.launch_us * 1e-6,
                  correlation=correlation)
        self.span(cat, name, done - device_s, done, stream=9 if stream else 7, device=0, correlation=correlation,
                  **args)

    def sync(self) -> None:
        start = self.now
        self.backend.synchronize(0)
        self.span("cuda_runtime", "cudaStreamSynchronize", start, self.now, correlation=next(self.correlations))

    def copy(self, op: str, name: str, path: str, nbytes: int, waits: bool, stream: str | None = None) -> None:
        start = self.now
        self.gpu("gpu_memcpy", name, "cudaMemcpyAsync", self.backend.spec.paths[path].seconds(nbytes), waits, stream,
                 bytes=nbytes)
        if waits:
            self.sync()
        self.span("cpu_op", op, start, self.now)


def step_trace(spec: MachineSpec) -> dict[str, Any]:
    """The simulated step's trace (``STEP``), as a Kineto JSON document."""
    rec = _Recorder(spec)
    start = rec.now
    rec.gpu("kernel", "forward", "cudaLaunchKernel", FORWARD_S, False)
    for _ in range(SIDE_COPIES):
        rec.copy("aten::to", "Memcpy HtoD (Pinned -> Device)", "h2d_pinned", SIDE_BYTES, False, "side")
    rec.copy("aten::to", "Memcpy HtoD (Pageable -> Device)", "h2d_pageable", BATCH_BYTES, True)
    rec.gpu("kernel", "loss", "cudaLaunchKernel", LOSS_S, False)
    rec.copy("aten::_local_scalar_dense", "Memcpy DtoH (Device -> Pageable)", "d2h_pageable", 4, True)
    rec.span("user_annotation", "ProfilerStep#1", start, rec.now)
    name = f"{spec.name} (simulated)"
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": name}],
            "xferbench_simulated": spec.source or spec.name, "traceEvents": rec.events}


def write_step_trace(spec: MachineSpec, output: Path) -> Path:
    """Write the simulated step's trace to ``output`` (atomically)."""
    return write_atomic(output, json.dumps(step_trace(spec), indent=1))
