"""The latency-bandwidth (alpha-beta) model, t = alpha + n / beta, and link peaks.

alpha is the fixed cost of a move (launch, synchronization, driver work), beta the
bandwidth it tends to at large sizes. Their product is the size at which half of
beta is reached: below it a move is latency-bound, above it bandwidth-bound.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ..contract import Fingerprint
from ..families import fitted_ops, moving_ops, order_of
from ..families.core import SIMULATED_LINKS, device_memory_roof, host_memcpy_roof
from ..ratios import Ratio
from .load.blocks import waited_rows
from .load.rows import flags, matching, ticked

__all__ = [
    "BASES",
    "BETA_CAP_TOLERANCE",
    "COPY_TOUCHES",
    "Fit",
    "Machine",
    "NoHostRoof",
    "Wait",
    "bandwidth_bound",
    "PCIE_GBPS_PER_LANE",
    "cache_bytes",
    "cache_resident",
    "fit_alpha_beta",
    "fit_path",
    "fit_paths",
    "fingerprint_of",
    "fits_in_cache",
    "host_ceiling",
    "host_ceiling_missing",
    "largest_common_size",
    "link_peak",
    "memory_allows",
    "nvlink_gbps_per_link",
    "pair_links",
    "path_roofs",
    "pipelined",
    "practical_ceiling",
]


class Wait(NamedTuple):
    """A size whose time grew under 2x from a smaller size of its path, 16x fewer bytes or more (``RunView.waits``): that
    size, the growth (its interval under 2x) and how many times the bytes."""

    small: pd.Series  # the other size: the larger one where ``larger``
    growth: Ratio
    factor: float
    larger: bool = False  # a smallest size judged by the size with k times its bytes (``RunView.no_bandwidth``)

    @property
    def share(self) -> float:
        """The most of the larger size's time its bytes can set if time = α + bytes / β: k times the bytes in at most h
        times the time gives α(h - 1) = x(k - h), x the smaller size's byte time, so k·x is k(h - 1) / (h(k - 1)) of
        it (at most 53% under the rule: h < 2, k ≥ 16; the loaded run's copy_, 1.1x at 64x, 9%), and x is at most
        (h - 1) / (k - 1) of the smaller size's time (``larger``: 7%). Where the smaller size took longer beyond the
        interval (h < 1) the line fails: report/svg.py's ``bytes_said`` reads no share."""
        h, k = self.growth.high, self.factor
        return max(0.0, (h - 1) / (k - 1) if self.larger else k * (h - 1) / (h * (k - 1)))


@dataclass(frozen=True)
class Fit:
    alpha_s: float
    beta_gbps: float
    sizes: int

    def seconds(self, nbytes: np.ndarray | float) -> np.ndarray | float:
        return self.alpha_s + np.asarray(nbytes, dtype=float) / (self.beta_gbps * 1e9)


def fit_alpha_beta(nbytes: np.ndarray, seconds: np.ndarray) -> Fit | None:
    """Robust fit of t = alpha + n / beta over a size sweep; None below 3 sizes.

    The same sweep is fitted for the findings, the table and the figure: the result is cached.
    """
    return _fit_cached(*(np.ascontiguousarray(a, dtype=float).tobytes() for a in (nbytes, seconds)))


@functools.lru_cache(maxsize=4096)
def _fit_cached(n_bytes: bytes, t_bytes: bytes) -> Fit | None:
    return _fit(np.frombuffer(n_bytes), np.frombuffer(t_bytes))


def _fit(nbytes: np.ndarray, seconds: np.ndarray) -> Fit | None:
    """Robust fit of t = alpha + n / beta over a size sweep; None below 3 sizes.

    Residuals are relative (times span many decades, and absolute residuals would
    let the largest size decide everything), and the soft-L1 loss keeps one noisy
    point from bending the line.
    """
    keep = np.isfinite(seconds) & (seconds > 0) & (nbytes > 0)  # float arrays already (``_fit_cached``)
    n, t = nbytes[keep], seconds[keep]
    if len(np.unique(n)) < 3:
        return None
    # Start from the smallest time (latency) and the largest size's rate (bandwidth).
    alpha0 = float(t.min())
    inv_beta0 = max(float((t[n.argmax()] - alpha0) / n.max()), 1e-15)
    scale = np.array([alpha0, inv_beta0])
    # Relative residuals: (alpha + n inv_beta - t) / t = design @ x - 1, x the two scaled to 1 at the start.
    alpha, inv_beta = _soft_l1(np.column_stack([alpha0 / t, n * inv_beta0 / t]), np.array([0.0, 1e-9])) * scale
    return Fit(alpha_s=float(alpha), beta_gbps=float(1.0 / inv_beta / 1e9), sizes=len(np.unique(n)))


#: Residuals past this are outliers to the soft-L1 loss (5% of the time measured): it grows linearly beyond it.
SOFT_L1_SCALE = 0.05


def _soft_l1(design: np.ndarray, low: np.ndarray) -> np.ndarray:
    """The x >= low that minimises the soft-L1 loss of ``design @ x - 1`` from x = 1 (scipy's ``least_squares(
    loss="soft_l1")``, solved exactly without importing scipy.optimize, a fifth of a second of every report). The
    loss is convex: the minimum is the unconstrained one where that is feasible, else the better of the two edges'."""
    norms = np.linalg.norm(design, axis=0)  # unit columns: a wild size must not make the Hessian singular
    design, low = design / norms, low * norms

    def loss(x: np.ndarray) -> float:
        return float(np.sum(np.sqrt(1 + ((design @ x - 1) / SOFT_L1_SCALE) ** 2)))

    x = _newton(design, norms, [0, 1], loss)
    if np.any(x < low):
        edges = (np.array([low[0], norms[1]]), [1]), (np.array([norms[0], low[1]]), [0])
        x = min((np.maximum(_newton(design, start, free, loss), low) for start, free in edges), key=loss)
    return x / norms


def _newton(design: np.ndarray, x: np.ndarray, free: list[int], loss: Callable[[np.ndarray], float]) -> np.ndarray:
    """Newton steps on the coordinates ``free``, halved until the loss does not rise (far from the minimum the loss
    is nearly linear and a full step overshoots), until they stop moving (relative 1e-13). Where no halving helps,
    the step of the quadratic with twice the identity added lowers it surely: with unit columns that quadratic
    bounds the loss from above."""
    a = design[:, free]
    for _ in range(500):
        weight = 1 + ((r := design @ x - 1) / SOFT_L1_SCALE) ** 2
        grad, hessian = a.T @ (r / np.sqrt(weight)), (a * weight[:, None] ** -1.5).T @ a
        step, size, now = np.zeros_like(x), 1.0, loss(x)
        step[free] = np.linalg.lstsq(hessian, grad, rcond=None)[0]
        while (after := loss(x - size * step)) > now and size > 1e-9:
            size /= 2
        if after > now:
            step[free], size = np.linalg.solve(hessian + 2 * np.eye(len(free)), grad), 1.0
            if not loss(x - step) < now:
                return x  # nothing lowers it: the minimum, to float precision
        x = x - size * step
        if np.all(np.abs(size * step[free]) <= 1e-13 * np.abs(x[free])):
            break
    return x


#: A copy touches this many bytes per payload byte (it reads the source and writes the destination):
#: it fits in a cache only while that many times its payload does.
COPY_TOUCHES = 2
#: A size runs faster than memory allows when it beats the memory's figure by more than this share:
#: a few per cent above it is run-to-run noise, not a cache.
FASTER_THAN_MEMORY = 1.1
#: The bandwidth stated for a path never exceeds what its largest size measured by more
#: than this: beyond it the fit extrapolates (usually from cache-resident sizes).
BETA_CAP_TOLERANCE = 1.25

#: How a path's stated β was obtained (``fit_path``): a fit over every size, a fit without the sizes that ran faster
#: than memory, the largest size beyond the cache (too few there to fit), none (every size in cache, or too few).
#: "waits" is the view's (``RunView.fits``): the largest size took as long as a sixteenth of its bytes.
BASES = ("fit", "fit beyond memory", "measured beyond the cache", "all in cache", "too few sizes", "latency-bound", "waits")

#: A machine as the model reads it: its fingerprint, read once by the caller (the run's view), or the raw
#: ``machine_info`` (read here on each call).
Machine = Fingerprint | dict[str, Any]


def fingerprint_of(machine: Machine) -> Fingerprint:
    """The fingerprint of ``machine``: itself when already read."""
    return machine if isinstance(machine, Fingerprint) else Fingerprint.of(machine)


_HOST_MEMORY_OPS = ("host",)
_DEVICE_MEMORY_OPS = ("d2d", "peer")


def cache_bytes(machine_info: Machine, op: str, src: str) -> tuple[int, str] | None:
    """The largest cache a path's payload can sit in, and its name; None when the fingerprint does not say.

    Host copies run from the CPU's caches (largest level from ``host.cache_bytes``); same-device and
    peer copies from the source GPU's L2 (``l2_cache_bytes``). Moves across PCIe are bounded by the
    link, far below any cache, so no cache is applied to them.
    """
    if op in _HOST_MEMORY_OPS:
        host = fingerprint_of(machine_info).section.get("host")
        caches = host.get("cache_bytes") if isinstance(host, dict) else None
        sizes = [int(v) for v in (caches or {}).values() if isinstance(v, (int, float)) and v >= 1]  # a byte or more
        return (max(sizes), "host CPU cache") if sizes else None
    if op in _DEVICE_MEMORY_OPS:
        device = fingerprint_of(machine_info).device(src) or {}
        size = device.get("l2_cache_bytes")
        return (int(size), f"{src} L2") if isinstance(size, (int, float)) and size > 0 else None
    return None


def fits_in_cache(rows: pd.DataFrame, machine_info: Machine) -> pd.Series:
    """Per row: could its copy run from a cache? ``COPY_TOUCHES x nbytes <=`` the largest cache of the memory
    the path runs on (``cache_bytes``) where the fingerprint records it; else the benchmark's own
    ``cache_resident`` field (older runs set it at twice the cache size, too generous for a copy)."""
    cache_of = functools.cache(lambda op, src: cache_bytes(machine_info, op, src))  # one path's cache, read once
    recorded = rows["cache_resident"] if "cache_resident" in rows else [None] * len(rows)
    return pd.Series([COPY_TOUCHES * int(n) <= cache[0] if (cache := cache_of(str(op), str(src))) is not None else
                      isinstance(said, (bool, np.bool_)) and bool(said)
                      for op, src, n, said in zip(rows["op"], rows["src"], rows["nbytes"], recorded, strict=True)],
                     index=rows.index, dtype=bool)


def memory_allows(rows: pd.DataFrame, machine_info: Machine, fits: pd.Series) -> pd.Series:
    """Per row: the most GB/s (bytes counted once) its path's memory sustains, NaN when unknown.

    The fingerprint's bound where it has one (half the device memory's peak for a same-device copy, the
    NVLink peak for a peer copy); else the best any copy between the same memories (op, devices, host memory)
    measured at sizes that do not fit in the cache: a call that allocates its destination (``clone``) reaches less
    beyond the cache than the memory allows, and a point of it slower than the other calls reached is bound by
    its fixed cost, not run from a cache.
    """
    allowed = pd.Series(np.nan, index=rows.index)
    memory = [rows[key] if key in rows else pd.Series("", index=rows.index) for key in ("op", "src", "dst", "host_memory")]
    for _, group in rows.groupby([m.fillna("").astype(str) for m in memory], sort=False):
        first = group.iloc[0]
        bound = link_peak(machine_info, str(first["op"]), str(first["src"]), str(first["dst"])) \
            if first["op"] in _DEVICE_MEMORY_OPS else None
        beyond = group.loc[~fits.loc[group.index], "bandwidth_gbps"]
        allowed[group.index] = bound[0] if bound else (float(beyond.max()) if beyond.notna().any() else np.nan)
    return allowed


def cache_resident(rows: pd.DataFrame, machine_info: Machine) -> pd.Series:
    """Per row: did its payload run from a cache, faster than memory allows? (bool Series on ``rows.index``)

    A row is resident when its copy fits in a cache (``fits_in_cache``) and its bandwidth is above what the
    path's memory sustains (``memory_allows``); where that is unknown (no bound in the fingerprint and no size
    beyond the cache), fitting is enough, so β is never taken from a size that may have run from cache. A
    size that fits but runs no faster than memory (host ``clone`` at 64 MiB, same-device copies below the
    memory's peak) is not marked: it is a measurement of memory like any other.
    """
    fits = fits_in_cache(rows, machine_info)
    allowed = memory_allows(rows, machine_info, fits)
    faster = pd.to_numeric(rows["bandwidth_gbps"], errors="coerce") > FASTER_THAN_MEMORY * allowed
    return fits & (faster | allowed.isna())


def fit_path(group: pd.DataFrame, resident: pd.Series) -> dict[str, Any]:
    """α, β and how β was obtained, for one path's rows (``resident`` flags cache-resident rows).

    α comes from the whole sweep (the smallest sizes decide it). β (``beta_gbps``, the model's)
    comes only from sizes beyond the cache: a fit over them when there are three or more, else
    what the largest of them measured, else none. What the report states (``stated_gbps``) is
    never above ``BETA_CAP_TOLERANCE`` x the bandwidth the largest size reached: beyond that the
    model extrapolates past the sweep, so the measured figure is stated and the basis says so. The basis is one of
    ``BASES`` (report/model_text.py words it), ``capped <basis>`` where the cap applies.
    """
    n, t = group["nbytes"].to_numpy(), group["transfer_s"].to_numpy()
    largest = group.loc[group["nbytes"].idxmax()]
    largest_gbps = float(largest["bandwidth_gbps"])
    whole = fit_alpha_beta(n, t)
    beyond = ~resident.loc[group.index].to_numpy()
    fit = fit_alpha_beta(n[beyond], t[beyond])  # None below three sizes
    alpha = whole.alpha_s if whole is not None else np.nan
    if resident.loc[group.index].any():
        if fit is not None:
            beta, basis = fit.beta_gbps, "fit beyond memory"
        elif beyond.any():  # one or two sizes beyond the cache: state what they measured, a lower bound of β
            outside = group[beyond]
            beta = float(outside.loc[outside["nbytes"].idxmax(), "bandwidth_gbps"])
            basis = "measured beyond the cache"
        else:
            beta, basis = np.nan, "all in cache"
    else:
        beta, basis = (whole.beta_gbps, "fit") if whole is not None else (np.nan, "too few sizes")
    stated = beta
    if np.isfinite(beta) and bandwidth_bound(group["nbytes"], group["transfer_s"]) is False:
        stated, basis = np.nan, "latency-bound"  # no size reached α·β: the sweep says nothing of a bandwidth
    elif np.isfinite(beta) and np.isfinite(largest_gbps) and beta > BETA_CAP_TOLERANCE * largest_gbps:
        stated, basis = largest_gbps, f"capped {basis}"  # beta_gbps keeps the β it was capped from
    return {"alpha_us": alpha * 1e6, "beta_gbps": beta, "stated_gbps": stated, "beta_basis": basis,
            "half_peak_bytes": alpha * stated * 1e9,  # NaN where α or the stated β is
            "largest_gbps": largest_gbps, "largest_bytes": int(largest["nbytes"]),
            "resident_sizes": int(group.loc[resident.loc[group.index], "nbytes"].nunique())}


def pipelined(group: pd.DataFrame, machine_info: Machine) -> dict[str, float]:
    """α, β and half of β of one path from its device time: copies issued back to back, no synchronize
    between them, pay only the device's fixed cost (NaN where fewer than three sizes have a device time).

    The wall-clock fit describes a loop that synchronizes after every call: its α holds the launch and the
    synchronize (about 12 µs for an H200's same-device copy against 1.5 µs on the device), and α x β then
    puts half of β eight times too far out (25 MiB against 3.2 MiB for HBM's 2 TB/s)."""
    timed = group[pd.to_numeric(group["device_seconds"], errors="coerce") > 0] if "device_seconds" in group else group[:0]
    if timed["nbytes"].nunique() < 3:
        return {"pipelined_alpha_us": np.nan, "pipelined_gbps": np.nan, "pipelined_half_bytes": np.nan}
    seconds = timed["device_seconds"].astype(float)
    device = timed.assign(transfer_s=seconds, bandwidth_gbps=timed["nbytes"] / seconds / 1e9)
    fit = fit_path(device, cache_resident(device, machine_info))
    return {"pipelined_alpha_us": fit["alpha_us"], "pipelined_gbps": fit["stated_gbps"],
            "pipelined_half_bytes": fit["half_peak_bytes"]}


_FIT_COLUMNS = ["path", "op", "src", "dst", "host_memory", "method", "non_blocking", "alpha_us", "beta_gbps", "stated_gbps",
                "beta_basis", "half_peak_bytes", "pipelined_alpha_us", "pipelined_gbps", "pipelined_half_bytes",
                "best_gbps", "largest_gbps", "largest_bytes", "sizes", "resident_sizes", "cache_bytes", "cache", "left_out",
                "ticked"]


def fit_paths(frame: pd.DataFrame, machine_info: Machine | None = None) -> pd.DataFrame:
    """One alpha-beta fit per transfer path (op, devices, memory, method), cache-aware.

    Only moves of a payload are fitted: creation, no-ops and scenarios are not. A size whose blocks timed calls a
    round 2x or more apart (``mixed_iterations``) is left out, named in ``left_out``: its merged median mixes a cold
    call with warm ones (a CPU run's 1 MiB copy_: 24 ms merged, 15 µs in its block of 100 calls a round); so is one
    whose rounds lie on the scheduler's ticks (``on_ticks``: a wait for the CPU is part of its time), or whose rounds of
    one call waited off them (``load.blocks.waited_rows``).
    """
    machine_info = machine_info or {}
    rows = []
    moves = frame[frame["op"].isin(fitted_ops())]
    on_ticks = ticked(moves) | waited_rows(frame).loc[moves.index]  # by the run's tick, from all its rows
    mixed = flags(moves, "mixed_iterations") | on_ticks
    resident = cache_resident(moves, machine_info)
    for path, every in moves.groupby("path", sort=False):
        group = every[~mixed.loc[every.index]]
        if group.empty:
            continue
        first = group.iloc[0]
        cache = cache_bytes(machine_info, str(first["op"]), str(first["src"]))
        rows.append({
            "path": path, "op": first["op"], "src": first["src"], "dst": first["dst"],
            "host_memory": first["host_memory"], "method": first["method"],
            "non_blocking": bool(first.get("non_blocking", False)),
            **fit_path(group, resident), **pipelined(group, machine_info),
            "best_gbps": float(group["bandwidth_gbps"].max()),
            "sizes": int(group["nbytes"].nunique()),
            "cache_bytes": cache[0] if cache else None, "cache": cache[1] if cache else None,
            "left_out": tuple(sorted(int(n) for n in every.loc[mixed.loc[every.index], "nbytes"])),
            "ticked": tuple(sorted(int(n) for n in every.loc[on_ticks.loc[every.index], "nbytes"])),
        })
    fits = pd.DataFrame(rows, columns=_FIT_COLUMNS)
    return fits.sort_values("op", key=lambda ops: ops.map(order_of), kind="stable").reset_index(drop=True)


def largest_common_size(frame: pd.DataFrame) -> int | None:
    """The largest payload measured by the most move families, for like-for-like comparisons."""
    moves = frame[frame["op"].isin(moving_ops())]
    if moves.empty:
        return None
    coverage = moves.groupby("nbytes")["op"].nunique()
    return int(coverage[coverage == coverage.max()].index.max())


#: PCIe usable GB/s per lane and direction after line coding (Gen3+ 128b/130b).
PCIE_GBPS_PER_LANE = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}
#: NVLink GB/s per link and direction, by generation (the fingerprint maps NVML's version enum to these), from
#: NVIDIA's architecture whitepapers: P100 NVLink 1.0, 4 links x 40 GB/s both ways = 160 GB/s; V100 2.0, 6 links,
#: 300 GB/s in all; Turing TU102 2.2, x8 links of 25 GB/s each way; A100 3.0, 12 links, 600 GB/s in all;
#: H100/H200 4.0, 18 links, 900 GB/s in all; Blackwell 5.0, 18 links of 100 GB/s (1.8 TB/s) in all.
#: "3.1" is both A100 (NVML reports enum 5 on it) and GA10x: the GA102 whitepaper ("Third-Generation NVLink")
#: gives GA102's four x4 links 14.0625 GB/s each way (56.25 GB/s for four): see ``nvlink_gbps_per_link``.
NVLINK_GBPS_PER_LINK = {"1.0": 20.0, "2.0": 25.0, "2.2": 25.0, "3.0": 25.0, "3.1": 25.0, "4.0": 25.0, "5.0": 50.0}
#: GA10x's narrower links (x4, not A100's x8: sm_86 and later Ampere boards) under NVML's "3.1".
NVLINK_GA10X_GBPS_PER_LINK = 14.0625
#: The key of a device's ``nvlink_remote`` (measure/hardware/machine.py) that counts its links to an NVSwitch.
NVSWITCH = "nvswitch"


