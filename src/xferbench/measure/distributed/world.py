"""The world of ranks: who they are, where they run, how they meet, how they time together.

Each rank owns its device from its first call (``join``: ``torch.cuda.set_device`` and
``device_id``), so two ranks never share a GPU. Every rank times every round of a case
itself; after each round the ranks exchange their times (outside the timed region), so
each keeps all ranks' times and the world's time of a round is the slowest rank's.

Inside pytest, ``World`` is a world of 2 on loopback: this process is rank 0, a helper
process (``python -m xferbench.distributed --worker``) rank 1. Before each case rank 0
announces it with a small broadcast of whole numbers (the control message).

A rank that dies or never joins ends the run within the timeout with one line naming
the rank, its host and the rendezvous address.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...units import DTYPE_SIZES, first_line
from .operations import DIST_OPS, OVERLAP_VARIANTS, DistCase, operation
from .options import Profile

__all__ = [
    "NODE_ENV",
    "SLOW_RANK_ENV",
    "DistributedError",
    "Timed",
    "VerificationError",
    "World",
    "free_port",
    "join",
    "node_name",
    "rank_device",
    "run_on_rank",
    "timed_rounds",
    "running_world",
]

LOOPBACK = "127.0.0.1"
#: This process's node, when hostnames do not tell nodes apart (tests split one machine in two).
NODE_ENV = "XFERBENCH_NODE"
#: Test only: ``RANK:SECONDS`` makes that rank take SECONDS longer in every round it times.
SLOW_RANK_ENV = "XFERBENCH_TEST_SLOW_RANK"
CONTROL_SLOTS = 10
_STOP = -1
_INT64 = 2**63 - 1


class DistributedError(RuntimeError):
    """The world could not be formed or broke; the message names the rank, host and address."""


class VerificationError(RuntimeError):
    """A collective delivered wrong data; the message names the ranks that hold it."""


def node_name() -> str:
    return os.environ.get(NODE_ENV) or socket.gethostname()


def slow_rank_delay(rank: int) -> float:
    """The test-only extra seconds per round of ``rank`` (see SLOW_RANK_ENV)."""
    text = os.environ.get(SLOW_RANK_ENV, "")
    if not text:
        return 0.0
    slow, _, seconds = text.partition(":")
    try:
        return float(seconds) if int(slow) == rank else 0.0
    except ValueError:
        raise DistributedError(f"{SLOW_RANK_ENV}={text!r}: write it as RANK:SECONDS, e.g. 2:0.005") from None


def rank_device(backend: str, local_rank: int, gpu_count: int) -> str:
    """The device a rank owns: with nccl, GPU ``local_rank`` of this node; else the CPU."""
    if backend != "nccl":
        return "cpu"
    if gpu_count < 1:
        raise DistributedError("nccl needs a GPU per rank, and this node has none visible")
    return f"cuda:{local_rank % gpu_count}"


def join(backend: str, init_method: str, rank: int, world_size: int, timeout_s: float, device: str,
         *, cuda: Any = None, dist: Any = None) -> None:
    """Select ``device`` for this process, then join the process group bound to it.

    ``cuda`` and ``dist`` default to torch's; tests pass fakes that record the calls.
    """
    import torch

    cuda = cuda if cuda is not None else torch.cuda
    dist = dist if dist is not None else torch.distributed
    extra: dict[str, Any] = {}
    if device.startswith("cuda"):
        cuda.set_device(torch.device(device))  # before anything touches a GPU: NCCL rejects two ranks on one
        extra["device_id"] = torch.device(device)
    dist.init_process_group(backend, init_method=init_method, rank=rank, world_size=world_size,
                            timeout=dt.timedelta(seconds=timeout_s), **extra)


def control(values: Sequence[int], device: str) -> list[int]:
    """Rank 0 sends ``values``; every rank returns what rank 0 sent. The tensor lives on this
    rank's own ``device`` (nccl moves only GPU tensors), never on whatever device is current."""
    import torch
    import torch.distributed as dist

    if len(values) > CONTROL_SLOTS or any(not -_INT64 <= int(v) <= _INT64 for v in values):
        raise ValueError(f"a control message holds {CONTROL_SLOTS} whole numbers of 64 bits; got {list(values)!r:.80}")
    tensor = torch.tensor([*values] + [0] * (CONTROL_SLOTS - len(values)), dtype=torch.int64, device=device)
    dist.broadcast(tensor, src=0)
    return [int(v) for v in tensor.cpu()]


