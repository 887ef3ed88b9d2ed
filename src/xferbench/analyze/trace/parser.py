"""A torch.profiler (Kineto, Chrome trace) JSON read as a stream: only what pricing copies needs is kept.

Both formats torch has written: the current one (``gpu_memcpy``, ``cuda_runtime``, ``cpu_op``) and 2021's
(``Memcpy``, ``Runtime``, ``Operator``, ``tid: "stream 7"``); the category aliases are Holistic Trace Analysis's.
ijson's C backend reads the events one at a time, so a trace of tens of MB never sits in memory as objects
(``json.load`` of a 54 MB trace holds about 260 MB). Times are the profiler's microseconds, kept as seconds.
Every way a file can be wrong is a ``TraceError``: one line for the user.
"""

from __future__ import annotations

import gzip
import os
import re
import stat
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import ijson
import numpy as np

__all__ = ["MOST_BYTES", "Call", "Copy", "Span", "Trace", "TraceError", "read_trace"]

#: A trace larger than this (on disk, or once decompressed) is refused: a profile of a step or a few is tens of MB.
MOST_BYTES = 4 << 30
#: JSON nested deeper, or a string longer, is refused before ijson parses it: ijson keeps each open level's path (its
#: keys joined), so its memory grows as depth x keys (200 kB of brackets would take 24 GB). Traces nest 4 to 7 deep.
MOST_DEPTH, MOST_STRING = 64, 1 << 20
#: Each byte's step in the nesting outside strings, as an int8: ``[`` and ``{`` open a level, ``]`` and ``}`` close one.
_NESTS = bytes(1 if byte in b"[{" else 255 if byte in b"]}" else 0 for byte in range(256))
#: Host calls that hold the host until the device (or a stream) drains: HTA's blocking calls, less the polls.
SYNCS = frozenset(f"{api}{call}" for api in ("cuda", "hip") for call in
                  ("DeviceSynchronize", "StreamSynchronize", "EventSynchronize"))
_CATEGORIES = {"gpu_memcpy": "copy", "Memcpy": "copy", "cuda_runtime": "call", "Runtime": "call",
               "cuda_driver": "call", "cpu_op": "op", "Operator": "op", "user_annotation": "op",
               "kernel": "kernel", "Kernel": "kernel", "gpu_memset": "gpu", "Memset": "gpu"}
#: ``Memcpy DtoH (Device -> Pageable)``; ROCm writes ``(Host -> Device)``, older torch no memory at all.
_COPY = re.compile(r"Memcpy (HtoD|DtoH|DtoD|PtoP)(?: \((\w+) -> (\w+)\))?")
_KINDS = {"HtoD": "h2d", "DtoH": "d2h", "DtoD": "d2d", "PtoP": "peer"}
_MEMORY = {"Pageable": "pageable", "Pinned": "pinned"}
_STEP = re.compile(r"ProfilerStep#(\d{1,18})$")


class TraceError(ValueError):
    """A file that is no torch.profiler trace this can price; the message is one line."""


@dataclass(eq=False, slots=True)  # one object per event: hashed by identity, built fast (tens of thousands)
class Span:
    """A host span (an op, a step) on one thread: start and end in seconds."""

    start: float
    end: float
    name: str
    thread: str


@dataclass(eq=False, slots=True)
class Call(Span):
    """A runtime call (``cudaMemcpyAsync``, a synchronize) and the correlation id its GPU work carries."""

    correlation: int
    size: int | None = None  # ROCm's hipMemcpy* record the bytes here


@dataclass(frozen=True)
class Copy:
    """One copy the GPU ran: direction, host memory (``unknown`` where the trace does not say), bytes, stream."""

    start: float
    end: float
    kind: str
    memory: str
    nbytes: int | None
    stream: str
    device: int
    correlation: int


@dataclass
class Trace:
    """What pricing reads of a trace: its copies, their runtime calls, the syncs, the ops, steps and kernels."""

    gpus: dict[int, str] = field(default_factory=dict)
    copies: list[Copy] = field(default_factory=list)
    calls: dict[int, Call] = field(default_factory=dict)
    syncs: list[Call] = field(default_factory=list)
    ops: list[Span] = field(default_factory=list)
    steps: dict[int, Span] = field(default_factory=dict)
    kernels: list[tuple[float, float]] = field(default_factory=list)
    runtime_calls: int = 0
    gpu_events: int = 0
    #: The first event's time (µs): every time is kept in seconds after it, as a float's precision allows.
    base: float | None = None
    simulated: str | None = None


