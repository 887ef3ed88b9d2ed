"""``torchrun ... -m xferbench.distributed``: every rank runs the same cases, rank 0 writes the JSON.

The order of a run: validate the options and this rank's memory (usage errors, exit 2,
before any rendezvous); own the device; join; a roll call (every rank's node, and the
same settings everywhere); then the cases, each timed on every rank and checked after
timing; rank 0 writes a pytest-benchmark JSON built with pytest-benchmark's own records
(``Metadata`` / ``Stats`` and its JSON hook), which ``xferbench report`` and ``compare`` take.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NoReturn

from ...units import DTYPE_SIZES, first_line, format_bytes, format_size, parse_sizes
from ..record.pytest_benchmark_adapter import commit_info, generate_json, machine_info, record
from .faults import Interrupted, catch_signals, who_broke
from .nccl_log import configured, log_env, summary
from .operations import DistCase, bytes_needed, calls_for, cases_for, swept
from .options import PROFILES, Profile, add_to_argparse
from .pytest_world import gpu_count, worker
from .watch import WATCHDOG_MARGIN_S, WRITTEN, Watch
from .world import (
    CaseSkipped,
    DistributedError,
    Timed,
    VerificationError,
    check_own_gpus,
    check_same_settings,
    exchange,
    free_bytes,
    join,
    node_name,
    rank_place,
    roll_call,
    run_on_rank,
    step_deadline,
)

if TYPE_CHECKING:
    from pytest_benchmark.stats import Metadata

    from ..record.journal import Journal

__all__ = ["check_launch", "choose_device", "main", "validate"]

PROG = "xferbench.distributed"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2 (argparse prints the whole usage)
        self.exit(2, f"{PROG}: {message}\n")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog=f"python -m {PROG}", description="Transfers between processes and nodes (under torchrun)")
    p.add_argument("--out", type=Path, default=Path("distributed.json"), help="JSON to write (rank 0); must not exist")
    p.add_argument("--profile", choices=sorted(PROFILES), default="quick")
    p.add_argument("--sizes", help="override the profile's sizes, e.g. 1KiB..64MiB:x4")
    p.add_argument("--pairs", choices=("first", "rails"), default="first",
                   help="point-to-point pairs across nodes: rank 0 with the first rank of each other node (first), or "
                        "every local rank r of node 0 with local rank r of each other node (rails: every GPU's NIC)")
    p.add_argument("--plan-only", action="store_true", help="form the world, print the cases, and stop before measuring")
    add_to_argparse(p)
    # The helper rank of the world inside pytest; not for users. --coordinator is the pytest process's port,
    # --device the helper's GPU, chosen by rank 0.
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    for flag, kind, default in (("--rank", int, 1), ("--world-size", int, 2), ("--address", str, "127.0.0.1"),
                                ("--port", int, 0), ("--coordinator", int, 0), ("--device", str, None)):
        p.add_argument(flag, type=kind, default=default, help=argparse.SUPPRESS)
    return p


def check_out(out: Path) -> None:
    """The JSON can be written, and writing it loses nothing: checked before measuring."""
    if out.exists() or out.is_symlink():
        raise DistributedError(f"--out {out}: it exists already; choose a new name (results are never overwritten)")
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir():
        raise DistributedError(f"--out {out}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise DistributedError(f"--out {out}: the folder {folder} is not writable")


def validate(args: argparse.Namespace, rank: int, world_size: int, free_bytes: int | None) -> list[int]:
    """The byte sizes this rank will run, or DistributedError: a usage error before any rendezvous."""
    where = f"rank {rank} on {node_name()}"
    if world_size < 2:
        raise DistributedError(f"{where}: a world of {world_size} rank cannot measure transfers between processes; "
                               "start at least 2 (torchrun --nproc-per-node=2, or --nnodes=2)")
    try:
        sizes = [s for s in parse_sizes(args.sizes or PROFILES[args.profile].sizes) if isinstance(s, int)]
    except ValueError as error:
        raise DistributedError(f"--sizes: {error}") from None
    if not sizes:
        raise DistributedError("--sizes: give byte sizes such as 4B,1MiB (shapes have no meaning between processes)")
    element = DTYPE_SIZES["float32"]
    if min(sizes) < element:
        raise DistributedError(f"--sizes: {format_size(min(sizes))} is smaller than one float32 element ({element} B)")
    largest = max(bytes_needed(op, size) for size in sizes for op in ("all_gather", "all_reduce"))
    if free_bytes is not None and largest > free_bytes:
        raise DistributedError(f"{where}: --sizes up to {format_size(max(sizes))} need {format_size(largest)} per rank, "
                               f"more than the {format_bytes(free_bytes)} free here")
    if rank == 0:
        check_out(args.out)
    return sizes


@dataclass(frozen=True)
class Launch:
    """Who this rank is, as its launcher says: torchrun's variables, or SLURM's under a plain srun."""

    rank: int
    world_size: int
    local_rank: int  # its GPU on this node
    per_node: int  # ranks on this node
    node_id: str | None  # the launcher's number of this node (GROUP_RANK, SLURM_NODEID), if it gives one


def launched(env: Mapping[str, str]) -> Launch:
    """This rank's place in the world, or DistributedError (one line) saying how to start it."""
    def number(*names: str, default: str | None = None) -> int:
        for name in names:
            if env.get(name):
                try:
                    return int(env[name].split("(")[0])  # SLURM_TASKS_PER_NODE reads "4(x2)"
                except ValueError:
                    raise DistributedError(f"{name}={env[name]!r} is not a whole number") from None
        if default is None:
            raise DistributedError(f"started by srun without torchrun, and {' or '.join(names)} is unset; "
                                   f"start with srun torchrun ... -m {PROG}, or set it")
        return int(default)

    if "RANK" in env:  # torchrun (or anything that sets its variables)
        return Launch(number("RANK"), number("WORLD_SIZE", default="1"), number("LOCAL_RANK", default="0"),
                      number("LOCAL_WORLD_SIZE", default="1"), env.get("GROUP_RANK"))
    if "SLURM_PROCID" in env:  # srun alone: every rank would take GPU 0 without SLURM_LOCALID
        for name in ("MASTER_ADDR", "MASTER_PORT"):
            if not env.get(name):
                raise DistributedError(f"started by srun without torchrun, and {name} is unset; export MASTER_ADDR "
                                       "(the first node of the job) and MASTER_PORT before srun")
        return Launch(number("SLURM_PROCID"), number("SLURM_NTASKS"), number("SLURM_LOCALID"),
                      number("SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE"), env.get("SLURM_NODEID"))
    raise DistributedError("not started by torchrun (RANK is unset) nor by srun (SLURM_PROCID is unset); run: "
                           f"torchrun --nnodes=N --nproc-per-node=M -m {PROG} --out run.json")


