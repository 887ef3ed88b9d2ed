"""The data contract between the benchmarks and the reports (docs/contract.md lists every field).

One record, ``Identity``, names a measurement: the measuring side writes it into
pytest-benchmark's ``extra_info`` and the analysis side reads it back with
``identity_from``, which checks every field's type once. The fields of that record
*are* the identity columns that ``compare`` matches runs on, so the two sides cannot
drift apart. What a run adds beside the identity (clock, device time, ...) is listed
in ``MEASURED`` with its type. No torch here, and nothing from either side.
"""

from __future__ import annotations

import functools
import sys
import types
import typing
from dataclasses import asdict, dataclass, fields
from typing import Any

from .machine_facts import at, gpu_records, identity, shown

__all__ = [
    "BLOCK",
    "DEVICE_TIME_METHODS",
    "Block",
    "block_from",
    "SYNC_RULES",
    "IDENTITY",
    "MEASURED",
    "NAME_LIMIT",
    "SCHEMA_VERSION",
    "ContractError",
    "Fingerprint",
    "Identity",
    "identity_from",
    "environment_differences",
    "nccl_version",
    "hardware_differences",
    "hardware_identity",
    "machine_differences",
    "machine_identity",
    "measured_from",
    "simulation_mismatch",
    "software_changes",
    "software_environment",
]

SCHEMA_VERSION = 1
#: How ``device_seconds`` was taken (``device_time_method``), most direct first.
DEVICE_TIME_METHODS = ("profiler", "nonblocking_twin", "events")
#: How each timed call ended (``sync_rule``): a plain synchronize of every device it touched, or an event on
#: each one's stream polled until a deadline (peer copies). Latencies compare only under the same rule.
SYNC_RULES = ("synchronize", "event_poll")


class ContractError(ValueError):
    """A field of extra_info is missing or of the wrong type; the message names it."""


@dataclass(frozen=True)
class Identity:
    """What was measured: the same record on two runs is the same case."""

    op: str
    method: str
    src: str
    dst: str
    nbytes: int
    dtype: str
    shape: tuple[int, ...]
    host_memory: str | None = None
    non_blocking: bool = False
    variant: str | None = None
    world_size: int | None = None
    backend: str | None = None

    def extra_info(self) -> dict[str, Any]:
        """The identity as extra_info (JSON): schema version first, shape as a list."""
        return {"xfer_schema": SCHEMA_VERSION, **asdict(self), "shape": list(self.shape)}

    @property
    def key(self) -> str:
        """One string per case, for matching runs (every identity field, shape included)."""
        return "|".join(str(getattr(self, name)) for name in IDENTITY)

    @property
    def path(self) -> str:
        """A readable name for the path a case takes, without its size, e.g.
        ``h2d pinned non-blocking copy_ cpu->cuda:0``."""
        dtype = "" if self.dtype == "float32" else f" {self.dtype}"
        where = self.src if self.src == self.dst else f"{self.src}->{self.dst}"
        if self.world_size:
            # A ping-pong names its pair unless it is the 2-rank world's rank0->rank1; overlap its variant.
            ranks = self.src.split(":")[0], self.dst.split(":")[0]
            pair = "" if ranks[1] == "all" or ranks == ("rank0", "rank1") else f" {ranks[0]}->{ranks[1]}"
            variant = f" {self.variant}" if self.variant else ""
            return f"{self.op}{variant} {self.backend} x{self.world_size}{pair}{dtype}"
        if self.variant:
            variant = "" if self.variant == self.op else f" {self.variant}"
            return f"{self.op}{variant} {where}"
        if self.op == "noop":
            return f"noop .{self.method}() on {self.src}"
        if self.op == "create":
            return f"create {self.method} on {self.src}{dtype}"
        # A copy: its memory, blocking and dtype only where they are not the default.
        words = (self.host_memory, "non-blocking" if self.non_blocking else None, self.method, self.dtype if dtype else None)
        return " ".join([self.op, *(word for word in words if word), where])


IDENTITY: tuple[str, ...] = tuple(f.name for f in fields(Identity))

