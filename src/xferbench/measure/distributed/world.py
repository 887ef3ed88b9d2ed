"""The world of ranks: who they are, where they run, how they meet, how they time together.

Each rank owns its device from its first call (``join``: ``torch.cuda.set_device`` and
``device_id``), so two ranks never share a GPU. Every rank times every round of a case
itself; after each round the ranks exchange their times (outside the timed region), so
each keeps all ranks' times and the world's time of a round is the slowest rank's.

Inside pytest, ``World`` is a world of 2 on loopback made of two helper processes
(``python -m xferbench.distributed --worker``); the pytest process is no member. It hands
each case to every rank over a plain socket and waits for their answers with a deadline
of its own that grows with the payload, so a rank that dies, stalls or wedges its GPU
fails that case (and the later ones at once) while the pytest session goes on: NCCL's
watchdog can abort a member, never pytest. A case that does not fit some rank's free
memory (or runs out of it while allocating) is skipped on every rank with the reason.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ...units import first_line, format_bytes
from ..hardware.nics import adapters, nearest
from ..record.pytest_benchmark_adapter import mark_used, new_stats
from .errors import CaseSkipped, DistributedError, VerificationError
from .injected_faults import (
    FAULT_ENV,
    hang_on_error,
    hangs,
    injected_fault,
    injected_oom,
    slow_inside,
    slow_rank_delay,
)
from .operations import DistCase, Operation, bytes_needed, operation
from .options import Profile
from .timing import ENABLE_TIMING_ENV, CallTimer, CudaCallTimer, NcclCallTimer, timed_rounds
from .watch import WATCHDOG_MARGIN_S

__all__ = [
    "NODE_ENV",
    "CallTimer",
    "CudaCallTimer",
    "CaseSkipped",
    "DistributedError",
    "Timed",
    "VerificationError",
    "World",
    "call_deadline",
    "check_own_gpus",
    "free_port",
    "join",
    "node_name",
    "rank_device",
    "rank_place",
    "run_on_rank",
    "timed_rounds",
    "running_world",
    "step_deadline",
]

LOOPBACK = "127.0.0.1"
#: This process's node, when hostnames do not tell nodes apart (tests split one machine in two).
NODE_ENV = "XFERBENCH_NODE"
#: The slowest a rank may move a payload byte before its call counts as hung (bytes per second):
#: a single multi-GB gloo call on a slow host must not pass for a dead rank.
FLOOR_BYTES_PER_S = 100e6
#: After one rank failed, how long the others get to say why before the world is taken down.
GRACE_S = 2.0
#: Seconds a helper may take to start (import torch) on top of the rendezvous timeout.
STARTUP_S = 30.0
#: Words of a backend error that mean "I waited for a peer", not "I failed myself".
_WAITING = ("timed out", "timeout", "connection closed", "connection reset", "reset by peer", "broken pipe")


def node_name() -> str:
    return os.environ.get(NODE_ENV) or socket.gethostname()


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
    if backend == "nccl":  # each collective's own time on NCCL's stream (timing.NcclCallTimer); read at creation
        os.environ.setdefault(ENABLE_TIMING_ENV, "1")
    if device.startswith("cuda"):
        cuda.set_device(torch.device(device))  # before anything touches a GPU: NCCL rejects two ranks on one
        if _takes("device_id", dist.init_process_group):  # torch >= 2.3; set_device alone binds it before
            extra["device_id"] = torch.device(device)
    dist.init_process_group(backend, init_method=init_method, rank=rank, world_size=world_size,
                            timeout=dt.timedelta(seconds=timeout_s), **extra)


def _takes(name: str, fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` accepts the keyword ``name``."""
    import inspect

    parameters = inspect.signature(fn).parameters
    return name in parameters or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


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


