"""The benchmark matrix: frozen, hashable case records, and which ones a machine gets.

A ``Case`` is the identity of a measurement: the same case on two runs is the same
record, which is what the report groups by and what regression tracking matches on.
No torch here: the matrix is plain data, built from device strings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from .units import DTYPE_SIZES, Size, format_size

__all__ = [
    "OPS",
    "PROFILES",
    "SCHEMA_VERSION",
    "Case",
    "Skipped",
    "accelerators",
    "build_cases",
    "no_accelerator",
    "shapes_for",
]

SCHEMA_VERSION = 1

#: ``--xfer-profile`` presets: the sizes swept. ``quick`` keeps a CPU-only run
#: under a minute; ``full`` sweeps from the lesson's 2x3 tensor to 1 GiB.
PROFILES: dict[str, str] = {
    "quick": "4B,1KiB,1MiB,64MiB",
    "full": "2x3,4B..1GiB:x4",
}

CREATE_METHODS = ("empty", "zeros", "ones", "rand")
COPY_METHODS = ("clone", "copy_")


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

    def __post_init__(self) -> None:
        if self.dtype not in DTYPE_SIZES:
            raise ValueError(f"unknown dtype {self.dtype!r}")
        if not self.shape or min(self.shape) < 1:
            raise ValueError(f"shape must have positive dimensions, got {self.shape!r}")
        if self.host_memory not in (None, "pageable", "pinned"):
            raise ValueError(f"host_memory must be pageable, pinned or None, got {self.host_memory!r}")

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * DTYPE_SIZES[self.dtype]

    @property
    def size_label(self) -> str:
        if len(self.shape) == 1:
            return format_size(self.nbytes)
        return "x".join(map(str, self.shape))

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
        if self.op in ("h2d", "d2h", "peer"):
            parts.append("nonblocking" if self.non_blocking else "blocking")
        parts += [self.method, self.size_label, self.dtype]
        on_one_device = self.src == self.dst and self.op in ("create", "noop")
        parts.append(self.src if on_one_device else f"{self.src}->{self.dst}")
        return "-".join(parts)

    def extra_info(self) -> dict[str, object]:
        """The data-contract fields that identify this case (DESIGN.md section 3)."""
        return {
            "xfer_schema": SCHEMA_VERSION,
            "op": self.op,
            "src": self.src,
            "dst": self.dst,
            "nbytes": self.nbytes,
            "dtype": self.dtype,
            "shape": list(self.shape),
            "host_memory": self.host_memory,
            "non_blocking": self.non_blocking,
            "method": self.method,
        }


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


def no_accelerator(op: str, devices: Sequence[str]) -> list[Planned]:
    """The one skip line of a family that needs an accelerator, on a machine without one."""
    reason = f"{op} needs an accelerator; the devices measured are: {', '.join(devices)}"
    return [Skipped(f"{op}-no-accelerator", reason)]


def _host_and_accelerator_skip(op: str, devices: Sequence[str]) -> list[Planned]:
    """The skip for a family that moves between host and accelerator, if it cannot run."""
    if not accelerators(devices):
        return no_accelerator(op, devices)
    if "cpu" not in devices:
        return [Skipped(f"{op}-no-cpu", f"{op} needs cpu in --xfer-devices")]
    return []


def _create(devices: Sequence[str], shape: tuple[int, ...], dtype: str) -> list[Planned]:
    return [Case("create", m, d, d, shape, dtype) for d in devices for m in CREATE_METHODS]


def _host(devices: Sequence[str], shape: tuple[int, ...], dtype: str) -> list[Planned]:
    if "cpu" not in devices:
        return [Skipped("host-no-cpu", "host copies need cpu in --xfer-devices")]
    return [Case("host", m, "cpu", "cpu", shape, dtype, "pageable") for m in COPY_METHODS]


def _h2d(devices: Sequence[str], shape: tuple[int, ...], dtype: str) -> list[Planned]:
    if skip := _host_and_accelerator_skip("h2d", devices):
        return skip
    cases: list[Planned] = []
    for dst in accelerators(devices):
        # .cuda(i) exists only for CUDA (and ROCm, which calls itself cuda).
        methods = ("to", "cuda", "copy_") if dst.startswith("cuda:") else ("to", "copy_")
        for memory in ("pageable", "pinned"):
            for non_blocking in (False, True):
                cases += [Case("h2d", m, "cpu", dst, shape, dtype, memory, non_blocking) for m in methods]
    return cases


#: d2h variants: allocating moves land in pageable memory; only copy_ can target pinned.
_D2H_VARIANTS = (
    ("pageable", False, "cpu"),
    ("pageable", False, "to"),
    ("pageable", False, "copy_"),
    ("pinned", False, "copy_"),
    ("pinned", True, "copy_"),
)


def _d2h(devices: Sequence[str], shape: tuple[int, ...], dtype: str) -> list[Planned]:
    if skip := _host_and_accelerator_skip("d2h", devices):
        return skip
    return [
        Case("d2h", m, src, "cpu", shape, dtype, memory, non_blocking)
        for src in accelerators(devices)
        for memory, non_blocking, m in _D2H_VARIANTS
    ]


def _d2d(devices: Sequence[str], shape: tuple[int, ...], dtype: str) -> list[Planned]:
    gpus = accelerators(devices)
    if not gpus:
        return no_accelerator("d2d", devices)
    return [Case("d2d", m, d, d, shape, dtype) for d in gpus for m in COPY_METHODS]


def _peer(devices: Sequence[str], shape: tuple[int, ...], dtype: str) -> list[Planned]:
    gpus = accelerators(devices)
    if len(gpus) < 2:
        found = ", ".join(gpus) or "none"
        return [Skipped("peer-needs-two-accelerators", f"peer copies need two accelerators; found {len(gpus)} ({found})")]
    return [
        Case("peer", m, src, dst, shape, dtype)
        for src in gpus
        for dst in gpus
        if src != dst
        for m in ("to", "copy_")
    ]


def _noop(devices: Sequence[str], shape: tuple[int, ...], dtype: str) -> list[Planned]:
    cases: list[Planned] = []
    for device in devices:
        methods = ["to"]
        if device == "cpu":
            methods.append("cpu")
        elif device.startswith("cuda:"):
            methods.append("cuda")
        cases += [Case("noop", m, device, device, shape, dtype) for m in methods]
    return cases


_BUILDERS: dict[str, Callable[[Sequence[str], tuple[int, ...], str], list[Planned]]] = {
    "create": _create,
    "host": _host,
    "h2d": _h2d,
    "d2h": _d2h,
    "d2d": _d2d,
    "peer": _peer,
    "noop": _noop,
}
OPS = tuple(_BUILDERS)


def build_cases(op: str, devices: Sequence[str], sizes: Sequence[int | Size], dtypes: Sequence[str]) -> list[Planned]:
    """Every case of one op family for these devices, sizes and dtypes, skips included.

    A no-op costs the same at any size, so it is measured at the smallest and the
    largest size only: enough to show that the size does not matter.
    """
    if op not in _BUILDERS:
        raise ValueError(f"unknown op {op!r}; expected one of {', '.join(OPS)}")
    planned: list[Planned] = []
    for dtype in dtypes:
        shapes, skipped = shapes_for(sizes, dtype)
        planned += skipped
        if op == "noop" and shapes:
            by_bytes = sorted(shapes, key=math.prod)
            shapes = list(dict.fromkeys([by_bytes[0], by_bytes[-1]]))
        for shape in shapes:
            planned += _BUILDERS[op](devices, shape, dtype)
    # One skip line per reason is enough; repeating it per size is noise.
    unique: dict[str, Planned] = {}
    for item in planned:
        unique.setdefault(item.id, item)
    return list(unique.values())