#: Fields a run adds beside the identity, with their JSON type (None allowed for each).
MEASURED: dict[str, Any] = {
    "clock": str,                # "wall+sync", "cuda_event", or "simulated" (measure/simulate.py: not a measurement)
    "device_seconds": float,     # the copy's own device time per call (device_time_method says how)
    "device_time_method": str,   # "profiler" (the memcpy's activity records), "nonblocking_twin" (events around
                                 # the non-blocking twin of a blocking copy) or "events" (events around the call)
    "device_repeats": int,       # calls measured for device_seconds (back to back between events, or profiled)
    "device_time_stand_in": str,  # "pinned_destination": device_seconds timed the same copy into one pinned buffer
                                 # (.to('cpu', non_blocking=True) pins a fresh block each call)
    "sync_rule": str,            # how each timed call ended (SYNC_RULES): "synchronize" or "event_poll"
    "minor_faults_per_call": float,  # minor page faults per call (ru_minflt), for cases that touch host memory
    "peer_access": bool,         # peer copies: cudaDeviceCanAccessPeer (capable, not enabled)
    "peer_legs": list[str],      # peer_bidir, peer_all: the GPU-to-GPU copies one call makes, "cuda:0->cuda:1"
    "queued_seconds": float,     # sync_stall: GPU work queued before the call
    "bus_factor": float,         # distributed: busbw = algbw x bus_factor (nccl-tests)
    "round_trip": bool,          # distributed point-to-point: one call is a round trip
    "size_unit": str,            # scenarios: params, images, batch or bytes
    "cache_resident": bool,      # the bytes it touches (a copy's twice its payload) fit a cache of its device
    "sm_clock_mhz": int,         # GPU clocks and PCIe link right after the case was timed (NVML)
    "memory_clock_mhz": int,
    "pcie_generation_now": int,
    "pcie_width_now": int,
    "host_numa_node": int,       # numa family, host<->device core cases: the node holding the host buffer
    "host_placement": str,       # "gpu_node" / "remote_node" (bound there, every page there), "spilled" (some
                                 # page on another node) or "unbound" (the GPU's node unknown or off limits)
    "numa_distance": int,        # numa: the SLIT distance from the GPU's node to the host buffer's
    "held_bytes": int,           # d2h_kept: host memory one kept result holds (pinned: the allocator's block)
    "crosses": str,              # distributed point-to-point: "intra-node" or "inter-node"
    "verified": bool,            # distributed: every rank's output was checked after timing
    "rank_seconds": list[list[float]],  # distributed: [rank][round] per-call seconds of every rank
    "rank_mean_seconds": list[float],  # distributed: each round's per-call seconds, averaged over its members
    "rank_hosts": list[str],     # distributed: the node of each rank
    "rank_call_seconds": list[list[float]],  # distributed: [rank][round] per-call seconds inside the calls only
    "host_rss_bytes": int,       # resident host memory of the process after the benchmark (measure/record/journal.py)
    "pinned_host_bytes": int,    # pinned host memory held by torch's caching host allocator, once CUDA is in use
    "device_bytes": int,         # device memory allocated by torch on all devices, once CUDA is in use
}


@functools.cache
def _parts(kind: Any) -> tuple[Any, Any]:
    """``kind``'s origin and first type argument other than None (``str | None``: Union, str), worked out once per
    kind: every row of every run is checked field by field, and a folder of thousands of runs is read at once."""
    return typing.get_origin(kind), next((k for k in typing.get_args(kind) if k is not type(None)), None)


def _check(name: str, value: Any, kind: Any) -> Any:
    """``value`` as ``kind`` (str, int, float, bool, tuple[int, ...], optional), or ContractError."""
    origin, inner = _parts(kind)
    if origin in (typing.Union, types.UnionType):
        return None if value is None else _check(name, value, inner)
    if origin is list:  # a JSON list of the element kind, e.g. list[list[float]]
        if not isinstance(value, list):
            raise ContractError(f"field {name!r} must be a list, got {value!r:.60}")
        return [_check(name, v, inner) for v in value]
    if origin is tuple:
        if not isinstance(value, list) or not value or not all(type(v) is int and v > 0 for v in value):
            raise ContractError(f"field {name!r} must be a list of positive whole numbers, got {value!r:.60}")
        return tuple(value)
    holds, what = _SCALARS.get(kind, _SCALARS[str])
    if not holds(value):
        raise ContractError(f"field {name!r} must be {what}, got {value!r:.60}")
    return float(value) if kind is float else value


#: Each scalar kind of field: what a value of it must hold, and how the refusal says so.
_SCALARS: dict[Any, tuple[Any, str]] = {
    bool: (lambda v: type(v) is bool, "true or false"),
    int: (lambda v: type(v) is int and v >= 0, "a whole number >= 0"),
    # NaN, inf and ints too big for a float fail the bounds
    float: (lambda v: type(v) in (int, float) and 0 <= v <= sys.float_info.max, "a finite number >= 0"),
    str: (lambda v: isinstance(v, str) and bool(v), "a non-empty string"),
}