def read_trace(path: Path) -> Trace:
    """The trace at ``path`` (``.json``, ``.json.gz``, ``.pt.trace.json``), or a TraceError."""
    if path.name.endswith((".tar.gz", ".tgz", ".tar", ".zip")):
        raise TraceError("an archive: unpack it first and give the trace's .json (or .json.gz) inside")
    trace = Trace()
    with _open(path) as stream:
        try:
            head = stream.peek(512)[:512]
            if head[257:262] == b"ustar" or head.startswith(b"PK\x03\x04"):
                raise TraceError("an archive: unpack it first and give the trace's .json (or .json.gz) inside")
            events = _head(stream, trace)
            stream.seek(0)
            for event in ijson.items(stream, events, use_float=True):
                _event(event, trace)
        except (ijson.JSONError, EOFError, OSError, zlib.error, UnicodeDecodeError) as error:
            said = str(error).splitlines()[0][:120] if str(error) else type(error).__name__
            raise TraceError(f"a number out of range ({said})" if "overflow" in said
                             else f"not JSON, or cut short ({said})") from None
    _check(trace)
    return trace


class _Bounded:
    """A binary stream that refuses to give more than ``MOST_BYTES`` (a small .gz can decompress without end), or JSON
    nested deeper than ``MOST_DEPTH`` or with a string longer than ``MOST_STRING``."""

    given: int
    offset: int
    depth: int
    opened: int | None  # where the string open at the end of the last read began
    held: bytes  # backslashes at the end of the last read: their escape ends in the next

    def __init__(self, raw: IO[bytes], file: IO[bytes]) -> None:
        self.raw, self.file = raw, file
        self.seek(0)

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.given += len(data)
        if self.given > MOST_BYTES:
            raise TraceError(f"more than {MOST_BYTES >> 30} GiB once decompressed: not a trace of a few steps")
        self._scan(data)
        return data

    def _scan(self, data: bytes) -> None:
        """Follow the nesting and the open string through ``data`` (escapes masked; a run of backslashes at its end
        waits for the next read, where its escape ends)."""
        text = self.held + data
        cut = len(text.rstrip(b"\\"))
        text, self.held = text[:cut].replace(b"\\\\", b"..").replace(b'\\"', b".."), text[cut:]
        quotes = np.flatnonzero(np.frombuffer(text, np.uint8) == ord('"'))
        moves = np.frombuffer(text.translate(_NESTS), np.int8)
        nests = np.flatnonzero(moves)  # a bracket is outside strings after an even number of quotes
        outside = (np.searchsorted(quotes, nests) + (self.opened is not None)) % 2 == 0
        levels = self.depth + np.cumsum(moves[nests[outside]], dtype=np.int64)
        quotes = np.concatenate(([self.opened], quotes + self.offset)) if self.opened is not None else quotes + self.offset
        self.offset, self.depth = self.offset + len(text), int(levels[-1]) if len(levels) else self.depth
        self.opened = int(quotes[-1]) if len(quotes) % 2 else None
        ends = np.append(quotes, self.offset + len(self.held)) if len(quotes) % 2 else quotes
        if levels.max(initial=0) > MOST_DEPTH or np.max(ends[1::2] - ends[::2], initial=0) > MOST_STRING:
            raise TraceError(f"nested more than {MOST_DEPTH} deep, or a string over {MOST_STRING >> 20} MiB: not a "
                             "trace torch wrote")

    def peek(self, size: int) -> bytes:
        return self.raw.peek(size)  # type: ignore[attr-defined]

    def seek(self, offset: int) -> None:  # only to the start
        self.raw.seek(offset)
        self.given = self.offset = self.depth = 0
        self.opened, self.held = None, b""

    def __enter__(self) -> _Bounded:
        return self

    def __exit__(self, *exc: object) -> None:
        self.raw.close()
        self.file.close()


