"""The world of 2 ranks inside pytest: a coordinator and its helper processes on loopback.

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
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ...units import first_line
from ..record.pytest_benchmark_adapter import mark_used, new_stats
from .errors import CaseSkipped, DistributedError, VerificationError
from .operations import DistCase, calls_for
from .options import Profile
from .world import Timed, join, node_name, rank_device, roll_call, run_on_rank, step_deadline

__all__ = ["ENTRY", "GRACE_S", "Channel", "World", "free_port", "gpu_count", "record", "worker"]

LOOPBACK = "127.0.0.1"
#: The module each helper rank runs (``python -m ENTRY --worker``).
ENTRY = "xferbench.distributed"
#: After one rank failed, how long the others get to say why before the world is taken down.
GRACE_S = 2.0
#: Seconds a helper may take to start (import torch) on top of the rendezvous timeout.
STARTUP_S = 30.0
#: Words of a backend error that mean "I waited for a peer", not "I failed myself".
_WAITING = ("timed out", "timeout", "connection closed", "connection reset", "reset by peer", "broken pipe")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


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


class World:
    """A world of ``size`` ranks on loopback, every rank a helper process this one coordinates."""

    def __init__(self, backend: str = "gloo", timeout_s: float = 60.0, *, gpus: Sequence[str] = (), size: int = 2) -> None:
        self.backend, self.timeout_s, self.size = backend, timeout_s, size
        self.gpus = tuple(gpus)  # with nccl: the GPUs chosen (--xfer-devices), rank r on the r-th
        self.address, self.port = LOOPBACK, 0
        self.helpers: list[subprocess.Popen[bytes]] = []
        self.channels: dict[int, Channel] = {}
        self.broken: str | None = None
        self.device = "cpu"
        self.hosts: list[str] = []
        self._listener: socket.socket | None = None
        self._waiting: list[Channel] = []  # connected, not yet said which rank they are
        self._logs = [tempfile.NamedTemporaryFile(prefix=f"xferbench-rank{r}-", suffix=".log", delete=False) for r in range(size)]

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
            command = [sys.executable, "-m", ENTRY, "--worker", "--rank", str(rank),
                       "--world-size", str(self.size), "--address", self.address, "--port", str(self.port),
                       "--backend", self.backend, "--timeout", str(self.timeout_s), "--coordinator", str(coordinator)]
            if self.backend == "nccl":
                command += ["--device", self._device_of(rank)]
            self.helpers.append(subprocess.Popen(command, stdout=self._logs[rank], stderr=subprocess.STDOUT,
                                                 stdin=subprocess.DEVNULL))

    def _device_of(self, rank: int) -> str:
        if self.backend == "nccl" and len(self.gpus) > rank:
            return self.gpus[rank]
        return rank_device(self.backend, rank, gpu_count())

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
        readable = [self._listener, *(c.sock for c in self._waiting), *(c.sock for c in self.channels.values() if not c.closed)]
        ready, _, _ = select.select(readable, [], [], wait_s)
        for sock in ready:
            if sock is self._listener:
                self._waiting.append(Channel(self._listener.accept()[0]))
            else:
                next(c for c in [*self._waiting, *self.channels.values()] if c.sock is sock).pump()
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
        own, waited, gone, silent = list[str](), list[str](), list[str](), list[str]()
        for rank in range(self.size):
            answer = answers.get(rank, {})
            if "error" in answer:
                said = f"rank {rank} raised {answer['error']}"
                (waited if any(word in answer["error"].lower() for word in _WAITING) else own).append(said)
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

        def state(rank: int) -> str:
            if "error" in (answer := answers.get(rank, {})):
                return answer["error"]
            code = self._exit_code(rank)
            return (f"it exited with code {code}" if code is not None else "it did not answer") + self._tail(rank)
        states = "; ".join(f"rank {rank}: {state(rank)}" for rank in missing)
        return (f"rank(s) {', '.join(map(str, missing))} on {node_name()} did not join the rendezvous at "
                f"{self.rendezvous} within {self.timeout_s:g} s ({states})")

    def run(self, case: DistCase, benchmark: Any, profile: Profile, rounds: int | None = None) -> dict[str, Any]:
        """Time ``case`` on every rank and record the world's time of each round in ``benchmark``."""
        if self.broken:
            raise DistributedError(f"the world at {self.rendezvous} broke earlier: {self.broken}")
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
        benchmark.extra_info.update(timed.extra_info(case, self.hosts))
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
    return DistCase(**{**message["case"], "pair": tuple(message["case"]["pair"])})  # JSON made the pair a list


def worker(args: argparse.Namespace) -> int:
    """A rank of the world inside pytest: run what the coordinator hands out until told to stop (``main`` leaves the
    process group after it, whatever its end)."""
    channel = Channel(socket.create_connection((LOOPBACK, args.coordinator)))
    channel.send({"rank": args.rank})
    device = args.device or rank_device(args.backend, args.rank, gpu_count())
    try:
        join(args.backend, f"tcp://{args.address}:{args.port}", args.rank, args.world_size, args.timeout, device)
        roll_call(args.world_size, None)
    except Exception as error:  # torch raises several types here
        channel.send({"error": first_line(error)})
        return 2
    channel.send({"ready": node_name()})
    return _serve(channel, args, device)


def _serve(channel: Channel, args: argparse.Namespace, device: str) -> int:
    """Answer every case the coordinator sends with this rank's times, a skip, or why it failed."""
    while (message := channel.receive()) is not None and "stop" not in message:
        try:
            timed = run_on_rank(_case_of(message), args.rank, device, message["rounds"], message["iterations"],
                                message["warmup"], per_node=args.world_size, timeout_s=args.timeout,
                                progress=lambda: channel.send({"progress": True}), watched=False)
            channel.send({"rank_seconds": timed.rank_seconds, "members": list(timed.members), "call_seconds": timed.call_seconds})
        except CaseSkipped as skipped:
            channel.send({"skip": str(skipped)})
        except VerificationError as error:
            channel.send({"wrong": str(error)})
        except Exception as error:
            channel.send({"error": first_line(error)})
            return 1  # the world is out of step now
    return 0