def choose_device(requested: str, gpus: int, launch: Launch, visible: str | None) -> tuple[str, str]:
    """The backend and this rank's device, from the GPUs this rank can see.

    Every GPU of the node visible (torchrun, srun without binding): GPU ``local_rank``. Fewer
    visible than the node's ranks, with ``CUDA_VISIBLE_DEVICES`` set (srun --gpus-per-task=1,
    or a launcher that binds each task): the launcher gave this rank its own, ``cuda:0``.
    Where GPUs exist, ``auto`` is nccl: gloo on the CPU only when asked for (``--backend gloo``)
    or where no GPU is visible; a GPU per rank that cannot be had is an error, never a silent gloo run."""
    if requested == "gloo" or (requested == "auto" and gpus == 0):
        return "gloo", "cpu"
    if gpus >= launch.per_node:
        return "nccl", f"cuda:{launch.local_rank}"
    if visible and gpus > 0:  # bound by the launcher: what this rank sees is its own
        return "nccl", "cuda:0"
    raise DistributedError(f"rank {launch.rank} on {node_name()}: nccl needs one GPU per rank, and this node runs "
                           f"{launch.per_node} ranks on {gpus} GPU(s); use --nproc-per-node={gpus}, bind a GPU to each task "
                           "(srun --gpus-per-task=1), or --backend gloo for a CPU run")


def swept_sizes(args: argparse.Namespace, profile: Profile, backend: str, sizes: list[int], free: int | None,
                notes: list[str]) -> list[int]:
    """The sizes the world runs: up to the largest that fits --mem-fraction of ``free``; else, for an nccl world on
    the profile's own sizes, on to the bus-bandwidth plateau where the profile asks for it (``Profile.plateau``:
    not the cluster profile, whose sizes are chosen to fit its time); else ``sizes``. Why a sweep stopped short
    is added to ``notes``."""
    found, stopped = swept(sizes, free, args.mem_fraction, backend == "nccl" and not args.sizes and profile.plateau)
    if stopped is not None:
        notes.append(stopped.reason)
    return found


