"""The report's section on transfers between processes: figures, findings, the slow rank.

Reads the rows of distributed benchmarks (``world_size`` set): bus bandwidth by size,
point-to-point within a node against across nodes, and each rank's spread in the
collectives, from the time every rank recorded for every round. No torch here.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from ...ratios import Ratio
from ...units import count, format_bytes, format_number, format_seconds
from ..drift import median_bounds
from ..model import Wait
from ..view import RunView, ticked
from .noop_plot import family_colour as _colour
from .plots import WAITED_MARK
from .svg import WIDTH, Plot, as_plot, bytes_said, legend_outside, log_y, size_ticks, subplots, ticks_said, tip, tips_for

#: Sets row a against row b: a's time over b's with its interval (``RunView.ratio``).
Judge = Callable[[pd.Series, pd.Series], Ratio]

__all__ = ["DISTRIBUTED_TEXT", "Straggler", "distributed_findings", "late_rank", "mean_rank_busbw", "rank_means",
           "section", "slowest_rank"]

DISTRIBUTED_TEXT = (
    "Between processes (torch.distributed)",
    "Left: bus bandwidth, nccl-tests' convention: algbw = bytes / time, busbw = algbw x 2(n-1)/n for all_reduce (and "
    "the overlap of all_reduces), (n-1)/n for all_gather, reduce_scatter and all_to_all, 1 for broadcast and "
    "point-to-point, so figures compare with the link's speed whatever the number of ranks. Right: point-to-point "
    "one-way time (half of a ping-pong round trip): the latency floor of every message. Each round's time is the "
    "slowest rank's (solid); dashed, the same from the mean of the ranks' times, which nccl-tests reports by default "
    "(compare nccl-tests with the dashed line). The link between ranks is not in the fingerprint (loopback or a "
    "network), so no efficiency is claimed.",
)
#: The caption's promise of a dashed line, and what it says instead where no row recorded the ranks' mean time.
MEAN_LINE = ("dashed, the same from the mean of the ranks' times, which nccl-tests reports by default (compare "
             "nccl-tests with the dashed line).")
NO_MEAN_LINE = ("this run recorded no per-rank times, so the mean of the ranks' times, which nccl-tests reports by "
                "default, is not drawn.")
POINT_TO_POINT = ("send_recv", "isend_irecv")
#: A rank is named slow when it is the slowest in at least this share of rounds ...
CONSISTENT_SHARE = 2 / 3
#: ... and its lag behind the typical rank is this many times the other ranks' lag, and
MARGIN_OVER_NOISE = 3.0
#: at least this share of a round (a lag of a few per cent is scheduling noise).
MIN_LAG_SHARE = 0.05
#: Rooted collectives: their ranks' times differ by construction (the root may return once it has sent, a
#: receiver when its data came, sooner near the root), so the root is never named late there, and another rank
#: only when the others waited for it longer than the typical call itself.
ROOTED = {"broadcast": 0}
ROOTED_LAG_SHARE = 0.5
#: What a host-timed backend cannot tell: a rank slow inside its own call (a slow Python-side launch) lengthens
#: every rank's call alike there, since the others wait for it inside theirs.
HOST_TIMED_CANT_TELL = (
    "On {backends} each rank's call is timed by its host: a rank slow inside its own call (a slow launch) "
    "lengthens every rank's call alike, so such a rank can't be told there{nccl}.")


def _distributed(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["world_size"].notna()] if "world_size" in frame else frame.iloc[0:0]


@dataclass(frozen=True)
class Straggler:
    rank: int
    lag_s: float  # median per-call time behind the typical rank
    share: float  # share of rounds in which it was the slowest


def _lags(rank_seconds: Sequence[Sequence[float]]) -> list[list[float]]:
    """Each rank's time minus the median rank's, round by round: what every rank shares (a slow
    round for all) cancels, what one rank adds remains."""
    rounds = list(zip(*rank_seconds, strict=True))
    typical = [statistics.median(times) for times in rounds]
    return [[t - typical[k] for k, t in enumerate(times)] for times in rank_seconds]


def _standing_out(rank_seconds: Sequence[Sequence[float]], sign: float) -> Straggler | None:
    """The rank whose time is consistently the highest (``sign`` 1) or the lowest (-1), beyond
    noise, with its median distance from the typical rank; None when no rank stands out."""
    if len(rank_seconds) < 2 or not rank_seconds[0]:
        return None
    lags = [[sign * lag for lag in ranks] for ranks in _lags(rank_seconds)]
    median_lag = [statistics.median(lag) for lag in lags]
    rank = max(range(len(lags)), key=median_lag.__getitem__)
    rounds = list(zip(*rank_seconds, strict=True))
    share = sum(max(range(len(times)), key=lambda r: sign * times[r]) == rank for times in rounds) / len(rounds)
    others = [abs(v) for r, lag in enumerate(lags) if r != rank for v in lag]
    noise = statistics.median(others) if others else 0.0
    typical_round = statistics.median(t for times in rounds for t in times)
    lag = median_lag[rank]
    if share >= CONSISTENT_SHARE and lag > MARGIN_OVER_NOISE * noise and lag > MIN_LAG_SHARE * typical_round:
        return Straggler(rank, lag, share)
    return None


def slowest_rank(rank_seconds: Sequence[Sequence[float]]) -> Straggler | None:
    """The rank that is consistently the slowest inside the calls, beyond noise; None when no rank stands out."""
    return _standing_out(rank_seconds, 1.0)


def late_rank(rank_seconds: Sequence[Sequence[float]], op: str | None = None) -> Straggler | None:
    """The rank that consistently arrives last at the collective: a collective lines its ranks up,
    so the others wait inside the call for the late one, and the late one waits least. Its
    ``lag_s`` is how much longer the typical rank waited per call. On nccl the times are each rank's
    device time of the collective on NCCL's stream, where a rank slow inside its own call (a late launch)
    runs the shortest kernel too. ``op`` a rooted collective (ROOTED): see there."""
    found = _standing_out(rank_seconds, -1.0)
    if found is None or op not in ROOTED:
        return found
    typical = statistics.median(t for times in rank_seconds for t in times)
    return None if found.rank == ROOTED[op] or found.lag_s < ROOTED_LAG_SHARE * typical else found


def _ranks(row: Any, key: str = "rank_seconds") -> list[list[float]] | None:
    value = row.get(key) if hasattr(row, "get") else None
    # Lags are taken round by round across the ranks: a damaged run's ranks without a round, or with rounds that
    # do not line up, have none to take (and broke the medians), so they count as not recorded.
    if not isinstance(value, list) or len(value) < 2 or not value[0] \
            or any(not isinstance(ranks, list) or len(ranks) != len(value[0]) for ranks in value):
        return None
    return value


def _inside_calls(row: Any) -> list[list[float]] | None:
    """Each rank's per-call time inside the calls, [rank][round] (``rank_call_seconds``), else its round times
    (older runs): a rank late into every call of a round is seen in the first only, since the round's time is
    the same on every rank."""
    return _ranks(row, "rank_call_seconds") or _ranks(row)


def _members(row: Any, ranks: int) -> list[int]:
    """The ranks that take part in a row's case: a point-to-point case's pair (its src and dst, ``rank<N>:…``),
    every rank for a collective."""
    pair = [re.match(r"rank(\d+):", str(row.get(end))) for end in ("src", "dst")] if row.get("op") in POINT_TO_POINT else []
    members = [int(found.group(1)) for found in pair if found]
    return members if len(members) == 2 and all(rank < ranks for rank in members) else list(range(ranks))


def rank_means(row: Any) -> list[float] | None:
    """Each round's per-call time averaged over the ranks that take part: ``rank_mean_seconds`` where the run
    recorded it, else computed from each rank's own times (``rank_seconds``, which runs before that key hold);
    None where neither was recorded."""
    means = row.get("rank_mean_seconds") if hasattr(row, "get") else None
    if isinstance(means, list) and means:
        return [float(m) for m in means]
    if (ranks := _ranks(row)) is None:
        return None
    members = _members(row, len(ranks))
    return [sum(times[r] for r in members) / len(members) for times in zip(*ranks, strict=True)]


def mean_rank_busbw(row: Any) -> float | None:
    """Bus bandwidth by the cross-rank mean time (each round's mean over the ranks, its median over rounds: see
    ``rank_means``), beside the slowest rank's that ``busbw_gbps`` holds; None where no per-rank time was recorded."""
    means = rank_means(row)
    busbw, slowest = row.get("busbw_gbps"), row.get("median_s")
    if not means or not isinstance(busbw, float) or not pd.notna(busbw) or not slowest:
        return None
    mean = statistics.median(means)
    return busbw * float(slowest) / mean if mean > 0 else None