@dataclass(frozen=True)
class Timed:
    """One case as every rank measured it."""

    rank_seconds: list[list[float]]  # [rank][round], per call
    members: tuple[int, ...]  # the ranks that take part (a ping-pong's pair; every rank for a collective)
    call_seconds: list[list[float]] | None = None  # [rank][round], per call, inside the calls only

    @property
    def world_seconds(self) -> list[float]:
        """Each round's time: the slowest member's (a collective ends when its last member does)."""
        return [max(ranks[r] for r in self.members) for ranks in zip(*self.rank_seconds, strict=True)]

    @property
    def mean_seconds(self) -> list[float]:
        """Each round's mean over its members: beside the slowest, what a typical rank spent (the
        max of N ranks' times grows with N even when no rank is slow)."""
        return [sum(ranks[r] for r in self.members) / len(self.members) for ranks in zip(*self.rank_seconds, strict=True)]


def free_bytes(device: str, per_node: int) -> int | None:
    """Memory this rank may use now: its GPU's free memory, or its share of the host's (the
    ranks of a node allocate from it at once); None where unknown. On a GPU the blocks torch's
    caching allocator holds but no tensor uses count as free, as the pytest path counts them:
    the allocator hands them out again (and releases them when it runs short), while the
    driver's figure counts them used, so a scan after a 56 GiB case would see a 141 GB GPU
    nearly full."""
    if device.startswith("cuda"):
        import torch

        index = torch.device(device)
        cached = int(torch.cuda.memory_reserved(index)) - int(torch.cuda.memory_allocated(index))
        return int(torch.cuda.mem_get_info(index)[0]) + max(0, cached)
    from ..hardware.devices import host_memory_available

    available = host_memory_available()
    return None if available is None else available // max(1, per_node)


def _allocate(case: DistCase, rank: int, device: str, gather: Callable[[float], list[float]], per_node: int,
              build: Callable[[DistCase, int, str], Operation]) -> Operation:
    """This rank's buffers for ``case``, or CaseSkipped on every rank alike when any rank has too
    little free memory or runs out while allocating (the world stays in step for the next case)."""
    import torch

    need = bytes_needed(case.op, case.nbytes, case.variant)
    mine = free_bytes(device, per_node)
    short = [(r, free) for r, free in enumerate(gather(-1.0 if mine is None else float(mine))) if 0 <= free < need]
    if short:
        raise CaseSkipped(f"{case.id} needs {format_bytes(need)} per rank; " + ", ".join(
            f"rank {r} has {format_bytes(int(free))} free" for r, free in short))
    made: Operation | None = None
    why = ""
    try:
        made = build(case, rank, device)
    except torch.OutOfMemoryError as error:
        why = first_line(error)
    failed = [r for r, ok in enumerate(gather(1.0 if made else 0.0)) if ok < 1]
    if made is None or failed:
        raise CaseSkipped(f"{case.id}: rank(s) {', '.join(map(str, failed))} ran out of memory allocating "
                          f"{format_bytes(need)}" + (f" ({why})" if why else ""))
    return made