def plan_line(cases: Sequence[DistCase], rounds: int, world_size: int, backend: str) -> str:
    """The run's cases, printed before measuring: how many, on how many ranks, their sizes and rounds."""
    sizes = sorted({case.nbytes for case in cases})
    span = f"{format_size(sizes[0])} to {format_size(sizes[-1])}" if sizes else "no sizes"
    return f"{len(cases)} cases on {world_size} ranks ({backend}, {span}, {rounds} rounds each)"


def _nnodes(env: Mapping[str, str]) -> int | None:
    """The number of nodes the launcher was told of: torchrun's --nnodes (GROUP_WORLD_SIZE), or Slurm's."""
    for name in ("GROUP_WORLD_SIZE", "SLURM_NNODES", "SLURM_JOB_NUM_NODES"):
        with contextlib.suppress(KeyError, ValueError):
            return int(env[name])
    return None


def check_launch(nodes: Sequence[str], places: Sequence[Mapping[str, Any]]) -> None:
    """The world that formed is the one every rank was launched for: as many nodes as each was told
    (--nnodes), as many ranks on each node as it was told (--nproc-per-node, --ntasks-per-node).
    A world that formed otherwise would measure, and exit 0, with ranks or nodes missing."""
    from collections import Counter

    counts = Counter(nodes)
    for rank, (node, place) in enumerate(zip(nodes, places, strict=True)):
        if (said := place.get("per_node")) is not None and said != counts[node]:
            raise DistributedError(f"rank {rank} on {node} was started as one of {said} ranks on its node, and "
                                   f"{counts[node]} joined from {node}; start every node with the same "
                                   "--nproc-per-node (srun: --ntasks-per-node) as the ranks it runs")
        if (told := place.get("nnodes")) is not None and told != len(counts):
            raise DistributedError(f"rank {rank} on {node} was started for {told} node(s) (--nnodes), and the "
                                   f"world holds ranks of {len(counts)}: {', '.join(sorted(counts))}; start every "
                                   "node with the same --nnodes")
    if len(set(counts.values())) > 1:  # each as launched, but torchrun sums the nodes: 2 + 1 ranks form a world of 3, silently
        shares = ", ".join(f"{node} {count}" for node, count in sorted(counts.items()))
        raise DistributedError(f"the nodes run different numbers of ranks ({shares}: a world of {len(nodes)}); start "
                               "every node with the same --nproc-per-node (srun: --ntasks-per-node)")


def _log_nccl(backend: str, rank: int) -> Path | None:
    """This rank's NCCL INFO log file, set up before the communicator forms (NCCL reads its variables then); None
    on gloo, or where the user set NCCL_DEBUG or NCCL_DEBUG_FILE."""
    import tempfile

    if backend != "nccl":
        return None
    folder = Path(tempfile.mkdtemp(prefix="xferbench-nccl-"))
    env = log_env(os.environ, folder, rank)
    os.environ.update(env)
    return Path(env["NCCL_DEBUG_FILE"]) if env else None


def _nccl_choices(backend: str, log: Path | None, places: list[dict[str, Any]]) -> None:
    """Every rank's NCCL version, network and transports (its log, read once the roll call formed the communicator),
    into ``places``. Every nccl rank gathers, logged or not (the user's NCCL_DEBUG on one node only must not hang)."""
    import torch.distributed as dist

    if backend != "nccl":
        return
    mine: dict[str, Any] = {}
    if log is not None:
        with contextlib.suppress(OSError):
            mine = summary(log.read_text(errors="replace"))
    everyone: list[Any] = [None] * len(places)
    dist.all_gather_object(everyone, mine)
    for place, choices in zip(places, everyone, strict=True):
        if choices:
            place["nccl"] = choices


def _leave() -> None:
    """Leave the process group if this rank is in one (its peers then fail fast, not at the timeout)."""
    import torch.distributed as dist

    if dist.is_initialized():
        with contextlib.suppress(Exception):
            dist.destroy_process_group()


