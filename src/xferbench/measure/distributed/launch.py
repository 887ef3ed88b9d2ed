"""``xferbench torchrun``: torchrun with a bounded rendezvous, whose failure to gather the nodes is one line.

torchrun's agents meet before any rank of ``xferbench.distributed`` starts, so a node that never comes is
torchrun's to notice: without ``--rdzv-conf`` it waits for ever (the static rendezvous) or 600 s (c10d), and
then ends with a traceback. ``xferbench torchrun TORCHRUN_OPTIONS -- OPTIONS`` runs
``torchrun TORCHRUN_OPTIONS -m xferbench.distributed OPTIONS`` with the rendezvous bounded by
``--join-timeout`` (unless ``--rdzv-conf`` is given), passes its output through, and turns a rendezvous that
timed out into one line naming the node ranks (and ranks) that never joined, exit 2.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["JOIN_TIMEOUT_S", "Launch", "LaunchError", "command", "missing_line", "parse", "run"]

#: Seconds torchrun's agents wait for every node unless told otherwise: enough for a node of a job array to start.
JOIN_TIMEOUT_S = 120.0
#: The bound (exclusive) of ``--join-timeout``: ``%g`` writes 1e6 and up as ``1e+06``, which torchrun cannot read.
MAX_JOIN_TIMEOUT_S = 1_000_000
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
    return Launch(timeout, tuple(before), entry)


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
    where = f"{_value(launch.torchrun, 'master-addr') or _value(launch.torchrun, 'rdzv-endpoint') or 'the rendezvous'}"
    port = _value(launch.torchrun, "master-port")
    where += f":{port}" if port and ":" not in where else ""
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


def run(launch: Launch) -> int:
    """torchrun's exit status, its output passed through (its errors once it ends); 2 and one line when the nodes
    never all joined."""
    proc = subprocess.Popen(command(launch), stderr=subprocess.PIPE, text=True, errors="replace")
    assert proc.stderr is not None
    errors = proc.stderr.read()  # stdout goes straight through: the plan and each case as it finishes
    status = proc.wait()
    line = missing_line(errors, launch) if status else None
    if line is not None:
        print(line, file=sys.stderr)
        return 2
    sys.stderr.write(errors)
    return status
