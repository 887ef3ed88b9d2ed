"""``xferbench torchrun``: torchrun with a bounded rendezvous, whose failure to gather the nodes is one line.

torchrun's agents meet before any rank of ``xferbench.distributed`` starts, so a node that never comes is
torchrun's to notice: without ``--rdzv-conf`` it waits for ever (the static rendezvous) or 600 s (c10d), and
then ends with a traceback. ``xferbench torchrun TORCHRUN_OPTIONS -- OPTIONS`` runs
``torchrun TORCHRUN_OPTIONS -m xferbench.distributed OPTIONS`` with the rendezvous bounded by
``--join-timeout`` (unless ``--rdzv-conf`` is given), passes its output through, and turns a rendezvous that
timed out into one line naming the node ranks (and ranks) that never joined, exit 2.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

__all__ = ["JOIN_TIMEOUT_S", "Launch", "LaunchError", "command", "kept_line", "mark_started", "missing_line", "parse",
           "ranks_said", "run"]

#: Seconds torchrun's agents wait for every node unless told otherwise: enough for a node of a job array to start.
JOIN_TIMEOUT_S = 120.0
#: The bound (exclusive) of ``--join-timeout``: ``%g`` writes 1e6 and up as ``1e+06``, which torchrun cannot read.
MAX_JOIN_TIMEOUT_S = 1_000_000
#: Seconds a rank takes to start once the rendezvous formed (a Python that imports the entry point), on a busy host.
START_GRACE_S = 30.0
#: The folder where each rank says it started (set by ``xferbench torchrun`` for its ranks).
STARTED_ENV = "XFERBENCH_TORCHRUN_STARTED"
#: What the static rendezvous (``--master-addr``/``--master-port``) says when nodes are missing.
_CLIENTS = re.compile(r"Timed out after \d+ seconds waiting for clients\. (\d+)/(\d+) clients joined")
#: What the c10d rendezvous (``--rdzv-backend=c10d``) raises.
_C10D = "RendezvousTimeoutError"


class LaunchError(ValueError):
    """A launch that cannot be made as given; the message says what to give."""


@dataclass(frozen=True)
class Launch:
    join_timeout: float
    torchrun: tuple[str, ...]  # torchrun's own options
    entry: tuple[str, ...]  # xferbench.distributed's options


def _value(args: Sequence[str], name: str) -> str | None:
    """The value of torchrun's option ``--name`` (``--name=V`` or ``--name V``; dashes or underscores)."""
    names = {f"--{name}", f"--{name.replace('-', '_')}"}
    for i, arg in enumerate(args):
        key, equals, value = arg.partition("=")
        if key in names:
            return value if equals else (args[i + 1] if i + 1 < len(args) else None)
    return None


def parse(argv: Sequence[str]) -> Launch:
    """``[--join-timeout S] TORCHRUN_OPTIONS -- OPTIONS``; LaunchError for anything else."""
    if "--" not in argv:
        raise LaunchError("give torchrun's options, then --, then xferbench.distributed's, e.g. xferbench torchrun "
                          "--nnodes=2 --nproc-per-node=8 --node-rank=0 --master-addr=HOST --master-port=29500 -- "
                          "--profile cluster")
    cut = list(argv).index("--")
    before, entry = list(argv[:cut]), tuple(argv[cut + 1:])
    timeout = JOIN_TIMEOUT_S
    given = _value(before, "join-timeout")
    if given is not None:
        try:
            timeout = float(given)
        except ValueError:
            timeout = float("nan")
        # torchrun reads the rendezvous timeouts as whole seconds: a fraction, or 1e6 written ``1e+06``, made it
        # fail with its own traceback and exit 1, the code for "regression".
        if not (1 <= timeout < MAX_JOIN_TIMEOUT_S and timeout == int(timeout)):
            raise LaunchError(f"--join-timeout {given!r}: give whole seconds from 1 to {MAX_JOIN_TIMEOUT_S - 1}")
        timeout = float(int(timeout))
        before = [a for i, a in enumerate(before) if not (a.startswith("--join-timeout") or
                                                          (i > 0 and before[i - 1] == "--join-timeout"))]
    _check_counts(before)
    return Launch(timeout, tuple(before), entry)