_HINTS = typing.get_type_hints(Identity)
_REQUIRED = {f.name for f in fields(Identity) if f.default is f.default_factory}  # no default


#: The longest text an identity field may hold. Real ones are a few words ("copy_", "cuda:0", "pinned"); the path
#: built of them names the case in every legend and table, and a 5 MB one took matplotlib minutes to lay out.
NAME_LIMIT = 200


def identity_from(info: dict[str, Any]) -> Identity:
    """Read and type-check the identity fields of one benchmark's extra_info."""
    values: dict[str, Any] = {}
    for name in IDENTITY:
        if name not in info:
            if name in _REQUIRED:
                raise ContractError(f"field {name!r} is missing")
            continue
        values[name] = _check(name, info[name], _HINTS[name])
        if isinstance(values[name], str) and len(values[name]) > NAME_LIMIT:
            raise ContractError(f"field {name!r} is {len(values[name]):,} characters long, more than any case's ({NAME_LIMIT})")
    return Identity(**values)


def measured_from(info: dict[str, Any]) -> dict[str, Any]:
    """The measured fields of extra_info, type-checked; absent ones are None."""
    return {name: _check(name, info[name], kind) if info.get(name) is not None else None for name, kind in MEASURED.items()}


#: Fields of a case measured in blocks (a reference case at the run's start, middle and end, or ``--xfer-blocks``):
#: each block is a benchmark of its own; the loader merges a case's blocks into one row.
BLOCK: dict[str, Any] = {
    "xfer_block": int,     # this block's index, 0 to xfer_blocks - 1, in the order the blocks ran
    "xfer_blocks": int,    # how many blocks the case was planned in
    "xfer_case_id": str,   # the case's id without its block: the blocks of one case share it
}
#: More blocks than this is no plan of this suite but a corrupted number.
_MOST_BLOCKS = 1000


@dataclass(frozen=True)
class Block:
    """Which block of a case one benchmark is."""

    index: int
    count: int
    case_id: str

    def extra_info(self) -> dict[str, Any]:
        return {"xfer_block": self.index, "xfer_blocks": self.count, "xfer_case_id": self.case_id}

    @property
    def param_id(self) -> str:
        """The block's pytest id: the case's with the block appended (``...-cpu->cpu-block2of3``)."""
        return f"{self.case_id}-block{self.index + 1}of{self.count}"


def block_from(info: dict[str, Any]) -> Block | None:
    """The block fields of one benchmark's extra_info, type-checked: None when it has none (null counts as none); a
    ContractError when only some are there or one is not of its kind."""
    given = [name for name in BLOCK if info.get(name) is not None]
    if not given:
        return None
    if len(given) < len(BLOCK):
        missing = ", ".join(repr(name) for name in BLOCK if name not in given)
        raise ContractError(f"block field(s) {missing} missing: a block names its index, count and case together")
    index, count, case_id = (info[name] for name in BLOCK)
    if type(count) is not int or not 1 <= count <= _MOST_BLOCKS:
        raise ContractError(f"field 'xfer_blocks' must be a whole number from 1 to {_MOST_BLOCKS}, got {count!r:.60}")
    if type(index) is not int or not 0 <= index < count:
        raise ContractError(f"field 'xfer_block' must be a whole number from 0 to {count - 1}, got {index!r:.60}")
    if not isinstance(case_id, str) or not case_id.strip() or len(case_id) > 4 * NAME_LIMIT:
        raise ContractError(f"field 'xfer_case_id' must be a case's id (a non-empty string up to {4 * NAME_LIMIT} "
                            f"characters), got {case_id!r:.60}")
    return Block(index, count, case_id)


@dataclass(frozen=True)
class Fingerprint:
    """xferbench's own section of a run's ``machine_info`` (measure/hardware/machine.py writes it; the facts the
    outputs show are machine_facts.py's). An older or foreign run has no section (or not an object): every property
    then says "unknown" (None, empty) rather than fail."""

    #: The ``machine_info.xferbench`` object; empty when the run has none.
    section: dict[str, Any]

    @classmethod
    def of(cls, machine_info: dict[str, Any]) -> Fingerprint:
        block = machine_info.get("xferbench")
        return cls(block if isinstance(block, dict) else {})

    @property
    def simulated(self) -> bool:
        """Whether the run came from the simulated machine (--xfer-simulate): the one check of it."""
        return bool(self.section.get("simulated"))

    @property
    def spec(self) -> dict[str, Any] | None:
        """The simulated machine's spec, or None on a real (or unrecorded) machine."""
        spec = self.section.get("simulated")
        return spec if isinstance(spec, dict) else None

    @property
    def devices(self) -> list[dict[str, Any]]:
        """The device records (malformed entries left out)."""
        return gpu_records(self.section)

    def device(self, name: str) -> dict[str, Any] | None:
        """The record of one device (``"cuda:0"``), or None when the run does not describe it."""
        return next((d for d in self.devices if d.get("device") == name), None)


