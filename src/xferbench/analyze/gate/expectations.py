"""Checks of what a GPU run should show, each answered held / not held / not measured.

``xferbench check RESULTS.json`` prints them with the figures behind each verdict;
they are the questions a reference run (and a user doubting their machine) asks:
is pinned memory paying off, is the device's memory far faster than the link, is
device-to-host into pageable memory the slowest path, did every no-op return the
same tensor, is device time within wall time, and how close does the link get.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from ...units import DTYPE_SIZES, format_bytes
from ..load.results import Results
from ..model import largest_common_size, link_peak, practical_ceiling

__all__ = ["EXPECTATIONS", "Verdict", "check"]

LARGE = 64 * 2**20


@dataclass(frozen=True)
class Verdict:
    name: str
    status: str  # "held", "not held", "not measured", "figure"
    detail: str


def _best(rows: pd.DataFrame) -> float:
    return float(rows["bandwidth_gbps"].max())


def pinned_beats_pageable(results: Results) -> Verdict:
    name = "pinned host-to-device beats pageable at 64 MiB and above"
    h2d = results.frame[(results.frame["op"] == "h2d") & (results.frame["nbytes"] >= LARGE)]
    if h2d.empty:
        return Verdict(name, "not measured", "no host-to-device case of 64 MiB or more")
    lines, held = [], True
    for (size, dst), group in h2d.groupby(["nbytes", "dst"]):
        pinned, pageable = group[group["host_memory"] == "pinned"], group[group["host_memory"] == "pageable"]
        if pinned.empty or pageable.empty:
            continue
        a, b = _best(pinned), _best(pageable)
        held &= a > b
        lines.append(f"{format_bytes(size)} -> {dst}: pinned {a:.3g} GB/s, pageable {b:.3g} GB/s")
    if not lines:
        return Verdict(name, "not measured", "no size with both pinned and pageable sources")
    return Verdict(name, "held" if held else "not held", "; ".join(lines))


def same_device_10x(results: Results) -> Verdict:
    name = "same-device copies beat host-to-device by at least 10x"
    size = largest_common_size(results.frame)
    rows = results.frame[results.frame["nbytes"] == size]
    d2d, h2d = rows[rows["op"] == "d2d"], rows[rows["op"] == "h2d"]
    if size is None or d2d.empty or h2d.empty:
        return Verdict(name, "not measured", "needs d2d and h2d at a common size")
    # Against pinned sources, the link's own speed; pageable ones only when the run has no pinned (the rerun's
    # 249.6x was against pageable host-to-device, 37.7x against pinned).
    pinned = h2d[h2d["host_memory"] == "pinned"]
    kind = "best pinned h2d" if not pinned.empty else "best h2d (pageable: no pinned source measured)"
    h2d = pinned if not pinned.empty else h2d
    ratio = _best(d2d) / _best(h2d)
    return Verdict(name, "held" if ratio >= 10 else "not held",
                   f"at {format_bytes(size)}: d2d {_best(d2d):.4g} GB/s, {kind} {_best(h2d):.3g} GB/s ({ratio:.1f}x)")


def d2h_pageable_slowest(results: Results) -> Verdict:
    name = "device-to-host into pageable memory is the slowest path at large sizes"
    size = largest_common_size(results.frame)
    rows = results.frame[(results.frame["nbytes"] == size) & results.frame["op"].isin(("h2d", "d2h", "d2d", "peer"))]
    if size is None or not ((rows["op"] == "d2h") & (rows["host_memory"] == "pageable")).any():
        return Verdict(name, "not measured", "needs d2h into pageable memory next to other device paths")
    slowest = rows.loc[rows["bandwidth_gbps"].idxmin()]
    held = slowest["op"] == "d2h" and slowest["host_memory"] == "pageable"
    return Verdict(name, "held" if held else "not held",
                   f"at {format_bytes(size)} the slowest path is {slowest['path']} at {slowest['bandwidth_gbps']:.3g} GB/s")


def noops_same_object(results: Results) -> Verdict:
    name = "every no-op returned the same object"
    noops = results.frame[results.frame["op"] == "noop"]
    if noops.empty:
        return Verdict(name, "not measured", "no no-op benchmarks")
    # A no-op that returned another object fails its benchmark, which then writes no
    # result: so every expected (device, method) pair must be present.
    devices = set(results.frame["src"]) | set(results.frame["dst"])
    devices = {d for d in devices if d == "cpu" or d.split(":")[0] in ("cuda", "xpu", "mps")}
    expected = {(d, "to") for d in devices} | {("cpu", "cpu")} | {(d, "cuda") for d in devices if d.startswith("cuda:")}
    present = set(zip(noops["src"], noops["method"], strict=True))
    missing = sorted(expected - present)
    if missing:
        return Verdict(name, "not held", "missing (failed or not run): " + ", ".join(f".{m}() on {d}" for d, m in missing))
    return Verdict(name, "held", f"{len(noops)} no-op benchmarks passed their identity check")


#: How far a device-time median may exceed the wall-time median. The two are medians of
#: different calls (events are recorded in their own loop after the wall-clock rounds), so
#: at large sizes, where the host adds almost nothing, they agree only within run-to-run noise.
DEVICE_WALL_TOLERANCE = 0.05


def device_within_wall(results: Results) -> Verdict:
    name = "device time never exceeds wall time"
    timed = results.frame[results.frame["device_seconds"].notna() & (results.frame["median_s"] > 0)]
    if timed.empty:
        return Verdict(name, "not measured", "no device-side times (no GPU)")
    ratio = timed["device_seconds"] / timed["median_s"]
    worst = timed.loc[ratio.idxmax()]
    over = int((ratio > 1 + DEVICE_WALL_TOLERANCE).sum())
    within = int(((ratio > 1) & (ratio <= 1 + DEVICE_WALL_TOLERANCE)).sum())
    detail = (f"{over} of {len(timed)} cases over by more than {DEVICE_WALL_TOLERANCE:.0%} "
              f"({within} above but within it: device and wall medians come from different calls); "
              f"highest device/wall {ratio.max():.3f} ({worst['path']} {format_bytes(worst['nbytes'])})")
    return Verdict(name, "held" if over == 0 else "not held", detail)


def pinned_link_efficiency(results: Results) -> Verdict:
    name = "pinned host-to-device bandwidth against the link's theoretical peak"
    pinned = results.frame[(results.frame["op"] == "h2d") & (results.frame["host_memory"] == "pinned")]
    if pinned.empty:
        return Verdict(name, "not measured", "no pinned host-to-device cases")
    best = pinned.loc[pinned["bandwidth_gbps"].idxmax()]
    peak = link_peak(results.machine_info, "h2d", "cpu", best["dst"])
    if peak is None:
        return Verdict(name, "not measured", f"best {best['bandwidth_gbps']:.3g} GB/s; the link is not in the "
                                             "fingerprint (install nvidia-ml-py)")
    practical = practical_ceiling(results.machine_info, "h2d", "cpu", str(best["dst"]))
    # A share of the theoretical peak reads as headroom; pinned copies top out well below it in practice.
    ceiling = (f"; pinned copies reach {practical[0]:g}-{practical[1]:g} GB/s on such a link in practice "
               "(docs/design.md section 5)" if practical else "")
    return Verdict(name, "figure", f"best {best['bandwidth_gbps']:.3g} GB/s ({best['path']}, "
                                   f"{format_bytes(best['nbytes'])}) = {best['bandwidth_gbps'] / peak[0]:.0%} of "
                                   f"{peak[1]}'s {peak[0]:.3g} GB/s{ceiling}")


def _payload(rows: pd.DataFrame) -> pd.Series:
    """Bytes of one payload: a concurrent call's nbytes sums several (both directions, every GPU)."""
    numel = rows["shape"].map(lambda shape: math.prod(int(n) for n in str(shape).split("x")))
    return numel * rows["dtype"].map(DTYPE_SIZES)