#: What pinned copies reach in practice on a PCIe x16 link, GB/s per direction (low, high), by generation:
#: docs/design.md section 5's reference figures (nvbandwidth's copy-engine memcpy; Gen5 on an H100). A share of the
#: theoretical peak reads as headroom; against these it reads as what it is.
PCIE_PRACTICAL_GBPS = {3: (11.0, 13.0), 4: (25.0, 26.0), 5: (55.0, 57.0)}


def practical_ceiling(machine_info: Machine, op: str, src: str, dst: str) -> tuple[float, float] | None:
    """The practical range pinned copies reach on the PCIe x16 link a host-device move uses, or None."""
    if op not in ("h2d", "d2h"):
        return None
    generation, width = _pcie(machine_info, op, src, dst)
    return PCIE_PRACTICAL_GBPS.get(generation) if width == 16 and isinstance(generation, int) else None


def _pcie(machine_info: Machine, op: str, src: str, dst: str) -> tuple[Any, Any]:
    """The PCIe generation and width of a host-device move's GPU (None where the fingerprint does not say): the
    maximum, not the current, link, as GPUs drop to a lower PCIe generation when idle."""
    device = fingerprint_of(machine_info).device(dst if op == "h2d" else src) or {}
    return (device.get("pcie_max_generation") or device.get("pcie_generation"),
            device.get("pcie_max_width") or device.get("pcie_width"))


