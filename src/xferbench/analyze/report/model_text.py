"""What the model decides (analyze/model.py), in words: the α-β table, how a path's β was obtained, the share of a
roof, why pageable moves have no host roof, and where a path reaches half of its β.

Half of β is said only where the fit t = α + n/β holds: the line meets every measured size past that half within
``MODEL_MISS``x, no smaller size ran faster per byte than the largest (resolved), the sweep has a size on each side
of it within ``BRACKET``x, and β is not capped at the largest size's figure. The table and the key finding read the
same verdict. No torch here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...units import format_bytes, format_number, format_seconds
from ..model import NoHostRoof
from ..view import MODEL_MISS, RunView
from .svg import roof_share

__all__ = ["BASES", "BRACKET", "MODEL_MISS", "basis", "fit_table", "half_of_beta", "miss_times", "no_host_roof"]


def no_host_roof(why: NoHostRoof | None) -> str | None:
    """Why the run gives pageable moves no host roof (a clause), or None when it has one (``model.host_ceiling``)."""
    if why is None:
        return None
    if not why.measured:
        return "this run measured no single-thread host memcpy (host copy_ single_thread)"
    took = f"{format_bytes(why.nbytes)} in {format_seconds(why.seconds)}"
    if why.bound is None:
        return (f"the single-thread host memcpy was measured at one size only ({took}), which cannot tell its fixed cost "
                "from its bandwidth, so it bounds nothing")
    return (f"the single-thread host memcpy's sizes are latency-bound (its largest, {took}, is set by the fixed cost, "
            "not the bytes), so it states no bandwidth bound")


#: Each of the model's bases of β (``model.BASES``) in words.
BASES = {"fit": "fit over all sizes",
         "fit beyond memory": "β fit without the sizes that ran faster than memory (α over all)",
         "measured beyond the cache": "measured at the largest size beyond the cache (too few sizes there to fit)",
         "all in cache": "every size fits in cache", "too few sizes": "too few sizes",
         "latency-bound": "no β: every size measured is below α·β, where the fixed cost sets the time",
         "waits": "no β: its largest size took under 2× as long as one with 1/16 of its bytes or fewer: the bytes do "
         "not set its time"}


def basis(fit: Mapping[str, Any]) -> str:
    """How a path's stated β was obtained (``model.fit_path``'s ``beta_basis``), in words; a capped one says what
    the model's β (``beta_gbps``) was."""
    key = str(fit["beta_basis"])
    said = BASES[key.removeprefix("capped ")]
    # model.fit_paths leaves out sizes whose blocks mixed loops: moot where no β is stated for a wait (judged by the
    # blocks timed alike)
    if isinstance(left := fit.get("left_out"), tuple) and left and key != "waits":
        sizes = ", ".join(map(format_bytes, left))
        said = said.replace("all sizes", f"all sizes but {sizes}") if "all sizes" in said else f"{said}, {sizes} left out"
        said += ", whose blocks timed calls a round 2× or more apart"
    if key.startswith("capped "):
        return f"capped at the largest size measured ({said} gave {format_number(fit['beta_gbps'])} GB/s)"
    return said


def miss_times(miss: float) -> str:
    """``181`` or ``2.6``: how many times a line misses a measured size (``RunView.model_miss``), as the table says it."""
    return f"{miss:,.0f}" if miss >= 100 else f"{miss:.2g}"


def _no_half_where_the_model_misses(view: RunView, fit: dict[str, Any]) -> dict[str, Any]:
    """No "half of β" where t = α + n/β misses a size past that half by over ``MODEL_MISS``x
    (``RunView.model_miss``); the basis says so."""
    miss = view.model_miss(fit)
    if miss is None:
        return {}
    # the line is α with the β stated (a capped β where capped), not the fit the basis may quote before it
    line = (f"the line through α and the stated β ({fit['stated_gbps']:.3g} GB/s) misses a measured size "
            f"{miss_times(miss)}×")
    return {"half_peak_bytes": float("nan"), "no_half": line, "beta_basis": f"{fit['beta_basis']}; {line}, so no half of β"}


def _no_ceiling_below_the_mid_sizes(view: RunView, fit: dict[str, Any]) -> dict[str, Any]:
    """A β below what a smaller size of the path reached, that size's time over the largest's (per byte) resolved by
    its interval, is no ceiling: the large sizes fall below the mid sizes (pageable h2d on the H200: β 8.02 GB/s at
    1 GiB where 16 MiB ran at 14.3). The basis gives the measured peak, and no half of β is said."""
    rows = view.rows[view.rows["path"] == fit["path"]]
    # a size that ran from cache, or whose bytes set little of its time (``RunView.waits``), reached no bandwidth
    rows = rows[~view.resident.loc[rows.index].to_numpy(dtype=bool) & ~view.waiting(rows)]
    stated = float(fit["stated_gbps"])
    if rows.empty or not np.isfinite(stated) or stated <= 0 or not rows["bandwidth_gbps"].notna().any():
        return {}
    peak = rows.loc[rows["bandwidth_gbps"].idxmax()]
    largest = rows.loc[rows["nbytes"].idxmax()]
    if float(peak["bandwidth_gbps"]) <= stated or peak.name == largest.name:
        return {}
    if view.per_byte(largest, peak).low <= 1:  # the largest not slower per byte beyond its interval
        return {}
    half = " and no half of β is given" if np.isfinite(fit["half_peak_bytes"]) else ""
    return {"half_peak_bytes": float("nan"), "no_half": fit.get("no_half") or (
        f"the large sizes fall below the mid sizes ({format_bytes(int(peak['nbytes']))} reached "
        f"{peak['bandwidth_gbps']:.3g} GB/s)"), "beta_basis": (
        f"{fit['beta_basis']}; the large sizes fall below the mid sizes: {format_bytes(int(peak['nbytes']))} reached "
        f"{peak['bandwidth_gbps']:.3g} GB/s, so β is no ceiling{half}")}


