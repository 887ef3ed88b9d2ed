"""Each GPU copy of a trace tied to the host: its runtime call (by correlation id), the op it ran in (by nesting on
the call's thread), whether the host waited for it, and the host's time split three ways, never lumped:

- **wait**: the host held before the copy began, waiting for earlier GPU work to drain (not a transfer cost);
- **blocked**: the host held while the copy ran (for a copy the host never waits for, its call's own time);
- **tail**: the call's return and any synchronize after the copy ended.

A copy is blocking when its call is synchronous (``cudaMemcpy``), its host memory is pageable (CUDA stages it:
a device-to-pageable copy returns when done, a pageable-to-device one waits for the stream first), a synchronize
follows it inside the same op, or the host was held until it ended. Copies group by (direction, memory, blocking,
op); a group's GPU time is the union of its copies per stream, so overlapping copies count once.
"""

from __future__ import annotations

import bisect
import itertools
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from .parser import Call, Copy, Span, Trace, TraceError

__all__ = ["Group", "Step", "Tied", "group", "merged", "steps", "tie"]

#: What an op is called when no ``aten::`` op holds the call (a copy launched outside any recorded op).
NO_OP = "no op recorded"
#: Two times this close are one: the profiler's resolution, above the rounding of microseconds kept as seconds.
EPS = 1e-9


@dataclass(frozen=True)
class Tied:
    """One copy with its host side: op, blocking, bytes and the host's seconds split (wait + blocked + tail)."""

    copy: Copy
    op: str
    blocking: bool
    nbytes: int
    wait: float
    blocked: float
    tail: float
    call: Call | None


@dataclass
class Group:
    """The copies of one (kind, memory, blocking, op), summed; ``gpu_s`` is their union per stream."""

    kind: str
    memory: str
    blocking: bool
    op: str
    copies: list[Tied] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.copies)

    @property
    def nbytes(self) -> int:
        return sum(c.nbytes for c in self.copies)

    @property
    def gpu_s(self) -> float:
        streams: defaultdict[str, list[tuple[float, float]]] = defaultdict(list)
        for c in self.copies:
            streams[c.copy.stream].append((c.copy.start, c.copy.end))
        return sum(end - start for spans in streams.values() for start, end in merged(spans))

    def total(self, part: str) -> float:
        """The host's seconds of one part (``wait``, ``blocked``, ``tail``) over the group's copies."""
        return float(sum(getattr(c, part) for c in self.copies))


@dataclass(frozen=True)
class Step:
    """A ``ProfilerStep#N`` span (number None: the trace's whole window, no step recorded) and its GPU time."""

    number: int | None
    span: tuple[float, float]
    compute_s: float
    copy_s: float
    blocked_s: float
    wait_s: float


def _overlap(span: tuple[float, float], low: float, high: float) -> float:
    return max(0.0, min(span[1], high) - max(span[0], low))


def _nesting(trace: Trace) -> dict[Call, tuple[Span | None, str]]:
    """Each copy call and sync: the innermost op holding it and the outermost ``aten::`` op (the user's call)."""
    found: dict[Call, tuple[Span | None, str]] = {}
    threads: defaultdict[str, list[Span]] = defaultdict(list)
    for span in itertools.chain(trace.ops, trace.calls.values(), trace.syncs):
        threads[span.thread].append(span)
    for spans in threads.values():
        stack: list[Span] = []
        for span in sorted(spans, key=lambda s: (s.start, isinstance(s, Call), -s.end)):
            while stack and stack[-1].end < span.start:
                stack.pop()
            if isinstance(span, Call):  # an op that ended under a longer one stays stacked: only holders count
                holders = [op for op in stack if op.end >= span.end - EPS]
                users = [op.name for op in holders if op.name.startswith("aten::")]
                found[span] = (holders[-1] if holders else None, users[0] if users else NO_OP)
            else:
                stack.append(span)
    return found