def _variants(results: Results, op: str) -> pd.DataFrame:
    """The rows of a concurrent family at its largest payload."""
    rows = results.frame[results.frame["op"] == op]
    if rows.empty:
        return rows
    payload = _payload(rows)
    return rows[payload == payload.max()]


def _gbps(rows: pd.DataFrame, variant: str) -> float | None:
    chosen = rows[rows["variant"] == variant]
    return None if chosen.empty else _best(chosen)


def bidirectional_duplex(results: Results) -> Verdict:
    name = "both directions at once against one (bidir)"
    rows = results.frame[results.frame["op"] == "bidir"]
    if rows.empty:
        return Verdict(name, "not measured", "no bidir cases")
    line = "incomplete: needs h2d, d2h and h2d+d2h at one size"
    for size, group in rows.groupby(_payload(rows)):  # ascending: the largest payload is stated
        both, up, down = (_gbps(group, v) for v in ("h2d+d2h", "h2d", "d2h"))
        if both is not None and up and down:
            line = (f"{format_bytes(size)} each way: h2d+d2h {both:.3g} GB/s summed = "
                    f"{both / max(up, down):.2f}x the faster direction alone (h2d {up:.3g}, d2h {down:.3g})")
    return Verdict(name, "figure", line)


def all_gpus_scaling(results: Results) -> Verdict:
    name = "every GPU and the host at once against one GPU (all_gpus_host)"
    rows = _variants(results, "all_gpus_host")
    if rows.empty:
        return Verdict(name, "not measured", "no all_gpus_host cases (they need two or more GPUs)")
    lines = []
    for direction in ("h2d", "d2h"):
        one, every = _gbps(rows, f"{direction}_one"), _gbps(rows, f"{direction}_all")
        if one and every:
            lines.append(f"{direction}: all at once {every:.3g} GB/s summed = {every / one:.2f}x one GPU's {one:.3g}")
    return Verdict(name, "figure", f"{format_bytes(_payload(rows).max())} per GPU: " + "; ".join(lines)
                   if lines else "incomplete: needs _one and _all of a direction")


