"""What the model decides (analyze/model.py), in words: the α-β table and its key finding (``alpha_beta``), how a
path's β was obtained, the share of a roof, why pageable moves have no host roof, and where a path reaches half of β.

Half of β is said only where the fit t = α + n/β holds: the line meets every size it kept within ``MODEL_MISS``x,
no smaller size ran faster per byte than the largest (resolved), the sweep has a size on each side of it within
``BRACKET``x, no size it kept lies on the other side of it beyond its rounds' interval, and β is not capped at the
largest size's figure. The table and the key finding read the
same verdict. No torch here."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...families.base import span as _span
from ...ratios import Ratio
from ...units import count, format_bytes, format_number, format_seconds, format_span
from ..drift import median_bounds
from ..model import NoHostRoof, Wait, cache_bytes
from ..view import MODEL_MISS, RunView
from .drift_text import one_after_other
from .svg import bytes_said, roof_share
from .threads import one_thread_faster

__all__ = ["BASES", "alpha_beta", "BRACKET", "MODEL_MISS", "basis", "fit_table", "half_of_beta", "miss_times", "no_host_roof"]


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
         "waits": "no β: its largest size took under 2× as long as one with 1/16 of its bytes or fewer"}


def basis(fit: Mapping[str, Any], wait: Wait | None = None) -> str:
    """How a path's stated β was obtained (``model.fit_path``'s ``beta_basis``), in words; a capped one says what
    the model's β (``beta_gbps``) was; a wait, the most of its largest size's time the bytes set (``wait``: its own,
    else the rule's bound)."""
    key = str(fit["beta_basis"])
    said = BASES[key.removeprefix("capped ")]
    if key == "waits":  # its largest size is the fit's: sizes that ran from cache are said (busy: 1 MiB, 15x 1 KiB's)
        said += f": {bytes_said(wait) if wait else 'the bytes set at most 53% of its time'}" + (
            f"; {count(n, 'size')} that ran from the {fit.get('cache') or 'cache'} left out"
            if (n := fit.get("resident_sizes")) else "")
    if left := _left_out(fit):
        sizes, why = left
        apart = "; " if key == "waits" else ", "  # a wait's share ends in a colon's clause
        said = (said.replace("all sizes", f"all sizes but {sizes}") if "all sizes" in said
                else f"{said}{apart}{sizes} left out") + why
    if key.startswith("capped "):
        # Past 1 PB/s the fit sits at its bound (model._soft_l1): its figure is the bound's, not the machine's.
        gave = "β past 1 PB/s" if fit["beta_gbps"] > 1e6 else f"{format_number(fit['beta_gbps'])} GB/s"
        return f"capped at the largest size measured ({said} gave {gave})"
    return said


def _kept(fit: Mapping[str, Any]) -> str:
    """`` it kept (1 KiB; 64 MiB left out, whose rounds waited for the CPU)``, where the fit left out sizes larger than
    the largest it kept (the busy run's host copies); else ""."""
    if (left := _left_out(fit)) is None or max(fit["left_out"]) < fit["largest_bytes"]:
        return ""
    return f" it kept ({format_bytes(fit['largest_bytes'])}; {left[0]} left out{left[1]})"


def _left_out(fit: Mapping[str, Any]) -> tuple[str, str] | None:
    """``("64 MiB", ", whose rounds waited for the CPU")``: the sizes model.fit_paths left out, whose blocks
    mixed loops or whose rounds waited, and why; None where it kept every size."""
    if not (isinstance(left := fit.get("left_out"), tuple) and left):
        return None
    ticked = fit.get("ticked") or ()
    return ", ".join(map(format_bytes, left)), ", " + " or ".join(
        why for why, some in (("whose blocks timed calls a round 2× or more apart", len(ticked) < len(left)),
                              ("whose rounds waited for the CPU", ticked)) if some)


def miss_times(miss: float) -> str:
    """``181`` or ``10.5``: how many times a line misses a measured size (``RunView.model_miss``), to three figures as
    the page's other figures."""
    said = f"{miss:,.0f}" if miss >= 100 else f"{miss:.3g}"
    return said if float(said.replace(",", "")) > MODEL_MISS else f"{miss:.4g}"  # 2.001, not "2" under "over 2x"


def misses(miss: tuple[float, int]) -> str:
    """``misses the time measured at 16 MiB 10.5×``: the size a line misses most (``RunView.model_miss``), and by how much."""
    return f"misses the time measured at {format_bytes(miss[1])} {miss_times(miss[0])}×"


def _no_half_where_the_model_misses(view: RunView, fit: dict[str, Any]) -> dict[str, Any]:
    """No "half of β" where t = α + n/β misses a size the fit kept by over ``MODEL_MISS``x (``RunView.model_miss``);
    the basis says so."""
    if (miss := view.model_miss(fit)) is None:
        return {}
    # the line is α with the β stated (a capped β where capped), not the fit the basis may quote before it
    line = f"the line through α and the stated β ({fit['stated_gbps']:.3g} GB/s) {misses(miss)}"
    return {"half_peak_bytes": float("nan"), "no_half": line, "beta_basis": f"{fit['beta_basis']}; {line}, so no half of β"}


def _no_ceiling_below_the_mid_sizes(view: RunView, fit: dict[str, Any]) -> dict[str, Any]:
    """A β below what a smaller size of the path reached, that size's time over the largest's (per byte) resolved by
    its interval, is no ceiling: the large sizes fall below the mid sizes (pageable h2d on the H200: β 8.02 GB/s at
    1 GiB where 16 MiB ran at 14.3). The basis gives the measured peak, and no half of β is said."""
    rows = view.of_path(fit["path"], beyond_cache=True)
    # a size that ran from cache reached no bandwidth, nor one whose bytes set little of its time (``RunView.waits``)
    # or are not shown to set it: its growth from a size with 1/16 of its bytes not above 1 by its interval (the quick
    # run's 1 KiB clone: 0.944x (0.42-2.12) its 4 B's)
    grew = np.array([(g := view.growths[label]) is not None and g[1].low > 1 for label in rows.index], dtype=bool)
    rows = rows[~view.waiting(rows) & grew]
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
    # a size β's fit left out (its blocks mixed loops, or it ran from cache faster than memory) brackets nothing
    sizes = view.kept_by(fit)["nbytes"]
    below, above = sizes[sizes <= half], sizes[sizes >= half]
    if below.empty or above.empty:
        reason = f"the sizes measured do not reach past {format_bytes(int(half))} on both sides"
    elif above.min() / max(below.max(), 1) > BRACKET:
        low, high = int(below.max()), int(above.min())
        reason = (f"the fit puts half of β at {format_bytes(int(half))}, between {format_bytes(low)} and "
                  f"{format_bytes(high)}, the nearest sizes it kept, {high / max(low, 1):,.0f}× apart")
    else:
        return {}
    return {"half_peak_bytes": float("nan"), "no_half": reason, "beta_basis": f"{fit['beta_basis']}; {reason}, so no half of β"}


def _wrong_side(view: RunView, fit: dict[str, Any]) -> dict[str, Any]:
    """No half of β where a size the fit kept lies on the other side of it beyond its rounds' interval: the line meets
    it within ``MODEL_MISS``x yet misplaces the knee (the H200's pageable d2h copy_: half of β at 239 KiB, but 256 KiB
    reached 5.9 GB/s, 43% of its 13.9)."""
    half, beta = float(fit["half_peak_bytes"]), float(fit["stated_gbps"])
    rows = view.kept_by(fit).sort_values("nbytes")  # one that ran from a cache reached no link's bandwidth
    # only a size whose median lies on the other side can lie there beyond its interval (fastest <= median <= slowest)
    rate, sizes = rows["nbytes"] / rows["median_s"] / 1e9, rows["nbytes"]
    for _, row in rows[((sizes > half) & (rate < beta / 2)) | ((sizes < half) & (rate > beta / 2))].iterrows():
        fast, slow = median_bounds(row)
        n = int(row["nbytes"])
        if (n > half and n / fast / 1e9 < beta / 2) or (n < half and n / slow / 1e9 > beta / 2):
            reason = (f"{format_bytes(n)} reached {row['bandwidth_gbps']:.3g} GB/s, {row['bandwidth_gbps'] / beta:.0%} of β, "
                      f"though the line puts half of β at {format_bytes(int(half))}{_crossing(rows, beta)}")
            return {"half_peak_bytes": float("nan"), "no_half": reason, "beta_basis": f"{fit['beta_basis']}; {reason}, so "
                    "the line's half of β is not given"}
    return {}


def _crossing(rows: pd.DataFrame, beta: float) -> str:
    """Between which two sizes (``rows`` by size) the medians cross half of β, once, each beyond its rounds' interval
    (the H200's pageable d2h copy_: 256 KiB at 5.9 GB/s, 1 MiB at 8.06, β 13.9); else nothing."""
    below = (rows["nbytes"] / rows["median_s"] / 1e9 < beta / 2).to_numpy()
    if not 0 < (cut := int(below.sum())) < len(below) or not below[:cut].all():
        return ""
    a, b = rows.iloc[cut - 1], rows.iloc[cut]
    if a["nbytes"] / median_bounds(a)[0] / 1e9 >= beta / 2 or b["nbytes"] / median_bounds(b)[1] / 1e9 <= beta / 2:
        return ""
    return (f" (the medians cross it between {format_bytes(int(a['nbytes']))} and {format_bytes(int(b['nbytes']))}, "
            f"which reached {b['bandwidth_gbps']:.3g} GB/s)")


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
    for check in (_no_half_where_the_model_misses, _no_ceiling_below_the_mid_sizes, _unbracketed, _wrong_side, _capped):
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
        # α as the page and the Markdown write it (1.72 ms, never 1.72e+03 µs); – where none; or the sizes' times
        alpha = _seconds(fit["alpha_us"]) if (spread := _spread_times(view, fit)) is None else (
            f"{format_span(_seconds(spread.min()), _seconds(spread.max()))}: the sizes' times, no one α")
        worded = fit | {"beta_basis": basis(fit, view.largest_wait(fit)) if spread is None
                        or fit["beta_basis"] != "latency-bound" else "no β: every size measured is below the "
                        f"fit's α·β; nor one α: the sizes' times spread past {FIXED_SPREAD:g}×"}
        if view.waiting((path := view.of_path(fit["path"]))[path["nbytes"].eq(fit["largest_bytes"])]).any():
            worded["largest_gbps"] = math.nan  # its GB/s is no bandwidth (the appendix's ‡): no cell, no share of roof
        said = worded | half_of_beta(view, worded)
        rows.append(said | _algbw(view, said) | {
            "alpha": alpha, "pipelined_alpha": _seconds(fit.get("pipelined_alpha_us")),
            "pipelined_half_bytes": math.nan if _pipelined_unplaced(view, fit) else fit.get("pipelined_half_bytes"),
            "link": link,
            "peak_gbps": roof[0] if roof else None,
            "share": roof_share(worded["largest_gbps"], roof[0], pinned_link) if roof else "–",
        })
    return rows


#: A path with no β whose sizes' times spread past this factor has no one fixed cost: its α cell gives their times.
FIXED_SPREAD = 1.25


def _spread_times(view: RunView, fit: dict[str, Any]) -> pd.Series | None:
    """The sizes' times (µs) of a fit with an α and no β where they lie over ``FIXED_SPREAD``x apart, which the α cell
    gives instead: "the fixed cost sets the time" holds only where the sizes took about as long (gloo's all_reduce on
    the H200: α 106 µs through 4 B, 217-268 µs from 64 B; reduce_scatter: α 203 µs, 162 µs at 4 B); else None."""
    if not np.isfinite(fit["alpha_us"]) or np.isfinite(fit["stated_gbps"]):
        return None
    times = view.kept_by(fit)["transfer_s"] * 1e6  # cache sizes: left out
    return times if times.max() > FIXED_SPREAD * times.min() else None


def _pipelined_unplaced(view: RunView, fit: dict[str, Any]) -> str | None:
    """Why the device-time fit's half of β is not placed, as a synchronized loop's is not (``_unbracketed``: the
    simulated run's 107 KiB between 1 KiB and 1 MiB); None where it is, or where there is none."""
    return _unbracketed(view, fit | {"half_peak_bytes": fit.get("pipelined_half_bytes", math.nan)}).get("no_half")


def _seconds(us: float | None) -> str:
    return format_seconds(float(us) / 1e6) if us is not None and np.isfinite(us) else "–"


def _algbw_differs(view: RunView, path: str) -> bool:
    """Whether a path's GB/s (algbw: bytes / time) differ from its busbw, which the distributed figure draws
    (nccl-tests' convention): a collective's two figures 2x apart."""
    rows = view.of_path(path)
    if "busbw_gbps" not in rows:
        return False
    bus = pd.to_numeric(rows["busbw_gbps"], errors="coerce")
    return bool((bus.notna() & ~np.isclose(bus.fillna(0), rows["bandwidth_gbps"].fillna(0), rtol=1e-3)).any())


def _algbw(view: RunView, fit: dict[str, Any]) -> dict[str, Any]:
    """A collective's GB/s in the table are its algbw (bytes / time), where the distributed figure draws busbw
    (nccl-tests' convention): the basis says so, or one case would carry two figures 2x apart unlabelled."""
    if not _algbw_differs(view, fit["path"]) or not np.isfinite(float(fit["largest_gbps"])):  # no GB/s in the row
        return {}
    return {"beta_basis": f"{fit['beta_basis']}; GB/s here are algbw (bytes / time): the page's distributed figure draws busbw"}


def alpha_beta(view: RunView) -> tuple[str, str] | None:
    """The fastest host-side path's α and β in a loop that synchronizes after every call (β beyond the caches,
    never above what was measured), then the pipelined figures from device time where the rows have it."""
    frame = view.rows
    # The host copy on one thread is the pageable roof the report draws, not a path a user's move takes; a host memcpy
    # is no rival of the link's paths where the run fitted them.
    moves = frame[frame["variant"].ne("single_thread")]
    fitted = view.fits[view.fits["alpha_us"].notna()]
    fits = next((f for f in (fitted[fitted["path"].isin(moves.loc[moves["op"].isin(ops), "path"])]
                             for ops in (("h2d", "d2h"), ("host",))) if not f.empty), None)
    if fits is None:
        return None
    gpu = bool(fits["op"].isin(("h2d", "d2h")).any())  # a host memcpy synchronizes nothing: calls run back to back
    stated, waits = fits[fits["stated_gbps"].notna()], fits[fits["beta_basis"].eq("waits")]
    if stated.empty and not waits.empty:  # no GB/s to rank them by: the bytes set none of their largest sizes' times
        shares = [(f"{fit['path']}'s largest size{kept}" if (kept := _kept(fit)) else f"the largest size of {fit['path']}")
                  + f" took under 2× as long as one with 1/16 of its bytes or fewer: {bytes_said(wait)}"
                  for fit in waits.to_dict("records") if (wait := view.largest_wait(fit))]
        # a headline of at most 50 words: each path's share in the evidence where several waited
        headline = (shares[0] if len(shares) == 1 else f"the largest size of each of {len(shares)} paths took under 2× as "
                    "long as one with 1/16 of its bytes or fewer")
        return f"No bandwidth β is stated: {headline}.", f"No bandwidth β is stated: {'; '.join(shares)}."
    if stated.empty:
        best = fits.loc[fits["largest_gbps"].idxmax()]
        said = (f"Fastest path {best['path']}: fixed cost α = {best['alpha_us']:.3g} µs; every size measured "
                f"(up to {format_bytes(best['largest_bytes'])}) fits in the {best['cache'] or 'cache'}, so no memory "
                f"bandwidth β is stated (a sweep beyond the cache, e.g. --xfer-sizes=4B..1GiB, measures it)."
                if best["beta_basis"] == "all in cache" else  # else the table's own reason (the quick run's clone)
                f"No β is stated for {best['path']} (fixed cost α = {best['alpha_us']:.3g} µs): "
                f"{basis(best.to_dict()).removeprefix('no β: ')}.")
        return said, said
    best = stated.loc[stated["stated_gbps"].idxmax()]
    one_thread = one_thread_faster(view, best)
    # said wherever the one-thread copy's β is higher, resolved or not (the busy run's 4.75 GB/s beside clone's 1.07)
    higher = fitted["path"].isin(frame.loc[frame["variant"].eq("single_thread"), "path"]) \
        & fitted["stated_gbps"].gt(best["stated_gbps"])
    left_out = "; left out: torch's copy_ on one thread, a roof rather than a call a move makes" \
        if one_thread or higher.any() else ""
    which, tied = _highest_beta(view, stated, best)
    miss = view.model_miss(best)
    # a line that misses the data is said to miss before its α and β are quoted: it is no cost model of these calls
    sentence = (f"{'In a loop that synchronizes after every call' if gpu else 'Called back to back'}, {which}{left_out}) "
                + ("has no line of a fixed cost and a bandwidth that fits its times: the line through the fit's α = "
                   if miss else "has a fixed cost α = ") + f"{best['alpha_us']:.3g} µs and "
                + ("β = " if miss else "a bandwidth β = ") + f"{best['stated_gbps']:.3g} GB/s")
    if str(best["beta_basis"]).startswith("capped"):
        # from a cache only where the run knows one held them (its sizes faster than memory allows)
        sentence += (f" (the bandwidth its largest size, {format_bytes(best['largest_bytes'])}, reached: smaller sizes ran "
                     f"{'from cache' if best['resident_sizes'] else 'faster'} and would suggest more)")
    elif best["resident_sizes"]:
        sentence += (f" (without the {count(n := best['resident_sizes'], 'size')} that ran faster than memory allows: "
                     f"{'it fits' if n == 1 else 'they fit'} in the "
                     f"{best['cache'] or 'cache'}" + ("" if (left := _left_out(best)) is None else
                                                   f"; nor {left[0]}{left[1]}") + ")")
    half = half_of_beta(view, best.to_dict())
    no_half = str(half.get("no_half", ""))  # the table's verdict: the fit does not place where half of β is reached
    sentence += (f" {misses(miss)}, so where moves reach half of β is not placed." if miss else
                 f"; where moves reach half of β, this run cannot place: {no_half}." if no_half else
                 f": moves smaller than {format_bytes(best['half_peak_bytes'])} reach less than half of β.")
    headline = (f"{'Synchronizing after every call' if gpu else 'Called back to back'}, {best['path']} has a fixed cost "
                f"α = {best['alpha_us']:.3g} µs and β = {best['stated_gbps']:.3g} GB/s" + ("." if no_half else
                f": moves under {format_bytes(best['half_peak_bytes'])} reach less than half of β."))
    if miss is not None:  # a line that misses the data is no cost model to quote, nor its β a rank
        headline = f"No line of a fixed cost and a bandwidth fits {best['path']}'s times: {no_half}."
        sentence = sentence if len(tied) > 1 else headline  # ties keep saying which paths the run cannot rank
    if len(tied) > 1:  # never the best among ties: the paths the run cannot rank, as one
        headline = _tied_headline(view, tied, gpu)
    # a β stated, on a CPU run that recorded no cache size (the CPU sample's runs through 16 MiB, which moves 32)
    if not gpu and not headline.startswith("No line") and cache_bytes(view.fingerprint, "host", "cpu") is None:
        size = format_bytes(best["largest_bytes"])
        unknown = f" (xferbench recorded no cache size: whether {size} ran from a cache is not known)"
        headline, sentence = headline[:-1] + unknown + ".", sentence[:-1] + unknown + "."
    return headline, sentence + one_thread + _pipelined(view, fits)


def _highest_beta(view: RunView, stated: pd.DataFrame, best: pd.Series) -> tuple[str, pd.DataFrame]:
    """The path the β sentence is about: the one with the highest fitted β, or, where the run cannot tell other paths
    from it at its largest size, that which is highest can't be told (the tied span named; no ranking among ties); and
    the paths that tie (``best`` alone where none does)."""
    tied = stated[[path == best["path"] or not _told_at_largest(view, str(path), best) for path in stated["path"]]]
    if len(tied) < 2:  # the only one with a β is no "highest" (the busy run's clone, its copy_ on the ticks)
        return f"the host-side path with the {'highest β' if len(stated) > 1 else 'one β stated'} ({best['path']}", tied
    size = format_bytes(best["largest_bytes"])
    # a run without drift evidence cannot judge them: "can't be told apart" would read as alike (1.59 s against 608 ms)
    ratios = [r for r in (_ratio_at_largest(view, str(p), best) for p in tied["path"]) if r is not None]
    times = (f"the run cannot judge their times at {size}" if not all(r.judged for r in ratios) else
             f"their times at {size} are the same" if all(r.same for r in ratios) else
             f"their times at {size} can't be told apart")
    if len(tied) == 2 and not all(r.judged for r in ratios):  # the order its rounds give, which drift could give too
        other = next(str(path) for path in tied["path"] if path != best["path"])
        if (pair := _at_largest(view, other, best)) is not None:
            times += one_after_other(*pair, (f"of {other}", f"of {best['path']}"))
    betas = _span(tied["stated_gbps"])
    return (f"which host-side path has the highest β can't be told ({len(tied)} paths' β "
            f"{'lie ' if '-' in betas else 'are all '}{betas} GB/s and {times}); one of them ({best['path']}"), tied


def _tied_headline(view: RunView, tied: pd.DataFrame, gpu: bool) -> str:
    """The paths the run cannot rank, as one: their α and β spans, and where they reach half of β where the fits place
    it (each path's own verdict, ``half_of_beta``)."""
    misses = [view.model_miss(fit) for fit in tied.to_dict("records")]
    missed = [miss[0] for miss in misses if miss is not None]
    low, high = (miss_times(min(missed)), miss_times(max(missed))) if missed else ("", "")
    times = low if low == high else f"{low}-{high}"
    if len(missed) == len(tied):  # a line that misses the data is no cost model to quote: the threads run's 57-181x
        return (f"No line of a fixed cost and a bandwidth fits the {len(tied)} host-side paths whose β the run cannot "
                f"rank: each misses a measured size ({times}×).")
    # the lines that miss are quoted by none of the spans (the threads run's clone, 57x at 256 KiB, beside its copy_)
    unfit = ("" if not missed else f"; the other's fitted line misses a measured size {times}×" if len(missed) == 1
             else f"; the other {len(missed)}'s fitted lines miss a measured size ({times}×)")
    total, tied = len(tied), tied[[miss is None for miss in misses]]
    said = [fit | half_of_beta(view, fit) for fit in tied.to_dict("records")]
    halves = pd.Series([h["half_peak_bytes"] for h in said if "no_half" not in h], dtype=float)
    under = f": moves under {_sizes(halves)} reach less than half of β" if not halves.empty else ""  # 487-837 KiB
    # which host-side ones; without a GPU every host path is pageable, so the word tells nothing apart
    memory = f"{tied['host_memory'].iloc[0]} " if gpu and tied["host_memory"].nunique() == 1 else ""
    paths = f"the {total} {memory}host-side paths whose β the run cannot rank"
    paths = (f"{paths} have fixed costs" if not missed else f"of {paths}, {tied['path'].iloc[0]} has a fixed cost"
             if len(tied) == 1 else f"of {paths}, {len(tied)} have fixed costs")
    return (f"{'Synchronizing after every call' if gpu else 'Called back to back'}, {paths} α = "
            f"{_span(tied['alpha_us'], '.3g')} µs and β = {_span(tied['stated_gbps'], '.3g')} GB/s{under}{unfit}.")


def _at_largest(view: RunView, path: str, best: pd.Series) -> tuple[pd.Series, pd.Series] | None:
    """``path``'s row and ``best``'s at ``best``'s largest size; None where either is missing."""
    one, other = ((rows := view.of_path(p))[rows["nbytes"] == best["largest_bytes"]] for p in (path, best["path"]))
    return None if one.empty or other.empty else (one.iloc[0], other.iloc[0])


def _ratio_at_largest(view: RunView, path: str, best: pd.Series) -> Ratio | None:
    """``path``'s time at ``best``'s largest size over ``best``'s own; None where either is missing."""
    return None if (pair := _at_largest(view, path, best)) is None else view.ratio(*pair)


def _told_at_largest(view: RunView, path: str, best: pd.Series) -> bool:
    """Whether ``path``'s time at ``best``'s largest size is told apart from ``best``'s own (True where either is
    missing: nothing ties them)."""
    return (ratio := _ratio_at_largest(view, path, best)) is None or ratio.resolved


def _pipelined(view: RunView, fits: pd.DataFrame) -> str:
    """What the device spends per copy issued back to back: α and half of β from device time, per direction (a loop
    pays that or the host's cost to issue a copy, whichever is larger; the run does not time the latter). Half of β is
    placed as a synchronized loop's is (``_unbracketed``): the simulated run's 107 KiB lies between 1 KiB and 1 MiB."""
    parts = []
    for op, name in (("h2d", "host to device"), ("d2h", "device to host")):
        timed = fits[(fits["op"] == op) & fits["pipelined_alpha_us"].notna()]
        unplaced = [_pipelined_unplaced(view, fit) for fit in timed.to_dict("records")]
        halves = timed.loc[[why is None for why in unplaced], "pipelined_half_bytes"]
        if not timed.empty:
            parts.append(f"{_span(timed['pipelined_alpha_us'])} µs {name} (" + (
                f"half of β at {_sizes(halves)}" if not halves.empty else f"half of β not placed: {unplaced[0]}") + ")")
    if not parts and fits["op"].isin(("h2d", "d2h")).any():
        return " No device time was recorded, so the pipelined fixed cost (copies issued without a synchronize) is not known."
    return (" Issued back to back without a synchronize, the device spends per copy (from device time) "
            f"α = {' and '.join(parts)}; a loop pays that or the host's cost to issue a copy if larger (not timed)."
            ) if parts else ""


def _sizes(values: pd.Series) -> str:
    """``87.4-123 KiB``: the lowest and the highest size, the unit written once when they share it."""
    return format_span(format_bytes(values.min()), format_bytes(values.max()))