def link_peak(machine_info: Machine, op: str, src: str, dst: str) -> tuple[float, str] | None:
    """Theoretical per-direction peak (GB/s) of the link a move uses, and its name.

    None when the fingerprint does not say (no NVML, non-NVIDIA device): the
    report then says the link is unknown rather than guess.
    """
    if op in ("h2d", "d2h"):
        generation, width = _pcie(machine_info, op, src, dst)
        if generation in PCIE_GBPS_PER_LANE and width:
            return PCIE_GBPS_PER_LANE[generation] * width, f"PCIe Gen{generation} x{width}"
        return None
    if op == "peer":
        return _nvlink_peak(machine_info, src, dst)
    if op == "d2d":
        device = fingerprint_of(machine_info).device(src)
        if device and device.get("memory_peak_gbps"):
            # A copy reads and writes every byte over the same memory: bytes counted once
            # reach at most half the peak, so that half is what a copy is held against.
            peak = float(device["memory_peak_gbps"])
            return peak / 2, device_memory_roof(peak)
    return None


def nvlink_gbps_per_link(device: dict[str, Any]) -> tuple[float, str] | None:
    """A GPU's NVLink GB/s per link and direction, and its generation; None when unknown."""
    version = device.get("nvlink_version")
    if isinstance(version, int):  # a bare generation (a simulated machine's spec): 4 is 4.0
        version = f"{version}.0"
    if version not in NVLINK_GBPS_PER_LINK:
        return None
    if version == "3.1":  # A100 (sm_80) or GA10x (sm_86+): only the compute capability tells them apart
        capability = device.get("compute_capability")
        if not isinstance(capability, str):
            return None
        return (NVLINK_GBPS_PER_LINK[version] if capability == "8.0" else NVLINK_GA10X_GBPS_PER_LINK), version
    return NVLINK_GBPS_PER_LINK[str(version)], str(version)


