"""The benchmark matrix: frozen, hashable case records, and which ones a machine gets.

A ``Case`` is the identity of a measurement: the same case on two runs is the same
record, which is what the report groups by and what regression tracking matches on.
No torch here: the matrix is plain data, built from device strings.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..contract import Identity
from ..families import FAMILIES, Family, Variant, family, ops
from ..units import DTYPE_SIZES, Size, format_size

__all__ = [
    "NO_SIZE",
    "PEER_PAIRS",
    "PROFILES",
    "Case",
    "LinkClasses",
    "PeerPlan",
    "PlannedCase",
    "Skipped",
    "accelerators",
    "build_cases",
    "core_ops",
    "default_peer_pairs",
    "fit_shapes",
    "no_accelerator",
    "peer_plan",
    "shapes_for",
]

#: ``--xfer-profile`` presets: the sizes swept. ``quick`` keeps a CPU-only run
#: under a minute; ``full`` sweeps from the lesson's 2x3 tensor to 1 GiB, with 24, 31 and
#: 33 MiB around glibc's largest mmap threshold (32 MiB): above it every fresh allocation
#: is a new mapping whose pages fault in on first touch.
PROFILES: dict[str, str] = {"quick": "4B,1KiB,1MiB,64MiB", "full": "2x3,4B..16MiB:x4,24MiB,31MiB,33MiB,64MiB..1GiB:x4"}
#: The shape of a case whose family has no size axis (a Case needs one; its nbytes is 0).
NO_SIZE = (1,)


class PlannedCase(Protocol):
    """What every planned case is, whatever its family's kind (``Case``, ``families.scenario.Scenario``,
    ``families.concurrent.Concurrent``, ``distributed.DistCase``): a frozen record that names its family,
    has a pytest id, says how many bytes one call moves and which data-contract identity it has."""

    @property
    def op(self) -> str: ...

    @property
    def id(self) -> str: ...

    @property
    def nbytes(self) -> int: ...

    def identity(self) -> Identity: ...

    def extra_info(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Case:
    """One measured operation: what is done, from where to where, on what payload."""

    op: str
    method: str
    src: str
    dst: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    host_memory: str | None = None
    non_blocking: bool = False
    variant: str | None = None  # a second way of running the same call (families.Variant)

    def __post_init__(self) -> None:
        if self.dtype not in DTYPE_SIZES:
            raise ValueError(f"unknown dtype {self.dtype!r}")
        if not self.shape or min(self.shape) < 1:
            raise ValueError(f"shape must have positive dimensions, got {self.shape!r}")
        if self.host_memory not in (None, "pageable", "pinned"):
            raise ValueError(f"host_memory must be pageable, pinned or None, got {self.host_memory!r}")

    @property
    def sized(self) -> bool:
        """False for a family without a size axis (``Family.sizes == "none"``): its shape is a placeholder."""
        return self.op not in FAMILIES or FAMILIES[self.op].sizes != "none"

    @property
    def nbytes(self) -> int:
        """Payload bytes; 0 for a family without a size axis (nothing moves)."""
        return math.prod(self.shape) * DTYPE_SIZES[self.dtype] if self.sized else 0

    @property
    def size_label(self) -> str:
        return format_size(self.nbytes) if len(self.shape) == 1 else "x".join(map(str, self.shape))

    @property
    def devices(self) -> tuple[str, ...]:
        """Every device the case touches, each once."""
        return tuple(dict.fromkeys((self.src, self.dst)))

    @property
    def id(self) -> str:
        """Readable pytest id, e.g. ``pinned-nonblocking-copy_-64MiB-float32-cpu->cuda:0``."""
        parts: list[str] = []
        if self.host_memory:
            parts.append(self.host_memory)
        if self.src != self.dst:  # a move across devices: blocking or not matters
            parts.append("nonblocking" if self.non_blocking else "blocking")
        parts += [self.method, self.size_label, self.dtype] if self.sized else [self.method]
        if self.variant:
            parts.append(self.variant)
        on_one_device = self.src == self.dst and (family(self.op).endpoints == "each" or not self.sized)
        parts.append(self.src if on_one_device else f"{self.src}->{self.dst}")
        return "-".join(parts)

    def identity(self) -> Identity:
        return Identity(self.op, self.method, self.src, self.dst, self.nbytes, self.dtype, self.shape,
                        self.host_memory, self.non_blocking, self.variant)

    def extra_info(self) -> dict[str, Any]:
        """The data-contract fields that identify this case (contract.Identity)."""
        return self.identity().extra_info()


@dataclass(frozen=True)
class Skipped:
    """A case this machine cannot run, with the one-line reason pytest will show."""

    id: str
    reason: str


Planned = Case | Skipped


def shapes_for(sizes: Iterable[int | Size], dtype: str) -> tuple[list[tuple[int, ...]], list[Skipped]]:
    """Turn byte sizes into 1-D shapes of ``dtype``; explicit shapes pass through."""
    shapes: list[tuple[int, ...]] = []
    skipped: list[Skipped] = []
    itemsize = DTYPE_SIZES[dtype]
    for size in sizes:
        if isinstance(size, tuple):
            shapes.append(size)
        elif size % itemsize:
            label = format_size(size)
            skipped.append(Skipped(f"{label}-{dtype}", f"{label} is not a whole number of {dtype} elements"))
        else:
            shapes.append((size // itemsize,))
    return list(dict.fromkeys(shapes)), skipped


def accelerators(devices: Sequence[str]) -> list[str]:
    """The devices that are not the CPU."""
    return [d for d in devices if d != "cpu"]


def no_accelerator(op: str, devices: Sequence[str]) -> Skipped:
    """The one skip line of a family that needs an accelerator, on a machine without one."""
    return Skipped(f"{op}-no-accelerator", f"{op} needs an accelerator; the devices measured are: {', '.join(devices)}")


def _endpoints(family: Family, devices: Sequence[str]) -> list[tuple[str, str]] | Skipped:
    """The (src, dst) pairs a family runs on here, or the one skip saying why there are none."""
    op, gpus = family.op, accelerators(devices)
    no_cpu = Skipped(f"{op}-no-cpu", f"{op} needs cpu in --xfer-devices")
    if family.endpoints == "each":
        return [(d, d) for d in devices]
    if family.endpoints == "host":
        return [("cpu", "cpu")] if "cpu" in devices else no_cpu
    if family.endpoints in ("host->accelerator", "accelerator->host"):
        if not gpus:
            return no_accelerator(op, devices)
        if "cpu" not in devices:
            return no_cpu
        return [("cpu", d) if family.endpoints == "host->accelerator" else (d, "cpu") for d in gpus]
    if family.endpoints == "accelerator":
        return [(d, d) for d in gpus] or no_accelerator(op, devices)
    if len(gpus) < 2:
        found = ", ".join(gpus) or "none"
        return Skipped(f"{op}-needs-two-accelerators", f"{op} copies need two accelerators; found {len(gpus)} ({found})")
    return [(s, d) for s in gpus for d in gpus if s != d]


def _applies(variant: Variant, src: str, dst: str) -> bool:
    """Whether a variant exists on these endpoints: .cuda() only for CUDA, .cpu() only on the host."""
    return dst.startswith("cuda:") if variant.cuda_only else variant.method != "cpu" or dst == "cpu"


def _family_cases(op: str, devices: Sequence[str], shape: tuple[int, ...], dtype: str) -> list[Planned]:
    fam = family(op)
    endpoints = _endpoints(fam, devices)
    if isinstance(endpoints, Skipped):
        return [endpoints]
    return [Case(op, v.method, src, dst, shape, dtype, v.host_memory, v.non_blocking, v.variant)
            for src, dst in endpoints for v in fam.variants if _applies(v, src, dst)]


def build_cases(op: str, devices: Sequence[str], sizes: Sequence[int | Size], dtypes: Sequence[str],
                peers: PeerPlan | None = None) -> list[Planned]:
    """Every case of one op family for these devices, sizes and dtypes, skips included.

    A no-op costs the same at any size, so it is measured at the smallest and the
    largest size only: enough to show that the size does not matter. ``peers`` (the peer family's
    plan, ``--xfer-peer-pairs``) sweeps every size on its swept pairs and only ``fit_shapes`` on the
    others; without one every pair is swept. A family with no
    size axis (``sizes="none"``, a synchronize) gets one case per endpoint and variant,
    whatever the sizes and dtypes: its shape is the placeholder ``NO_SIZE``.
    """
    if op not in core_ops():
        raise ValueError(f"unknown op {op!r}; expected one of {', '.join(core_ops())}")
    if family(op).sizes == "none":
        return _family_cases(op, devices, NO_SIZE, "float32")
    planned: list[Planned] = []
    for dtype in dtypes:
        shapes, skipped = shapes_for(sizes, dtype)
        planned += skipped
        if family(op).sizes == "ends" and shapes:
            by_bytes = sorted(shapes, key=math.prod)
            shapes = list(dict.fromkeys([by_bytes[0], by_bytes[-1]]))
        cases = [case for shape in shapes for case in _family_cases(op, devices, shape, dtype)]
        planned += _sparse_pairs(cases, peers, set(fit_shapes(shapes))) if op == "peer" and peers else cases
    # One skip line per reason is enough; repeating it per size is noise.
    unique: dict[str, Planned] = {}
    for item in planned:
        unique.setdefault(item.id, item)
    return list(unique.values())


def core_ops() -> tuple[str, ...]:
    """The families the case matrix builds (the registry's core kind)."""
    return ops("core")


#: ``--xfer-peer-pairs``: which ordered GPU pairs the peer family sweeps at every size. Every other
#: pair is still measured at ``fit_shapes`` (enough sizes for its own α and β).
PEER_PAIRS = ("all", "ring", "one-per-class")
Pair = tuple[str, str]


class LinkClasses(dict[Pair, str | None]):
    """Each ordered GPU pair's link class (a backend's ``peer_link_classes``); None where unknown, and
    ``why`` it is unknown where the backend can say (the plan records it)."""

    def __init__(self, classes: Mapping[Pair, str | None] | None = None) -> None:
        super().__init__(classes or {})
        self.why: dict[Pair, str] = {}


@dataclass(frozen=True)
class PeerPlan:
    """The peer family's plan: the pairs swept at every size, and why this mode was used."""

    mode: str
    reason: str  # "given" or the default's reason (default_peer_pairs)
    swept: frozenset[Pair]
    classes: Mapping[Pair, str | None] = field(default_factory=dict)

    def as_json(self) -> dict[str, object]:
        """What the run records (machine_info.xferbench.peer_plan), so the report and compare know which
        pairs were planned at every size and which only at the sizes that fit α and β."""
        return {"mode": self.mode, "reason": self.reason,
                "swept_pairs": sorted(f"{s}->{d}" for s, d in self.swept),
                "classes": {f"{s}->{d}": c for (s, d), c in sorted(self.classes.items())},
                "other_pairs_sizes": "the smallest, the geometric middle and the two largest sizes"}


def _pairs(gpus: Sequence[str]) -> list[Pair]:
    return [(s, d) for s in gpus for d in gpus if s != d]


def _ring(gpus: Sequence[str]) -> set[Pair]:
    """Each GPU to its next one and back (GPU n-1 to GPU 0 closes the ring)."""
    edges = {(gpus[i], gpus[(i + 1) % len(gpus)]) for i in range(len(gpus))} if len(gpus) > 1 else set()
    return {pair for s, d in edges for pair in ((s, d), (d, s)) if s != d}


def _one_per_class(pairs: Sequence[Pair], classes: Mapping[Pair, str | None]) -> set[Pair]:
    """The first pair of each known link class; a pair whose class is unknown is its own class."""
    first: dict[object, Pair] = {}
    for pair in pairs:
        first.setdefault(pair if classes.get(pair) is None else classes[pair], pair)
    return set(first.values())


def default_peer_pairs(gpus: Sequence[str], classes: Mapping[Pair, str | None]) -> tuple[str, str]:
    """The mode used when ``--xfer-peer-pairs`` is not given, and why: every pair on two GPUs or fewer
    (there are at most two) or where some pair's link is unknown; else one pair per link class (on an
    NVSwitch node every pair shares one link, so one pair's sweep stands for all)."""
    pairs = _pairs(gpus)
    if len(gpus) <= 2:
        return "all", f"default: {len(gpus)} GPUs, every pair swept"
    if unknown := [pair for pair in pairs if classes.get(pair) is None]:
        why = (classes.why if isinstance(classes, LinkClasses) else {}).get(unknown[0])
        first = f"{unknown[0][0]}->{unknown[0][1]}" + (f": {why}" if why else "")
        return "all", f"default: the link of {len(unknown)} of {len(pairs)} GPU pairs is unknown ({first}), every pair swept"
    kinds = sorted({str(classes[pair]) for pair in pairs})
    return "one-per-class", f"default: every pair's link is known ({', '.join(kinds)}), one pair per link swept"


def peer_plan(gpus: Sequence[str], classes: Mapping[Pair, str | None], mode: str | None = None) -> PeerPlan:
    """The peer plan for these GPUs: ``mode`` (one of PEER_PAIRS) or, when None, the default."""
    reason = "given"
    if mode is None:
        mode, reason = default_peer_pairs(gpus, classes)
    pairs = _pairs(gpus)
    swept = set(pairs) if mode == "all" else _ring(gpus) if mode == "ring" else _one_per_class(pairs, classes)
    return PeerPlan(mode, reason, frozenset(swept), {pair: classes.get(pair) for pair in pairs})


def fit_shapes(shapes: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The sizes an unswept pair is measured at: the smallest (its α), the two largest (its β) and the one
    nearest the geometric middle of the ends (the knee between them). The fit needs three sizes
    (analyze.model); the fourth keeps one when a size is skipped (memory) or read from a cache."""
    by_bytes = sorted(shapes, key=math.prod)
    if len(by_bytes) <= 4:
        return by_bytes
    small, large = math.prod(by_bytes[0]), math.prod(by_bytes[-1])
    middle = min(by_bytes[1:-2], key=lambda s: abs(math.log(math.prod(s)) - (math.log(small) + math.log(large)) / 2))
    return [by_bytes[0], middle, *by_bytes[-2:]]


def _sparse_pairs(planned: Sequence[Planned], plan: PeerPlan, kept: set[tuple[int, ...]]) -> list[Planned]:
    """Drop an unswept pair's cases at sizes outside ``kept``."""
    return [item for item in planned if not isinstance(item, Case) or (item.src, item.dst) in plan.swept or item.shape in kept]