def _host(row: Any, rank: int) -> str:
    hosts = row.get("rank_hosts")
    return str(hosts[rank]) if isinstance(hosts, list) and rank < len(hosts) else "an unknown host"


def _log_y_if_any(ax: Axes) -> None:
    """A log y axis when something drawn on it is above zero: a damaged run's world of 0 or 1 ranks has a bus
    bandwidth of 0 only, which a log axis cannot hold (matplotlib warns into the CI log); that axis stays linear."""
    drawn = [np.asarray(line.get_ydata(), dtype=float) for line in ax.get_lines()]
    if any(bool(np.any(np.isfinite(y) & (y > 0))) for y in drawn):
        log_y(ax)


def _busbw(waits: Mapping[Any, Wait], row: pd.Series, gbps: float) -> str:
    """``busbw 3.2 GB/s``; for a row in ``waits`` (the appendix's ‡) no bus bandwidth, the formula's figure aside:
    ``no bus bandwidth (the formula gives 0.0714 GB/s): the bytes set at most 16% of its time``."""
    if row.name not in waits:
        return f"busbw {format_number(gbps, 4)} GB/s"
    return f"no bus bandwidth (the formula gives {format_number(gbps, 4)} GB/s): {bytes_said(waits[row.name])}"


def bandwidth_plot(frame: pd.DataFrame, waits: Mapping[Any, Wait] | None = None) -> Figure | str:
    """Bus bandwidth of each op against size, and the point-to-point one-way time; a point in ``waits``
    (``RunView.no_bandwidth``) is a cross whose hover states no bus bandwidth."""
    rows, waits = _distributed(frame), waits or {}
    if rows.empty:
        return "No distributed benchmarks were run."
    fig, (left, right) = subplots(1, 2, figsize=(WIDTH, 4.0), layout="tight")
    handles: dict[str, Artist] = {}
    crossed = False
    for path, group in rows.groupby("path", sort=False):
        group = group.sort_values("nbytes")
        line, = left.plot(group["nbytes"], group["busbw_gbps"], color=_colour(str(group.iloc[0]["op"])))
        waited = group.index.isin(list(waits))
        for points, marker in ((group[~waited], "o"), (group[waited], "x")):
            if not points.empty:
                marks, = left.plot(points["nbytes"], points["busbw_gbps"], ls="", marker=marker, ms=4, color=line.get_color())
                tip(marks, tips_for(points, lambda row: _busbw(waits, row, row["busbw_gbps"]) + (
                    "" if row.name in waits else f"; algbw {format_number(row['bandwidth_gbps'], 4)} (slowest rank)")))
        crossed |= bool(waited.any())
        handles.setdefault(str(path), line)
        # each point its own hover: a line without markers carries one title, its first point's, along all of it
        if means := [(row, m) for _, row in group.iterrows() if (m := mean_rank_busbw(row)) is not None]:
            mean_line, = left.plot([row["nbytes"] for row, _ in means], [m for _, m in means], "--", lw=1, marker=".",
                                   ms=3, color=line.get_color())
            tip(mean_line, [f"{path} {format_bytes(row['nbytes'])}\nby the ranks' mean time: {_busbw(waits, row, m)}"
                            for row, m in means])
    for _, group in rows[rows["op"].isin(POINT_TO_POINT)].groupby("path", sort=False):
        group = group.sort_values("nbytes")
        line, = right.plot(group["nbytes"], group["transfer_s"] * 1e6, marker="o", ms=4, color=_colour(str(group.iloc[0]["op"])))
        tip(line, tips_for(group, lambda row: f"one way {format_seconds(row['transfer_s'])}"))
    for ax in (left, right):
        size_ticks(ax, rows["nbytes"].tolist())
        _log_y_if_any(ax)
        ax.set_xlabel("payload")
    left.set_ylabel("bus bandwidth (GB/s, nccl-tests convention)")
    right.set_ylabel("one-way time, half a round trip (µs)")
    if crossed:
        handles[WAITED_MARK] = Line2D([], [], marker="x", ls="", color="0.3")
    legend_outside(fig, list(handles.values()), list(handles))
    return fig