def pair_links(machine_info: Machine, src: str, dst: str) -> tuple[int, str] | None:
    """The NVLinks a src -> dst peer copy can use, and how they join the pair: the links of each to an
    NVSwitch (the fewer of the two), or the links from src whose far end is dst's PCI address. 0 when the
    pair has none (it goes over PCIe); None when the fingerprint does not say (no NVML, an older run)."""
    facts = fingerprint_of(machine_info)
    if not (one := facts.device(src)) or not (other := facts.device(dst)):
        return None
    remote, far = one.get("nvlink_remote"), other.get("nvlink_remote")
    if not isinstance(remote, dict):
        links = one.get("nvlink_links")
        # The simulated spec joins every pair alike, with its links: no pair facts to read.
        return (links, SIMULATED_LINKS) if facts.simulated and isinstance(links, int) else None
    mine, theirs = remote.get(NVSWITCH), far.get(NVSWITCH) if isinstance(far, dict) else None
    if isinstance(mine, int) and isinstance(theirs, int) and mine > 0 and theirs > 0:
        return min(mine, theirs), "via NVSwitch"
    direct = remote.get(other.get("pci_bus_id")) if other.get("pci_bus_id") else None
    return (direct, f"to {dst}") if isinstance(direct, int) and direct > 0 else (0, "none")


