"""Key findings computed from the numbers: each a headline (at most 50 words and 4 figures, on the page) and the
evidence folded beneath it.

Each finding function reads the run's view (analyze/view.py: its rows and the facts derived from them
once) and returns None when what it needs is not there, so a CPU-only run simply has fewer findings.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd

from ...families import FAMILIES, family
from ...families.base import Rule
from ...families.base import ms as _ms
from ...families.base import span as _span
from ...families.core import noop_call
from ...ratios import Ratio
from ...units import count, format_bytes, format_number, format_seconds, format_span, percent, percent_span
from ..cliff import CLIFF_DROP, cliff
from ..model import COPY_TOUCHES, SINGLE_THREAD, bandwidth_bound, cache_bytes
from ..view import USUAL_WAY_BACK, RunView, flag, matching
from . import drift_text
from .cliff import cliff_cause, cliff_note, fresh_clause, held_there, mmap_clause
from .ladder_text import summary, took_at
from .model_text import alpha_beta, no_host_roof
from .staging import staging_both_ways
from .svg import bytes_said, ticks_said
from .threads import one_thread_beside, threads_against_one

__all__ = ["CLIFF_DROP", "FINDINGS", "Said", "cliff", "cliff_cause", "cliff_note", "findings", "why_measured"]


class Said(str):
    """A key finding: the sentence of its evidence (every figure it rests on, which the page folds away), with its
    headline (at most 50 words and 4 figures) beside it."""

    headline: str

    def __new__(cls, headline: str, evidence: str) -> Said:
        said = super().__new__(cls, evidence)
        said.headline = headline
        return said

    @property
    def evidence(self) -> str:
        return str(self)


def way_back(view: RunView) -> dict[str, Any] | None:
    """At the largest common size: the usual way back (.cpu() / .to(device) into new pageable memory), copy_ into
    an existing pageable buffer, the fastest pinned copy, and the one-line fix where measured; None without d2h."""
    size = view.largest_size
    down = matching(view.at_largest, {"op": "d2h"})
    usual = down[down["method"].isin(USUAL_WAY_BACK) & ~down["non_blocking"].astype(bool)]
    pinned = down[down["host_memory"] == "pinned"]
    if size is None or usual.empty or pinned.empty:
        return None
    pageable = down[(down["host_memory"] == "pageable") & (down["method"] == "copy_")]
    # .to('cpu', non_blocking=True) returns pinned memory: the one-line fix, where the run measured it.
    fix = down[down["method"].isin(USUAL_WAY_BACK) & down["non_blocking"].astype(bool)]
    return {"size": size, "usual": usual, "existing": pageable, "pinned": pinned.loc[pinned["median_s"].idxmin()],
            "fix": fix.loc[fix["median_s"].idxmin()] if not fix.empty else None}


def ratio_span(ratios: list[Ratio]) -> str:
    """Several comparisons of one kind in a few words: ``36.6-43.9× (33.1-48.2)`` where every one is resolved, else
    the least telling one's text where none is, else each one's text."""
    if all(r.resolved for r in ratios):
        values = _span(pd.Series([r.value for r in ratios]))
        interval = f"{min(r.low for r in ratios):.3g}-{max(r.high for r in ratios):.3g}"
        return f"{values}×" if interval in (values, f"{values}-{values}") else f"{values}× ({interval})"
    if not any(r.resolved for r in ratios):
        return max(ratios, key=lambda r: r.could_see).text()
    return " and ".join(r.text() for r in ratios)


def d2h_usual_way_back(view: RunView) -> Said | None:
    """What users call first: .cpu() / .to(device), against pinned memory and against copy_ into an existing buffer."""
    if (way := way_back(view)) is None:
        return None
    usual, pinned, existing = way["usual"], way["pinned"], way["existing"]
    times = ratio_span([view.ratio(row, pinned) for _, row in usual.iterrows()])
    sentence = (f"Moving {format_bytes(way['size'])} from {usual['src'].iloc[0]} to the CPU the usual way, .cpu() or "
                f".to(device), took {_ms(usual['median_s'])} ({_span(usual['bandwidth_gbps'])} GB/s): {times} as long as "
                f"into pinned memory ({format_seconds(pinned['median_s'])}, {pinned['bandwidth_gbps']:.3g} GB/s).")
    if not existing.empty:
        best = existing.loc[existing["median_s"].idxmin()]
        against = view.ratio(best, pinned)  # "3.6× (2.77-4.67) pinned" read as a pinned copy's figure (a third reading)
        sentence += (f" copy_ into an existing pageable buffer took {format_seconds(best['median_s'])} (" + (
            f"{against.text()} as long as into pinned memory" if against.resolved else f"against pinned, {against.text()}")
                     + ")" + fresh_clause(view, way["size"]))
    return Said(f".cpu() / .to(device) of {format_bytes(way['size'])} took {_ms(usual['median_s'])}: {times} as long as "
                "a copy into pinned memory.", sentence)


#: The one-line fix as the run calls it (measure/transfers.py: ``src.to(target, ...)``, a torch.device): the host-to-device
#: form, .to(device, non_blocking=True), is measured apart, and an H200 reading took "device" for the GPU.
_FIX = ".to(torch.device('cpu'), non_blocking=True)"


def the_fix(view: RunView, listed: set[str]) -> str | None:
    """Where the fix back to the CPU is priced: the first screen's changes (``listed``: their keys), said once there; and
    whether the one-line fix ran."""
    if (way := way_back(view)) is None:
        return None
    fixes = [title for key, title in (("pinned-buffer", "a copy into a reused pinned buffer"),
                                      ("non-blocking-to", f"the one-line fix, {_FIX}")) if key in listed]
    unmeasured = [] if way["fix"] is not None else [f"the one-line fix, {_FIX}, was not measured in this run"]
    said = ([f'the "What to change here" list at the top of this page prices {" and ".join(fixes)}'] if fixes else []
            ) + unmeasured
    return "; ".join(said) + "." if said else None


def h2d_pinned_vs_pageable(view: RunView) -> Said | None:
    """Pinned against pageable host-to-device at the largest common size: each side's fastest call, or every call the
    run cannot tell from it, and each pageable call against each pinned one."""
    size = view.largest_size
    pageable = view.tied_fastest(matching(view.at_largest, {"op": "h2d", "host_memory": "pageable"}))
    pinned = view.tied_fastest(matching(view.at_largest, {"op": "h2d", "host_memory": "pinned"}))
    if size is None or pageable.empty or pinned.empty:
        return None
    a, b = pageable["bandwidth_gbps"], pinned["bandwidth_gbps"]
    judged = ratio_span([view.ratio(slow, fast) for _, slow in pageable.iterrows() for _, fast in pinned.iterrows()])
    tied = ("; the run cannot tell each kind's fastest calls apart, so each figure spans them"
            if len(pageable) > 1 or len(pinned) > 1 else "")
    said = (f"Host to device at {format_bytes(size)}: pinned sources reached {_span(b)} GB/s, pageable ones "
            f"{_span(a)} GB/s (pageable took {judged} as long{tied}).")
    return Said(f"Host to device at {format_bytes(size)}: pinned {_span(b)} GB/s, pageable {_span(a)} GB/s; pageable "
                f"takes {judged} as long.", said)


def same_device_vs_link(view: RunView) -> Said | None:
    size = view.largest_size
    d2d, h2d = matching(view.at_largest, {"op": "d2d"}), matching(view.at_largest, {"op": "h2d"})
    if size is None or d2d.empty or h2d.empty:
        return None
    best = d2d.loc[d2d["bandwidth_gbps"].idxmax()]
    ratio = view.ratio(h2d.loc[h2d["bandwidth_gbps"].idxmax()], best)
    larger = view.rows[(view.rows["op"] == "d2d") & (view.rows["nbytes"] > size)]
    peak = larger.loc[larger["bandwidth_gbps"].idxmax()] if not larger.empty else None
    beyond = (f" ({format_number(peak['bandwidth_gbps'], 4)} GB/s at {format_bytes(int(peak['nbytes']))})"
              if peak is not None and peak["bandwidth_gbps"] > best["bandwidth_gbps"] else "")
    gbps = format_number(best["bandwidth_gbps"], 4)
    sentence = (f"A same-device copy on {best['src']} reached {gbps} GB/s at {format_bytes(size)}{beyond}, "
                f"{ratio.text()} the best host-to-device copy at that size: data that stays on the GPU "
                "is cheap, crossing the link is not.")
    if bool(view.resident[best.name]):
        sentence += f" At {format_bytes(size)} that copy runs from the GPU's L2 cache, above what its memory sustains."
    return Said(f"A same-device copy reached {gbps} GB/s at {format_bytes(size)}, {ratio.text()} "
                "the best host-to-device copy: data that stays on the GPU is cheap.", sentence)


def peer(view: RunView) -> Said | None:
    rows = matching(view.at_largest, {"op": "peer"})
    if rows.empty:
        return None
    best, worst = rows.loc[rows["bandwidth_gbps"].idxmax()], rows.loc[rows["bandwidth_gbps"].idxmin()]
    at = f"At {format_bytes(int(best['nbytes']))}, peer copies"
    if worst["bandwidth_gbps"] >= 0.99 * best["bandwidth_gbps"]:
        named = (rows["src"] + "->" + rows["dst"]).unique()
        pairs = ", ".join(named) if len(named) <= 4 else f"{len(named)} of them"
        said = f"{at} ran at {best['bandwidth_gbps']:.3g} GB/s in every direction copied ({pairs})."
    else:
        said = (f"{at} ranged from {worst['bandwidth_gbps']:.3g} GB/s ({worst['src']}->{worst['dst']}) to "
                f"{best['bandwidth_gbps']:.3g} GB/s ({best['src']}->{best['dst']}).")
    return Said(said, said)


def noop_cost(view: RunView) -> Said | None:
    """Each no-op form on the device with the most forms (a GPU where there is one), then the cheapest real copy."""
    frame = view.rows
    noops = frame[frame["op"] == "noop"]
    if noops.empty:
        return None
    device = noops.groupby("src")["method"].count().sort_index(key=lambda d: d.str.startswith("cpu")).index[0]
    # Each form's medians as measured, one per size: a span where the sizes differ, never their mean (no case timed it).
    on = noops[noops["src"] == device]
    rows = sorted(on.groupby(["method", on["variant"].fillna("")])["median_s"], key=lambda form: float(form[1].min()))
    forms = ", ".join(f"{noop_call(method, device, variant or None)} {_span(seconds * 1e9, ',.0f')} ns"
                      for (method, variant), seconds in rows)
    notes, unsure = [], ""
    if any("-" in _span(seconds * 1e9, ",.0f") for _, seconds in rows):
        notes.append("the lowest and the highest median over the sizes measured, "
                     + " and ".join(format_bytes(int(n)) for n in sorted(on["nbytes"].unique())))
    for (method, variant), seconds in [] if view.busy else rows:  # a no-op copies nothing: its sizes part by other causes
        high, low = on.loc[seconds.idxmax()], on.loc[seconds.idxmin()]
        if (apart := view.ratio(high, low)).resolved or apart.value >= 1.5:  # a span a reader sees as two costs
            said = (f"{noop_call(method, device, variant or None)} at {format_bytes(int(high['nbytes']))} against "
                    f"{format_bytes(int(low['nbytes']))} (rounds of {int(high['iterations']):,} calls against "
                    f"{int(low['iterations']):,})")
            machine = "" if apart.resolved else drift_text.stepped_between(frame, high, low)
            notes.append(f"{said}: {apart.text()} as long, not by its bytes, it copies none; why, this run cannot tell"
                         if apart.resolved else f"whether {said} costs more, {apart.text()}"
                         + (f"; {machine}" if machine else ""))
            unsure = unsure or ("" if apart.resolved else " (a spread the machine's step in time could give)" if machine
                                else " (whether the sizes' spread is the call's, can't tell)")
    if not (noops["variant"] == "str").any():
        notes.append(f"the string form, .to('{device}'), was not measured")
    unmeasured = f" ({'; '.join(notes)})" if notes else ""
    sentence = f"A no-op on a tensor already on {device} costs per call: {forms}{unmeasured}"
    # a busy run's medians span its load, not the call: its fastest rounds say what the call costs
    cost = (f"{_span(on['min_s'] * 1e9, ',.0f')} ns a call at its fastest rounds (medians under load up to "
            f"{float(on['median_s'].max()) * 1e9:,.0f} ns)" if view.busy else
            f"{_span(on['median_s'] * 1e9, ',.0f')} ns a call{unsure}")
    headline = f"A no-op move of a tensor already on {device} costs {cost}: it returns the same object."
    if (cheapest := view.cheapest_copy(on.iloc[0])) is None:
        return Said(headline, sentence + "; each returns the very same object.")
    # "real": a copy that moves bytes, against a no-op; never of a cost model's figure, which no one measured
    priced = "copy the cost model priced" if cheapest.get("clock") == "simulated" else "real copy measured"
    sentence += (f"; the cheapest {priced} ({cheapest['path']}, {format_bytes(cheapest['nbytes'])}) took "
                 f"{cheapest['median_s'] * 1e9:,.0f} ns")
    dearest = on.loc[on["median_s"].idxmax()]
    if float(dearest["median_s"]) > float(cheapest["median_s"]):
        # Judged by the pair's own interval: under load a no-op's median can sit above a copy's by chance alone.
        ratio, floors = view.ratio(dearest, cheapest), on["min_s"] * 1e9
        # A median above the copy's whose fastest rounds all beat the copy's fastest is the load's, not the call's: a
        # wait only adds, so that order settles it (the quick run: 195-374 ns against 948 ns), not "can't tell".
        beaten = float(floors.max()) < float(cheapest["min_s"]) * 1e9
        sentence += (f", and the dearest no-op took {ratio.text()} as long: a no-op still parses its arguments and dispatches "
                     "(not timed apart here)" if ratio.resolved else ", below the dearest no-op's median" + (
                         "" if beaten else f"; whether that no-op costs more, {ratio.text()}"))
        if beaten:
            sentence += (f"; at their fastest round every no-op ({_span(floors, ',.0f')} ns) beat the copy's "
                         f"({float(cheapest['min_s']) * 1e9:,.0f} ns): the medians' order is the load's")
    return Said(headline, sentence + ". A no-op returns the same object and copies nothing.")


def _unsure_wait(view: RunView, best: pd.Series) -> tuple[str, str]:
    """Where the run judged ``best``'s growth from a size with 1/16 of its bytes or fewer (``RunView.growth``) and
    cannot tell it from under 2x, that whether the bytes set that time can't be told, for the headline and in full
    (the quick CPU run's copy_: 40 ms at 64 MiB, 24 ms at 1 MiB, 5× (0.165-152) block by block); else nothing."""
    grown = view.growth(best)
    if grown is None or not grown[1].judged or grown[1].low >= 2:
        return "", ""
    small, grew = grown
    times = drift_text.block_times(small)  # a mixed row's merged median lies between its blocks': their span says both
    took = (f"{format_bytes(small['nbytes'])}'s blocks took {format_span(format_seconds(times[0]), format_seconds(times[-1]))}"
            if len(times) > 1 else f"{format_bytes(small['nbytes'])} took {format_seconds(small['median_s'])}")
    mixed = ", calls a round 2× or more apart" if flag(small, "mixed_iterations") else ""
    which = f"{format_bytes(small['nbytes'])}'s {'blocks' if len(times) > 1 else 'times'}"
    headline = f"; {which} can't tell whether the bytes set that time"
    return headline, (f"; whether the bytes set that time, can't tell: {took} ({best['nbytes'] / small['nbytes']:,.0f}× "
                      f"fewer bytes{mixed}), and block by block it took {grew.figures()} as long")


def latency_bound(view: RunView) -> Said | None:
    found = alpha_beta(view)
    return Said(*found) if found else None


def overhead_small(view: RunView) -> Said | None:
    """The smallest host-to-device copy: one synchronized call's wall time beside the device time of copies issued back
    to back (two timings of two loops, so no share of one from the other)."""
    frame = view.rows
    timed = frame[pd.to_numeric(frame["device_seconds"], errors="coerce").notna() & (frame["op"] == "h2d")]
    if timed.empty:
        return None
    smallest = timed[timed["nbytes"] == timed["nbytes"].min()]
    row = smallest.loc[smallest["median_s"].idxmin()]
    size, wall, device = format_bytes(row["nbytes"]), format_seconds(row["median_s"]), format_seconds(
        float(row["device_seconds"]))
    clock = "the cost model's wall time" if row.get("clock") == "simulated" else "wall time"  # its page: not measured
    # the advice follows from the fixed cost; the batching scenario measures it, where it ran (a third H200 reading)
    unmeasured = "" if (frame["op"] == "batching").any() else " (not measured: the batching scenario did not run)"
    return Said(f"A {size} host-to-device copy takes {wall} synchronized after each call, {device} of device time issued "
                f"back to back: one copy of many small moves pays that cost once{unmeasured}.", (
                    f"A {size} host-to-device copy ({row['path']}) took {wall} of {clock} when synchronized after each "
                    f"call; issued back to back, the device spent {device} on each (device time only: the host's cost to "
                    "issue each copy is not timed here, and a loop pays it where it is larger, so what dropping the "
                    f"synchronize saves is not measured): one copy of many small moves pays that cost once{unmeasured}."))


def host_copy(view: RunView) -> Said | None:
    """The host copy ceiling, and which host copy bounds a pageable transfer (a single thread's memcpy); a run whose
    sizes are latency-bound states what one call took, never a bandwidth."""
    frame = view.rows
    # copy_ into a kept buffer, not clone's fresh pages
    every = frame[(frame["op"] == "host") & (frame["variant"] != SINGLE_THREAD["variant"]) & frame["method"].eq("copy_")]
    if every.empty:
        return None
    # a row of mixed timings, or whose rounds waited for the CPU, states no bandwidth (RunView.rows; the α/β fit leaves
    # it out)
    if pd.isna((top := every.loc[every["nbytes"].idxmax()])["bandwidth_gbps"]):
        stated = (f"Host memory copies (copy_ on torch's threads) state no bandwidth: at {format_bytes(top['nbytes'])}, "
                  + (ticks_said(top) if pd.notna(top.get("on_ticks", math.nan)) else
                     "its blocks timed calls a round 2× or more apart" if flag(top, "mixed_iterations") else
                     "its one-call rounds waited for the CPU (its median round 3/4 of a tick or more past its fastest)"))
        return Said(stated + ".", stated + ".")
    rows = every[every["bandwidth_gbps"].notna()]
    largest = rows.loc[rows["nbytes"] == rows["nbytes"].max()]
    largest = largest.loc[largest["bandwidth_gbps"].idxmax()]
    # The best size past the caches (by the report's own rule), not merely the largest one; where the fit found the
    # smaller sizes cached (a capped β), the largest is the only size known to be past them.
    fit = view.fit_of(str(largest["path"]))
    capped = fit is None or str(fit["beta_basis"]).startswith("capped")
    beyond = rows if capped else rows[~view.resident.loc[rows.index].to_numpy(dtype=bool)]
    best = largest if capped or beyond.empty else beyond.loc[beyond["bandwidth_gbps"].idxmax()]
    # the largest size slower per byte beyond its interval: the best still drew on a cache (the H200's 256 MiB at
    # 47.2 GB/s against 35.1 at 1 GiB), so the largest is the size past the caches; so too where the run cannot judge
    # them (no evidence of its drift: the threads run's 256 MiB, 1.98 GB/s under load, beside 1.77 at 1 GiB)
    per_byte = view.per_byte(largest, best) if best.name != largest.name else None
    cached, best = (best, largest) if per_byte is not None and (per_byte.low > 1 or not per_byte.judged) else (None, best)
    sweep = rows[rows["method"] == best["method"]]
    past = 0 < len(beyond) < len(rows) and not capped  # where a cached size ran faster: no peak
    at = f"at {format_bytes(best['nbytes'])}" + (", past the caches" if past else "")
    other = cached if cached is not None else largest if best["nbytes"] != largest["nbytes"] else None
    note = "" if other is None else f"{other['bandwidth_gbps']:.3g} GB/s at {format_bytes(other['nbytes'])}"
    why, partly = _per_byte(view, cached, per_byte)
    where = at + (f" ({note}{partly})" if note else "")
    said = [*(_past(view, best) if past else []), *([note + why] if note else [])]
    told = at + (f" ({'; '.join(said)})" if said else "")
    threads = (view.machine_info.get("xferbench") or {}).get("host", {}).get("torch_threads")
    who = f"torch's {best['method']}, " + (f"{threads} threads" if threads else "thread count not recorded")
    under = " under load" if view.busy else ""  # under load a median is one of many speeds: its blocks say how many
    waited = view.waited(best)
    bound = bandwidth_bound(sweep["nbytes"], sweep["median_s"])
    if bound and waited is not None:  # a wait, not the bytes: no bandwidth to read
        small, grew, factor, _ = waited
        took = f"{took_at(small)} and {format_seconds(best['median_s'])} {where}{under}"
        headline = (f"Host memory copies took {format_seconds(small['median_s'])} at {format_bytes(small['nbytes'])} and "
                    f"{format_seconds(best['median_s'])} {where}{under}: " + ("the larger took less time: no bandwidth is "
                    "stated." if grew.high < 1 else "too little growth to state a bandwidth."))
        sentence = (f"Host memory copies ({who}) took {took} (at most {grew.high:.2f}× as long at {factor:,.0f}× the "
                    f"bytes): {bytes_said(waited, 'that time')}" + ("" if grew.high < 1 else " if time = fixed cost + bytes / β")
                    + ", so no bandwidth is stated")
    elif bound:
        # the largest size beside the best: past the caches, it is what a large copy gets; where the run recorded no
        # cache (no size, no cache_resident), memory or cache is not known
        unknown = cache_bytes(view.fingerprint, "host", "cpu") is None and pd.isna(best.get("cache_resident"))
        unsure, unsure_in_full = _unsure_wait(view, best)
        headline = (f"Host memory copies reach {best['bandwidth_gbps']:.3g} GB/s {where}{under}"
                    + (" (xferbench recorded no cache size)" if unknown else "") + unsure + ".")
        one = matching(frame, {**SINGLE_THREAD, "method": best["method"], "nbytes": best["nbytes"]})
        aside = [*drift_text.across(best), *([one_thread_beside(view, best, one.iloc[0])] if not one.empty else [])]
        sentence = (f"Host memory copies ({who}) reached {best['bandwidth_gbps']:.3g} GB/s {told}{under}"
                    + (f" ({'; '.join(aside)})" if aside else "") + unsure_in_full
                    + (f"; xferbench recorded no cache size, so whether {format_bytes(best['nbytes'])} ran from a cache is "
                       "not known" if unknown else ""))
    else:
        one_size = sweep["nbytes"].nunique() < 2  # then neither a fixed cost nor a bandwidth: one point fits both
        headline = (f"Host memory copies take {format_seconds(best['median_s'])} a call {where}"
                    + (": one size, no bandwidth stated." if one_size else ": their fixed cost."))
        sentence = (f"Host memory copies ({who}) took {format_seconds(best['median_s'])} per call {where}"
                    + (": one size cannot tell a fixed cost from a bandwidth" if one_size else
                       ", their fixed cost: every size measured is latency-bound") + ", so no bandwidth is stated")
    if view.simulated:
        sentence += "; these copies ran on this CPU, for real: the simulated devices' figures do not depend on them."
    elif not frame["host_memory"].eq("pageable").where(frame["op"].isin(("h2d", "d2h")), False).any():
        sentence += "."
    else:
        ceiling = view.host_ceiling
        sentence += ("; the CUDA driver stages a pageable transfer with one thread's memcpy (not timed here), which "
                     + (f"reached {ceiling[0]:.3g} GB/s here: the roof of the pageable panels." if ceiling else
                        f"gives no roof here: {no_host_roof(view.host_ceiling_missing)}."))
    if bool(view.resident[best.name]):
        sentence += " That size still fits in the CPU's caches: memory itself is slower (sweep to larger sizes)."
    return Said(headline, sentence)


def _per_byte(view: RunView, cached: pd.Series | None, per_byte: Ratio | None) -> tuple[str, str]:
    """What a smaller size that ran faster per byte than the largest (``cached``) drew on, in full and in the headline.
    Where its own copy outgrows the cache too (the H200's 256 MiB: 512 MiB against a 300 MiB L3; the threads run's
    against 480 MiB), the run cannot say a cache was its cause: only whether it ran faster per byte."""
    if cached is None or per_byte is None:
        return "", ""
    outgrown, said = _past(view, cached), per_byte.text()
    if not per_byte.judged:
        return ((f" ({outgrown[0]} too): whether faster per byte, {said}", ": whether faster per byte, can't tell")
                if outgrown else (f": whether faster per byte, {said}", ": from a cache or not, can't tell"))
    return ((f" ({outgrown[0]} too): {said} as fast per byte; why, this run cannot tell", ", faster per byte")
            if outgrown else (f": {said} as fast per byte, partly from a cache", ", partly from a cache"))


def _past(view: RunView, best: pd.Series) -> list[str]:
    """Why a size is past the caches where the copy's bytes outgrow the largest: a run's ``cache_resident`` counts the
    source alone (256 MiB against the H200 host's 300 MiB L3), the report both buffers."""
    cache = cache_bytes(view.fingerprint, "host", "cpu")
    touched = COPY_TOUCHES * int(best["nbytes"])
    if cache is None or touched <= cache[0]:
        return []
    return [f"its copy reads and writes {format_bytes(touched)}, more than the {format_bytes(cache[0])} {cache[1]}"]


Finding = Callable[[RunView], Said | None]


def d2h_cliff(view: RunView) -> Said | None:
    if (found := view.cliff) is None:
        return None
    steady = held_there(found, view)
    fall = (f"between {format_bytes(found['before'])} and {format_bytes(found['after'])}: from "
            f"{_span(found['gbps_before'])} to {_span(found['gbps_after'])} GB/s")
    fresh, _, broke = view.cliff_split
    holds = ", copy_ into a reused host buffer holds"
    note = ("; every call that writes fresh pageable memory falls (random creators aside)" + holds if fresh and broke == fresh
            else "; calls that write fresh pageable memory fall" + holds if broke else "")
    return Said(f".cpu() and .to(device) fall off a cliff {fall}{note}.",
                f".cpu() and .to(device) fell off a cliff {fall}{steady}.{mmap_clause(found, view)} "
                f"{cliff_cause(found, view)}")


def first_touch(view: RunView) -> Said | None:
    """The host's first touch of fresh pages, where the run's clone() ladder tells it: what a fresh destination costs
    beyond a copy into a touched one, with the faults per call and the transparent huge pages setting."""
    ladder = next((found for found in view.ladders if found.key == "host-clone"), None)
    if ladder is None or not ladder.steps[0].told:
        return None
    step, split = ladder.steps[0], ladder.split
    thp = ((view.machine_info.get("xferbench") or {}).get("host") or {}).get("transparent_hugepage")
    # The step is clone minus copy_: allocation, first touch and release together; faults counted are said beside it.
    what = "its fresh destination" + (f" ({split.faults_per_call:,.0f} more page faults a call)" if split else "")
    huge = f"; transparent huge pages: {thp}" if isinstance(thp, str) else ""
    return Said(f"A fresh {format_bytes(ladder.size)} clone() took {format_seconds(ladder.top.median_s)}: "
                f"{format_seconds(step.seconds)} ({percent(step.seconds / ladder.top.median_s)}) of it is {what}{huge}.",
                summary(ladder))


def _threads(view: RunView) -> Said | None:
    found = threads_against_one(view)
    return Said(*found) if found else None


#: In page order; each reads the run's view. A run without a GPU leads with what its host measured best.
FINDINGS: list[Finding] = [d2h_usual_way_back, d2h_cliff, h2d_pinned_vs_pageable, same_device_vs_link, peer,
                           overhead_small, latency_bound, first_touch, _threads, noop_cost, host_copy]
_HOST_FIRST: list[Finding] = [first_touch, host_copy, _threads, latency_bound, noop_cost]


def findings(view: RunView) -> list[Said]:
    """Every finding the run supports; the machine's cache sizes keep fitted bandwidths honest."""
    order = FINDINGS if view.has_accelerator else _HOST_FIRST + [f for f in FINDINGS if f not in _HOST_FIRST]
    return [said for find in order if (said := find(view))]


def _staged(view: RunView) -> str | None:
    """The "staged" point from the .cpu() ladder: the staging step and the fresh destination's, each read from two
    cases of one run."""
    found = {ladder.key: ladder for ladder in view.ladders}
    if (ladder := found.get("d2h-cpu") or found.get("d2h-to")) is None:
        return None
    fresh, staging = ladder.steps[0], ladder.steps[1]
    if not staging.told:
        return (f"at {format_bytes(ladder.size)} this run cannot tell copy_ into a pageable buffer from one into a "
                f"pinned buffer ({format_seconds(staging.above.median_s)} against {format_seconds(staging.below.median_s)}).")
    text = (f"at {format_bytes(ladder.size)}, copy_ into a pageable buffer took {format_seconds(staging.above.median_s)} "
            f"against {format_seconds(staging.below.median_s)} into a pinned one: staging costs "
            f"{format_seconds(staging.seconds)}, {percent(staging.seconds / ladder.top.median_s)}"
            f"{f' ({span})' if (span := percent_span(*ladder.share_bounds(staging), alike='')) else ''} of "
            f"{ladder.top.label}'s {format_seconds(ladder.top.median_s)}")
    if fresh.told:
        text += (f"; {format_seconds(fresh.seconds)} ({percent(fresh.seconds / ladder.top.median_s)}) of "
                 f"{ladder.top.label} is its fresh destination (the ladder above)")
    both = staging_both_ways(view)
    return text + f"{_run_of(ladder.run, view)}." + (f" {both}" if both else "")


def _run_of(run: str, view: RunView) -> str:
    """Which run a figure came from, where the page holds more than one (each may be another boot of the machine)."""
    return f" ({run})" if len(view.sources) > 1 else ""


def _lowest(small: pd.DataFrame) -> str | None:
    """The lowest median of the smallest copies, with its path: never called the fastest (the H200's 8.79 µs against
    .cuda()'s 10.3 µs: can't tell)."""
    if small.empty:
        return None
    low = small.loc[small["median_s"].idxmin()]
    return (f"the lowest median of a {format_bytes(int(low['nbytes']))} copy between host and device was "
            f"{format_seconds(float(low['median_s']))} ({low['path']}).")


def why_measured(view: RunView, listed: set[str]) -> dict[str, str | None]:
    """For each point of the general "why" list, what this run measured of it (a sentence), or None: a family's own
    where its record names the point (``Family.why``); ``listed``: the keys of the first screen's changes."""
    frame = view.rows
    small = frame[frame["op"].isin(("h2d", "d2h")) & (frame["nbytes"] == frame["nbytes"].min())]
    said = {"wait": None, "staged": _staged(view), "fixed": _lowest(small), "fix": the_fix(view, listed)}
    for op, record in FAMILIES.items():
        if record.why is not None and not (rows := frame[frame["op"] == op]).empty:
            said[record.why[0]] = record.why[1](rows, frame["run"].nunique())
    return said


def scenario_findings(view: RunView, op: str) -> list[str]:
    """Sentences for one scenario or concurrent family's section, from its rows (its record's ``finding``): those of
    one machine instance, the one that measured most of the family (ties: the newest), and a word on the rows of another
    set apart (``rows.attrs["elsewhere"]``: a family may say what they show, each instance judged alone); its
    comparisons judged by ``RunView.ratio`` (``rows.attrs["ratio"]``), and its same-code pairs' verdict where it has
    some."""
    rows, instance, left = view.one_instance_rows(view.rows[view.rows["op"] == op])
    elsewhere = view.elsewhere(rows)
    finding = family(op).finding if op in FAMILIES else None
    if rows.empty or (finding is None and not view.drift.pairs_of(op)):
        return []
    rows = rows.copy()
    rows.attrs["ratio"] = Rule(view.ratio)  # families.base: every comparison a family draws, with its own interval
    rows.attrs["elsewhere"] = elsewhere
    rows.attrs["shuffled"] = view.shuffled
    said = finding(rows) if finding is not None else []
    if (verdict := drift_text.verdict(view, op)) is not None:
        said.append(verdict)
    if instance is not None:
        said.append(f"These sentences read {instance.label}; {count(left, 'case')} of this family measured in another "
                    f"machine instance (another boot) {'is' if left == 1 else 'are'} never set against these (the figure "
                    f"and the table show {'it' if left == 1 else 'them'}).")
    return said