def links_plot(frame: pd.DataFrame) -> Figure | str:
    """Point-to-point bandwidth within a node and across nodes, side by side."""
    rows = _distributed(frame)
    rows = rows[rows["op"].isin(POINT_TO_POINT) & rows.get("crosses", pd.Series(dtype=object)).notna()]
    if rows.empty or rows["crosses"].nunique() < 2:
        return ("Point-to-point ran within one node only; run torchrun over two nodes or more to set "
                "inter-node figures beside intra-node ones.")
    fig, ax = subplots(figsize=(WIDTH * 0.7, 4.0), layout="tight")
    styles = {"intra-node": "-", "inter-node": "--"}
    handles: dict[str, Artist] = {}
    for (op, crosses, src, dst), group in rows.groupby(["op", "crosses", "src", "dst"], sort=False):
        group = group.sort_values("nbytes")
        line, = ax.plot(group["nbytes"], group["bandwidth_gbps"], styles.get(crosses, ":"), marker="o", ms=4, color=_colour(op))
        tip(line, tips_for(group, lambda row: f"{row['crosses']}, one way {format_number(row['bandwidth_gbps'], 4)} GB/s"))
        handles.setdefault(f"{op} {crosses} {src.split(':')[0]}->{dst.split(':')[0]}", line)
    size_ticks(ax, rows["nbytes"].tolist())
    _log_y_if_any(ax)
    ax.set_xlabel("payload")
    ax.set_ylabel("one-way bandwidth (GB/s)")
    legend_outside(fig, list(handles.values()), list(handles))
    return fig