def tie(trace: Trace) -> list[Tied]:
    """Every copy of the trace with its host side, in the order the GPU ran them."""
    nesting = _nesting(trace)
    syncs: defaultdict[Span | None, list[Call]] = defaultdict(list)
    for sync in sorted(trace.syncs, key=lambda s: s.start):  # in time, whatever the file's order
        syncs[nesting[sync][0]].append(sync)
    tied = []
    for copy in sorted(trace.copies, key=lambda c: c.start):
        call = trace.calls.get(copy.correlation)
        inner, op = nesting[call] if call else (None, NO_OP)
        mine = syncs.get(inner, []) if inner and call else []
        after = mine[bisect.bisect_left(mine, call.end - EPS, key=lambda s: s.start):] if mine and call else []
        size = call.size if call is not None and call.size is not None else 0  # read_trace refused a copy without
        tied.append(_split(copy, call, op, after[:1], copy.nbytes if copy.nbytes is not None else size))
    return tied


def _split(copy: Copy, call: Call | None, op: str, after: list[Call], nbytes: int) -> Tied:
    """The host's time on one copy: its call and the first synchronize after it in the same op."""
    held = [(c.start, c.end) for c in ([call] if call else []) + after]
    blocking = bool(after) or copy.memory == "pageable" or (call is not None and "Async" not in call.name)
    if not blocking:  # the host never waits for it: its call is all it costs the host
        return Tied(copy, op, False, nbytes, 0.0, sum(e - s for s, e in held), 0.0, call)
    inf = float("inf")
    return Tied(copy, op, True, nbytes, sum(_overlap(h, -inf, copy.start) for h in held),
                sum(_overlap(h, copy.start, copy.end) for h in held), sum(_overlap(h, copy.end, inf) for h in held), call)


def group(tied: list[Tied]) -> list[Group]:
    """The copies by (kind, memory, blocking, op), the group that holds the host longest first."""
    groups: dict[tuple[str, str, bool, str], Group] = {}
    for c in tied:
        key = (c.copy.kind, c.copy.memory, c.blocking, c.op)
        groups.setdefault(key, Group(*key)).copies.append(c)
    return sorted(groups.values(), key=lambda g: -(g.total("wait") + g.total("blocked") + g.total("tail")))


def steps(trace: Trace, tied: list[Tied], only: int | None = None) -> tuple[list[Step], list[Tied]]:
    """The steps (``only``: that one) with what their time went to, and the copies whose call began in them."""
    spans: dict[int | None, tuple[float, float]] = {n: (s.start, s.end) for n, s in sorted(trace.steps.items())}
    if not spans:  # no step recorded: the trace's whole window is one
        every = [*trace.kernels, *((c.start, c.end) for c in trace.copies),
                 *((s.start, s.end) for s in [*trace.ops, *trace.calls.values(), *trace.syncs])]
        spans = {None: (min((s for s, _ in every), default=0.0), max((e for _, e in every), default=0.0))}
    if only is not None:
        if only not in spans:
            have = ", ".join(str(n) for n in spans) if None not in spans else "none"
            raise TraceError(f"--step {only}: the trace has no ProfilerStep#{only} (steps recorded: {have})")
        spans = {only: spans[only]}
    kernels, copies = merged(trace.kernels), merged((c.copy.start, c.copy.end) for c in tied)
    found, kept = [], []
    for number, span in spans.items():
        # a copy belongs to the step its host call (else the copy itself) started in
        mine = tied if number is None else [c for c in tied if span[0] <= (c.call or c.copy).start < span[1]]
        kept += mine
        found.append(Step(number, span, sum(_overlap(k, *span) for k in kernels),
                          sum(_overlap(k, *span) for k in copies), sum(c.blocked + c.tail for c in mine),
                          sum(c.wait for c in mine)))
    return found, kept


def merged(spans: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """Overlapping spans merged, so that a time is counted once."""
    merged: list[tuple[float, float]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