def run_on_rank(case: DistCase, rank: int, device: str, rounds: int, iterations: int, warmup: int, *,
                per_node: int = 1, timeout_s: float | None = None,
                build: Callable[[DistCase, int, str], Operation] | None = None,
                progress: Callable[[], None] | None = None, watched: bool = True) -> Timed:
    """This rank's part of ``case``: allocate (or skip everywhere), time it, then check what it
    delivered (on every rank). ``per_node``: the ranks sharing this host's memory; ``timeout_s``:
    the base of the wait for peers, scaled to the payload (a big gloo call is no dead rank).
    ``progress``: told of each step; ``watched``, a host-side deadline per step watches the rank
    (watch.py), and the process group's timeout (NCCL's watchdog) then comes WATCHDOG_MARGIN_S later."""
    if timeout_s is not None:
        _set_timeout(step_deadline(timeout_s, case, iterations, warmup) + WATCHDOG_MARGIN_S
                     if progress is not None and watched else call_deadline(timeout_s, case))
    step = progress or (lambda: None)
    gather = hang_on_error(exchange(device, case.world_size))  # bound now: a slowed rank's exchange is not
    members = case.pair if case.point_to_point else tuple(range(case.world_size))
    delay, where = slow_rank_delay(rank) if rank in members else (0.0, "")
    with slow_inside(delay) if where == "inside" else contextlib.nullcontext():  # before the op binds its calls
        op = _allocate(case, rank, device, gather, per_node, build or operation)
        if hangs():
            op = Operation(op.reset, hang_on_error(op.call), op.check, hang_on_error(op.sync))
        step()
        op.reset()
        timer = _call_timer(case)
        times = timed_rounds(op.call, rounds, iterations, warmup, gather, delay=0.0 if where == "inside" else delay,
                             sync=op.sync, progress=step, timer=timer, delay_each_call=where == "call")
    op.reset()
    op.call()
    op.sync()
    wrong = [r for r, ok in enumerate(gather(1.0 if op.check() else 0.0)) if ok < 1]
    if wrong:
        raise VerificationError(f"{case.id}: rank(s) {', '.join(map(str, wrong))} received wrong data")
    return Timed(times, members, timer.per_rank())


def _call_timer(case: DistCase) -> CallTimer:
    if case.device != "cuda":
        return CallTimer()
    import torch

    return NcclCallTimer(torch.cuda) if case.backend == "nccl" else CudaCallTimer(torch.cuda)


def roll_call(world_size: int, settings: object, node_id: str | None = None, place: dict[str, Any] | None = None,
              ) -> tuple[list[tuple[str, object]], list[dict[str, Any]]]:
    """Every rank's node and settings, in rank order (after the rendezvous), and where each rank
    runs (``place``: its device, PCI bus id and CUDA_VISIBLE_DEVICES, see ``rank_place``).

    A node is its host name; where the launcher numbers nodes (``node_id``: torchrun's
    GROUP_RANK, SLURM_NODEID) and that tells apart more nodes than the host names do
    (containers that all call themselves the same), the number is added: ``host#1``."""
    import torch.distributed as dist

    mine = (node_name(), node_id, settings, place or {})
    everyone: list[Any] = [None] * world_size
    dist.all_gather_object(everyone, mine)
    labels = node_labels([(host, number) for host, number, _, _ in everyone], [entry[2] for entry in everyone])
    places = [{"rank": rank, "node": label} | entry[3] for rank, ((label, _), entry) in enumerate(zip(labels, everyone,
                                                                                                       strict=True))]
    return labels, places


def rank_place(device: str, local_rank: int, cuda: Any = None, env: Any = None,
               hcas: Path = Path("/sys/class/infiniband"), sysfs: Path = Path("/sys")) -> dict[str, Any]:
    """Where this rank runs, for the roll call: its device, the GPU's PCI bus id (which tells apart
    two ranks that each call their GPU cuda:0), CUDA_VISIBLE_DEVICES as the launcher set it, the
    NCCL_* variables it runs with (they choose NCCL's network, algorithms and channels), its host's
    InfiniBand/RoCE adapters, and on a GPU the NCCL version torch runs and the GPU's nearest network adapter
    (hardware.nics: the one behind the same PCIe switch, else the same host bridge or NUMA node). ``cuda``
    defaults to torch's, ``env`` to os.environ, ``sysfs`` to /sys; tests pass fakes."""
    env = os.environ if env is None else env
    place: dict[str, Any] = {"local_rank": local_rank, "device": device,
                             "cuda_visible_devices": env.get("CUDA_VISIBLE_DEVICES"),
                             "nccl_env": {k: str(v) for k, v in sorted(env.items()) if k.startswith("NCCL_")},
                             "hcas": sorted(entry.name for entry in hcas.iterdir()) if hcas.is_dir() else []}
    if device.startswith("cuda"):
        if cuda is None:
            import torch

            cuda = torch.cuda
        place["pci_bus_id"] = pci_bus_id(cuda.get_device_properties(int(device.partition(":")[2] or 0)))
        place["nccl_version"] = _nccl_version(cuda)
        place["nearest_nic"] = nearest(place["pci_bus_id"], adapters(sysfs), sysfs)
    return place