def _whole(text: str) -> int:
    """``text`` as a whole number, or 0 where it is none (``-1``, ``abc``, ``1.5``)."""
    return int(text) if text.isascii() and text.isdigit() else 0


def _check_counts(torchrun: Sequence[str]) -> None:
    """--nnodes and --nproc-per-node as torchrun reads them, or LaunchError: torchrun ends on a bad one (0, -1, abc)
    with its traceback and exit 1, the code for "regression"."""
    nnodes = _value(torchrun, "nnodes")
    bounds = [_whole(part) for part in ("1" if nnodes is None else nnodes).split(":")]
    if len(bounds) > 2 or min(bounds) < 1 or bounds != sorted(bounds):
        raise LaunchError(f"--nnodes {nnodes!r}: give a whole number of nodes from 1, or MIN:MAX (1 <= MIN <= MAX)")
    per_node = _value(torchrun, "nproc-per-node")
    if per_node is not None and per_node not in ("auto", "cpu", "gpu", "xpu") and _whole(per_node) < 1:
        raise LaunchError(f"--nproc-per-node {per_node!r}: give a whole number of ranks from 1, or auto, cpu, gpu or "
                          "xpu")


def command(launch: Launch) -> list[str]:
    """The torchrun command line: the rendezvous bounded by ``join_timeout`` unless --rdzv-conf is given (``timeout``
    for the static rendezvous, ``join_timeout`` for c10d's)."""
    bounded = [] if _value(launch.torchrun, "rdzv-conf") is not None else [
        f"--rdzv-conf=timeout={launch.join_timeout:g},join_timeout={launch.join_timeout:g}"]
    return [sys.executable, "-m", "torch.distributed.run", *launch.torchrun, *bounded, "-m", "xferbench.distributed",
            *launch.entry]


def _ranks(node_ranks: Sequence[int], per_node: str | None) -> str:
    if per_node is None or not per_node.isdigit():
        return ""
    width = int(per_node)
    spans = [f"{n * width}-{n * width + width - 1}" if width > 1 else f"{n * width}" for n in node_ranks]
    return f" (ranks {', '.join(spans)})"


def missing_line(stderr: str, launch: Launch) -> str | None:
    """The one line that says which nodes never joined, when torchrun's rendezvous timed out; None otherwise."""
    where = _where(launch)
    found = _CLIENTS.search(stderr)
    timeout = _value(launch.torchrun, "rdzv-conf") or f"--join-timeout {launch.join_timeout:g} s"
    if found:
        joined, nodes = int(found.group(1)), int(found.group(2))
        own = _value(launch.torchrun, "node-rank") or "0"
        others = [n for n in range(nodes) if str(n) != own]
        if joined == 1:
            who = (f"node rank(s) {', '.join(map(str, others))}"
                   f"{_ranks(others, _value(launch.torchrun, 'nproc-per-node'))} never joined")
        else:
            who = f"{nodes - joined} of node ranks {', '.join(map(str, others))} never joined"
        return (f"xferbench torchrun: {joined} of {nodes} nodes joined the rendezvous at {where} within {timeout}: {who}; "
                "start every node with the same --nnodes, --master-addr and --master-port, or raise --join-timeout")
    if _C10D in stderr:
        return (f"xferbench torchrun: the rendezvous at {where} did not gather every node within {timeout} (the c10d "
                "rendezvous does not say which never joined); start every node with the same --nnodes and "
                "--rdzv-endpoint, or raise --join-timeout")
    return None


#: How a rank of the entry point begins the one line it prints before it exits 2 (bad options, an uneven world).
_RANK_LINE = "xferbench.distributed: "
_ROOT_EXIT = re.compile(r"Root Cause.*?exitcode\s*:\s*(-?\d+)", re.S)


