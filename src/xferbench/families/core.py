"""The core families (the case matrix: create, h2d, d2h, d2d, peer, noop, host, sync): their records and the
calls each times (``Variant``), timed by ``measure/transfers.py`` and priced by ``measure/simulate.py``; and the
ladders of controls that take their calls apart (read by ``analyze/ladder.py``), each rung and factor named."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..units import count, format_bytes, format_number
from .base import ChangeSpec, Family, LadderSpec, RungSpec, Variant

if TYPE_CHECKING:
    import pandas as pd

    from ..analyze.peer_plan import RecordedPlan

__all__ = ["CORE", "DMA", "FRESH", "LADDERS", "LAUNCH", "SHORT", "SIMULATED_LINKS", "STAGING", "device_memory_roof",
           "UNKNOWN", "host_memcpy_roof", "named", "noop_call", "pair_order", "peer_plan_sentences",
           "plans_differ"]


def _v(*methods: str, memory: str | None = None, non_blocking: bool = False) -> tuple[Variant, ...]:
    return tuple(Variant(m, memory, non_blocking, cuda_only=m == "cuda") for m in methods)


_H2D = tuple(v for memory in ("pageable", "pinned") for nb in (False, True)
             for v in _v("to", "cuda", "copy_", memory=memory, non_blocking=nb))
#: Blocking allocating moves back land in fresh pageable memory (their faults are the cost
#: that grows past glibc's mmap threshold); copy_ into a preallocated buffer (written once
#: before timing: its pages are touched) is the control without them. .to('cpu',
#: non_blocking=True) returns pinned memory (torch's _to_copy pins the result of a non-blocking
#: copy from CUDA to the CPU): the one-line fix.
_D2H = (*_v("cpu", "to", "copy_", memory="pageable"), *_v("copy_", memory="pinned"),
        *_v("copy_", "to", memory="pinned", non_blocking=True))
#: Host copies: torch's (multi-threaded) clone and copy_, and copy_ on one thread, the roof of a
#: pageable copy to or from a GPU (the driver stages it through a pinned buffer with one thread).
_HOST = (*_v("clone", "copy_", memory="pageable"), Variant("copy_", "pageable", variant="single_thread"))
#: No-ops in the forms users write: .to(torch.device) (the plain "to"), .to('cuda:0') with a string (variant "str":
#: torch parses it on every call), .cuda(i) with an index, and .cpu().
_NOOP = (*_v("to"), Variant("to", variant="str"), *_v("cuda", "cpu"))

def noop_call(method: str, device: str, variant: object = None) -> str:
    """The call a no-op row timed, in the form users write it: .cuda(0), .to('cuda:0') (a string),
    .to(torch.device('cuda:0')), .cpu()."""
    if method == "cuda":
        return f".cuda({device.split(':')[1]})" if ":" in device else ".cuda()"
    if method == "to":
        return f".to('{device}')" if variant == "str" else f".to(torch.device('{device}'))"
    return f".{method}()"


CORE = (
    Family("h2d", "host to device", "pageable and pinned sources, blocking and non_blocking, .to / .cuda / copy_",
           "core", "tab:blue", link="pcie", endpoints="host->accelerator", variants=_H2D,
           same_code=(("method", ("cuda", "to"), ".cuda(i) and .to(device)"),)),
    Family("d2h", "device to host", ".cpu() / .to(device) into fresh pageable memory, .to(device, non_blocking=True) "
           "into fresh pinned memory, copy_ into preallocated pageable or pinned",
           "core", "tab:red", link="pcie", endpoints="accelerator->host", variants=_D2H,
           same_code=(("method", ("cpu", "to"), ".cpu() and .to(device)"),)),
    Family("d2d", "same device", "clone and copy_ within one device: its memory bandwidth",
           "core", "tab:green", link="device memory", endpoints="accelerator", variants=_v("clone", "copy_")),
    Family("peer", "device to device", ".to('cuda:j') and copy_ for every ordered pair of GPUs",
           "core", "tab:purple", link="nvlink", endpoints="accelerator->accelerator", variants=_v("to", "copy_")),
    Family("host", "host memory", "host-memory clone and copy_ (also on one thread): the reference any move to or "
           "from the CPU is bounded by", "core", "tab:gray", link="host memory", endpoints="host", variants=_HOST),
    Family("create", "creation", "torch.empty / zeros / ones / rand(shape, device=d) on each device",
           "core", "tab:orange", moves_payload=False, endpoints="each", variants=_v("empty", "zeros", "ones", "rand"),
           caption="torch.empty reserves memory and writes no byte (how its time grows with size is the allocator's); "
                   "zeros/ones/rand also write every byte."),
    Family("noop", "no-op moves", ".cuda(i), .to(device), .cpu() on a tensor already there: the same object comes back",
           "core", "tab:olive", moves_payload=False, endpoints="each", variants=_NOOP, sizes="ends",
           caption=".cuda(i), .to(torch.device), .to('device') and .cpu() on a tensor already there return the very "
                   "same object; what they cost is PyTorch's dispatch (parsing a string is part of it), shown next to "
                   "the cheapest real copy measured."),
    Family("sync", "synchronizing an idle device", "torch.cuda.synchronize(i) with nothing queued on the device",
           "core", "tab:brown", moves_payload=False, endpoints="accelerator", variants=_v("synchronize"), sizes="none",
           caption="A synchronize of a device with nothing queued still costs a round trip to the driver: what a "
                   "caller pays who synchronizes around every no-op or small move. Nothing moves, so it has no size."),
)


def device_memory_roof(peak_gbps: float) -> str:
    """The d2d family's roof named (analyze/model.py gives it half of ``peak_gbps``: a copy reads and writes every
    byte over the same memory)."""
    return (f"device memory ({format_number(peak_gbps)} GB/s, NVML clock x bus width, shared by a copy's read and "
            f"write: {format_number(peak_gbps / 2)} each)")


def host_memcpy_roof(nbytes: int) -> str:
    """The host family's single-thread memcpy named as the roof of a pageable move (the driver stages it so)."""
    return f"single-thread host memcpy ({format_bytes(nbytes)}, this run)"