def copy_kind_cost(results: Results) -> Verdict:
    name = "kernel and staged copies against one DMA / memcpy (copy_kind)"
    rows = _variants(results, "copy_kind")
    if rows.empty:
        return Verdict(name, "not measured", "no copy_kind cases")
    lines = []
    for (src, dst), group in rows.groupby(["src", "dst"], sort=False):
        memcpy = _gbps(group, "memcpy")
        # Bytes read and written, as a copy counts them: a conversion writes float16, half its float32 source,
        # so it moves 3/4 of a memcpy's bytes in its time.
        others = [f"{v} {g / memcpy * (0.75 if v.startswith('convert') else 1):.2f}x" for v in
                  ("strided", "convert", "convert_nonblocking") if memcpy and (g := _gbps(group, v)) is not None]
        if memcpy:
            lines.append(f"{src}->{dst}: memcpy {memcpy:.3g} GB/s, " + ", ".join(others))
    return Verdict(name, "figure", f"at {format_bytes(rows['nbytes'].max())}, bytes read and written per second: "
                   + "; ".join(lines))


def _node(rows: pd.DataFrame, variant: str) -> int | None:
    """The NUMA node a numa variant's host buffer landed on (``host_numa_node``), None when not recorded."""
    nodes = rows.loc[rows["variant"] == variant, "host_numa_node"].dropna()
    return int(nodes.iloc[0]) if len(nodes) and nodes.nunique() == 1 else None


def numa_penalty(results: Results) -> Verdict:
    name = "host buffer on another NUMA node against the GPU's own (numa)"
    rows = _variants(results, "numa")
    if rows.empty:
        return Verdict(name, "not measured", "no numa cases ran (one NUMA node, or no GPU)")
    lines = []
    for direction in ("h2d", "d2h"):
        local, remote = _gbps(rows, f"{direction}_local"), _gbps(rows, f"{direction}_remote")
        if not (local and remote):
            continue
        # Where each buffer landed, as recorded: a binding the kernel ignored leaves both on one node, and their
        # ratio then says nothing of the socket link.
        near, far = _node(rows, f"{direction}_local"), _node(rows, f"{direction}_remote")
        if near is not None and near == far:
            lines.append(f"{direction}: placement did not happen (both buffers landed on node {near}), no remote figure")
        elif near is None or far is None:
            lines.append(f"{direction}: remote {remote:.3g} GB/s = {remote / local:.2f}x local {local:.3g} "
                         "(where the buffers landed was not recorded: placement unverified)")
        else:
            lines.append(f"{direction}: remote (node {far}) {remote:.3g} GB/s = {remote / local:.2f}x "
                         f"local (node {near}) {local:.3g}")
    return Verdict(name, "figure", "; ".join(lines) or "only one placement ran (see the skip reasons)")


#: Both ways at once against the faster way alone: nearer 2x is a duplex link, nearer 1x one link the two
#: directions share. The rounds' quartiles give the ratio a range; one that spans this midpoint cannot decide.
DUPLEX_MIDPOINT = 1.5
#: A ring at or above this share of the sum of its pairs' one-way figures carries every pair at full speed: the
#: call launches its copies and synchronizes its GPUs one by one, which costs a ring of 8 at 256 MiB a few
#: percent against one copy alone; a switch or link the pairs share costs it a half or more.
FULL_SPEED_SHARE = 0.75