def _nccl_version(cuda: Any) -> str | None:
    """``2.21.5`` (torch.cuda.nccl.version() is a tuple, or an int on old torch); None where unknown."""
    with contextlib.suppress(Exception):
        version = cuda.nccl.version()
        return ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
    return None


def pci_bus_id(properties: Any) -> str | None:
    """``0000:1b:00.0`` (nvidia-smi's form) from a device's properties; None where torch does not say."""
    parts = [getattr(properties, name, None) for name in ("pci_domain_id", "pci_bus_id", "pci_device_id")]
    if not all(isinstance(part, int) for part in parts):
        return None
    return f"{parts[0]:04x}:{parts[1]:02x}:{parts[2]:02x}.0"


def check_own_gpus(nodes: Sequence[str], places: Sequence[dict[str, Any]]) -> None:
    """Two ranks of one node on one GPU (the same PCI bus id) would share it, or make NCCL refuse
    the communicator: name them and say how each rank gets its own."""
    seen: dict[tuple[str, str], int] = {}
    for rank, (node, place) in enumerate(zip(nodes, places, strict=True)):
        bus = place.get("pci_bus_id")
        if not bus:
            continue
        other = seen.setdefault((node, bus), rank)
        if other != rank:
            raise DistributedError(
                f"ranks {other} and {rank} on {node} both run on the GPU at {bus} ({places[other].get('device')}, "
                f"CUDA_VISIBLE_DEVICES={places[other].get('cuda_visible_devices')!r}; {place.get('device')}, "
                f"CUDA_VISIBLE_DEVICES={place.get('cuda_visible_devices')!r}); give each rank its own GPU "
                "(--nproc-per-node no more than the GPUs, or srun --gpus-per-task=1)")


def node_labels(nodes: Sequence[tuple[str, str | None]], settings: Sequence[object]) -> list[tuple[str, object]]:
    """(host, launcher's node number) of every rank -> its node's label, beside its settings."""
    numbered = all(number is not None for _, number in nodes)
    split = numbered and len(set(nodes)) > len({host for host, _ in nodes})
    return [(f"{host}#{number}" if split else host, mine) for (host, number), mine in zip(nodes, settings, strict=True)]


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


def _gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def call_deadline(timeout_s: float, case: DistCase, calls: int = 1) -> float:
    """Seconds ``calls`` calls of ``case`` may take before a rank counts as hung: the timeout,
    plus the payload's footprint moved at FLOOR_BYTES_PER_S each call."""
    return timeout_s + calls * bytes_needed(case.op, case.nbytes, case.variant) / FLOOR_BYTES_PER_S


def step_deadline(timeout_s: float, case: DistCase, iterations: int, warmup: int) -> float:
    """Seconds one step of ``case`` (its warm-up, a round, the check: the most calls between two
    steps, and one more) may take on the host before the rank counts as hung (see watch.py)."""
    return call_deadline(timeout_s, case, max(iterations, warmup) + 1)


def _set_timeout(seconds: float) -> None:
    """This rank's process group waits ``seconds`` for its peers from now on (torch >= 2.3; else as joined)."""
    from torch.distributed import distributed_c10d

    setter = getattr(distributed_c10d, "_set_pg_timeout", None)
    if setter is not None:
        with contextlib.suppress(Exception):  # a backend that cannot change it keeps the one it joined with
            setter(dt.timedelta(seconds=seconds))


# --- the line-JSON channel between the pytest process and its helper ranks ---------------------------------