#: How the simulated machine joins a peer pair: its spec gives every pair the same links.
SIMULATED_LINKS = "the simulated spec's, every pair"


#: How a pair whose link class is unknown is named.
UNKNOWN = "link unknown"


def pair_order(pair: str) -> tuple[tuple[int, int, str], ...]:
    """cuda:2->cuda:10 after cuda:2->cuda:9: by device index where there is one, a name without one after them."""
    return tuple(_end_order(end) for end in pair.split("->"))


def _end_order(end: str) -> tuple[int, int, str]:
    index = end.rsplit(":", 1)[-1]
    return (0, int(index), "") if index.isdigit() else (1, 0, end)


#: Pairs named in one sentence before the rest are counted.
NAMED = 8


def named(pairs: Iterable[str]) -> str:
    """``a, b, c`` or ``a, ..., h and 48 more``."""
    listed = list(pairs)
    shown = ", ".join(listed[:NAMED])
    return shown + (f" and {len(listed) - NAMED} more" if len(listed) > NAMED else "")


def peer_plan_sentences(plan: RecordedPlan, frame: pd.DataFrame) -> list[str]:
    """What the report says of the plan: the mode and why, each link class and the pair that stands for it,
    and which pairs were measured at which sizes (from the rows, so a size skipped or not run shows)."""
    lines = [f"Peer pairs: {_summary(plan)}"
             + ("." if len(plan.swept) == len(plan.classes) else
                f"; the other {len(plan.classes) - len(plan.swept)} at the smallest, the geometric middle and the two "
                "largest sizes (enough for their own α and β).")]
    classes: dict[str, list[str]] = {}  # the pairs of each link class, classes in the order of their first pair
    for pair in plan.pairs:
        classes.setdefault(plan.classes[pair] or UNKNOWN, []).append(pair)
    lines += [_class_sentence(plan, cls, pairs) for cls, pairs in classes.items()]
    return [*lines, _measured_sentence(plan, frame)]


