"""The core figures' words: each figure's title and caption (plots.py draws the figures from the view and never writes
them), every sentence kept only where the run has what it speaks of. The story (story.py) tells them once."""

from __future__ import annotations

import functools
import math

import pandas as pd

from ...families import family, moving_ops
from ...units import format_bytes, format_seconds, percent_span
from ..view import RunView
from .model_text import no_host_roof
from .svg import bytes_said, left_said

__all__ = ["HOST_LADDER_CAPTION", "LADDER_CAPTION", "figure_words"]

#: Said under the route chart only where the run has the .cpu() ladder it points to.
#: The route's place is its fastest call's (copy_); the ladder reads its slowest, the pale bar (a third H200 reading).
_WHY_D2H = (" How much more device to host into pageable memory's slowest calls, .cpu() and .to(device), cost than its "
            "copy_, step by step, is read from the ladder above.")
_HOLLOW = ("Hollow markers ran faster than memory allows (2n bytes fit in the cache, left of the grey dotted line), left "
           "out of β. ")
#: Sizes up to which the overhead caption reads 1 − device time / wall time.
SMALL_MOVE = 16 * 2**10

#: The roofs of a panel of moves across a link.
_LINK_ROOFS = ("the link's theoretical peak, with the practical ceiling of pinned copies (docs/design.md section 5) on "
               "pinned panels; for pageable memory, the single-thread host memcpy where the run measured one, the copy the "
               "driver stages with")
_BANDWIDTH_CAPTION = (
    "Each line is one call (solid: blocking, dashed: non_blocking); dotted, the fitted t = α + n/β of a loop that "
    "synchronizes after every call. " + _HOLLOW + "Dashed black lines are roofs, labelled with their figure and the "
    "share of it the panel's best call reached at its largest size (the table gives each path's): " + _LINK_ROOFS
    + ". Hover a point for its value.")
#: The host caption's clause on the single-thread copy_, kept only where the run measured it.
_SINGLE_THREAD = "; copy_ single-thread runs on one thread"
#: What a GPU reader is told beside a host figure: on a machine without one, none of it is said.
_GPU_ONLY = (", the reference a GPU driver's staging of a pageable transfer is compared with",
             " With a GPU, .cpu() is read down the same kind of ladder (this run measured none).",
             " Creating directly on the device (device=...) moves nothing across a link.",
             " (a loop that synchronizes after every call)", ", host memory, blocking mode, devices")
_HOST_CAPTION = (
    "Each line is one call on host memory (torch's clone and copy_" + _SINGLE_THREAD + _GPU_ONLY[0] + "). Dotted lines "
    "are the fitted t = α + n/β" + _GPU_ONLY[3] + ". Hollow markers are sizes that ran faster "
    "than memory allows (their read and write, 2n bytes, fit in the cache), left out of β. Hover a point for its exact "
    "value.")

LADDER_CAPTION = (
    "Each call read down a ladder of cases of one run at one size, each rung removing one factor (the table's columns "
    "name them; a bar's segments run in its ladder's order). A segment is the difference of two medians: the segments "
    "add up to the call, though they overlap in time. A step whose two rungs' ratio the run cannot tell from 1 (its "
    "95% interval: paired blocks where both were measured so, else their rounds and the run's drift) is hatched: can't "
    "tell. The call beyond its DMA sets the blocking copy against its non-blocking twin's device time, the DMA alone: "
    "it holds launch and synchronization (at most the fit's α, in the α/β table) and any other wall time a call spends "
    "beyond its DMA's device time. Hover a cell for its cases and interval."
)
HOST_LADDER_CAPTION = (
    "clone() on the host read against copy_ into a buffer that was already touched, same run, same size: the "
    "difference is what clone() pays for the fresh destination it allocates on every call, the rest is the copy "
    "itself." + _GPU_ONLY[1] + " A step's share carries "
    "the two rungs' ratio's interval (95%: paired blocks where both were measured so, else their rounds and the run's "
    "drift): one that holds zero reads \"can't tell\", never a share.")

