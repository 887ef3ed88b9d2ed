"""torch's host copy_ on its default threads against the same copy on one thread: where the run has both, which was
faster, judged by the comparison's own interval (xferbench.ratios), and the machine's load where it recorded it. Only
sizes torch splits across threads are evidence: a copy of fewer than ``GRAIN`` elements runs on one thread anyway."""

from __future__ import annotations

import pandas as pd

from ...ratios import Ratio
from ...units import DTYPE_SIZES, format_bytes, format_seconds
from ..load.rows import flags
from ..model import SINGLE_THREAD
from ..view import RunView
from .ladder_text import took_at
from .svg import bytes_said

__all__ = ["GRAIN", "beta_noise", "host_threads", "one_thread_beside", "one_thread_faster", "size_free",
           "thread_pairs", "threads_against_one"]

#: torch's grain size (at::internal::GRAIN_SIZE): a copy of fewer elements is never split across threads.
GRAIN = 32768


def thread_pairs(view: RunView) -> pd.DataFrame:
    """Per size both ran with at least ``GRAIN`` elements, neither in blocks of different calls a round, and both with
    calls a round under 2x apart (a stalled one-call round against a hundred-call one measures a thread pool's wake-up
    against warm calls, not thread counts: the loaded run's 1 MiB, 20 ms on 2 threads at 1 call a round, 144 µs on
    one at 100): the default-thread copy_ and the single-thread one, side by side (``_many``/``_one``;
    ``row_many``/``row_one`` index the view's rows)."""
    rows = view.rows
    host = rows[(rows["op"] == "host") & (rows["method"] == SINGLE_THREAD["method"])]
    elements = host["nbytes"] / host["dtype"].map(DTYPE_SIZES).fillna(1)
    host = host[(elements >= GRAIN) & ~flags(host, "mixed_iterations")].assign(row=lambda f: f.index)
    one = host[host["variant"] == SINGLE_THREAD["variant"]]
    many = host[host["variant"] != SINGLE_THREAD["variant"]]
    pairs = many.merge(one, on="nbytes", suffixes=("_many", "_one"))
    if "iterations_many" not in pairs:  # rows that never said their calls a round: nothing to hold them to
        return pairs
    return pairs[(pairs["iterations_many"] / pairs["iterations_one"]).between(0.5, 2, inclusive="neither")]


def ratio_of(view: RunView, row: pd.Series) -> Ratio:
    """The default threads' time over one thread's at one size (a ``thread_pairs`` row), with its interval."""
    return view.ratio(view.rows.loc[row["row_many"]], view.rows.loc[row["row_one"]])


def beta_noise(view: RunView) -> str | None:
    """Why the two copies' β cannot be told apart: at some size that both fits' β rest on (beyond the caches, and past
    the default-thread copy's half of β, where the bytes set the time), their ratio is not resolved; None
    where every such size tells them apart."""
    pairs = thread_pairs(view)
    if pairs.empty:
        return None
    rows, resident = view.rows, view.resident.to_numpy(dtype=bool)
    cached = set(rows.loc[resident & rows["path"].isin(set(pairs["path_many"]) | set(pairs["path_one"])), "nbytes"])
    fit = view.fit_of(str(pairs["path_many"].iloc[0]))
    half = float(fit["half_peak_bytes"]) if fit is not None and pd.notna(fit["half_peak_bytes"]) else 0.0
    for _, row in pairs[~pairs["nbytes"].isin(cached) & (pairs["nbytes"] >= half)].sort_values("nbytes").iterrows():
        if not (found := ratio_of(view, row)).resolved:
            return f"at {format_bytes(int(row['nbytes']))} {found.text()}"
    return None


def host_threads(view: RunView) -> str:
    """``torch's default threads (8)``, or without a count where the fingerprint has none."""
    threads = (view.machine_info.get("xferbench") or {}).get("host", {}).get("torch_threads")
    return f"torch's default threads ({threads})" if threads else "torch's default threads"