def _gb(gbps: float) -> str:
    """GB/s as read: 732, 39.9; 2,803 rather than 2.8e+03 for an aggregate of many links."""
    return f"{gbps:,.0f}" if gbps >= 1000 else f"{gbps:.3g}"


def _gbps_range(row: pd.Series) -> tuple[float, float, float]:
    """A row's GB/s: the median's, and the range its rounds' quartiles span (q3's time, q1's)."""
    def rate(seconds: object) -> float:
        value = float(seconds) if isinstance(seconds, int | float) and seconds == seconds else float(row["median_s"])
        return float(row["nbytes"]) / value / 1e9
    return rate(row["median_s"]), rate(row.get("q3_s")), rate(row.get("q1_s"))


def _fastest(rows: pd.DataFrame, variant: str | None, src: str, dst: str) -> pd.Series | None:
    """The fastest row of ``variant`` (any, when None) from ``src`` to ``dst``, None when there is none."""
    chosen = rows[(rows["src"] == src) & (rows["dst"] == dst)]
    if variant is not None:
        chosen = chosen[chosen["variant"] == variant]
    return None if chosen.empty else chosen.loc[chosen["bandwidth_gbps"].idxmax()]


def _duplex_word(low: float, high: float) -> str:
    if low >= DUPLEX_MIDPOINT:
        return "duplex"
    if high <= DUPLEX_MIDPOINT:
        return "shared both ways"
    return f"can't tell ({low:.2f}-{high:.2f}x over the rounds' quartiles)"


def _duplex_line(rows: pd.DataFrame, both: pd.Series) -> tuple[float, str]:
    """One pair's sentence, and its ratio (for ordering)."""
    a, b = str(both["src"]), str(both["dst"])
    alone = [row for row in (_fastest(rows, "one_way", a, b), _fastest(rows, "other_way", b, a)) if row is not None]
    if not alone:
        return math.nan, f"{a}<->{b}: can't tell (no copy one way alone)"
    one = max(alone, key=lambda row: float(row["bandwidth_gbps"]))
    (total, total_low, total_high), (single, single_low, single_high) = _gbps_range(both), _gbps_range(one)
    ratio = total / single
    word = _duplex_word(total_low / single_high, total_high / single_low)
    return ratio, (f"{a}<->{b}: {word}: both ways at once reach {_gb(total)} GB/s, {ratio:.2f}x one way "
                   f"({_gb(single)} GB/s {one['src']}->{one['dst']}, the faster alone)")


def peer_duplex(results: Results) -> Verdict:
    name = "GPU to GPU both ways at once against one way (peer_bidir)"
    rows = _variants(results, "peer_bidir")
    if rows.empty:
        return Verdict(name, "not measured", "no peer_bidir cases (they need two or more GPUs)")
    both = rows[rows["variant"] == "both_ways"]
    pairs = [_duplex_line(rows, row) for _, row in both.loc[both.groupby(["src", "dst"])["bandwidth_gbps"].idxmax()].iterrows()]
    if not pairs:
        return Verdict(name, "figure", "can't tell: no copy both ways at once ran")
    pairs.sort(key=lambda pair: pair[0] if pair[0] == pair[0] else -1.0)
    lines = [line for _, line in pairs]
    if len(lines) > 3:  # every pair of 8 GPUs: the extremes say it
        lines = [f"{len(lines)} pairs, {pairs[0][0]:.2f}-{pairs[-1][0]:.2f}x; lowest {lines[0]}", f"highest {lines[-1]}"]
    return Verdict(name, "figure", f"{format_bytes(_payload(rows).max())} each way: " + "; ".join(lines))


def _link_classes(results: Results) -> dict[str, str]:
    """Each GPU pair's link class as the run's peer plan recorded it ("cuda:0->cuda:1": class), where known."""
    plan = results.fingerprint.section.get("peer_plan")
    classes = plan.get("classes") if isinstance(plan, dict) else None
    return {str(k): str(v) for k, v in classes.items() if v is not None} if isinstance(classes, dict) else {}