@dataclass
class Channel:
    """One helper's socket: JSON objects, one a line."""

    sock: socket.socket
    buffer: bytes = b""
    closed: bool = False
    inbox: list[dict[str, Any]] = field(default_factory=list)

    def send(self, message: dict[str, Any]) -> None:
        self.sock.sendall(json.dumps(message).encode() + b"\n")

    def pump(self) -> None:
        """Read what has arrived (the socket is readable) into ``inbox``; EOF marks it closed."""
        try:
            data = self.sock.recv(1 << 16)
        except OSError:
            data = b""
        if not data:
            self.closed = True
            return
        self.buffer += data
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            self.inbox.append(json.loads(line))

    def receive(self) -> dict[str, Any] | None:
        """The next message, blocking (a helper's side); None when the other end is gone."""
        while not self.inbox and not self.closed:
            self.pump()
        return self.inbox.pop(0) if self.inbox else None


def _waited_for_a_peer(error: str) -> bool:
    return any(word in error.lower() for word in _WAITING)


class World:
    """A world of ``size`` ranks on loopback, every rank a helper process this one coordinates."""

    def __init__(self, backend: str = "gloo", timeout_s: float = 60.0, *, fault: str | None = None,
                 gpus: Sequence[str] = (), size: int = 2) -> None:
        self.backend, self.timeout_s, self.fault, self.size = backend, timeout_s, fault, size
        self.gpus = tuple(gpus)  # with nccl: the GPUs chosen (--xfer-devices), rank r on the r-th
        self.address, self.port = LOOPBACK, 0
        self.helpers: list[subprocess.Popen[bytes]] = []
        self.channels: dict[int, Channel] = {}
        self.broken: str | None = None
        self.device = "cpu"
        self.hosts: list[str] = []
        self._listener: socket.socket | None = None
        self._waiting: list[Channel] = []  # connected, not yet said which rank they are
        self._logs = [tempfile.NamedTemporaryFile(prefix=f"xferbench-rank{r}-", suffix=".log", delete=False)
                      for r in range(size)]

    @property
    def helper(self) -> subprocess.Popen[bytes] | None:
        """Rank 1's process (the helper of the earlier 1-helper world)."""
        return self.helpers[1] if len(self.helpers) > 1 else None

    @property
    def rendezvous(self) -> str:
        return f"tcp://{self.address}:{self.port}"

    def start(self) -> None:
        """Form the world, retrying on another port if the chosen one was taken meanwhile."""
        self.device = self._device_of(0)
        for attempt in range(3):
            self.port = free_port()
            self._spawn()
            answers = self._collect(time.monotonic() + self.timeout_s + STARTUP_S)
            if all("ready" in answers.get(r, {}) for r in range(self.size)):
                self.hosts = [answers[r]["ready"] for r in range(self.size)]
                return
            taken = any("address already in use" in str(a.get("error", "")).lower() for a in answers.values())
            message = self._why_not_joined(answers)
            self._stop_helpers(kill=True)
            if not (taken and attempt < 2):
                raise DistributedError(message)

    def _spawn(self) -> None:
        self._listener = socket.create_server((LOOPBACK, 0))
        coordinator = self._listener.getsockname()[1]
        for rank in range(self.size):
            command = [sys.executable, "-m", "xferbench.distributed", "--worker", "--rank", str(rank),
                       "--world-size", str(self.size), "--address", self.address, "--port", str(self.port),
                       "--backend", self.backend, "--timeout", str(self.timeout_s), "--coordinator", str(coordinator)]
            if self.backend == "nccl":
                command += ["--device", self._device_of(rank)]
            if self.fault and rank == 1:
                command += ["--fault", self.fault]
            self.helpers.append(subprocess.Popen(command, stdout=self._logs[rank], stderr=subprocess.STDOUT,
                                                 stdin=subprocess.DEVNULL))

    def _device_of(self, rank: int) -> str:
        if self.backend == "nccl" and len(self.gpus) > rank:
            return self.gpus[rank]
        return rank_device(self.backend, rank, _gpu_count())

    def _collect(self, deadline: float, step_s: float | None = None) -> dict[int, dict[str, Any]]:
        """One answer from every rank, until ``deadline``; sooner when a rank failed (then the
        others get GRACE_S to say why). A rank gone without answering has no entry. With
        ``step_s``, each step a rank reports ({"progress": n}) moves the deadline to ``step_s``
        from then: a long case that moves on is no hung rank, and a hung one is found within a
        step, not within the whole case (NCCL raises nothing: only this deadline ends it)."""
        answers: dict[int, dict[str, Any]] = {}
        failed_at: float | None = None
        while len(answers) < self.size and time.monotonic() < deadline:
            if failed_at is not None and time.monotonic() > failed_at + GRACE_S:
                break
            self._pump(min(0.2, max(0.0, deadline - time.monotonic())))
            for rank, channel in self.channels.items():
                while rank not in answers and channel.inbox:
                    message = channel.inbox.pop(0)
                    if "progress" not in message:
                        answers[rank] = message
                    elif step_s is not None:
                        deadline = max(deadline, time.monotonic() + step_s)
            failed = [r for r, a in answers.items() if "error" in a] + self._gone(answers)
            if failed and failed_at is None:
                failed_at = time.monotonic()
        return answers

    def _pump(self, wait_s: float) -> None:
        assert self._listener is not None
        readable = [self._listener, *(c.sock for c in self._waiting),
                    *(c.sock for c in self.channels.values() if not c.closed)]
        ready, _, _ = select.select(readable, [], [], wait_s)
        for sock in ready:
            if sock is self._listener:
                conn, _ = self._listener.accept()
                self._waiting.append(Channel(conn))
                continue
            channel = next(c for c in [*self._waiting, *self.channels.values()] if c.sock is sock)
            channel.pump()
        for channel in list(self._waiting):
            if channel.inbox:  # its first message says which rank it is
                self._waiting.remove(channel)
                self.channels[int(channel.inbox.pop(0)["rank"])] = channel

    def _gone(self, answers: dict[int, dict[str, Any]]) -> list[int]:
        """Ranks that will never answer: their socket closed, or their process ended unconnected."""
        return [r for r in range(self.size) if r not in answers and (
            (r in self.channels and self.channels[r].closed and not self.channels[r].inbox)
            or (r not in self.channels and self.helpers[r].poll() is not None))]

    def _exit_code(self, rank: int) -> int | None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            return self.helpers[rank].wait(timeout=5)  # a rank whose socket closed is about to exit
        return None

    def _tail(self, rank: int) -> str:
        try:
            lines = Path(self._logs[rank].name).read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return f"; its last words: {lines[-1].strip()[:200]}" if lines else ""

    def _states(self, answers: dict[int, dict[str, Any]], within_s: float) -> str:
        """What became of each rank that did not finish, the culprits first: a rank that raised on its
        own, one that exited, one that stopped answering; then those that gave up waiting for them."""
        own: list[str] = []
        waited: list[str] = []
        gone: list[str] = []
        silent: list[str] = []
        for rank in range(self.size):
            answer = answers.get(rank, {})
            if "error" in answer:
                said = f"rank {rank} raised {answer['error']}"
                (waited if _waited_for_a_peer(answer["error"]) else own).append(said)
            elif rank in self._gone(answers):
                code = self._exit_code(rank)
                gone.append(f"rank {rank} exited with code {code}{self._tail(rank)}" if code is not None
                            else f"rank {rank} closed its connection{self._tail(rank)}")
            elif rank not in answers:
                silent.append(f"rank {rank} stopped answering within {within_s:.0f} s")
        if own:  # the others were waiting in the collective for it: not a fault of theirs
            return "; ".join(own)
        blamed = "; ".join(gone + silent)
        return blamed + "".join(f" ({said[:160]}, waiting for it)" for said in waited) if blamed else "; ".join(waited)

    def _why_not_joined(self, answers: dict[int, dict[str, Any]]) -> str:
        missing = [r for r in range(self.size) if "ready" not in answers.get(r, {})]
        failed = [r for r in missing if "error" in answers.get(r, {}) or r in self._gone(answers)]
        missing = failed or missing  # the silent ones were waiting for those that failed
        states = []
        for rank in missing:
            answer = answers.get(rank, {})
            if "error" in answer:
                states.append(f"rank {rank}: {answer['error']}")
                continue
            code = self._exit_code(rank)
            state = f"it exited with code {code}" if code is not None else "it did not answer"
            states.append(f"rank {rank}: {state}{self._tail(rank)}")
        return (f"rank(s) {', '.join(map(str, missing))} on {node_name()} did not join the rendezvous at "
                f"{self.rendezvous} within {self.timeout_s:g} s ({'; '.join(states)})")

    def run(self, case: DistCase, benchmark: Any, profile: Profile, rounds: int | None = None) -> dict[str, Any]:
        """Time ``case`` on every rank and record the world's time of each round in ``benchmark``."""
        if self.broken:
            raise DistributedError(f"the world at {self.rendezvous} broke earlier: {self.broken}")
        from .operations import calls_for

        rounds, iterations, warmup = rounds or profile.rounds, calls_for(case.nbytes), profile.warmup
        if getattr(benchmark, "disabled", False):  # --benchmark-disable: run it once, record nothing
            rounds, iterations, warmup = 1, 1, 0
        # each step (the warm-up, a round, the check) may take this long; a rank reports each step it makes
        within = step_deadline(self.timeout_s, case, iterations, warmup) + GRACE_S
        message = {"case": asdict(case), "rounds": rounds, "iterations": iterations, "warmup": warmup}
        for channel in self.channels.values():
            with contextlib.suppress(OSError):  # a rank gone is found by _collect
                channel.send(message)
        try:
            answers = self._collect(time.monotonic() + within, within)
        except KeyboardInterrupt:  # Ctrl-C reached pytest only: the ranks would run the case on, or wait in it
            self.broken = "interrupted"
            for helper in self.helpers:
                if helper.poll() is None:
                    helper.send_signal(signal.SIGINT)  # forwarded; close() kills a rank stuck in a collective
            raise
        if len(answers) == self.size and all("skip" in a for a in answers.values()):
            raise CaseSkipped(max((a["skip"] for a in answers.values()), key=len))  # the rank that says why
        if len(answers) == self.size and all("wrong" in a for a in answers.values()):
            raise VerificationError(answers[0]["wrong"])
        if len(answers) < self.size or any("rank_seconds" not in a for a in answers.values()):
            self.broken = f"{self._states(answers, within)} during {case.id}"
            self._stop_helpers(kill=True)
            raise DistributedError(f"{self.broken} (on {node_name()}, world at {self.rendezvous}); "
                                   "the later distributed cases of this session fail at once")
        timed = Timed(answers[0]["rank_seconds"], tuple(answers[0]["members"]), answers[0].get("call_seconds"))
        mark_used(benchmark, "xferbench's distributed world")  # no "not used" warning
        benchmark.group = f"{case.op} {case.backend} x{case.world_size}"
        benchmark.extra_info.update(case.extra_info(), clock="wall+sync", verified=True,
                                    rank_seconds=timed.rank_seconds, rank_hosts=self.hosts,
                                    rank_mean_seconds=timed.mean_seconds, rank_call_seconds=timed.call_seconds)
        if not getattr(benchmark, "disabled", False):
            record(benchmark, timed.world_seconds, iterations)
        return benchmark.extra_info

    def close(self) -> None:
        for channel in self.channels.values():
            with contextlib.suppress(OSError):
                channel.send({"stop": True})
        self._stop_helpers(kill=False)
        for log in self._logs:
            with contextlib.suppress(OSError):
                os.unlink(log.name)

    def _stop_helpers(self, *, kill: bool) -> None:
        for helper in self.helpers:
            if kill:
                helper.kill()
            try:
                helper.wait(timeout=2 if self.broken == "interrupted" else 10)
            except subprocess.TimeoutExpired:
                helper.kill()
                helper.wait()
        for channel in [*self.channels.values(), *self._waiting]:
            channel.sock.close()
        if self._listener is not None:
            self._listener.close()
        self.helpers, self.channels, self._waiting, self._listener = [], {}, [], None


