"""Key findings as sentences computed from the numbers, for the top of the report.

Each finding function looks for the rows it needs and returns None when they are
not there, so a CPU-only run simply has fewer findings.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from ..units import format_bytes, format_seconds
from .model import cache_resident, fit_alpha_beta, fit_paths, largest_common_size

__all__ = ["FINDINGS", "findings"]


def _at(frame: pd.DataFrame, size: int | None, **match: object) -> pd.DataFrame:
    rows = frame if size is None else frame[frame["nbytes"] == size]
    for column, value in match.items():
        rows = rows[rows[column] == value]
    return rows


def d2h_pageable_vs_pinned(frame: pd.DataFrame) -> str | None:
    size = largest_common_size(frame)
    pageable = _at(frame, size, op="d2h", host_memory="pageable")
    pinned = _at(frame, size, op="d2h", host_memory="pinned")
    if size is None or pageable.empty or pinned.empty:
        return None
    slow, fast = pageable.loc[pageable["median_s"].idxmin()], pinned.loc[pinned["median_s"].idxmin()]
    return (f"Moving {format_bytes(size)} from {slow['src']} to pageable host memory took {format_seconds(slow['median_s'])} "
            f"({slow['method']}), {slow['median_s'] / fast['median_s']:.1f}× as long as into pinned memory "
            f"({format_seconds(fast['median_s'])}, {fast['bandwidth_gbps']:.3g} GB/s).")


def h2d_pinned_vs_pageable(frame: pd.DataFrame) -> str | None:
    size = largest_common_size(frame)
    pageable = _at(frame, size, op="h2d", host_memory="pageable")
    pinned = _at(frame, size, op="h2d", host_memory="pinned")
    if size is None or pageable.empty or pinned.empty:
        return None
    a, b = pageable["bandwidth_gbps"].max(), pinned["bandwidth_gbps"].max()
    return (f"Host to device at {format_bytes(size)}: pinned sources reached {b:.3g} GB/s, pageable ones "
            f"{a:.3g} GB/s ({b / a:.1f}×).")


def d2h_vs_h2d(frame: pd.DataFrame) -> str | None:
    """.cpu() / .to('cpu') against copy_ into a buffer that exists, and the way up: the
    usual way back allocates (and first-touches) new pageable memory on every call."""
    size = largest_common_size(frame)
    up, down = _at(frame, size, op="h2d"), _at(frame, size, op="d2h", host_memory="pageable")
    usual, into_existing = down[down["method"].isin(["cpu", "to"])], down[down["method"] == "copy_"]
    if size is None or up.empty or usual.empty:
        return None
    existing = (f"; copy_ into an existing pageable buffer ran at {into_existing['bandwidth_gbps'].max():.3g} GB/s"
                if not into_existing.empty else "")
    return (f"The usual way back, .cpu() or .to('cpu'), allocates a new pageable tensor on every call and ran at "
            f"{usual['bandwidth_gbps'].max():.3g} GB/s at {format_bytes(size)}{existing}; the best host-to-device path "
            f"ran at {up['bandwidth_gbps'].max():.3g} GB/s.")


def same_device_vs_link(frame: pd.DataFrame, machine_info: dict[str, Any]) -> str | None:
    size = largest_common_size(frame)
    d2d, h2d = _at(frame, size, op="d2d"), _at(frame, size, op="h2d")
    if size is None or d2d.empty or h2d.empty:
        return None
    best = d2d.loc[d2d["bandwidth_gbps"].idxmax()]
    ratio = best["bandwidth_gbps"] / h2d["bandwidth_gbps"].max()
    sentence = (f"A same-device copy on {best['src']} reached {best['bandwidth_gbps']:.4g} GB/s, {ratio:.0f}× the best "
                f"host-to-device copy: data that stays on the GPU is cheap, crossing the link is not.")
    if bool(cache_resident(best.to_frame().T, machine_info).iloc[0]):
        sentence += f" At {format_bytes(size)} that copy runs from the GPU's L2 cache, above what its memory sustains."
    return sentence


def peer(frame: pd.DataFrame) -> str | None:
    rows = _at(frame, largest_common_size(frame), op="peer")
    if rows.empty:
        return None
    best, worst = rows.loc[rows["bandwidth_gbps"].idxmax()], rows.loc[rows["bandwidth_gbps"].idxmin()]
    if worst["bandwidth_gbps"] >= 0.99 * best["bandwidth_gbps"]:
        return f"Peer copies ran at {best['bandwidth_gbps']:.3g} GB/s on every pair of GPUs measured."
    return (f"Peer copies ranged from {worst['bandwidth_gbps']:.3g} GB/s ({worst['src']}->{worst['dst']}) to "
            f"{best['bandwidth_gbps']:.3g} GB/s ({best['src']}->{best['dst']}).")


def noop_cost(frame: pd.DataFrame) -> str | None:
    noops = frame[frame["op"] == "noop"]
    if noops.empty:
        return None
    preferred = noops[noops["method"] == "cuda"]
    row = (preferred if not preferred.empty else noops).sort_values("median_s").iloc[0]
    call = f".cuda({row['src'].split(':')[1]})" if row["method"] == "cuda" else (
        ".cpu()" if row["method"] == "cpu" else f".to('{row['src']}')")
    sentence = f"A no-op {call} on a tensor already on {row['src']} costs {row['median_s'] * 1e9:.0f} ns per call"
    host = frame[(frame["op"] == "host") & (frame["method"] == "copy_")]
    fit = fit_alpha_beta(host["nbytes"].to_numpy(), host["median_s"].to_numpy()) if not host.empty else None
    if fit is None:
        return sentence + " and returns the very same object."
    equivalent = (row["median_s"] - fit.alpha_s) * fit.beta_gbps * 1e9
    if equivalent <= 0:
        return (sentence + f", less than the fixed cost of the cheapest host copy_ ({fit.alpha_s * 1e9:.0f} ns): "
                "it returns the same object and copies nothing.")
    return sentence + f", as long as a host copy_ of about {format_bytes(equivalent)}; it returns the same object."


def latency_bound(frame: pd.DataFrame, machine_info: dict[str, Any] | None = None) -> str | None:
    """The fastest host-side path's α and β, with β taken beyond the caches and never above what was measured."""
    moves = frame[frame["op"].isin(("h2d", "d2h", "host"))]
    if moves.empty:
        return None
    fits = fit_paths(moves, machine_info)
    fits = fits[fits["alpha_us"].notna()]
    if fits.empty:
        return None
    stated = fits[fits["stated_gbps"].notna()]
    if stated.empty:
        best = fits.loc[fits["largest_gbps"].idxmax()]
        return (f"Fastest path {best['path']}: fixed cost α = {best['alpha_us']:.3g} µs; every size measured "
                f"(up to {format_bytes(best['largest_bytes'])}) fits in the {best['cache'] or 'cache'}, so no memory "
                f"bandwidth β is stated (a sweep beyond the cache, e.g. --xfer-sizes=4B..1GiB, measures it).")
    best = stated.loc[stated["stated_gbps"].idxmax()]
    sentence = (f"Fastest path {best['path']}: fixed cost α = {best['alpha_us']:.3g} µs, bandwidth β = "
                f"{best['stated_gbps']:.3g} GB/s")
    if str(best["beta_basis"]).startswith("capped"):
        sentence += (f" (the bandwidth its largest size, {format_bytes(best['largest_bytes'])}, reached: smaller sizes ran "
                     f"from cache and would suggest more)")
    elif best["resident_sizes"]:
        sentence += (f" (from the sizes beyond the {best['cache'] or 'cache'}; {best['resident_sizes']} cache-resident "
                     "size(s) left out)")
    return sentence + (f"; moves smaller than {format_bytes(best['half_peak_bytes'])} reach less than half of β — "
                       "batch them.")


