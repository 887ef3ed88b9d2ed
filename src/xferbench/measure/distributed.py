"""Transfers between processes and nodes with torch.distributed.

Two ways to run:

1. Inside ``pytest bench --benchmark-only``: a world of 2 on this machine, the pytest
   process as rank 0 and a helper process (``python -m xferbench.distributed
   --worker``) as rank 1, rendezvous over loopback TCP on a free port. Rank 0 tells
   the helper what to mirror (op, size, number of calls) with a small broadcast
   before each benchmark, outside the timed region.
2. Across nodes: ``torchrun --nnodes=N --nproc-per-node=M -m xferbench.distributed
   --out run.json`` runs the same operations on every rank with its own timing loop
   and writes a pytest-benchmark-compatible JSON (same data contract, plus
   ``world_size`` and ``backend``) that ``xferbench report`` and ``compare`` take.

Bandwidths follow nccl-tests: algbw = bytes / time; busbw = algbw x 2(n-1)/n for
all_reduce, (n-1)/n for all_gather and reduce_scatter, 1 for broadcast and
point-to-point. A rank that dies or never joins ends the run within the timeout
(default 60 s) with a message naming the rank and the rendezvous address.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..contract import Identity
from ..families import ops
from ..units import DTYPE_SIZES, first_line, format_size, parse_sizes
from .cases import Skipped

__all__ = [
    "DIST_OPS",
    "DistCase",
    "DistributedError",
    "World",
    "bus_factor",
    "build_dist_cases",
    "free_port",
    "world_backend",
    "pedantic_calls",
    "main",
]

DIST_OPS = ops("distributed")
DIST_SIZES = {"quick": "4B,1KiB,1MiB,16MiB", "full": "4B..64MiB:x4"}
DEFAULT_TIMEOUT_S = 60.0
LOOPBACK = "127.0.0.1"
_STOP = -1


class DistributedError(RuntimeError):
    """The world could not be formed or broke; the message names the rank and address."""


def bus_factor(op: str, world_size: int) -> float:
    """nccl-tests' bus bandwidth factor: busbw = algbw x factor."""
    n = world_size
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter"):
        return (n - 1) / n
    return 1.0


@dataclass(frozen=True)
class DistCase:
    op: str
    nbytes: int
    backend: str
    world_size: int
    device: str = "cpu"  # each rank's device kind: cpu, or cuda (rank r on cuda:r % local GPUs)
    dtype: str = "float32"

    @property
    def numel(self) -> int:
        return self.nbytes // DTYPE_SIZES[self.dtype]

    @property
    def id(self) -> str:
        return f"{self.op}-{format_size(self.nbytes)}-{self.dtype}-{self.backend}-x{self.world_size}"

    @property
    def point_to_point(self) -> bool:
        return self.op in ("send_recv", "isend_irecv")

    def identity(self) -> Identity:
        dst = f"rank1:{self.device}" if self.point_to_point else f"all:{self.device}"
        return Identity(self.op, self.op, f"rank0:{self.device}", dst, self.nbytes, self.dtype, (self.numel,),
                        non_blocking=self.op == "isend_irecv", world_size=self.world_size, backend=self.backend)

    def extra_info(self) -> dict[str, Any]:
        # A ping-pong call is a round trip: the payload crosses twice.
        return self.identity().extra_info() | {"round_trip": self.point_to_point,
                                               "bus_factor": bus_factor(self.op, self.world_size)}


def world_backend(devices: Sequence[str], requested: str, world_size: int = 2) -> str:
    """The backend for ``requested``: ``auto`` is nccl with one GPU per rank, else gloo."""
    if requested != "auto":
        return requested
    return "nccl" if sum(d.startswith("cuda:") for d in devices) >= world_size else "gloo"