def record(benchmark: Any, per_call_seconds: Sequence[float], iterations: int) -> None:
    """Put the world's round times into pytest-benchmark's own statistics for this test.

    pedantic() would time rank 0 alone (see ``pytest_benchmark_adapter.new_stats``).
    """
    stats = new_stats(benchmark, iterations)
    for seconds in per_call_seconds:
        stats.update(seconds * iterations)


def _case_of(message: dict[str, Any]) -> DistCase:
    fields = dict(message["case"])
    fields["pair"] = tuple(fields["pair"])
    return DistCase(**fields)


def worker(args: argparse.Namespace) -> int:
    """A rank of the world inside pytest: run what the coordinator hands out until told to stop."""
    import torch.distributed as dist

    fault = (args.fault, 0) if args.fault else injected_fault(args.rank)
    channel = Channel(socket.create_connection((LOOPBACK, args.coordinator)))
    channel.send({"rank": args.rank})
    if fault and fault[0] == "exit-early":
        return 3  # a rank that dies before joining
    device = args.device or rank_device(args.backend, args.rank, _gpu_count())
    try:
        join(args.backend, f"tcp://{args.address}:{args.port}", args.rank, args.world_size, args.timeout, device)
        roll_call(args.world_size, None)
    except Exception as error:  # torch raises several types here
        channel.send({"error": first_line(error)})
        return 2
    channel.send({"ready": node_name()})
    try:
        return _serve(channel, args, device, fault)
    finally:
        with contextlib.suppress(Exception):
            dist.destroy_process_group()