def ranks_said(stderr: str) -> tuple[list[str], int] | None:
    """Where torchrun failed because a rank stopped with its own line (exit 2: bad options, an uneven world), those
    lines once each and that exit status, in place of torchrun's ChildFailedError traceback; None otherwise."""
    found = _ROOT_EXIT.search(stderr)
    if "ChildFailedError" not in stderr or found is None or int(found.group(1)) != 2:
        return None
    lines = list(dict.fromkeys(line for line in stderr.splitlines() if line.startswith(_RANK_LINE)))
    return (lines, 2) if lines else None


def _port_taken(launch: Launch) -> str | None:
    """One line when this node is to host the static rendezvous (node rank 0, --master-port) and something else
    listens on that port already: torchrun would end with a traceback, and the other nodes would wait on the
    stranger for ever (a TCPStore client that reached a listener which never answers has no timeout)."""
    port = _value(launch.torchrun, "master-port")
    backend = _value(launch.torchrun, "rdzv-backend")
    if port is None or not port.isdigit() or backend not in (None, "static") or \
            (_value(launch.torchrun, "node-rank") or "0") != "0":
        return None
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as TCPStore binds: TIME_WAIT is no owner
        try:
            probe.bind(("", int(port)))
        except OSError as error:
            if error.errno != errno.EADDRINUSE:
                return None
            return (f"xferbench torchrun: --master-port {port} is taken on this node (another program listens on it); "
                    "choose a free port and give it to every node")
    return None


def _start_deadline(launch: Launch) -> float:
    """Seconds after which a torchrun that started no rank is ended: its rendezvous bound (--join-timeout, or the
    user's --rdzv-conf timeouts), and the time a rank takes to start."""
    conf = _value(launch.torchrun, "rdzv-conf")
    bounds = [launch.join_timeout]
    for item in (conf or "").split(","):
        key, _, value = item.partition("=")
        if key.strip() in ("timeout", "join_timeout", "last_call_timeout"):
            with contextlib.suppress(ValueError):
                bounds.append(float(value))
    return (max(bounds) if conf is not None else launch.join_timeout) + START_GRACE_S


def _out(entry: Sequence[str]) -> Path:
    """The JSON rank 0 writes (``--out``, relative to this node's working folder, as torchrun starts the ranks)."""
    return Path(_value(entry, "out") or "distributed.json")


def kept_line(out: Path, since: float) -> str | None:
    """After a run that failed or was interrupted on node 0: where what finished is, when rank 0 wrote no JSON
    (killed, or a signal that left it no time): its journal and how many of the planned cases it holds."""
    with contextlib.suppress(OSError):
        if out.stat().st_mtime >= since:
            return None  # rank 0 wrote it and said so
    base = out.with_suffix("").as_posix() + ".journal"
    journals = [p for p in out.parent.glob(Path(base).name + "*.jsonl") if p.stat().st_mtime >= since]
    if not journals:
        return None
    journal = max(journals, key=lambda p: p.stat().st_mtime)
    finished, planned = 0, None
    with contextlib.suppress(OSError, ValueError), journal.open() as lines:
        for number, line in enumerate(lines):
            if number == 0:
                planned = json.loads(line).get("planned")
            finished += line.startswith('{"benchmark"')
    of = f" of {planned}" if isinstance(planned, int) else ""
    return (f"xferbench torchrun: rank 0 wrote no JSON; its journal {journal} keeps the {finished}{of} cases that "
            f"finished (xferbench report {journal} reads it)")


def run(launch: Launch) -> int:
    """torchrun's exit status, its output passed through (its errors once it ends); 2 and one line when the nodes
    never all joined, the master port is taken, or no rank started within the rendezvous bound. SIGINT and SIGTERM
    are forwarded to torchrun (it forwards them to its ranks, which keep what finished); what torchrun said is
    printed, then where the finished cases are."""
    taken = _port_taken(launch)
    if taken is not None:
        print(taken, file=sys.stderr)
        return 2
    began = time.time()
    status, captured, signals, never = _torchrun(launch)
    said = _why(launch, captured, never) if not signals and (never or status) else None
    if said is not None:  # one line of this wrapper's, or the ranks' own: torchrun's traceback adds nothing
        print("\n".join(said[0]), file=sys.stderr)
        return said[1]
    sys.stderr.write(captured)
    kept = kept_line(_out(launch.entry), began) if status and (_value(launch.torchrun, "node-rank") or "0") == "0" \
        else None
    if signals:
        print(f"xferbench torchrun: interrupted by {signal.Signals(signals[0]).name}, forwarded to torchrun and its ranks"
              + (f"; {kept.removeprefix('xferbench torchrun: ')}" if kept else ""), file=sys.stderr)
        return 128 + signals[0]
    if kept:
        print(kept, file=sys.stderr)
    return status