def _class_sentence(plan: RecordedPlan, cls: str, pairs: list[str]) -> str:
    swept = [p for p in pairs if p in plan.swept]
    others = [p for p in pairs if p not in plan.swept]
    what = f"Link class {cls}" if cls != UNKNOWN else "Link unknown"
    if not others:
        return f"{what}: {count(len(pairs), 'pair')}, every one swept ({named(pairs)})."
    if plan.mode == "one-per-class" and len(swept) == 1:
        return f"{what}: {swept[0]} swept, standing for its {count(len(others), 'other pair')} ({named(others)})."
    return (f"{what}: {count(len(swept), 'pair')} swept ({named(swept) or 'none'}), {len(others)} at the fit sizes "
            f"({named(others)}).")


def _measured_sentence(plan: RecordedPlan, frame: pd.DataFrame) -> str:
    """Pairs grouped by the sizes the run has rows of; a planned pair without any row is named too."""
    rows = frame[frame["op"] == "peer"] if {"op", "src", "dst", "nbytes"} <= set(frame.columns) else frame.iloc[0:0]
    sizes: dict[str, tuple[int, ...]] = {}
    for (src, dst), group in ([] if rows.empty else rows.groupby(["src", "dst"])):
        sizes[f"{src}->{dst}"] = tuple(sorted({int(n) for n in group["nbytes"]}))
    groups: dict[tuple[int, ...], list[str]] = {}
    for pair in sorted(sizes, key=pair_order):
        groups.setdefault(sizes[pair], []).append(pair)
    parts = [f"{named(pairs)} at {count(len(s), 'size')} ({', '.join(format_bytes(n) for n in s)})"
             for s, pairs in sorted(groups.items(), key=lambda item: -len(item[0]))]
    if missing := [p for p in plan.pairs if p not in sizes]:
        parts.append(f"{named(missing)} not measured (planned, no result)")
    return "Measured: " + ("; ".join(parts) if parts else "no peer copy") + "."


def _summary(plan: RecordedPlan | None) -> str:
    """The peer family's plan in a clause, as the report and compare state it: ``one-per-class (default: ...): 1 of 56
    ordered GPU pairs swept at every size``."""
    if plan is None:
        return "no peer plan recorded (fewer than two GPUs, or an older run)"
    return f"{plan.mode} ({plan.reason}): {len(plan.swept)} of {len(plan.classes)} ordered GPU pairs swept at every size"


def plans_differ(base: RecordedPlan | None, new: RecordedPlan | None) -> str:
    """Compare's sentence when the two sides planned their peer pairs differently (analyze/peer_plan.py tells)."""
    return (f"Peer plans differ: base {_summary(base)}; new {_summary(new)}. A peer case measured on one side only is "
            "not compared.")


#: The rows each ladder reads its rungs from (analyze/ladder.py): column values to match.
_D2H_ROWS = {"op": "d2h", "non_blocking": False}
_H2D_ROWS = {"op": "h2d", "non_blocking": False}
_REGISTERED = {"op": "d2h_registered"}
#: Named by what the step measures, not by a cause: without fault counts the run cannot say how much of it is
#: allocation and first touch (its own allocate-and-touch controls may well cost less).
FRESH = "the fresh destination: what the call pays beyond a copy into a buffer already touched"
STAGING = "the driver's staging copy through its pinned bounce buffer"
#: The blocking copy against its non-blocking twin's DMA: a blocking copy's own device time is not measured (events
#: around it time the host's pace), so this step holds launch and synchronization and whatever blocking adds to the DMA.
LAUNCH = ("the call beyond its DMA: launch and synchronization, and "
          "what else the blocking call adds over its non-blocking twin's device time")
DMA = "the DMA (the copy's own device time)"


def _d2h(key: str, label: str, method: str) -> LadderSpec:
    return LadderSpec(key, f"{label}: where the time goes", (
        RungSpec(label, _D2H_ROWS | {"method": method, "host_memory": "pageable"}, ""),
        RungSpec("copy_ into a touched pageable buffer", _D2H_ROWS | {"method": "copy_", "host_memory": "pageable"},
                 FRESH),
        RungSpec("copy_ into a pinned buffer", _D2H_ROWS | {"method": "copy_", "host_memory": "pinned"}, STAGING),
        RungSpec("the DMA", {"op": "d2h", "method": "copy_", "host_memory": "pinned"}, LAUNCH, device_time=True),
    ), DMA)