def _serve(channel: Channel, args: argparse.Namespace, device: str, fault: tuple[str, int] | None) -> int:
    """Answer every case the coordinator sends with this rank's times, a skip, or why it failed."""
    done = 0
    while (message := channel.receive()) is not None and "stop" not in message:
        case = _case_of(message)
        kind = fault[0] if fault and done == fault[1] else None  # once, at that case
        if kind == "die-mid-run":
            os._exit(4)  # a rank that dies in the middle of an operation
        if kind == "stall":
            time.sleep(10**6)  # a rank that hangs (a wedged GPU): only the coordinator's deadline ends it
        try:
            if kind == "raise":
                raise RuntimeError(f"injected failure of rank {args.rank} ({FAULT_ENV})")
            build = injected_oom if kind == "oom" else None
            timed = run_on_rank(case, args.rank, device, message["rounds"], message["iterations"], message["warmup"],
                                per_node=args.world_size, timeout_s=args.timeout, build=build,
                                progress=lambda: channel.send({"progress": True}), watched=False)
            channel.send({"rank_seconds": timed.rank_seconds, "members": list(timed.members),
                          "call_seconds": timed.call_seconds})
        except CaseSkipped as skipped:
            channel.send({"skip": str(skipped)})
        except VerificationError as error:
            channel.send({"wrong": str(error)})
        except Exception as error:
            channel.send({"error": first_line(error)})
            return 1  # the world is out of step now
        done += 1
    return 0


@contextlib.contextmanager
def running_world(backend: str = "gloo", timeout_s: float = 60.0, fault: str | None = None) -> Iterator[World]:
    """A started World that is always closed."""
    w = World(backend, timeout_s, fault=fault)
    try:
        w.start()
        yield w
    finally:
        w.close()