_COST_CAPTION = (
    "Time for the same payload along every route (family" + _GPU_ONLY[4] + "), shortest first, with "
    "the fastest call of each in brackets (or how many of its calls the run cannot tell from it: which of them is "
    "fastest, can't tell) and, pale behind it, the slowest call of the same route (named when it costs over 1.5x as "
    "much). A route marked ≈ cannot be told from the one above it. Hover a bar for every call's time." + _WHY_D2H)
_MATRIX_CAPTION = (
    "Best bandwidth measured for each source (row) and destination (column), like p2pBandwidthLatencyTest's matrix, on "
    "a log colour scale. The diagonal is same-device copy bandwidth; off-diagonal GPU pairs are peer copies.")
_OVERHEAD_CAPTION = (
    "1 − device time per copy of copies issued back to back (events) / wall time of one call synchronized after every "
    "call: two loops, not a split of one call. One panel per family, colour by host memory and blocking mode, each "
    "thin line one call (hover for which).")

#: Each no-op form, as the caption names it: (method, variant) of its rows.
_NOOP_FORMS = {("cuda", ""): ".cuda(i)", ("to", ""): ".to(torch.device)", ("to", "str"): ".to('device')", ("cpu", ""): ".cpu()"}


def figure_words(view: RunView) -> dict[str, tuple[str, str]]:
    """Every core figure's title and caption, by its key (plots.render's): a bandwidth figure per moving family."""
    words = {f"bandwidth-{op}": (f"Bandwidth: {family(op).title}", _bandwidth_caption(view, op)) for op in moving_ops()}
    words |= {
        "ladder": ("Where the time of one call goes: a ladder of this run's controls", _ladder_caption(view)),
        "cost": ("What one large move costs, route by route", _COST_CAPTION if any(  # the ladder it points to
            ladder.key.startswith("d2h") for ladder in view.ladders) else _COST_CAPTION.replace(_WHY_D2H, "")),
        "matrix": ("Source to destination bandwidth", _MATRIX_CAPTION),
        "create": ("Creating tensors on each device", family("create").caption + _GPU_ONLY[2]),
        "noop": _noop_words(view),
        "overhead": ("Wall time against device time", _overhead_caption(view)),
    }
    return words if view.has_accelerator else {  # a CPU-only run: no GPU reader's clause, one device
        key: (title.replace(" on each device", " on the CPU"),
              functools.reduce(lambda said, gpu: said.replace(gpu, ""), _GPU_ONLY, caption))
        for key, (title, caption) in words.items()}


def same_code(view: RunView, where: str) -> str | None:
    """``.to(device) to the CPU runs .cpu()'s code on the same lower rungs: {where}; whether they differ, the run cannot
    tell (217 ms against 181 ms); the code being one, a difference would be its drift.``, where the run laddered both
    (the figure draws one bar, the Markdown two tables): the two calls judged by their own interval, a difference it
    resolves this run's drift, for the code is one (cuda_vs_to's same-code check); else None."""
    tops = {ladder.key: ladder.rungs[0] for ladder in view.ladders}
    if (cpu := tops.get("d2h-cpu")) is None or (to := tops.get("d2h-to")) is None:
        return None
    ratio, times = view.ratio(to.row, cpu.row), f"{format_seconds(to.median_s)} against {format_seconds(cpu.median_s)}"
    apart = (f"they differ ({times}: {ratio.text()}): the code being one, that is this run's drift" if ratio.resolved
             else f"they took the same time ({times})" if ratio.same else
             f"whether they differ, the run cannot tell ({times}); the code being one, a difference would be its drift")
    return f".to(device) to the CPU runs .cpu()'s code on the same lower rungs: {where}; {apart}."


def _ladder_caption(view: RunView) -> str:
    """The host ladders' caption where every ladder is one, else the device ladders'; "the rest is the copy itself"
    only where the bytes set what is left (``Ladder.waited``: the loaded run's copy_, 20 ms at 1 and 64 MiB)."""
    if not view.ladders or not all(ladder.key.startswith("host") for ladder in view.ladders):  # one bar for both (plots)
        return LADDER_CAPTION + (f" {said}" if (said := same_code(view, "one bar, both in the table")) else "")
    ticked = [ladder.base.row for ladder in view.ladders if pd.notna(ladder.base.row.get("on_ticks", math.nan))]
    waits = [ladder.waited for ladder in view.ladders if ladder.waited is not None]
    if ticked or waits:
        said = left_said(ticked[0], None, "it") if ticked else bytes_said(max(waits, key=lambda wait: wait.share), "it")
        return HOST_LADDER_CAPTION.replace("the rest is the copy itself.", "the rest is what copy_ into the touched "
                                           f"buffer took, {'' if ticked else 'and '}{said} (the table says why).")
    return HOST_LADDER_CAPTION