def exchange(device: str, world_size: int) -> Callable[[float], list[float]]:
    """Each rank's number to every rank (an all_gather on the rank's own device)."""
    import torch
    import torch.distributed as dist

    all_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor

    def gather(value: float) -> list[float]:
        out = torch.zeros(world_size, dtype=torch.float64, device=device)
        all_gather(out, torch.tensor([value], dtype=torch.float64, device=device))
        return [float(v) for v in out.cpu()]
    return gather


def timed_rounds(call: Callable[[], None], rounds: int, iterations: int, warmup: int,
                 gather: Callable[[float], list[float]], clock: Callable[[], float] = time.perf_counter,
                 delay: float = 0.0) -> list[list[float]]:
    """Every rank's per-call seconds of every round, as ``[rank][round]``.

    Each rank reads its own clock around ``iterations`` calls; ``gather`` then shares the
    figure with every rank, outside the timed region, and doubles as the line-up of the
    ranks before the next round. ``delay`` is the test-only slowed rank.
    """
    for _ in range(warmup):
        call()
    gather(0.0)  # line up before the first round
    per_round = []
    for _ in range(rounds):
        start = clock()
        for _ in range(iterations):
            call()
        if delay:
            time.sleep(delay)
        per_round.append(gather((clock() - start) / iterations))
    return [list(ranks) for ranks in zip(*per_round, strict=True)]


@dataclass(frozen=True)
class Timed:
    """One case as every rank measured it."""

    rank_seconds: list[list[float]]  # [rank][round], per call
    members: tuple[int, ...]  # the ranks that take part (a ping-pong's pair; every rank for a collective)

    @property
    def world_seconds(self) -> list[float]:
        """Each round's time: the slowest member's (a collective ends when its last member does)."""
        return [max(ranks[r] for r in self.members) for ranks in zip(*self.rank_seconds, strict=True)]


def run_on_rank(case: DistCase, rank: int, device: str, rounds: int, iterations: int, warmup: int) -> Timed:
    """This rank's part of ``case``: time it, then check what it delivered (on every rank)."""
    gather = exchange(device, case.world_size)
    op = operation(case, rank, device)
    op.reset()
    members = case.pair if case.point_to_point else tuple(range(case.world_size))
    delay = slow_rank_delay(rank) if rank in members else 0.0
    times = timed_rounds(op.call, rounds, iterations, warmup, gather, delay=delay)
    op.reset()
    op.call()
    wrong = [r for r, ok in enumerate(gather(1.0 if op.check() else 0.0)) if ok < 1]
    if wrong:
        raise VerificationError(f"{case.id}: rank(s) {', '.join(map(str, wrong))} received wrong data")
    return Timed(times, members)


def roll_call(world_size: int, settings: object) -> list[tuple[str, object]]:
    """Every rank's node and settings, in rank order (after the rendezvous)."""
    import torch.distributed as dist

    mine = (node_name(), settings)
    everyone: list[Any] = [None] * world_size
    dist.all_gather_object(everyone, mine)
    return [tuple(entry) for entry in everyone]


def check_same_settings(everyone: Sequence[tuple[str, object]]) -> None:
    """Ranks started with different settings would deadlock on mismatched cases: name the odd one."""
    host0, settings0 = everyone[0]
    for rank, (host, settings) in enumerate(everyone):
        if settings != settings0:
            raise DistributedError(f"rank {rank} on {host} was started with {_differences(settings, settings0)}, "
                                   f"rank 0 on {host0} with {_differences(settings0, settings)}; "
                                   "start every rank with the same options")


def _differences(mine: object, theirs: object) -> str:
    """``--sizes 2KiB`` for the options where two ranks' settings dicts differ."""
    if not isinstance(mine, dict) or not isinstance(theirs, dict):
        return repr(mine)
    return " ".join(f"--{key.replace('_', '-')} {mine.get(key)}" for key in mine if mine.get(key) != theirs.get(key))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def _reset_group_count() -> None:
    """Make the next process group's store keys start from 0, as in a fresh process.

    torch names a group's keys by a per-process counter that a successful
    destroy_process_group() resets but a failed init_process_group() does not; the
    helper is a fresh process, so after a failed attempt the keys would differ and
    the rendezvous would wait for a key nobody writes. No public API resets it.
    """
    from torch.distributed import distributed_c10d

    world_state = getattr(distributed_c10d, "_world", None)
    if world_state is not None and hasattr(world_state, "group_count"):
        world_state.group_count = 0