#: The sizes measured on either side of half of β must lie within this factor of each other to place it.
BRACKET = 16.0


def _unbracketed(view: RunView, fit: dict[str, Any]) -> dict[str, Any]:
    """No half of β where the sweep's sizes on either side of it lie more than ``BRACKET``x apart (the CPU sample's
    1 KiB and 1 MiB around 25.7 KiB): the fit's line, not a measurement, would place it."""
    half = float(fit["half_peak_bytes"])
    if not np.isfinite(half):
        return {}
    rows = view.rows[view.rows["path"] == fit["path"]]
    # a size β's fit left out (its blocks mixed loops, or it ran from cache faster than memory) brackets nothing
    sizes = rows.loc[~view.resident.loc[rows.index].to_numpy(dtype=bool), "nbytes"]
    sizes = sizes[~sizes.isin(fit.get("left_out") or ())]
    below, above = sizes[sizes <= half], sizes[sizes >= half]
    if below.empty or above.empty:
        reason = f"the sizes measured do not reach past {format_bytes(int(half))} on both sides"
    elif above.min() / max(below.max(), 1) > BRACKET:
        low, high = int(below.max()), int(above.min())
        reason = (f"the fit puts half of β at {format_bytes(int(half))}, between {format_bytes(low)} and "
                  f"{format_bytes(high)}, the nearest sizes it kept, {high / max(low, 1):,.0f}× apart")
    else:
        return {}
    return {"half_peak_bytes": float("nan"), "no_half": reason,
            "beta_basis": f"{fit['beta_basis']}; {reason}, so no half of β"}


def _capped(view: RunView, fit: dict[str, Any]) -> dict[str, Any]:
    """No half of β where β is capped at what the largest size reached: α x that figure places half of β where no
    measured size says it lies (send_recv on the H200: 13.8 KiB, though 16 KiB already reached the capped β)."""
    if not str(fit["beta_basis"]).startswith("capped") or not np.isfinite(float(fit["half_peak_bytes"])):
        return {}
    return {"half_peak_bytes": float("nan"), "no_half": "β is capped at what the largest size measured reached",
            "beta_basis": f"{fit['beta_basis']}, so no half of β"}


def half_of_beta(view: RunView, fit: dict[str, Any]) -> dict[str, Any]:
    """What the report says of ``fit`` (a row of ``view.fits``) beyond the fit itself: ``half_peak_bytes`` NaN and
    ``no_half`` the reason where half of β is not stated, ``beta_basis`` saying so; empty where the fit holds."""
    said = dict(fit)
    for check in (_no_half_where_the_model_misses, _no_ceiling_below_the_mid_sizes, _unbracketed,
                  _capped):
        said |= check(view, said)
    return {key: value for key, value in said.items() if key not in fit or value is not fit[key]}


def fit_table(view: RunView) -> list[dict[str, Any]]:
    """The α-β table: one row per fitted path, α, β (cache-aware, capped), and the share of its tightest roof
    (``roof_share``: the largest size's GB/s over the roof's figure, printed with it, as the figures label roofs)."""
    rows = []
    for fit in view.fits.to_dict("records"):
        roof = min(view.roofs(fit["op"], fit["src"], fit["dst"], fit["host_memory"]), default=None)  # the tightest
        practical = view.practical(fit["op"], fit["src"], fit["dst"])
        link = roof[1] if roof else "not known"
        pinned_link = practical if link.startswith("PCIe") and fit["host_memory"] == "pinned" else None
        if practical and link.startswith("PCIe"):
            link += f" (practical {practical[0]:g}-{practical[1]:g} GB/s)"
        worded = fit | {"beta_basis": basis(fit)}
        said = worded | half_of_beta(view, worded)
        rows.append(said | _algbw(view, said) | {
            # α as the page and the Markdown write it (1.72 ms, never 1.72e+03 µs); – where the fit has none
            "alpha": _seconds(fit["alpha_us"]), "pipelined_alpha": _seconds(fit.get("pipelined_alpha_us")),
            "link": link,
            "peak_gbps": roof[0] if roof else None,
            "share": roof_share(fit["largest_gbps"], roof[0], pinned_link) if roof else "–",
        })
    return rows


def _seconds(us: float | None) -> str:
    return format_seconds(float(us) / 1e6) if us is not None and np.isfinite(us) else "–"


def _algbw(view: RunView, fit: dict[str, Any]) -> dict[str, Any]:
    """A collective's GB/s in the table are its algbw (bytes / time), where the distributed figure draws busbw
    (nccl-tests' convention): the basis says so, or one case would carry two figures 2x apart unlabelled."""
    if not view.algbw_differs(fit["path"]) or not np.isfinite(float(fit["largest_gbps"])):  # no GB/s in the row
        return {}
    return {"beta_basis": f"{fit['beta_basis']}; GB/s here are algbw (bytes / time): the page's distributed figure draws busbw"}