def _why(launch: Launch, captured: str, never: bool) -> tuple[list[str], int] | None:
    """Why torchrun failed, in the lines to print and the exit status, where it is known: no rank started, nodes
    missing from the rendezvous, its port taken, or the ranks' own one line; None: torchrun's output says it."""
    where = _where(launch)
    if never:
        return [f"xferbench torchrun: no rank started within {_start_deadline(launch):g} s: the rendezvous at {where} "
                "never formed (node 0 not started, or another program listens on its port); torchrun was ended"], 2
    line = missing_line(captured, launch)
    if line is None and "address already in use" in captured.lower():
        line = (f"xferbench torchrun: the rendezvous port at {where} is taken (another program listens on it); choose "
                "a free --master-port and give it to every node")
    return ([line], 2) if line is not None else ranks_said(captured)


def _torchrun(launch: Launch) -> tuple[int, str, list[int], bool]:
    """Run torchrun: its exit status, its stderr, the signals forwarded to it, and whether it was ended for starting
    no rank within the rendezvous bound."""
    with tempfile.TemporaryDirectory(prefix="xferbench-torchrun-") as folder:
        started = Path(folder)
        # its own process group: a signal is forwarded once (a Ctrl-C at a terminal reaches this process only)
        proc = subprocess.Popen(command(launch), stderr=subprocess.PIPE, text=True, errors="replace",
                                start_new_session=True, env=os.environ | {STARTED_ENV: folder})
        errors: list[str] = []
        reader = threading.Thread(target=_read, args=(proc, errors), daemon=True)
        reader.start()
        signals: list[int] = []

        def forward(signum: int, frame: FrameType | None) -> None:
            signals.append(signum)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signum)

        previous = {name: signal.signal(name, forward) for name in (signal.SIGINT, signal.SIGTERM)}
        try:
            status, never = _wait(proc, started, time.monotonic() + _start_deadline(launch))
        finally:
            for name, handler in previous.items():
                signal.signal(name, handler)
        reader.join(timeout=10)
    return status, "".join(errors), signals, never


def _read(proc: subprocess.Popen[str], into: list[str]) -> None:
    """torchrun's stderr, kept to be printed (or replaced by one line) when it ends; read on a thread so that a
    full pipe never stalls torchrun while this process waits on it."""
    assert proc.stderr is not None
    for line in proc.stderr:
        into.append(line)


def _wait(proc: subprocess.Popen[str], started: Path, deadline: float) -> tuple[int, bool]:
    """torchrun's exit status, and whether it was ended for starting no rank by ``deadline``."""
    while True:
        with contextlib.suppress(subprocess.TimeoutExpired):
            return proc.wait(timeout=0.2), False
        if time.monotonic() > deadline and not any(started.iterdir()):
            _end(proc)
            return proc.wait(), True


def _end(proc: subprocess.Popen[str]) -> None:
    """End torchrun's process group: SIGTERM, then SIGKILL if it has not gone within 10 s (its agents stop their
    ranks on SIGTERM; none has started here)."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signum)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
            return


def _where(launch: Launch) -> str:
    where = _value(launch.torchrun, "master-addr") or _value(launch.torchrun, "rdzv-endpoint") or "the rendezvous"
    port = _value(launch.torchrun, "master-port")
    return where + (f":{port}" if port and ":" not in where else "")


def mark_started(env: Mapping[str, str]) -> None:
    """A rank says it started (``xferbench torchrun`` ends a torchrun whose rendezvous never formed)."""
    folder = env.get(STARTED_ENV)
    if folder:
        with contextlib.suppress(OSError):
            (Path(folder) / env.get("RANK", "rank")).touch()