@dataclass(frozen=True)
class _World:
    """The world as formed: this rank's launch, backend and device, the sizes it validated, every rank's node."""

    launch: Launch
    backend: str
    device: str
    sizes: list[int]
    nodes: list[str]
    places: list[dict[str, Any]]


def _form(args: argparse.Namespace) -> _World:
    """Validate this rank (usage errors before any rendezvous), join, and check the world every rank formed."""
    gpus = gpu_count()  # imports torch, before anything else is checked
    launch = launched(os.environ)
    backend, device = choose_device(args.backend, gpus, launch, os.environ.get("CUDA_VISIBLE_DEVICES"))
    sizes = validate(args, launch.rank, launch.world_size, free_bytes(device, launch.per_node))
    # the first rank of each node fingerprints its node: every node of the run is described, not node 0 alone;
    # configured(): TORCH_DISTRIBUTED_DEBUG=DETAIL alone made a 4 B broadcast 4x slower, so say it
    place = rank_place(device, launch.local_rank) | {"per_node": launch.per_node, "nnodes": _nnodes(os.environ)} | (
        {"fingerprint": _node_fingerprint()} if launch.local_rank == 0 else {}) | configured()
    nccl_log = _log_nccl(backend, launch.rank)
    try:
        join(backend, "env://", launch.rank, launch.world_size, args.timeout, device)
        settings = {"sizes": args.sizes, "profile": args.profile, "rounds": args.rounds, "backend": args.backend,
                    "mem_fraction": args.mem_fraction, "pairs": args.pairs}  # what every rank must agree on
        everyone, places = roll_call(launch.world_size, settings, launch.node_id, place)
        _nccl_choices(backend, nccl_log, places)
    except Exception as error:
        size_from = "WORLD_SIZE" if "RANK" in os.environ else "SLURM_NTASKS"
        address = f"{os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}"
        raise DistributedError(f"rank {launch.rank} on {node_name()}: the world of {launch.world_size} did not form at "
                               f"{address} within {args.timeout:g} s (a rank or node never joined, or died, or ranks "
                               f"were launched for different world sizes: this one for {launch.world_size}, by its "
                               f"{size_from}): {first_line(error)}") from None
    check_same_settings(everyone)
    nodes = [node for node, _ in everyone]
    check_launch(nodes, places)
    check_own_gpus(nodes, places)
    return _World(launch, backend, device, sizes, nodes, places)


def _plan(args: argparse.Namespace, world: _World, notes: list[str]) -> list[DistCase]:
    """The cases every rank runs (the sizes swept where asked), said by rank 0 before it measures."""
    profile = PROFILES[args.profile]
    sizes = world.sizes
    if args.mem_fraction or (world.backend == "nccl" and not args.sizes and profile.plateau):
        # read now that the world holds its communicators, as this node's ranks share its host memory; the least
        # free memory of any rank (unknown anywhere: unknown)
        mine = free_bytes(world.device, world.launch.per_node)
        least = min(exchange(world.device, world.launch.world_size)(-1.0 if mine is None else float(mine)))
        sizes = swept_sizes(args, profile, world.backend, sizes, None if least < 0 else int(least), notes)
    cases = cases_for(world.launch.world_size, world.nodes, world.backend, world.device.split(":")[0], sizes,
                      rails=args.pairs == "rails", rails_most=None if args.sizes else profile.rails_most)
    if world.launch.rank == 0:
        print(f"{PROG}: {plan_line(cases, args.rounds or profile.rounds, world.launch.world_size, world.backend)}", flush=True)
    return cases