def _nvlink_peak(machine_info: Machine, src: str, dst: str) -> tuple[float, str] | None:
    """The NVLink roof of a peer copy: the pair's own links x its generation's rate; None without a link."""
    device = fingerprint_of(machine_info).device(src)
    rate = nvlink_gbps_per_link(device) if device else None
    links = pair_links(machine_info, src, dst)
    if rate is None or links is None or not links[0]:
        return None
    return rate[0] * links[0], f"NVLink {rate[1]} x{links[0]} links ({links[1]})"


#: The host copy that bounds a pageable transfer: the driver stages a pageable copy through its pinned
#: bounce buffer with one thread's memcpy, so torch's multi-threaded host ``copy_`` (35 GB/s on the H200,
#: below the 55 GB/s pinned copies reach) bounds nothing; a single-thread memcpy measured in the same run does.
SINGLE_THREAD = {"op": "host", "method": "copy_", "variant": "single_thread"}


def bandwidth_bound(nbytes: pd.Series, seconds: pd.Series) -> bool | None:
    """Whether the largest size of a sweep is set by its bytes (at or beyond α·β, where half of β is reached):
    False when the fixed cost sets it (latency-bound), None when one size cannot tell the two apart.
    Two sizes give α and β exactly; three or more are fitted (``fit_alpha_beta``)."""
    times = pd.Series(np.asarray(seconds, dtype=float)).groupby(np.asarray(nbytes, dtype=float)).median()
    if len(times) < 2:
        return None
    if len(times) == 2:
        (n0, t0), (n1, t1) = times.items()
        slope = (t1 - t0) / (n1 - n0)
        # Times that do not grow with the bytes: all fixed cost. Else α·β = (t0 - n0·slope) / slope.
        return bool(slope > 0 and n1 >= (t0 - n0 * slope) / slope)
    # n >= α·β where t(n) >= 2α: read at the largest size's measured time, not the fitted line's, which the robust
    # fit may bend off it (the quick run's clone at 1 KiB and 64 MiB: β 3 PB/s, 203 ms against a line's 23 µs)
    fit = fit_alpha_beta(times.index.to_numpy(), times.to_numpy())
    return fit is not None and float(times.iloc[-1]) >= 2 * fit.alpha_s


