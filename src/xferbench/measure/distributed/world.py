"""The world of ranks: who they are, where they run, how they meet, how they time together.

Each rank owns its device from its first call (``join``: ``torch.cuda.set_device`` and
``device_id``), so two ranks never share a GPU. Every rank times every round of a case
itself; after each round the ranks exchange their times (outside the timed region), so
each keeps all ranks' times and the world's time of a round is the slowest rank's.

Inside pytest the world is ``pytest_world.World``; under torchrun, torchrun.py's.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...units import first_line, format_bytes
from ..hardware.probe import pci_bus_id
from .errors import CaseSkipped, DistributedError, VerificationError
from .operations import DistCase, Operation, bytes_needed, operation
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
    "call_deadline",
    "check_own_gpus",
    "join",
    "node_name",
    "rank_device",
    "rank_place",
    "run_on_rank",
    "timed_rounds",
    "step_deadline",
]

#: This process's node, when hostnames do not tell nodes apart (tests split one machine in two).
NODE_ENV = "XFERBENCH_NODE"
#: The slowest a rank may move a payload byte before its call counts as hung (bytes per second):
#: a single multi-GB gloo call on a slow host must not pass for a dead rank.
FLOOR_BYTES_PER_S = 100e6
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

    def extra_info(self, case: DistCase, hosts: list[str]) -> dict[str, Any]:
        """What a distributed benchmark records beside its identity: every rank's times and host."""
        return case.extra_info() | {"clock": "wall+sync", "verified": True, "rank_seconds": self.rank_seconds,
                                    "rank_hosts": hosts, "rank_mean_seconds": self.mean_seconds,
                                    "rank_call_seconds": self.call_seconds}


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


def _allocate(case: DistCase, rank: int, device: str, gather: Callable[[float], list[float]], per_node: int) -> Operation:
    """This rank's buffers for ``case``, or CaseSkipped on every rank alike when any rank has too
    little free memory or runs out while allocating (the world stays in step for the next case)."""
    import torch

    need = bytes_needed(case.op, case.nbytes, case.variant)
    mine = free_bytes(device, per_node)
    if short := [(r, free) for r, free in enumerate(gather(-1.0 if mine is None else float(mine))) if 0 <= free < need]:
        raise CaseSkipped(f"{case.id} needs {format_bytes(need)} per rank; " + ", ".join(
            f"rank {r} has {format_bytes(int(free))} free" for r, free in short))
    made: Operation | None = None
    why = ""
    try:
        made = operation(case, rank, device)
    except torch.OutOfMemoryError as error:
        why = first_line(error)
    failed = [r for r, ok in enumerate(gather(1.0 if made else 0.0)) if ok < 1]
    if made is None or failed:
        raise CaseSkipped(f"{case.id}: rank(s) {', '.join(map(str, failed))} ran out of memory allocating "
                          f"{format_bytes(need)}" + (f" ({why})" if why else ""))
    return made


def run_on_rank(case: DistCase, rank: int, device: str, rounds: int, iterations: int, warmup: int, *,
                per_node: int = 1, timeout_s: float | None = None, progress: Callable[[], None] | None = None,
                watched: bool = True) -> Timed:
    """This rank's part of ``case``: allocate (or skip everywhere), time it, then check what it
    delivered (on every rank). ``per_node``: the ranks sharing this host's memory; ``timeout_s``:
    the base of the wait for peers, scaled to the payload (a big gloo call is no dead rank).
    ``progress``: told of each step; ``watched``, a host-side deadline per step watches the rank
    (watch.py), and the process group's timeout (NCCL's watchdog) then comes WATCHDOG_MARGIN_S later."""
    if timeout_s is not None:
        _set_timeout(step_deadline(timeout_s, case, iterations, warmup) + WATCHDOG_MARGIN_S
                     if progress is not None and watched else call_deadline(timeout_s, case))
    step = progress or (lambda: None)
    gather = exchange(device, case.world_size)
    op = _allocate(case, rank, device, gather, per_node)
    step()
    op.reset()
    timer = _call_timer(case)
    times = timed_rounds(op.call, rounds, iterations, warmup, gather, sync=op.sync, progress=step, timer=timer)
    op.reset()
    op.call()
    op.sync()
    if wrong := [r for r, ok in enumerate(gather(1.0 if op.check() else 0.0)) if ok < 1]:
        raise VerificationError(f"{case.id}: rank(s) {', '.join(map(str, wrong))} received wrong data")
    members = case.pair if case.point_to_point else tuple(range(case.world_size))
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
    places = [{"rank": r, "node": label} | entry[3] for r, ((label, _), entry) in enumerate(zip(labels, everyone, strict=True))]
    return labels, places


def rank_place(device: str, local_rank: int, cuda: Any = None, env: Any = None,
               hcas: Path = Path("/sys/class/infiniband")) -> dict[str, Any]:
    """Where this rank runs, for the roll call: its device, the GPU's PCI bus id (which tells apart
    two ranks that each call their GPU cuda:0), CUDA_VISIBLE_DEVICES as the launcher set it, the
    NCCL_* variables it runs with (they choose NCCL's network, algorithms and channels), its host's
    InfiniBand/RoCE adapters, and on a GPU the NCCL version torch runs. ``cuda`` defaults to torch's, ``env`` to
    os.environ; tests pass fakes."""
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
    return place


def _nccl_version(cuda: Any) -> str | None:
    """``2.21.5`` (torch.cuda.nccl.version() is a tuple, or an int on old torch); None where unknown."""
    with contextlib.suppress(Exception):
        version = cuda.nccl.version()
        return ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
    return None


def check_own_gpus(nodes: Sequence[str], places: Sequence[dict[str, Any]]) -> None:
    """Two ranks of one node on one GPU (the same PCI bus id) would share it, or make NCCL refuse
    the communicator: name them and say how each rank gets its own."""
    seen: dict[tuple[str, str], int] = {}
    for rank, (node, place) in enumerate(zip(nodes, places, strict=True)):
        if not (bus := place.get("pci_bus_id")):
            continue
        if (other := seen.setdefault((node, bus), rank)) != rank:
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

    with contextlib.suppress(Exception):  # no setter before torch 2.3; a backend that cannot change it keeps its own
        distributed_c10d._set_pg_timeout(dt.timedelta(seconds=seconds))