def build_dist_cases(devices: Sequence[str], backend: str, profile: str, world_size: int = 2,
                     sizes: Sequence[object] | None = None) -> list[DistCase | Skipped]:
    """The cases for a world of ``world_size`` on this machine (byte ``sizes`` override the profile's)."""
    gpus = [d for d in devices if d.startswith("cuda:")]
    backend = world_backend(devices, backend, world_size)
    if backend == "nccl" and len(gpus) < world_size:
        return [Skipped("nccl-needs-gpus", f"nccl needs one GPU per rank: {world_size} ranks, {len(gpus)} GPU(s)")]
    if backend == "gloo" and "cpu" not in devices:
        return [Skipped("gloo-needs-cpu", "gloo runs on CPU tensors: add cpu to --xfer-devices")]
    device = "cuda" if backend == "nccl" else "cpu"
    chosen = [s for s in (sizes or parse_sizes(DIST_SIZES[profile])) if isinstance(s, int)]
    return [DistCase(op, size, backend, world_size, device) for size in chosen for op in DIST_OPS]


# --- the operations, as each rank runs them ---------------------------------------------------------------

def _buffers(case: DistCase, rank: int, local_device: Any) -> dict[str, Any]:
    import torch

    dtype = getattr(torch, case.dtype)
    numel = case.numel
    n = case.world_size
    make = lambda count: torch.full((count,), float(rank + 1), dtype=dtype, device=local_device)  # noqa: E731
    if case.op == "all_gather":
        # nccl-tests' size for all_gather is the output: each rank sends 1/n of it.
        return {"send": make(max(1, numel // n)), "recv": make(max(1, numel // n) * n)}
    if case.op == "reduce_scatter":
        return {"send": make(max(1, numel // n) * n), "recv": make(max(1, numel // n))}
    return {"buf": make(numel)}


def operation(case: DistCase, rank: int, local_device: Any) -> Callable[[], None]:
    """The call rank ``rank`` makes for one iteration of ``case``, synchronized."""
    import torch
    import torch.distributed as dist

    b = _buffers(case, rank, local_device)
    sync = (lambda: torch.cuda.synchronize(local_device)) if case.device == "cuda" else (lambda: None)
    peer = 1 - rank if rank in (0, 1) else None
    if case.op == "send_recv":
        if peer is None:
            return lambda: None  # ranks beyond 1 sit out the ping-pong
        first, second = (dist.send, dist.recv) if rank == 0 else (dist.recv, dist.send)
        return lambda: (first(b["buf"], peer), second(b["buf"], peer), sync())[-1]
    if case.op == "isend_irecv":
        if peer is None:
            return lambda: None

        def ping() -> None:
            ops = [dist.isend, dist.irecv] if rank == 0 else [dist.irecv, dist.isend]
            ops[0](b["buf"], peer).wait()
            ops[1](b["buf"], peer).wait()
            sync()
        return ping
    if case.op == "broadcast":
        return lambda: (dist.broadcast(b["buf"], src=0), sync())[-1]
    if case.op == "all_reduce":
        return lambda: (dist.all_reduce(b["buf"]), sync())[-1]
    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    if case.op == "all_gather":
        return lambda: (gather(b["recv"], b["send"]), sync())[-1]
    if case.op == "reduce_scatter":
        return lambda: (scatter(b["recv"], b["send"]), sync())[-1]
    raise ValueError(f"unknown distributed op {case.op!r}")


def calls_for(nbytes: int) -> int:
    """Iterations per round: enough that a round of a tiny op is not all timer overhead."""
    return max(1, min(100, 2**20 // max(nbytes, 1)))


# --- the world inside pytest: rank 0 here, rank 1 in a helper process -------------------------------------

def pedantic_calls(benchmark: Any, rounds: int, iterations: int, warmup: int) -> int:
    """How many times pytest-benchmark's ``pedantic`` will call the target, so the
    helper rank makes exactly as many matching calls (one more or less deadlocks)."""
    if getattr(benchmark, "disabled", False):  # --benchmark-disable: one plain call
        return 1
    calls = (warmup + rounds) * iterations
    if iterations > 1:
        calls += 1  # the extra call that produces pedantic's return value
    if getattr(benchmark, "cprofile", False):  # --benchmark-cprofile profiles more calls
        loops = getattr(benchmark, "cprofile_loops", None)
        calls += loops if loops is not None else iterations
    return calls


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def _init(backend: str, address: str, port: int, rank: int, world_size: int, timeout_s: float) -> None:
    import torch.distributed as dist

    dist.init_process_group(backend, init_method=f"tcp://{address}:{port}", rank=rank, world_size=world_size,
                            timeout=dt.timedelta(seconds=timeout_s))


def _reset_group_count() -> None:
    """Make the next process group's store keys start from 0, as in a fresh process.

    torch names a group's keys by a per-process counter that a successful
    destroy_process_group() resets but a failed init_process_group() does not; the
    helper is a fresh process, so after a failed attempt the keys would differ and
    the rendezvous would wait for a key nobody writes. No public API resets it.
    """
    from torch.distributed import distributed_c10d

    world = getattr(distributed_c10d, "_world", None)
    if world is not None and hasattr(world, "group_count"):
        world.group_count = 0


def _control(values: Sequence[int]) -> list[int]:
    """Rank 0 sends ``values``; every rank returns what rank 0 sent."""
    import torch
    import torch.distributed as dist

    tensor = torch.tensor(list(values) + [0] * (4 - len(values)), dtype=torch.int64)
    if dist.get_backend() == "nccl":
        tensor = tensor.cuda()
    dist.broadcast(tensor, src=0)
    return [int(v) for v in tensor.cpu()]


class World:
    """A world of 2 on loopback: this process is rank 0, a helper process rank 1."""

    def __init__(self, backend: str = "gloo", timeout_s: float = DEFAULT_TIMEOUT_S, *, fault: str | None = None) -> None:
        self.backend, self.timeout_s, self.fault = backend, timeout_s, fault
        self.address, self.port = LOOPBACK, 0
        self.helper: subprocess.Popen[bytes] | None = None
        self.broken: str | None = None
        self._log = tempfile.NamedTemporaryFile(prefix="xferbench-rank1-", suffix=".log", delete=False)

    @property
    def rendezvous(self) -> str:
        return f"tcp://{self.address}:{self.port}"

    def start(self) -> None:
        """Form the world, retrying on another port if the chosen one was taken meanwhile."""
        for attempt in range(3):
            self.port = free_port()
            self._spawn()
            _reset_group_count()
            try:
                _init(self.backend, self.address, self.port, 0, 2, self.timeout_s)
                return
            except Exception as error:  # torch raises several types here
                if "address already in use" in str(error).lower() and attempt < 2:
                    self._stop_helper()
                    continue
                message = self._why_not_joined(error)
                self._stop_helper()
                raise DistributedError(message) from None

    def _spawn(self) -> None:
        command = [sys.executable, "-m", "xferbench.distributed", "--worker", "--rank", "1", "--world-size", "2",
                   "--address", self.address, "--port", str(self.port), "--backend", self.backend,
                   "--timeout", str(self.timeout_s)]
        if self.fault:
            command += ["--fault", self.fault]
        self.helper = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def _helper_tail(self) -> str:
        try:
            lines = Path(self._log.name).read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return f"; its last words: {lines[-1].strip()[:200]}" if lines else ""

    def _why_not_joined(self, error: BaseException) -> str:
        exited = self.helper.poll() if self.helper else None
        state = f"it exited with code {exited}" if exited is not None else "it did not answer"
        return (f"rank 1 did not join the rendezvous at {self.rendezvous} within {self.timeout_s:g} s "
                f"({state}{self._helper_tail()})")

    def run(self, case: DistCase, benchmark: Any, rounds: int) -> dict[str, Any]:
        """Time ``case`` on rank 0 with pytest-benchmark while the helper mirrors it."""
        import torch

        if self.broken:
            raise DistributedError(f"the world at {self.rendezvous} broke earlier: {self.broken}")
        iterations, warmup = calls_for(case.nbytes), 2
        total = pedantic_calls(benchmark, rounds, iterations, warmup)
        local = torch.device("cuda:0") if case.device == "cuda" else torch.device("cpu")
        try:
            _control([DIST_OPS.index(case.op), case.nbytes, total, list(DTYPE_SIZES).index(case.dtype)])
            fn = operation(case, 0, local)
            benchmark.group = f"{case.op} {case.backend} x{case.world_size}"
            benchmark.extra_info.update(case.extra_info(), clock="wall+sync")
            benchmark.pedantic(fn, rounds=rounds, iterations=iterations, warmup_rounds=warmup)
        except Exception as error:
            self.broken = first_line(error)
            exited = self.helper.poll() if self.helper else None
            state = f"rank 1 exited with code {exited}" if exited is not None else "rank 1 stopped answering"
            raise DistributedError(f"{state} during {case.id} at {self.rendezvous}: {self.broken}"
                                   f"{self._helper_tail()}") from None
        return benchmark.extra_info

    def close(self) -> None:
        import torch.distributed as dist

        if dist.is_initialized():
            if not self.broken:
                with contextlib.suppress(Exception):
                    _control([_STOP])
            with contextlib.suppress(Exception):
                dist.destroy_process_group()
        self._stop_helper()
        with contextlib.suppress(OSError):
            os.unlink(self._log.name)

    def _stop_helper(self) -> None:
        if self.helper is None:
            return
        try:
            self.helper.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.helper.kill()
            self.helper.wait()
        self.helper = None


def _worker(args: argparse.Namespace) -> int:
    """Rank >= 1 inside pytest: mirror what rank 0 announces until told to stop."""
    import torch
    import torch.distributed as dist

    if args.fault == "exit-early":
        return 3  # a rank that dies before joining
    _init(args.backend, args.address, args.port, args.rank, args.world_size, args.timeout)
    local = torch.device(f"cuda:{args.rank % max(1, torch.cuda.device_count())}") if args.backend == "nccl" else "cpu"
    try:
        while True:
            op_index, nbytes, total, dtype_index = _control([])
            if op_index == _STOP:
                return 0
            dtype = list(DTYPE_SIZES)[dtype_index]
            case = DistCase(DIST_OPS[op_index], nbytes, args.backend, args.world_size,
                            "cuda" if args.backend == "nccl" else "cpu", dtype)
            fn = operation(case, args.rank, local)
            if args.fault == "die-mid-run":
                os._exit(4)  # a rank that dies in the middle of an operation
            for _ in range(total):
                fn()
    finally:
        with contextlib.suppress(Exception):
            dist.destroy_process_group()


# --- across nodes: torchrun -m xferbench.distributed ------------------------------------------------------

def measure(fn: Callable[[], None], rounds: int, iterations: int, warmup: int,
            clock: Callable[[], float] = time.perf_counter, slowest: Callable[[float], float] = lambda t: t) -> list[float]:
    """Per-call seconds of ``rounds`` rounds of ``iterations`` calls, after ``warmup`` calls.

    ``slowest`` turns this rank's round time into the world's (the max over ranks),
    so every rank records the same figure; it runs outside the timed region.
    """
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(rounds):
        start = clock()
        for _ in range(iterations):
            fn()
        times.append(slowest(clock() - start) / iterations)
    return times


def _stats(data: list[float], iterations: int) -> dict[str, Any]:
    from pytest_benchmark.stats import Stats

    stats = Stats()
    for value in data:
        stats.update(value)
    return stats.as_dict() | {"data": data, "iterations": iterations}


def _slowest_rank(local: Any) -> Callable[[float], float]:
    import torch
    import torch.distributed as dist

    def slowest(seconds: float) -> float:
        tensor = torch.tensor([seconds], dtype=torch.float64, device=local)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return float(tensor.item())
    return slowest


def _torchrun(args: argparse.Namespace) -> int:
    import torch
    import torch.distributed as dist

    if "RANK" not in os.environ:
        raise DistributedError("not started by torchrun (RANK is unset); run: torchrun --nnodes=N --nproc-per-node=M "
                               "-m xferbench.distributed --out run.json")
    backend = args.backend if args.backend != "auto" else ("nccl" if torch.cuda.is_available() else "gloo")
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    local = torch.device(f"cuda:{local_rank}") if backend == "nccl" else torch.device("cpu")
    if backend == "nccl":
        torch.cuda.set_device(local)
    try:
        dist.init_process_group(backend, timeout=dt.timedelta(seconds=args.timeout))
    except Exception as error:
        address = f"{os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}"
        raise DistributedError(f"rank {os.environ['RANK']} could not join the rendezvous at {address} within "
                               f"{args.timeout:g} s: {first_line(error)}") from None
    rank, world = dist.get_rank(), dist.get_world_size()
    device = "cuda" if backend == "nccl" else "cpu"
    sizes = [s for s in parse_sizes(args.sizes or DIST_SIZES[args.profile]) if isinstance(s, int)]
    benchmarks = []
    for nbytes in sizes:
        for op in DIST_OPS:
            case = DistCase(op, nbytes, backend, world, device)
            iterations = calls_for(nbytes)
            data = measure(operation(case, rank, local), args.rounds, iterations, 2, slowest=_slowest_rank(local))
            benchmarks.append({"group": f"{op} {backend} x{world}", "name": f"test_distributed[{case.id}]",
                               "fullname": f"xferbench.distributed::{case.id}", "params": None, "param": case.id,
                               "extra_info": case.extra_info() | {"clock": "wall+sync"},
                               "options": {"rounds": args.rounds, "iterations": iterations, "timer": "perf_counter"},
                               "stats": _stats(data, iterations)})
    if rank == 0:
        _write_json(args.out, benchmarks, backend, world)
        print(f"xferbench.distributed: wrote {args.out} ({len(benchmarks)} benchmarks, {world} ranks, {backend})")
    dist.destroy_process_group()
    return 0


def _write_json(out: Path, benchmarks: list[dict[str, Any]], backend: str, world: int) -> None:
    import platform

    import torch

    from ..output import write_atomic

    machine = {"node": platform.node(), "machine": platform.machine(), "python_version": platform.python_version(),
               "xferbench": {"torch": torch.__version__, "cuda": torch.version.cuda, "world_size": world,
                             "backend": backend, "devices": []}}
    payload = {"machine_info": machine, "commit_info": {}, "benchmarks": benchmarks,
               "datetime": dt.datetime.now(dt.timezone.utc).isoformat(), "version": "xferbench.distributed"}
    write_atomic(Path(out), json.dumps(payload, indent=1))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m xferbench.distributed", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("distributed.json"), help="JSON to write (rank 0)")
    parser.add_argument("--backend", choices=["auto", "gloo", "nccl"], default="auto")
    parser.add_argument("--profile", choices=sorted(DIST_SIZES), default="quick")
    parser.add_argument("--sizes", help="override the profile's sizes, e.g. 1KiB..64MiB:x4")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds (default: %(default)s)")
    # The helper of the pytest world; not for users.
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rank", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--world-size", type=int, default=2, help=argparse.SUPPRESS)
    parser.add_argument("--address", default=LOOPBACK, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--fault", choices=["exit-early", "die-mid-run"], help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _worker(args) if args.worker else _torchrun(args)
    except (DistributedError, ValueError) as error:
        print(f"xferbench.distributed: {error}", file=sys.stderr)
        return 2


@contextlib.contextmanager
def world(backend: str = "gloo", timeout_s: float = DEFAULT_TIMEOUT_S, fault: str | None = None) -> Iterator[World]:
    """A started World that is always closed."""
    w = World(backend, timeout_s, fault=fault)
    try:
        w.start()
        yield w
    finally:
        w.close()


if __name__ == "__main__":
    sys.exit(main())