def threads_against_one(view: RunView) -> tuple[str, str] | None:
    """The size where the default threads and one thread differ most (resolved), as a headline and one sentence of
    evidence: which took longer, how many times with the interval, the load the run recorded, and ``size_free``;
    None where no size tells them apart (the β sentence says can't tell)."""
    pairs = thread_pairs(view)
    told = pairs[[ratio_of(view, row).resolved for _, row in pairs.iterrows()]] if not pairs.empty else pairs
    if told.empty:
        return None
    ratio = told["median_s_many"] / told["median_s_one"]
    row = told.loc[(ratio.where(ratio >= 1, 1 / ratio)).idxmax()]
    headline, evidence = _most_apart(view, pairs, row)
    # the default threads' time a wait (the loaded run's 20 ms at 1 and 64 MiB): what threads do, the run does not show
    waited = view.waited(many := view.rows.loc[row["row_many"]])
    whose, took = "the default threads' ", format_seconds(float(many["median_s"]))
    head, said = ("", "") if waited is None else (
        f"; {bytes_said(waited, whose + 'time')}",
        f"; {bytes_said(waited, whose + took)} ({took_at(waited.small, many)}), so what more threads do to the copy, this run "
        "does not show")
    return headline.removesuffix(".") + head + ".", evidence.removesuffix(".") + said + size_free(view, pairs) + "."


def _most_apart(view: RunView, pairs: pd.DataFrame, row: pd.Series) -> tuple[str, str]:
    """``threads_against_one``'s headline and evidence, at ``row``: the size told apart the most either way."""
    load = view.busy
    under = f", under load ({load})" if load else ""
    size = format_bytes(int(row["nbytes"]))
    many, one = float(row["median_s_many"]), float(row["median_s_one"])
    judged = ratio_of(view, row)
    if many > one:
        head = f"A {size} host copy_ with {host_threads(view)} took {judged.text()} as long as on one thread"
        measured = f"{head}{_by(judged)} ({format_seconds(many)} against {format_seconds(one)}){under}"
        # the sizes beside it that do not bear it out (not told apart, or the default threads not the slower)
        odd = [(n, r, m, o) for n, r, m, o in _beside(view, pairs, int(row["nbytes"])) if not (r.resolved and m > o)]
        if not odd:
            return f"{head}{' under load' if load else ''}.", f"{measured}: more threads made it slower at this size."
        if not all(r.resolved for _, r, _, _ in odd):
            # a figure out of line with neighbours that cannot be told apart is no thread effect this run shows
            kept = "; ".join(f"{n} {format_seconds(m)} against {format_seconds(o)}" for n, _, m, o in odd)
            return (f"{head}, but not at the sizes beside it: whether more threads made it slower, can't tell.",
                    f"{measured}; the size{'s' if len(odd) > 1 else ''} beside it do{'' if len(odd) > 1 else 'es'} not "
                    f"bear it out ({kept}), so whether more threads made it slower, can't tell.")
        other, faster, m, o = odd[0]  # told apart both ways: each size says what it resolved
        return (f"{head}{' under load' if load else ''}; at {other} one thread took {faster.faster().text()} as long.",
                f"{measured}; at {other} one thread took {faster.faster().text()} as long{_by(faster)} ({format_seconds(o)} "
                f"against {format_seconds(m)}): more threads made it slower at {size} and faster at {other}.")
    head = f"A {size} host copy_ on one thread took {judged.faster().text()} as long as with {host_threads(view)}"
    return f"{head}{' under load' if load else ''}.", f"{head}{_by(judged)} ({format_seconds(one)} against " \
        f"{format_seconds(many)}){under}."


def _by(ratio: Ratio) -> str:
    """How a ratio was judged where its figure is no ratio of the two medians beside it: block by block (the mean of
    the blocks' ratios, 1.4x where the medians, 30 against 20 ms, give 1.5x)."""
    return " block by block" if ratio.paired else ""