def _bandwidth_caption(view: RunView, op: str) -> str:
    """One family's bandwidth caption: no roof where the run measured none, no hollow markers where none is drawn,
    no single-thread line where it did not run."""
    rows = view.rows
    caption = _HOST_CAPTION if op == "host" else _BANDWIDTH_CAPTION
    if op == "d2d":  # a same-device copy crosses no link: its roof is the memory's, where the run records its peak
        devices = set(rows.loc[rows["op"] == "d2d", "src"].astype(str))
        drawn = "" if any(view.roofs("d2d", d, d) for d in devices) else ", where the run records it (this one does not)"
        caption = caption.replace(_LINK_ROOFS, f"half the device memory's peak (a copy reads and writes each byte){drawn}")
    why = no_host_roof(view.host_ceiling_missing)
    if op in ("h2d", "d2h") and why is not None and (rows["host_memory"].eq("pageable") & rows["op"].eq(op)).any():
        caption += f" The pageable panels draw no host roof: {why}."
    if not view.resident[rows["op"] == op].any():
        caption = caption.replace(_HOLLOW, "")
    if op == "host" and not (rows["op"].eq("host") & rows["variant"].eq("single_thread")).any():
        caption = caption.replace(_SINGLE_THREAD + _GPU_ONLY[0], "")  # no such line is drawn
    # a point whose row states no GB/s (its rounds waited for the CPU, or mixed loops) is not drawn: say which
    gone = rows[rows["op"].eq(op) & rows["bandwidth_gbps"].isna()].groupby("path", sort=False)["nbytes"]
    said = "; ".join(f"{path} at {', '.join(format_bytes(int(n)) for n in sorted(set(sizes)))}" for path, sizes in gone)
    return caption + (f" Not drawn, stating no bandwidth (the table says why): {said}." if said else "")


def _overhead_caption(view: RunView) -> str:
    """The overhead figure's caption with the share it shows at small sizes, read from the run (72-89% on the H200
    sample, where a fixed caption said "near 100%")."""
    frame = view.rows
    timed = frame[pd.to_numeric(frame["device_seconds"], errors="coerce").notna() & frame["op"].isin(moving_ops())
                  & (frame["nbytes"] <= SMALL_MOVE)]
    if timed.empty:
        return _OVERHEAD_CAPTION
    share = 1 - timed["device_seconds"].astype(float) / timed["median_s"]
    return _OVERHEAD_CAPTION + (f" At {format_bytes(SMALL_MOVE)} and below it is "
                                f"{percent_span(share.min(), share.max())}: small moves are mostly fixed cost.")


def _noop_words(view: RunView) -> tuple[str, str]:
    """The no-op figure's title and caption, naming only the forms and the synchronize the run measured."""
    noops, synced = view.rows[view.rows["op"] == "noop"], (view.rows["op"] == "sync").any()
    found = set(zip(noops["method"], noops["variant"].fillna("").replace({"cuda": "", "cpu": "", "to": ""}), strict=True))
    forms = [name for form, name in _NOOP_FORMS.items() if form in found]
    named = ", ".join(forms[:-1]) + f" and {forms[-1]}" if len(forms) > 1 else "".join(forms) or "No-op moves"
    title = "No-op moves next to " + ("a synchronize and " if synced else "") + "the cheapest real copy"
    string = ("to", "str") in found
    caption = (f"{named} on a tensor already there return the very same object; what they cost is PyTorch's dispatch"
               + (" (parsing the string is part of it)" if string else "") + ", shown next to "
               + ("an idle synchronize and " if synced else "") + "the cheapest real copy measured"
               + (" and the cheapest the cost model priced" if view.priced(noops).any() else "")  # as the figure
               + ("." if string else " (no string form, .to('device'), ran)."))
    return title, caption