def machine_identity(machine_info: dict[str, Any]) -> dict[str, Any]:
    """What must match for two runs to be one machine's figures: its hardware and software facts (machine_facts.py),
    the GPUs by name (their memory and links are ``hardware_identity``'s)."""
    return identity(machine_info, "hardware", "software", gpus=False)


def simulation_mismatch(base: dict[str, Any], new: dict[str, Any]) -> str | None:
    """Why a simulated run and a real one cannot be compared at all (no flag allows it), or None."""
    a, b = machine_identity(base)["simulated"], machine_identity(new)["simulated"]
    if a is None or b is None or a == b:
        return None
    which = ("base", "new") if a else ("new", "base")
    return (f"the {which[0]} run is simulated (--xfer-simulate) and the {which[1]} run is measured; "
            "a simulated figure is never compared with a measurement")


def machine_differences(base: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Each ``machine_identity`` field that differs, e.g. ``torch 2.4.0 -> 2.5.1``; one a run does not record (None) is
    not compared: an older or foreign JSON is not refused for what it cannot tell."""
    return _differ(machine_identity(base), machine_identity(new), "->")


def hardware_identity(machine_info: dict[str, Any]) -> dict[str, Any]:
    """What the machine *is*: GPUs (names, count, memory, links), CPU model, simulation. Runs that differ here are two
    machines (compare refuses them unless allowed); other software on one machine (``software_environment``) is what
    a regression tracker must show, not refuse."""
    return identity(machine_info, "hardware")


def software_environment(machine_info: dict[str, Any]) -> dict[str, Any]:
    """The software a run measured through: torch, CUDA/HIP, driver, Python, pytest-benchmark."""
    return identity(machine_info, "software", "tooling")


def _differ(a: dict[str, Any], b: dict[str, Any], arrow: str) -> list[str]:
    """``key a -> b`` for each field both record and that differs (None is not compared), written as its machine
    fact writes it."""
    return [f"{key} {shown(key, a[key])} {arrow} {shown(key, b[key])}" for key in a
            if a[key] is not None and b.get(key) is not None and a[key] != b[key]]


def hardware_differences(base: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs in the hardware of two runs, e.g. ``GPUs [A100] -> [H100]``; empty: one machine."""
    return _differ(hardware_identity(base), hardware_identity(new), "->")


def environment_differences(base: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs in the software of two runs, e.g. ``torch 2.12.0 → 2.13.0`` (the arrow of a change), and the
    NCCL their ranks ran, e.g. ``NCCL 2.21.5 → 2.26.2``."""
    return (software_changes(software_environment(base), software_environment(new))
            + _differ({"NCCL": nccl_version(base)}, {"NCCL": nccl_version(new)}, "→"))


def nccl_version(machine_info: dict[str, Any]) -> str | None:
    """The NCCL a distributed run's ranks ran (each rank's ``nccl_version``, else the version NCCL's own log said,
    its ``nccl`` record): ``2.21.5``, several joined where ranks differ; None where no rank recorded one. Not part
    of ``software_environment``: a calibration file's identity stays what it was."""
    ranks = Fingerprint.of(machine_info).section.get("ranks")
    records = [rank for rank in ranks if isinstance(rank, dict)] if isinstance(ranks, list) else []
    found = {str(version) for rank in records if (version := rank.get("nccl_version") or at("nccl", "version")(rank))}
    return ", ".join(sorted(found)) or None


def software_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """``torch 2.12.0 → 2.13.0`` for each field of two ``software_environment`` records that both know and differ.
    Where both runs recorded their torch, a CUDA or HIP of None is a build without it, not an unknown: a CPU build
    replaced by a CUDA one is ``CUDA none → 12.8``, named like any other change."""
    built = before.get("torch") is not None and after.get("torch") is not None

    def shown(record: dict[str, Any]) -> dict[str, Any]:
        return {k: "none" if built and k in _BUILT_WITH and v is None else v for k, v in record.items()}

    return _differ(shown(before), shown(after), "→")


#: The toolkits a torch build is made with (None: built without it).
_BUILT_WITH = ("CUDA", "HIP")