def _single_thread(frame: pd.DataFrame) -> pd.DataFrame:
    return matching(frame[frame["bandwidth_gbps"].notna()], SINGLE_THREAD)


def host_ceiling(frame: pd.DataFrame) -> tuple[float, str] | None:
    """The single-thread host memcpy measured in the same run at its largest size, or None when not measured or
    when that size is not bandwidth-bound (``host_ceiling_missing`` says which): 4 B per 1.7 µs bounds nothing."""
    host = _single_thread(frame)
    if host.empty or not bandwidth_bound(host["nbytes"], host["median_s"]):
        return None
    largest = host[host["nbytes"] == host["nbytes"].max()]
    best = largest.loc[largest["bandwidth_gbps"].idxmax()]
    return float(best["bandwidth_gbps"]), host_memcpy_roof(int(best["nbytes"]))


@dataclass(frozen=True)
class NoHostRoof:
    """Why the run gives pageable moves no host roof: it measured no single-thread host memcpy (``measured`` False),
    or that memcpy's sizes cannot tell its fixed cost from its bandwidth (``bound`` None: one size) or are
    latency-bound (``bound`` False); its largest size and the fastest time there."""

    measured: bool
    bound: bool | None = None
    nbytes: int = 0
    seconds: float = 0.0


def host_ceiling_missing(frame: pd.DataFrame) -> NoHostRoof | None:
    """Why the run gives pageable moves no host roof (report/model_text.py words it), or None when ``host_ceiling``
    has one."""
    host = _single_thread(frame)
    if host.empty:
        return NoHostRoof(False)
    bound = bandwidth_bound(host["nbytes"], host["median_s"])
    if bound:
        return None
    largest = host[host["nbytes"] == host["nbytes"].max()]
    return NoHostRoof(True, bound, int(largest["nbytes"].iloc[0]), float(largest["median_s"].min()))


def path_roofs(machine_info: Machine, op: str, src: str, dst: str, host_memory: str | None,
               ceiling: tuple[float, str] | None) -> list[tuple[float, str]]:
    """What bounds a path, highest first: the link's theoretical peak from the fingerprint and, for moves that touch
    pageable host memory, the single-thread host memcpy measured in the run (``ceiling``, ``host_ceiling`` read once
    for every path; the driver stages a pageable copy with one thread; not on a simulated machine)."""
    peak = link_peak(machine_info, op, src, dst)
    bounds = [] if peak is None else [peak]
    # On the simulated machine the host copy is measured on the real CPU while the device paths follow the
    # spec: one is no bound of the other.
    simulated = fingerprint_of(machine_info).simulated
    if op in ("h2d", "d2h") and host_memory == "pageable" and not simulated and ceiling is not None:
        bounds.append(ceiling)
    return sorted(bounds, reverse=True)