#: Why the rank-lag chart is left out of a two-rank world: each rank lags the typical (median) rank by the same amount.
TWO_RANKS = "Two ranks: each lags their median by the same amount, so the chart is symmetric by construction; left out."


def spread_plot(frame: pd.DataFrame) -> Figure | str:
    """Each rank's median lag behind the typical rank, per collective, at the largest size."""
    rows = _distributed(frame)
    if not (with_ranks := [row for _, row in rows[~rows["op"].isin(POINT_TO_POINT)].iterrows() if _ranks(row)]):
        return "No per-rank times were recorded (a run from an older xferbench, or no collective)."
    if max(len(_ranks(row) or []) for row in with_ranks) < 3:
        return TWO_RANKS
    largest = max(row["nbytes"] for row in with_ranks)
    fig, ax = subplots(figsize=(WIDTH * 0.7, 4.0), layout="tight")
    handles: dict[str, Artist] = {}
    for row in [r for r in with_ranks if r["nbytes"] == largest]:
        lags = [statistics.median(lag) * 1e6 for lag in _lags(_inside_calls(row) or [])]  # never []: it has rank_seconds
        line, = ax.plot(range(len(lags)), lags, marker="o", ms=4, color=_colour(str(row["op"])))
        tip(line, [f"{row['path']}\nrank {r} on {_host(row, r)}: {lag:+.4g} µs per call inside the call against the typical rank"
                   for r, lag in enumerate(lags)])
        handles.setdefault(str(row["path"]), line)
    ax.axhline(0, color="black", lw=0.6)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # ranks are whole numbers
    ax.set_xlabel("rank")
    ax.set_ylabel("time inside the call against the typical rank (µs)")
    ax.set_title(f"at {format_bytes(largest)}", fontsize=9)
    ax.grid(True, alpha=0.3)
    legend_outside(fig, list(handles.values()), list(handles))
    return fig