def _open(path: Path) -> _Bounded:
    """A regular file, opened without blocking (a FIFO is refused), gunzipped when it is gzip."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode) or status.st_size > MOST_BYTES:
        os.close(fd)
        raise TraceError("not a regular file (a folder, a FIFO or a device)" if not stat.S_ISREG(status.st_mode)
                         else f"larger than {MOST_BYTES >> 30} GiB: not a trace of a few steps")
    raw: IO[bytes] = os.fdopen(fd, "rb", buffering=1 << 16)
    if raw.peek(2)[:2] == b"\x1f\x8b":  # type: ignore[attr-defined]
        return _Bounded(gzip.GzipFile(fileobj=raw), raw)  # type: ignore[arg-type]
    return _Bounded(raw, raw)


def _head(stream: Any, trace: Trace) -> str:
    """The GPUs' names (``deviceProperties``, which every writer puts before the events) and the simulated mark; the
    events' prefix (Chrome's trace format also allows a bare array of events)."""
    device: dict[str, Any] = {}
    for prefix, event, value in ijson.parse(stream, use_float=True):
        if prefix == "" and event == "start_array":
            return "item"
        if prefix == "traceEvents" or (prefix == "" and event == "end_map"):
            return "traceEvents.item"
        if prefix == "deviceProperties.item" and event == "end_map" and isinstance(device.get("name"), str):
            trace.gpus[device.get("id", len(trace.gpus))] = device["name"]
            device = {}
        elif prefix in ("deviceProperties.item.id", "deviceProperties.item.name"):
            device[prefix.rsplit(".", 1)[1]] = value
        elif prefix == "xferbench_simulated" and isinstance(value, str):
            trace.simulated = value
    return "traceEvents.item"


def _times(event: dict[str, Any], trace: Trace) -> tuple[float, float]:
    """An event's start and end in seconds after the trace's first event; a TraceError unless both are times."""
    try:
        ts, dur = event["ts"], event.get("dur", 0)
        trace.base = ts if trace.base is None else trace.base
        start, length = (ts - trace.base) * 1e-6, dur * 1e-6
    except (KeyError, TypeError, OverflowError):
        raise TraceError(f"an event's time is {str(event.get('ts'))[:40]!r} (dur {str(event.get('dur'))[:40]!r}), "
                         "not microseconds") from None
    if not (-1e9 < start < 1e9 and 0 <= length < 1e6) or isinstance(ts, bool):  # NaN fails both
        raise TraceError(f"an event's time is {str(ts)[:40]} (dur {str(dur)[:40]}), not microseconds of a trace")
    return start, start + length


def _count(value: Any, what: str) -> int | None:
    """A byte count or an id: a whole number >= 0 (ROCm writes sizes as strings), None when absent."""
    if value is None:
        return None
    if isinstance(value, str) and value.isdecimal() and len(value) < 20:  # int() reads any Unicode decimal digit
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        raise TraceError(f"a copy's {what} is {str(value)[:40]!r}, not a whole number of at least 0")
    return value


def _event(event: Any, trace: Trace) -> None:
    """Keep one event if pricing needs it (the loop over every event of the trace: kept lean)."""
    try:
        role = _CATEGORIES.get(event["cat"])
    except (KeyError, TypeError):
        if not isinstance(event, dict):
            raise TraceError("traceEvents holds something that is not an event") from None
        return
    if role is None or event.get("ph") != "X":
        return
    if role == "call":  # most calls launch kernels: counted, not kept
        trace.runtime_calls += 1
        name = event.get("name")
        if not isinstance(name, str) or ("Memcpy" not in name and name not in SYNCS):
            return
    start, end = _times(event, trace)
    if role in ("kernel", "gpu"):
        trace.gpu_events += 1
        if role == "kernel":
            trace.kernels.append((start, end))
    elif role == "op":
        name = str(event.get("name"))
        span = Span(start, end, name, f"{event.get('pid')}:{event.get('tid')}")
        if name.startswith("ProfilerStep#") and (step := _STEP.match(name)):
            trace.steps[int(step.group(1))] = span
        else:
            trace.ops.append(span)
    else:
        args = event["args"] if isinstance(event.get("args"), dict) else {}
        if role == "call":
            _call(event, args, start, end, str(event.get("name")), trace)
        else:
            _copy(args, start, end, str(event.get("name")), trace)


def _call(event: dict[str, Any], args: dict[str, Any], start: float, end: float, name: str, trace: Trace) -> None:
    call = Call(start, end, name, f"{event.get('pid')}:{event.get('tid')}", _count(args.get("correlation"), "correlation")
                or 0, _count(args.get("size"), "size"))
    if name in SYNCS:
        trace.syncs.append(call)
    elif trace.calls.setdefault(call.correlation, call) is not call:
        raise TraceError(f"correlation id {call.correlation} names two runtime copies: two traces merged into one?")


def _copy(args: dict[str, Any], start: float, end: float, name: str, trace: Trace) -> None:
    trace.gpu_events += 1
    if not (found := _COPY.match(name)):
        return  # HtoH, or a copy torch names otherwise: not between host and device
    kind = _KINDS[found.group(1)]
    host = found.group(2) if kind == "h2d" else found.group(3)
    memory = "device" if kind in ("d2d", "peer") else _MEMORY.get(host or "", "unknown")
    trace.copies.append(Copy(start, end, kind, memory, _count(args.get("bytes"), "bytes"), str(args.get("stream")),
                             _count(args.get("device"), "device") or 0, _count(args.get("correlation"), "correlation")
                             or 0))


def _check(trace: Trace) -> None:
    """A trace that records no GPU work cannot say what its copies cost."""
    if not trace.gpu_events and not trace.runtime_calls:
        raise TraceError("no GPU activity recorded: record with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]")
    if not trace.gpu_events:
        raise TraceError(f"{trace.runtime_calls} runtime calls but no GPU activity recorded (no kernel, copy or "
                         "memset): was the profiler's CUDA activity on (ProfilerActivity.CUDA)?")
    seen: set[int] = set()
    for copy in trace.copies:
        if copy.correlation in seen and copy.correlation:
            raise TraceError(f"correlation id {copy.correlation} names two GPU copies: two traces merged into one?")
        seen.add(copy.correlation)
        call = trace.calls.get(copy.correlation)
        if copy.nbytes is None and (call is None or call.size is None):
            raise TraceError(f"a copy ({copy.kind}, correlation {copy.correlation}) records no bytes: record it "
                             "with a newer torch")