def run(args: argparse.Namespace) -> int:
    catch_signals()  # before torch: a Ctrl-C while it loads is one line too, no traceback
    world = _form(args)
    notes: list[str] = []
    cases = _plan(args, world, notes)
    if args.plan_only:
        return 0
    rank, nodes = world.launch.rank, world.nodes
    # Rank 0 alone describes the run, once, and journals every case as it finishes (run.json ->
    # run.journal.jsonl), so a world killed midway (a node lost, a job's time limit) keeps what it
    # measured: xferbench report reads it.
    described = _describe_run(world, notes) if rank == 0 else None
    journal = _open_journal(args.out, len(cases), described) if described is not None else None
    finish = _Finish(args.out, [], described, journal, notes,
                     f"{world.launch.world_size} ranks on {len(set(nodes))} node(s), {world.backend}")
    from torch.distributed import distributed_c10d

    store = distributed_c10d._get_default_store()
    watch = Watch(store, rank, world.launch.world_size, nodes, finish.give_up).start()
    try:
        broke = _measure_all(args, world, cases, finish, watch)
    except Interrupted as stop:  # Ctrl-C, SIGTERM, or torchrun ending this node's ranks: keep what finished
        watch.stop()
        return finish.interrupted_by(stop, store, world, len(cases), args.timeout)
    if described is not None:
        finish.write()
    if broke:
        if rank == 0:
            with contextlib.suppress(Exception):
                store.set(WRITTEN, "1")  # the other ranks may go now
        raise DistributedError(broke)
    return 0


def _measure_all(args: argparse.Namespace, world: _World, cases: Sequence[DistCase], finish: _Finish, watch: Watch) -> str | None:
    """Every case in turn, journaled as it finishes; the line naming who broke the world where a peer died or hung
    (rank 0, or the lowest survivor, names it)."""
    profile = PROFILES[args.profile]
    rank, nodes = world.launch.rank, world.nodes
    for case in cases:
        finish.case, iterations = case.id, calls_for(case.nbytes)
        watch.begin(case.id, step_deadline(args.timeout, case, iterations, profile.warmup))
        try:
            timed = run_on_rank(case, rank, world.device, args.rounds or profile.rounds, iterations, profile.warmup,
                                per_node=world.launch.per_node, timeout_s=args.timeout, progress=watch.step)
            finish.add(_metadata(case, timed, iterations, nodes))
        except CaseSkipped as skipped:  # every rank skips it alike: the world stays in step
            finish.notes.append(f"skipped {skipped}")
        except Exception as error:
            watch.stop()
            if isinstance(error, VerificationError | DistributedError):
                raise
            broke = who_broke(watch.store, rank, world.launch.world_size, nodes, case.id, error, args.timeout)
            finish.notes.append(broke or f"rank {rank} on {nodes[rank]}: the world broke during {case.id}: {first_line(error)}")
            return finish.notes[-1]
    watch.stop()
    return None


@dataclass
class _Finish:
    """Rank 0's JSON of the cases that finished, written at the end, or by the watch's thread when the world hung."""

    out: Path
    records: list[Metadata]
    described: dict[str, Any] | None
    journal: Journal | None
    notes: list[str]
    world: str  # "4 ranks on 2 node(s), nccl"
    interrupted: bool = False  # a signal ended the run (the journal says so)
    case: str = ""  # the case running

    def add(self, record: Metadata) -> None:
        self.records.append(record)
        if self.journal is not None:
            self.journal.write({"benchmark": record.as_dict(include_data=True)})

    def write(self) -> None:
        assert self.described is not None
        from ...output import write_atomic

        records = list(self.records)
        try:  # the name is claimed as it is written: a run launched meanwhile into it keeps its file (this: out.1.json)
            payload = generate_json(records, self.described["machine_info"], self.described["commit_info"])
            written = write_atomic(self.out, json.dumps(payload, indent=1), exclusive=True)
        except OSError as error:  # checked up front, but the disk can fill or the folder go meanwhile
            raise DistributedError(f"--out {self.out}: could not write it ({first_line(error)})") from None
        if self.journal is not None:
            self.journal.close({"end": {"exitstatus": 0, "interrupted": self.interrupted, "finished": len(records)}})
        same = written == Path(os.path.realpath(self.out))
        taken = "" if same else f" ({self.out} was taken by another run meanwhile)"
        print(f"{PROG}: wrote {self.out if same else written}{taken} ({len(records)} benchmarks, {self.world})"
              + "".join(f"; {note}" for note in self.notes), flush=True)

    def _written(self, store: Any, note: str) -> None:
        """Rank 0 writes what finished, with ``note``, and tells the other ranks they may go."""
        self.notes.append(note)
        with contextlib.suppress(DistributedError):
            self.write()
        with contextlib.suppress(Exception):
            store.set(WRITTEN, "1")

    def interrupted_by(self, stop: Interrupted, store: Any, world: _World, planned: int, timeout_s: float) -> int:
        """A signal ended the run: rank 0 writes the cases that finished and says so; the others say in the store
        that they were interrupted (no culprit) and wait, bounded, for rank 0's JSON (torchrun ends a node's ranks
        together)."""
        if self.described is None:
            who_broke(store, world.launch.rank, world.launch.world_size, world.nodes, self.case, stop, min(timeout_s, 10.0))
        else:
            self.interrupted = True
            self._written(store, f"interrupted by {stop} during {self.case or 'the start'} after "
                                 f"{len(self.records)} of {planned} cases: the JSON keeps those that finished")
        return stop.exit_status

    def give_up(self, watch: Watch, line: str) -> None:
        """The watch's thread, when this rank made no progress within its deadline: rank 0 writes what finished,
        the others wait for that (their exit would end rank 0 where torchrun shares a node); then exit 2, as
        no other code of this rank will run (its main thread waits in a collective that never ends; NCCL's watchdog,
        and its flight-recorder dump, never act: the host deadline comes first)."""
        if self.described is not None:
            self._written(watch.store, line)  # the world's store, which the watch beats in
        else:
            watch.wait_written(WATCHDOG_MARGIN_S + (watch.limit_s or 0.0))
        _say(f"{PROG}: {line}")
        os._exit(2)