def _one_way(results: Results, payload: int, leg: str) -> tuple[float, str] | None:
    """A pair's fastest copy alone at ``payload`` bytes (a peer row, or a peer_bidir one alone), and where
    it comes from: the pair's own, else a pair of the same link class (the peer plan's premise)."""
    frame = results.frame
    alone = frame[((frame["op"] == "peer") & (frame["nbytes"] == payload))
                  | ((frame["op"] == "peer_bidir") & frame["variant"].isin(("one_way", "other_way"))
                     & (frame["nbytes"] == payload))]
    figures = {f"{src}->{dst}": float(group["bandwidth_gbps"].max()) for (src, dst), group in alone.groupby(["src", "dst"])}
    if leg in figures:
        return figures[leg], "its own"
    classes = _link_classes(results)
    kin = [pair for pair in figures if leg in classes and classes.get(pair) == classes[leg]]
    return (figures[kin[0]], f"{kin[0]}'s, its link class") if kin else None


def _ring_word(low: float, high: float) -> str:
    if low >= FULL_SPEED_SHARE:
        return "every pair at full speed"
    if high < FULL_SPEED_SHARE:
        return "the pairs share a switch or a link"
    return f"can't tell ({low:.2f}-{high:.2f}x over the rounds' quartiles)"


def peer_ring(results: Results) -> Verdict:
    name = "every GPU to the next at once against the sum of one way (peer_all)"
    rows = _variants(results, "peer_all")
    if not rows.empty and "peer_legs" in rows:
        rows = rows[rows["peer_legs"].map(lambda legs: isinstance(legs, list) and bool(legs))]
    if rows.empty or "peer_legs" not in rows:
        return Verdict(name, "not measured", "no peer_all cases (they need three or more GPUs)")
    ring = rows.loc[rows["bandwidth_gbps"].idxmax()]
    legs, payload = [str(leg) for leg in ring["peer_legs"]], int(_payload(rows).max())
    total, low, high = _gbps_range(ring)
    head = f"{format_bytes(payload)} per copy, {len(legs)} copies at once: {_gb(total)} GB/s summed"
    found = {leg: _one_way(results, payload, leg) for leg in legs}
    missing = [leg for leg, figure in found.items() if figure is None]
    if missing:
        return Verdict(name, "figure", f"{head}; can't tell against one way: no copy alone of "
                                       f"{format_bytes(payload)} for {', '.join(missing)}")
    figures = [figure for figure in found.values() if figure is not None]
    alone = sum(gbps for gbps, _ in figures)
    borrowed = sorted({where for _, where in figures if where != "its own"})
    note = f" (pairs without a figure of their own take {'; '.join(borrowed)})" if borrowed else ""
    return Verdict(name, "figure", f"{head} = {total / alone:.2f}x the sum of each pair's one-way figure "
                                   f"({_gb(alone)} GB/s): {_ring_word(low / alone, high / alone)}{note}")


def clocks_and_link_at_run_time(results: Results) -> Verdict:
    name = "GPU clocks and PCIe link while measuring"
    frame = results.frame
    seen = frame[frame["sm_clock_mhz"].notna()]  # every frame has the contract's measured columns
    if seen.empty:
        return Verdict(name, "not measured", "no run-time clocks recorded (no GPU, or no nvidia-ml-py)")
    devices = results.fingerprint.devices
    sm_max = max((d.get("sm_clock_max_mhz") or 0 for d in devices if isinstance(d, dict)), default=0)
    links = seen.dropna(subset=["pcie_generation_now", "pcie_width_now"])
    link_text = ", ".join(f"Gen{int(g)} x{int(w)} in {n}" for (g, w), n in
                          links.groupby(["pcie_generation_now", "pcie_width_now"]).size().items())
    return Verdict(name, "figure",
                   f"SM clock {int(seen['sm_clock_mhz'].min())}-{int(seen['sm_clock_mhz'].max())} MHz"
                   + (f" (max {sm_max})" if sm_max else "")
                   + f", memory clock {int(seen['memory_clock_mhz'].min())}-{int(seen['memory_clock_mhz'].max())} MHz"
                   + f" over {len(seen)} cases; PCIe right after timing: {link_text or 'unknown'}")


EXPECTATIONS: list[Callable[[Results], Verdict]] = [
    pinned_beats_pageable, same_device_10x, d2h_pageable_slowest, noops_same_object, device_within_wall,
    pinned_link_efficiency, bidirectional_duplex, all_gpus_scaling, copy_kind_cost, numa_penalty, peer_duplex,
    peer_ring, clocks_and_link_at_run_time,
]


def check(results: Results) -> list[Verdict]:
    return [expectation(results) for expectation in EXPECTATIONS]