def _gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


# --- the control message: a case and its timing plan as whole numbers ------------------------------------

def encode(case: DistCase, rounds: int, iterations: int, warmup: int) -> list[int]:
    variant = OVERLAP_VARIANTS.index(case.variant) + 1 if case.variant else 0
    return [DIST_OPS.index(case.op), case.nbytes, list(DTYPE_SIZES).index(case.dtype), *case.pair, variant,
            rounds, iterations, warmup]


def decode(values: Sequence[int], backend: str, world_size: int, device: str) -> tuple[DistCase, int, int, int]:
    op, nbytes, dtype, first, partner, variant, rounds, iterations, warmup = values[:9]
    case = DistCase(DIST_OPS[op], nbytes, backend, world_size, device.split(":")[0], list(DTYPE_SIZES)[dtype],
                    (first, partner), OVERLAP_VARIANTS[variant - 1] if variant else None,
                    "intra-node" if DIST_OPS[op] in ("send_recv", "isend_irecv") else None)
    return case, rounds, iterations, warmup


class World:
    """A world of 2 on loopback: this process is rank 0, a helper process rank 1."""

    def __init__(self, backend: str = "gloo", timeout_s: float = 60.0, *, fault: str | None = None,
                 gpus: Sequence[str] = ()) -> None:
        self.backend, self.timeout_s, self.fault = backend, timeout_s, fault
        self.gpus = tuple(gpus)  # with nccl: the GPUs chosen (--xfer-devices), rank r on the r-th
        self.address, self.port = LOOPBACK, 0
        self.helper: subprocess.Popen[bytes] | None = None
        self.broken: str | None = None
        self.device = "cpu"
        self.hosts: list[str] = []
        self._log = tempfile.NamedTemporaryFile(prefix="xferbench-rank1-", suffix=".log", delete=False)

    @property
    def rendezvous(self) -> str:
        return f"tcp://{self.address}:{self.port}"

    def start(self) -> None:
        """Form the world, retrying on another port if the chosen one was taken meanwhile."""
        self.device = self._device_of(0)
        for attempt in range(3):
            self.port = free_port()
            self._spawn()
            _reset_group_count()
            try:
                join(self.backend, self.rendezvous, 0, 2, self.timeout_s, self.device)
                self.hosts = [host for host, _ in roll_call(2, None)]
                return
            except Exception as error:  # torch raises several types here
                if "address already in use" in str(error).lower() and attempt < 2:
                    self._stop_helper()
                    continue
                message = self._why_not_joined()
                self._stop_helper()
                raise DistributedError(message) from None

    def _spawn(self) -> None:
        command = [sys.executable, "-m", "xferbench.distributed", "--worker", "--rank", "1", "--world-size", "2",
                   "--address", self.address, "--port", str(self.port), "--backend", self.backend,
                   "--timeout", str(self.timeout_s)]
        if self.backend == "nccl":
            command += ["--device", self._device_of(1)]
        if self.fault:
            command += ["--fault", self.fault]
        self.helper = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def _device_of(self, rank: int) -> str:
        if self.backend == "nccl" and len(self.gpus) > rank:
            return self.gpus[rank]
        return rank_device(self.backend, rank, _gpu_count())

    def _helper_tail(self) -> str:
        try:
            lines = Path(self._log.name).read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return f"; its last words: {lines[-1].strip()[:200]}" if lines else ""

    def _why_not_joined(self) -> str:
        exited = None
        if self.helper:
            # A helper still starting up may be about to exit with the reason: give it a moment.
            with contextlib.suppress(subprocess.TimeoutExpired):
                exited = self.helper.wait(timeout=5)
        state = f"it exited with code {exited}" if exited is not None else "it did not answer"
        return (f"rank 1 on {node_name()} did not join the rendezvous at {self.rendezvous} within "
                f"{self.timeout_s:g} s ({state}{self._helper_tail()})")

    def run(self, case: DistCase, benchmark: Any, profile: Profile, rounds: int | None = None) -> dict[str, Any]:
        """Time ``case`` on both ranks and record the world's time of each round in ``benchmark``."""
        if self.broken:
            raise DistributedError(f"the world at {self.rendezvous} broke earlier: {self.broken}")
        from .operations import calls_for

        rounds, iterations, warmup = rounds or profile.rounds, calls_for(case.nbytes), profile.warmup
        if getattr(benchmark, "disabled", False):  # --benchmark-disable: run it once, record nothing
            rounds, iterations, warmup = 1, 1, 0
        try:
            control(encode(case, rounds, iterations, warmup), self.device)
            timed = run_on_rank(case, 0, self.device, rounds, iterations, warmup)
        except VerificationError:
            raise
        except KeyboardInterrupt:  # Ctrl-C reached this rank only: the helper would wait out the timeout in the case
            self.broken = "interrupted"
            if self.helper is not None and self.helper.poll() is None:
                self.helper.send_signal(signal.SIGINT)  # forwarded; close() kills it if it is stuck in a collective
            raise
        except Exception as error:
            self.broken = first_line(error)
            exited = self.helper.poll() if self.helper else None
            state = f"rank 1 exited with code {exited}" if exited is not None else "rank 1 stopped answering"
            raise DistributedError(f"{state} (on {node_name()}) during {case.id} at {self.rendezvous}: {self.broken}"
                                   f"{self._helper_tail()}") from None
        benchmark._mode = "xferbench's distributed world"  # used, as pedantic() would mark it: no "not used" warning
        benchmark.group = f"{case.op} {case.backend} x{case.world_size}"
        benchmark.extra_info.update(case.extra_info(), clock="wall+sync", verified=True,
                                    rank_seconds=timed.rank_seconds, rank_hosts=self.hosts)
        if not getattr(benchmark, "disabled", False):
            record(benchmark, timed.world_seconds, iterations)
        return benchmark.extra_info

    def close(self) -> None:
        import torch.distributed as dist

        if dist.is_initialized():
            if not self.broken:
                with contextlib.suppress(Exception):
                    control([_STOP], self.device)
            with contextlib.suppress(Exception):
                dist.destroy_process_group()
        self._stop_helper()
        with contextlib.suppress(OSError):
            os.unlink(self._log.name)

    def _stop_helper(self) -> None:
        if self.helper is None:
            return
        try:
            self.helper.wait(timeout=2 if self.broken == "interrupted" else 10)
        except subprocess.TimeoutExpired:
            self.helper.kill()
            self.helper.wait()
        self.helper = None