#: Every ladder the analysis knows, in page order; a run gets those whose rungs it measured.
LADDERS: tuple[LadderSpec, ...] = (
    _d2h("d2h-cpu", ".cpu()", "cpu"),
    _d2h("d2h-to", ".to(device)", "to"),
    # The d2h_registered family's own cases, one GPU, one size: the same touched pageable buffer copied into plain,
    # then page-locked in place (cudaHostRegister), so the staging step is the page-locking alone, no other factor.
    LadderSpec("d2h-registered", ".cpu() against its registered control: where the time goes", (
        RungSpec(".cpu() (d2h_registered)", _REGISTERED | {"method": "cpu"}, ""),
        RungSpec("copy_ into a touched pageable buffer", _REGISTERED | {"method": "copy_", "host_memory": "pageable"},
                 FRESH),
        RungSpec("copy_ into that buffer registered with the driver", _REGISTERED | {"method": "copy_",
                 "host_memory": "registered"}, STAGING),
    ), "the copy into page-locked memory"),
    LadderSpec("h2d-to", ".to(device) from pageable memory: where the time goes", (
        RungSpec(".to(device) from pageable memory", _H2D_ROWS | {"method": "to", "host_memory": "pageable"}, ""),
        RungSpec("copy_ from pageable memory into a device buffer",
                 _H2D_ROWS | {"method": "copy_", "host_memory": "pageable"},
                 "the fresh device destination (the caching allocator)"),
        RungSpec("copy_ from pinned memory", _H2D_ROWS | {"method": "copy_", "host_memory": "pinned"}, STAGING),
        RungSpec("the DMA", {"op": "h2d", "method": "copy_", "host_memory": "pinned"}, LAUNCH, device_time=True),
    ), DMA),
    LadderSpec("host-clone", "clone() on the host: where the time goes", (
        RungSpec("clone()", {"op": "host", "method": "clone", "host_memory": "pageable"}, ""),
        RungSpec("copy_ into a touched buffer", {"op": "host", "method": "copy_", "host_memory": "pageable",
                                                 "variant": None}, FRESH),
    ), "the copy itself (into a touched buffer)"),
)

#: The changes to a user's code the core families price, each before and after as the run called them (a
#: torch.device, never a string: .to('cuda') also parses one).
CHANGES: tuple[ChangeSpec, ...] = (
    ChangeSpec("pinned-buffer", "Copy results into a reused pinned buffer", "y = x.cpu()",
               "y.copy_(x, non_blocking=True); torch.cuda.synchronize()",
               {"op": "d2h", "method": "cpu", "host_memory": "pageable", "non_blocking": False},
               {"op": "d2h", "method": "copy_", "host_memory": "pinned", "non_blocking": True},
               "y = torch.empty_like(x, device='cpu', pin_memory=True) once; read y after the synchronize"),
    ChangeSpec("non-blocking-to", "The one-line fix", "y = x.cpu()", "y = x.to(torch.device('cpu'), non_blocking=True); "
               "torch.cuda.synchronize()", {"op": "d2h", "method": "cpu", "host_memory": "pageable", "non_blocking": False},
               {"op": "d2h", "method": "to", "non_blocking": True},
               "PyTorch returns pinned memory for it; read y only after the synchronize"),
    ChangeSpec("pinned-source", "Pin a tensor you move more than once", "x.to(device)",
               "x = x.pin_memory(); x.to(device, non_blocking=True)",
               {"op": "h2d", "method": "to", "host_memory": "pageable", "non_blocking": False},
               {"op": "h2d", "method": "to", "host_memory": "pinned", "non_blocking": True},
               "x pinned once, moved often"),
    ChangeSpec("reused-host-buffer", "Copy a CPU tensor into a buffer you keep", "y = x.clone()", "y.copy_(x)",
               {"op": "host", "method": "clone", "host_memory": "pageable"},
               {"op": "host", "method": "copy_", "host_memory": "pageable", "variant": None},
               "y allocated once: only its first use touches fresh pages"),
)

#: Each factor in a few words, for a table's column and a figure's legend.
SHORT = {FRESH: "fresh destination", STAGING: "driver's staging copy",
         LAUNCH: "call beyond its DMA", DMA: "DMA (device time)",
         "the fresh device destination (the caching allocator)": "fresh device buffer",
         "the copy itself (into a touched buffer)": "the copy itself",
         "the copy into page-locked memory": "copy into page-locked memory"}