def _metadata(case: DistCase, timed: Timed, iterations: int, nodes: list[str]) -> Metadata:
    """pytest-benchmark's own record of one benchmark, filled with the world's round times."""
    fixture = SimpleNamespace(
        name=f"test_distributed[{case.id}]", fullname=f"{PROG}::{case.id}", has_error=False, group=f"{case.op} {case.backend} "
        f"x{case.world_size}", param=case.id, params=None, cprofile_stats=None,
        extra_info=timed.extra_info(case, nodes))
    return record(fixture, iterations, [seconds * iterations for seconds in timed.world_seconds])


def _describe_run(world: _World, notes: list[str]) -> dict[str, Any]:
    """The run's ``machine_info`` and ``commit_info``, as pytest-benchmark builds them, for the journal and the JSON."""
    places = world.places
    node = _node_fingerprint()
    machine = node["machine"]
    machine["xferbench"] = node["xferbench"] | {
        "world_size": world.launch.world_size, "backend": world.backend, "nodes": sorted(set(world.nodes)),
        "notes": notes, "ranks": [{k: v for k, v in place.items() if k != "fingerprint"} for place in places],
        "node_fingerprints": {place["node"]: place["fingerprint"] for place in places if "fingerprint" in place}}
    return {"machine_info": machine, "commit_info": commit_info()}


def _node_fingerprint() -> dict[str, Any]:
    """This node's machine fingerprint (CPU, memory, GPUs, links), as the pytest path records it."""
    from ..hardware.devices import TorchBackend
    from ..hardware.machine import fingerprint

    return {"machine": machine_info(), "xferbench": fingerprint(TorchBackend())}


def _open_journal(out: Path, planned: int, described: dict[str, Any]) -> Journal | None:
    """The journal beside ``out``; None (the run goes on, as with pytest) when it cannot be opened."""
    import datetime as dt

    from ..record.journal import Journal, unused_journal

    journal = Journal(unused_journal(out.with_suffix("").as_posix() + ".journal"))
    try:
        journal.open({"datetime": dt.datetime.now(dt.timezone.utc).isoformat(), "planned": planned, **described})
    except OSError as error:
        _say(f"{PROG}: no journal ({first_line(error)}); the JSON is written at the end")
        return None
    return journal


def _say(line: str) -> None:
    """One line on stderr in one write: a node's ranks share its stderr, unbuffered, and print's two writes (the text,
    then the newline) of two ranks interleave into one line ("...ntasks-per-node)xferbench.distributed: ...")."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()  # before an os._exit, where stderr is buffered


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return worker(args) if args.worker else run(args)
    except VerificationError as error:
        _say(f"{PROG}: wrong data: {error}")
        return 1
    except (DistributedError, ValueError) as error:
        _say(f"{PROG}: {error}")
        return 2
    except Interrupted as stop:  # before the cases began (joining, the roll call): nothing measured to keep
        _say(f"{PROG}: interrupted by {stop}")
        return stop.exit_status
    finally:
        _leave()  # on every exit, error or not: a peer waiting on this rank learns at once


if __name__ == "__main__":
    sys.exit(main())