SPREAD_CAPTION = (
    "Every rank times each of its calls itself. Per collective at the largest size, how much longer or shorter each "
    "rank's time inside the calls was than the typical (median) rank's, round by round, its median: what all ranks "
    "share cancels, what one rank adds remains. A rank that arrives late at every call (a busy host, a straggling "
    "process) is the one the others wait for inside the call: it stands out below zero. A slow link inside a ring "
    "slows every member alike and shows in the bus bandwidth instead. (Runs without per-call times: each rank's "
    "time of a round.)"
)
LINKS_CAPTION = (
    "Ping-pongs between rank 0 and the next rank on its node (intra-node) and between rank 0 and the first rank of "
    "every other node (inter-node), each way round (the first named rank sends first). Nodes are told apart by host "
    "name (or XFERBENCH_NODE). Bytes counted once, one way: half a round trip."
)


def _stragglers(rows: pd.DataFrame, gpu: bool) -> list[str]:
    named: dict[tuple[str, int, str], list[str]] = {}
    checked = 0
    for _, row in rows[~rows["op"].isin(POINT_TO_POINT)].iterrows():
        if not (ranks := _ranks(row)):
            continue
        checked += 1
        case = f"{row['op']}{' ' + row['variant'] if isinstance(row['variant'], str) else ''} {format_bytes(row['nbytes'])}"
        for kind, found in (("late", late_rank(_inside_calls(row) or ranks, str(row["op"]))), ("slow", slowest_rank(ranks))):
            if found:
                named.setdefault((kind, found.rank, _host(row, found.rank)), []).append(
                    f"{case} (+{format_seconds(found.lag_s)})")
    if not checked:
        return []
    host_timed = sorted({str(b) for b in rows.get("backend", pd.Series(dtype=object)).dropna()} - {"nccl"})
    nccl = " (on nccl each rank's own device time of the collective tells it)" * gpu
    cant_tell = [HOST_TIMED_CANT_TELL.format(backends=" and ".join(host_timed), nccl=nccl)] if host_timed else []
    benchmarks = count(checked, "collective benchmark")
    if not named:
        return [f"No rank arrived consistently late, nor was consistently slowest, beyond noise in {benchmarks}.",
                *cant_tell]
    return [f"Rank {rank} on {host} arrived late at the collective in {len(cases)} of {benchmarks}: "
            f"the other ranks waited for it inside the call, e.g. {', '.join(cases[:3])} per call longer than it did."
            if kind == "late" else
            f"Rank {rank} on {host} was consistently the slowest in {len(cases)} of {benchmarks}, "
            f"e.g. {', '.join(cases[:3])} per call behind the typical rank."
            for (kind, rank, host), cases in sorted(named.items(), key=lambda item: -len(item[1]))] + cant_tell


def _links(rows: pd.DataFrame) -> list[str]:
    if "crosses" not in rows or (p2p := rows[(rows["op"] == "send_recv") & rows["crosses"].notna()]).empty \
            or p2p["crosses"].nunique() < 2:
        return []
    largest = p2p["nbytes"].max()
    at = p2p[p2p["nbytes"] == largest].groupby("crosses")["bandwidth_gbps"].median()
    small = p2p[p2p["nbytes"] == p2p["nbytes"].min()].groupby("crosses")["transfer_s"].median()
    return [f"send_recv of {format_bytes(largest)}: {at['intra-node']:.3g} GB/s within a node against "
            f"{at['inter-node']:.3g} GB/s across nodes; the smallest message takes {format_seconds(small['intra-node'])} "
            f"within and {format_seconds(small['inter-node'])} across one way."]