def overhead_small(frame: pd.DataFrame) -> str | None:
    timed = frame[pd.to_numeric(frame["device_seconds"], errors="coerce").notna() & (frame["op"] == "h2d")]
    if timed.empty:
        return None
    smallest = timed[timed["nbytes"] == timed["nbytes"].min()]
    row = smallest.loc[smallest["median_s"].idxmin()]
    share = 1 - float(row["device_seconds"]) / row["median_s"]
    return (f"For a {format_bytes(row['nbytes'])} host-to-device copy, {share:.0%} of the {format_seconds(row['median_s'])} wall "
            f"time was spent outside the device (launch, driver, synchronization).")


def host_copy(frame: pd.DataFrame, machine_info: dict[str, Any]) -> str | None:
    rows = frame[frame["op"] == "host"]
    if rows.empty:
        return None
    best = rows.loc[rows["nbytes"] == rows["nbytes"].max()]
    best = best.loc[best["bandwidth_gbps"].idxmax()]
    sentence = (f"Host memory copies ({best['method']}) reached {best['bandwidth_gbps']:.3g} GB/s at "
                f"{format_bytes(best['nbytes'])}")
    if (machine_info.get("xferbench") or {}).get("simulated"):
        sentence += " on this CPU, for real: the simulated devices' figures do not depend on it."
    else:
        sentence += ": the reference any transfer to or from the CPU is bounded by."
    if bool(cache_resident(best.to_frame().T, machine_info).iloc[0]):
        sentence += " That size still fits in the CPU's caches: memory itself is slower (sweep to larger sizes)."
    return sentence