def record(benchmark: Any, per_call_seconds: Sequence[float], iterations: int) -> None:
    """Put the world's round times into pytest-benchmark's own statistics for this test.

    pedantic() would time rank 0 alone; ``_make_stats`` is the record pedantic fills
    (one ``update`` of a round's total per round), so the JSON, the table and
    ``--benchmark-compare`` see the slowest rank's rounds exactly as they see any other.
    """
    stats = benchmark._make_stats(iterations)
    for seconds in per_call_seconds:
        stats.update(seconds * iterations)


def worker(args: argparse.Namespace) -> int:
    """Rank >= 1 inside pytest: mirror what rank 0 announces until told to stop."""
    import torch.distributed as dist

    if args.fault == "exit-early":
        return 3  # a rank that dies before joining
    device = args.device or rank_device(args.backend, args.rank, _gpu_count())
    join(args.backend, f"tcp://{args.address}:{args.port}", args.rank, args.world_size, args.timeout, device)
    roll_call(args.world_size, None)
    try:
        while True:
            message = control([], device)
            if message[0] == _STOP:
                return 0
            case, rounds, iterations, warmup = decode(message, args.backend, args.world_size, device)
            if args.fault == "die-mid-run":
                os._exit(4)  # a rank that dies in the middle of an operation
            with contextlib.suppress(VerificationError):  # rank 0 reports it
                run_on_rank(case, args.rank, device, rounds, iterations, warmup)
    finally:
        with contextlib.suppress(Exception):
            dist.destroy_process_group()


@contextlib.contextmanager
def running_world(backend: str = "gloo", timeout_s: float = 60.0, fault: str | None = None) -> Iterator[World]:
    """A started World that is always closed."""
    w = World(backend, timeout_s, fault=fault)
    try:
        w.start()
        yield w
    finally:
        w.close()