def _overlap(rows: pd.DataFrame, judge: Judge | None) -> list[str]:
    """In flight against one by one at the largest size, judged by their own interval (xferbench.ratios)."""
    overlap = rows[rows["op"] == "overlap"]
    if overlap.empty or "variant" not in overlap or judge is None:
        return []
    largest = overlap[overlap["nbytes"] == overlap["nbytes"].max()].set_index("variant")
    if not {"in_flight", "one_by_one"} <= set(largest.index):
        return []
    one, flight = largest.loc["one_by_one"], largest.loc["in_flight"]
    ratio = judge(one, flight)
    timed = (f"Four all_reduces of {format_bytes(overlap['nbytes'].max() / 4)} in flight at once (async_op=True) took "
             f"{format_seconds(flight['median_s'])}, one by one {format_seconds(one['median_s'])}")
    if "nccl" in set(overlap.get("backend", pd.Series(dtype=object))):
        # nccl queues both variants on its one stream and neither blocks the host: the same timeline twice
        return [timed + f" ({ratio.value:.2f}x); on nccl both queue on the same NCCL stream, so this cannot show "
                        "overlap: the comparison means something on gloo only."]
    if not ratio.resolved:
        return [timed + f": whether overlap pays, {ratio.text()}."]
    return [timed + ": " + (f"overlap buys {ratio.text()} here." if ratio.value > 1 else
                            f"overlap does not pay here: one by one is {ratio.faster().text()} faster.")]


def distributed_findings(frame: pd.DataFrame, judge: Judge | None = None, waits: Mapping[Any, Wait] | None = None,
                         gpu: bool = False) -> list[str]:
    """The distributed section's sentences; ``judge`` sets two rows against each other (``RunView.ratio``): without
    one, no comparison (the overlap) is said. A row in ``waits`` (``RunView.waits``) states no bus bandwidth. ``gpu``
    (``RunView.has_accelerator``): nccl's advice on a slow rank is given where the run had one, not on a CPU run."""
    if (rows := _distributed(frame)).empty:
        return []
    out = []
    first = rows.iloc[0]
    p2p = rows[rows["op"].isin(POINT_TO_POINT)]
    if not p2p.empty:
        # Every point-to-point case of the smallest message: one of them alone may be the noisiest.
        small = p2p[p2p["nbytes"] == p2p["nbytes"].min()]
        waited = int(ticked(small).sum())  # a median holding a wait for the CPU (analyze/load/blocks.py): say the fastest
        fast = small["transfer_s"] * small["min_s"] / small["median_s"]  # one way at each case's fastest round
        took = (f"{format_seconds(small['transfer_s'].iloc[0])} one way" if len(small) == 1 else
                f"{format_seconds(small['transfer_s'].min())} to {format_seconds(small['transfer_s'].max())} one way "
                f"across its {len(small)} point-to-point cases (medians of {int(small['rounds'].min())}+ rounds each"
                + (f"; {waited} of them hold a wait for the CPU; at their fastest rounds {format_seconds(fast.min())} to "
                   f"{format_seconds(fast.max())})" if waited else ")"))
        out.append(f"With {int(first['world_size'])} ranks on {first['backend']}, a {format_bytes(small['nbytes'].iloc[0])} "
                   f"message took {took}.")
    reduce = rows[rows["op"] == "all_reduce"]
    if not reduce.empty:
        big = reduce.loc[reduce["nbytes"].idxmax()]
        if (wait := (waits or {}).get(big.name)) is not None:  # the appendix's ‡: the H200's gloo 16 KiB, 1.06x its 1 KiB
            out.append(f"all_reduce of {format_bytes(big['nbytes'])} took {format_seconds(big['median_s'])}, at most "
                       f"{wait.growth.high:.2f}× as long as {format_bytes(wait.small['nbytes'])} ({wait.factor:,.0f}× the "
                       f"bytes): {bytes_said(wait, 'that time')}, so no bus bandwidth.")
        elif pd.notna(big.get("on_ticks", np.nan)):  # the quick run's 16 MiB: rounds of 4 calls, 78.9 ms and 150 ms
            out.append(f"all_reduce of {format_bytes(big['nbytes'])} took {format_seconds(big['median_s'])}: "
                       f"{ticks_said(big, 'that time')}, so no bus bandwidth.")
        else:
            low, high = median_bounds(big)  # the rounds' own order statistics, per call, where it kept them
            busbw_s = big["busbw_gbps"] * big["median_s"]  # bus bandwidth at either end of the median's interval
            spread = (f" (its median's interval over {int(big['rounds'])} rounds: {busbw_s / high:.3g} to "
                      f"{busbw_s / low:.3g} GB/s)" if high > 1.5 * low else "")
            out.append(f"all_reduce of {format_bytes(big['nbytes'])} reached {big['busbw_gbps']:.3g} GB/s bus bandwidth"
                       + (f" by the slowest rank's time{spread}, {mean:.3g} GB/s by the ranks' mean (nccl-tests' default)."
                          if (mean := mean_rank_busbw(big)) else f"{spread}."))
    if "verified" in rows and rows["verified"].eq(True).any():
        out.append(f"Every rank's output was checked after timing in {int(rows['verified'].eq(True).sum())} of "
                   f"{count(len(rows), 'benchmark')}.")
    return out + _links(rows) + _overlap(rows, judge) + _stragglers(rows, gpu)