Finding = Callable[[pd.DataFrame, dict[str, Any]], str | None]


def _frame_only(find: Callable[[pd.DataFrame], str | None]) -> Finding:
    return lambda frame, machine_info: find(frame)


#: In page order; each takes the rows and the machine_info (cache sizes, links).
FINDINGS: list[Finding] = [
    *map(_frame_only, (d2h_pageable_vs_pinned, h2d_pinned_vs_pageable, d2h_vs_h2d)), same_device_vs_link,
    *map(_frame_only, (peer, overhead_small)), latency_bound, _frame_only(noop_cost), host_copy,
]


def findings(frame: pd.DataFrame, machine_info: dict[str, Any] | None = None) -> list[str]:
    """Every finding the rows support; the machine's cache sizes keep fitted bandwidths honest."""
    return [sentence for find in FINDINGS if (sentence := find(frame, machine_info or {}))]


def _variant(rows: pd.DataFrame, variant: str) -> pd.DataFrame:
    return rows[rows["variant"] == variant]


def _module_to(rows: pd.DataFrame) -> list[str]:
    out = []
    again = _variant(rows, "again")
    if not again.empty:
        big = again.loc[again["nbytes"].idxmax()]
        out.append(f"A second .to({big['dst']}) of a module with {big['nbytes'] // 4:,} parameters, already there, "
                   f"still took {format_seconds(big['median_s'])}: nothing is copied, but every parameter tensor is visited.")
    first = _variant(rows, "first")
    if not first.empty:
        big = first.loc[first["nbytes"].idxmax()]
        out.append(f"The first move to {big['dst']} took {format_seconds(big['median_s'])} ({big['bandwidth_gbps']:.3g} GB/s).")
    return out


def _sync_stall(rows: pd.DataFrame) -> list[str]:
    waiting = rows[rows["variant"] != "nonblocking_event"]
    event = _variant(rows, "nonblocking_event")
    if waiting.empty:
        return []
    slow = waiting.loc[waiting["median_s"].idxmin()]
    out = [f"With 2 ms of work queued, even the quickest synchronizing call ({slow['variant']}) took "
           f"{format_seconds(slow['median_s'])}."]
    if not event.empty:
        out.append(f"The non_blocking copy into pinned memory returned in {format_seconds(event['median_s'].min())}.")
    return out


def _ratio(rows: pd.DataFrame, slow: str, fast: str, what: str) -> list[str]:
    out = []
    for (size, dst), group in rows.groupby(["nbytes", "dst"]):
        a, b = _variant(group, slow), _variant(group, fast)
        if not a.empty and not b.empty:
            ratio = a["median_s"].iloc[0] / b["median_s"].iloc[0]
            out.append(f"{what} at {format_bytes(size)} on {dst}: {fast} took {format_seconds(b['median_s'].iloc[0])}, "
                       f"{slow} {format_seconds(a['median_s'].iloc[0])} ({ratio:.2f}x).")
    return out[-2:]


def _cuda_vs_to(rows: pd.DataFrame) -> list[str]:
    tensors = rows[rows["variant"].isin(("cuda", "to_str", "to_device"))]
    if tensors.empty:
        return []
    spread = tensors["median_s"].max() / tensors["median_s"].min() - 1
    return [f".cuda(i), .to('cuda:i') and .to(torch.device) differed by {spread:.0%} at most."]


def _cpu_convert(rows: pd.DataFrame) -> list[str]:
    cpu = _variant(rows, "convert_on_cpu")
    out = [f"Converting {int(r['nbytes'] // (3 * 224 * 224))} images to normalized float32 on the CPU took "
           f"{format_seconds(r['median_s'])}." for _, r in cpu.iterrows()][-1:]
    return out + _ratio(rows, "convert_then_move", "move_then_convert", "Placement")


#: Each scenario family's findings, by op (the registry holds its title and prose).
SCENARIO_FINDINGS: dict[str, Callable[[pd.DataFrame], list[str]]] = {
    "module_to": _module_to,
    "sync_stall": _sync_stall,
    "pin_memory": lambda rows: (_ratio(rows, "pin_cached_then_to", "reused_pinned_to", "Host to device")
                                + _ratio(rows, "to", "reused_pinned_to", "Host to device")),
    "placement": _cpu_convert,
    "cuda_vs_to": _cuda_vs_to,
}


def scenario_findings(frame: pd.DataFrame, op: str) -> list[str]:
    """Sentences for one scenario's section, from its rows."""
    rows = frame[frame["op"] == op]
    if rows.empty or op not in SCENARIO_FINDINGS:
        return []
    return SCENARIO_FINDINGS[op](rows)
