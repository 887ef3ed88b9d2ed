"""The latency-bandwidth (alpha-beta) model, t = alpha + n / beta, and link peaks.

alpha is the fixed cost of a move (launch, synchronization, driver work), beta the
bandwidth it tends to at large sizes. Their product is the size at which half of
beta is reached: below it a move is latency-bound, above it bandwidth-bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from ..families import fitted_ops, moving_ops, order_of

__all__ = ["Fit", "PCIE_GBPS_PER_LANE", "fit_alpha_beta", "fit_paths", "largest_common_size", "link_peak"]


@dataclass(frozen=True)
class Fit:
    alpha_s: float
    beta_gbps: float
    sizes: int

    @property
    def half_peak_bytes(self) -> float:
        """n at which n / t(n) = beta / 2, i.e. alpha * beta."""
        return self.alpha_s * self.beta_gbps * 1e9

    def seconds(self, nbytes: np.ndarray | float) -> np.ndarray | float:
        return self.alpha_s + np.asarray(nbytes, dtype=float) / (self.beta_gbps * 1e9)


def fit_alpha_beta(nbytes: np.ndarray, seconds: np.ndarray) -> Fit | None:
    """Robust fit of t = alpha + n / beta over a size sweep; None below 3 sizes.

    Residuals are relative (times span many decades, and absolute residuals would
    let the largest size decide everything), and the soft-L1 loss keeps one noisy
    point from bending the line.
    """
    n = np.asarray(nbytes, dtype=float)
    t = np.asarray(seconds, dtype=float)
    keep = np.isfinite(t) & (t > 0) & (n > 0)
    n, t = n[keep], t[keep]
    if len(np.unique(n)) < 3:
        return None
    # Start from the smallest time (latency) and the largest size's rate (bandwidth).
    alpha0 = float(t.min())
    inv_beta0 = max(float((t[n.argmax()] - alpha0) / n.max()), 1e-15)
    scale = np.array([alpha0, inv_beta0])

    def residuals(x: np.ndarray) -> np.ndarray:
        alpha, inv_beta = x * scale
        return (alpha + n * inv_beta - t) / t

    solution = least_squares(residuals, x0=[1.0, 1.0], bounds=([0.0, 1e-9], [np.inf, np.inf]),
                             loss="soft_l1", f_scale=0.05, x_scale="jac")
    alpha, inv_beta = solution.x * scale
    return Fit(alpha_s=float(alpha), beta_gbps=float(1.0 / inv_beta / 1e9), sizes=len(np.unique(n)))


def fit_paths(frame: pd.DataFrame) -> pd.DataFrame:
    """One alpha-beta fit per transfer path (op, devices, memory, method).

    Only moves of a payload are fitted: creation, no-ops and scenarios are not.
    """
    rows = []
    moves = frame[frame["op"].isin(fitted_ops())]
    for path, group in moves.groupby("path", sort=False):
        fit = fit_alpha_beta(group["nbytes"].to_numpy(), group["transfer_s"].to_numpy())
        first = group.iloc[0]
        rows.append({
            "path": path, "op": first["op"], "src": first["src"], "dst": first["dst"],
            "host_memory": first["host_memory"], "method": first["method"],
            "alpha_us": np.nan if fit is None else fit.alpha_s * 1e6,
            "beta_gbps": np.nan if fit is None else fit.beta_gbps,
            "half_peak_bytes": np.nan if fit is None else fit.half_peak_bytes,
            "best_gbps": float(group["bandwidth_gbps"].max()),
            "sizes": int(group["nbytes"].nunique()),
        })
    fits = pd.DataFrame(rows, columns=["path", "op", "src", "dst", "host_memory", "method", "alpha_us", "beta_gbps",
                                       "half_peak_bytes", "best_gbps", "sizes"])
    order = fits["op"].map(order_of)
    return fits.assign(_o=order).sort_values("_o", kind="stable").drop(columns="_o").reset_index(drop=True)


def largest_common_size(frame: pd.DataFrame) -> int | None:
    """The largest payload measured by the most move families, for like-for-like comparisons."""
    moves = frame[frame["op"].isin(moving_ops())]
    if moves.empty:
        return None
    coverage = moves.groupby("nbytes")["op"].nunique()
    return int(coverage[coverage == coverage.max()].index.max())


#: PCIe usable GB/s per lane and direction after line coding (Gen3+ 128b/130b).
PCIE_GBPS_PER_LANE = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}
#: NVLink GB/s per link and direction, by generation (the fingerprint maps NVML's version
#: enum to these): P100 1.0; V100 2.0; A100 3.0; GA10x 3.1; H100/H200 4.0 (18 x 25 = 450); B200 5.0.
NVLINK_GBPS_PER_LINK = {"1.0": 20.0, "2.0": 25.0, "2.2": 25.0, "3.0": 25.0, "3.1": 25.0, "4.0": 25.0, "5.0": 50.0}


def _device_info(machine_info: dict[str, Any], device: str) -> dict[str, Any] | None:
    for entry in (machine_info.get("xferbench") or {}).get("devices", []):
        if entry.get("device") == device:
            return entry
    return None


def link_peak(machine_info: dict[str, Any], op: str, src: str, dst: str) -> tuple[float, str] | None:
    """Theoretical per-direction peak (GB/s) of the link a move uses, and its name.

    None when the fingerprint does not say (no NVML, non-NVIDIA device): the
    report then says the link is unknown rather than guess.
    """
    if op in ("h2d", "d2h"):
        device = _device_info(machine_info, dst if op == "h2d" else src)
        if not device:
            return None
        # The maximum, not the current, link: GPUs drop to a lower PCIe generation when idle.
        generation = device.get("pcie_max_generation") or device.get("pcie_generation")
        width = device.get("pcie_max_width") or device.get("pcie_width")
        if generation in PCIE_GBPS_PER_LANE and width:
            return PCIE_GBPS_PER_LANE[generation] * width, f"PCIe Gen{generation} x{width}"
        return None
    if op == "peer":
        device = _device_info(machine_info, src)
        version = device.get("nvlink_version") if device else None
        if isinstance(version, int):  # a bare generation (a simulated machine's spec): 4 is 4.0
            version = f"{version}.0"
        if device and device.get("nvlink_links") and version in NVLINK_GBPS_PER_LINK:
            links = device["nvlink_links"]
            return NVLINK_GBPS_PER_LINK[version] * links, f"NVLink {version} x{links} links (all of the GPU's)"
        return None
    if op == "d2d":
        device = _device_info(machine_info, src)
        if device and device.get("memory_peak_gbps"):
            # A copy reads and writes every byte over the same memory: bytes counted once
            # reach at most half the peak, so that half is what a copy is held against.
            peak = float(device["memory_peak_gbps"])
            return peak / 2, f"device memory ({peak:.4g} GB/s, NVML clock x bus width, shared by read and write)"
    return None