def setup_sentence(machine_info: dict[str, Any]) -> str | None:
    """One sentence of what NCCL chose (its version, network and transports, ranks that chose alike together) and
    what torch.distributed and NCCL were configured with outside NCCL_* (TORCH_DISTRIBUTED_DEBUG, TORCH_NCCL_*,
    configuration files); None where the run recorded none of it (gloo without settings, older runs)."""
    ranks = (machine_info.get("xferbench") or {}).get("ranks") or []
    chose: dict[str, list[int]] = {}
    for place in ranks:
        if nccl := place.get("nccl"):
            said = (f"NCCL {nccl.get('version', '?')} over network {nccl.get('network', '?')} via "
                    + (", ".join(f"{name} ({count(channels, 'channel')})"
                                 for name, channels in (nccl.get("transports") or {}).items())
                       or "no logged channel"))
            chose.setdefault(said, []).append(int(place.get("rank", -1)))
    settings = sorted({f"{key}={value}" for place in ranks for key, value in (place.get("torch_env") or {}).items()})
    files = sorted({path for place in ranks for path in (place.get("nccl_conf") or {})})
    parts = [f"{said} on rank{'s' * (len(who) > 1)} {', '.join(map(str, who))}" for said, who in chose.items()]
    if settings:
        parts.append("set: " + ", ".join(settings) + (" (DETAIL checks every call: slower)" if
                                                      "TORCH_DISTRIBUTED_DEBUG=DETAIL" in settings else ""))
    if files:
        parts.append("NCCL configuration read from " + ", ".join(files) + " (recorded in the JSON)")
    return ("Setup: " + "; ".join(parts) + ".") if parts else None


def section(view: RunView) -> dict[str, Any] | None:
    """The report's distributed section, or None when no distributed benchmark was run."""
    frame = view.rows
    if (rows := _distributed(frame)).empty:
        return None
    title, caption = DISTRIBUTED_TEXT
    if not any(mean_rank_busbw(row) is not None for _, row in rows.iterrows()):
        caption = caption.replace(MEAN_LINE, NO_MEAN_LINE)  # a run without per-rank times draws no dashed line
    plots: list[Plot] = [as_plot("distributed", title, caption, bandwidth_plot(frame, view.no_bandwidth))]
    # The other two exist only for some runs (several nodes; per-rank times, which older runs lack):
    # a run that cannot have them is not missing anything, so they are left out rather than shown as gaps.
    for key, name, text, figure in (("distributed-links", "Within a node and across nodes", LINKS_CAPTION, links_plot(frame)),
                                    ("distributed-ranks", "Which rank is slow", SPREAD_CAPTION, spread_plot(frame))):
        if not isinstance(figure, str) or figure == TWO_RANKS:  # a two-rank world is told why it has no chart
            plots.append(as_plot(key, name, text, figure))
    setup = setup_sentence(view.machine_info)
    text = " ".join(distributed_findings(frame, view.ratio, view.waits, view.has_accelerator) + ([setup] if setup else []))
    return {"key": "distributed", "title": title, "text": text, "plots": plots}