def _beside(view: RunView, pairs: pd.DataFrame, nbytes: int) -> list[tuple[str, Ratio, float, float]]:
    """The next smaller and the next larger size both copies ran: each size, the default threads over one thread with
    its interval, and the two times."""
    sizes = sorted(pairs["nbytes"].unique())
    at = sizes.index(nbytes)
    rows = [pairs[pairs["nbytes"] == n].iloc[0] for n in sizes[max(at - 1, 0):at + 2] if n != nbytes]
    return [(format_bytes(int(row["nbytes"])), ratio_of(view, row), float(row["median_s_many"]), float(row["median_s_one"]))
            for row in rows]


def size_free(view: RunView, pairs: pd.DataFrame | None = None) -> str:
    """Where the default threads' copy took under twice as long at the largest of ``pairs`` (``thread_pairs``) as at
    the smallest, 16x the bytes or more, while one thread's grew more (told apart, ``Ratio.over``): both times, one
    thread's growth, and that the bytes do not set the default threads' time (loaded 2-core run: 20 ms at 1 and 64 MiB)."""
    if (pairs := thread_pairs(view) if pairs is None else pairs).empty:
        return ""
    small, large = pairs.loc[pairs["nbytes"].idxmin()], pairs.loc[pairs["nbytes"].idxmax()]
    little, big = view.rows.loc[small["row_many"]], view.rows.loc[large["row_many"]]
    many, one = view.ratio(big, little), view.ratio(view.rows.loc[large["row_one"]], view.rows.loc[small["row_one"]])
    # 16x the bytes or more in under twice the time, told so by its interval, and less growth than one thread's
    if big["nbytes"] < 16 * little["nbytes"] or many.high >= 2 or many.over(one).high >= 1:
        return ""
    took = " and ".join(f"{format_seconds(float(row['median_s_many']))} at {format_bytes(int(row['nbytes']))}"
                        for row in (small, large))
    return (f"; with {host_threads(view)} it took {took}, while one thread's time grew {one.text()}: the bytes do not "
            "set the default threads' time here")


def one_thread_beside(view: RunView, best: pd.Series, one: pd.Series) -> str:
    """The single-thread copy beside the default threads' best, with which is faster by their own interval: two
    figures side by side invite a ratio the run may not resolve (the busy run's 5.59 against 4.7 GB/s)."""
    ratio = view.ratio(best, one)
    if ratio.resolved:
        which = f"one thread faster, {ratio.text()}" if ratio.value > 1 else f"one thread slower, {ratio.faster().text()}"
    elif ratio.paired:  # the blocks' own estimate is worth giving, though its interval holds 1
        which = f"block by block the default threads took {ratio.figures()} its time: faster or slower, can't tell"
    else:  # "1.99 GB/s, which is faster, can't tell" read as one thread the faster
        which = f"faster or slower than the default threads: {ratio.text()}"
    return f"one thread: {one['bandwidth_gbps']:.3g} GB/s; {which}"


def one_thread_faster(view: RunView, best: pd.Series) -> str:
    """The single-thread host copy, left out of the paths above (it is a roof, not a call users make), where its β
    beats that of ``best``, the host copy_ on the default threads (the same call: another, a clone, says nothing of
    threads): the table beside the sentence shows it, so the sentence says it."""
    fits, beta = view.single_thread_fits, float(best["stated_gbps"])
    same = best["op"] == "host" and best["method"] == SINGLE_THREAD["method"]
    if not same or fits.empty or not fits["stated_gbps"].notna().any() or (one := float(fits["stated_gbps"].max())) <= beta:
        return ""
    reached = f" torch's copy_ on one thread (host copy_ single_thread) reached β = {one:.3g} GB/s"
    if noise := beta_noise(view):
        return f"{reached}: which of the two is faster: {noise}."
    return f"{reached}, more than that: on this machine more threads made the host copy slower."
