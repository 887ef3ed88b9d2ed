"""torch's host copy_ on its default threads against the same copy on one thread: where the run has both, which was
faster, held against the rounds' spread (IQR) and the run's drift floor, and the machine's load where it recorded it."""

from __future__ import annotations

import pandas as pd

from ...units import format_bytes, format_seconds
from ..model import SINGLE_THREAD
from ..view import RunView
from . import drift_text

__all__ = ["apart", "beta_noise", "host_threads", "thread_pairs", "threads_against_one"]


def thread_pairs(view: RunView) -> pd.DataFrame:
    """Per size both ran: the default-thread copy_ and the single-thread one, side by side (``_many``/``_one``)."""
    rows = view.rows
    host = rows[(rows["op"] == "host") & (rows["method"] == SINGLE_THREAD["method"])]
    one = host[host["variant"] == SINGLE_THREAD["variant"]]
    many = host[host["variant"] != SINGLE_THREAD["variant"]]
    return many.merge(one, on="nbytes", suffixes=("_many", "_one"))


def apart(view: RunView, row: pd.Series) -> str | None:
    """Why the two copies of one size (a ``thread_pairs`` row) can't be told apart: their rounds' middle halves (q1 to q3)
    overlap, or their medians lie within the run's drift floor; None where they are apart."""
    q = {side: (row.get(f"q1_s_{side}"), row.get(f"q3_s_{side}")) for side in ("many", "one")}
    if all(pd.notna(v) for pair in q.values() for v in pair) and \
            q["many"][0] <= q["one"][1] and q["one"][0] <= q["many"][1]:
        return (f"their rounds overlap, IQR {format_seconds(row['iqr_s_many'])} and "
                f"{format_seconds(row['iqr_s_one'])}")
    if view.drift.within(row["median_s_many"], row["median_s_one"]):
        return drift_text.clause(view.drift)
    return None


def beta_noise(view: RunView) -> str | None:
    """Why the two copies' β cannot be told apart: at some size that both fits' β rest on (beyond the caches, and past
    the default-thread copy's half of β, where the bytes set the time), the two copies lie within their spread or the
    drift floor (``apart``); None where every such size tells them apart."""
    pairs = thread_pairs(view)
    if pairs.empty:
        return None
    rows, resident = view.rows, view.resident.to_numpy(dtype=bool)
    cached = set(rows.loc[resident & rows["path"].isin(set(pairs["path_many"]) | set(pairs["path_one"])), "nbytes"])
    fit = view.fit_of(str(pairs["path_many"].iloc[0]))
    half = float(fit["half_peak_bytes"]) if fit is not None and pd.notna(fit["half_peak_bytes"]) else 0.0
    for _, row in pairs[~pairs["nbytes"].isin(cached) & (pairs["nbytes"] >= half)].sort_values("nbytes").iterrows():
        if (why := apart(view, row)) is not None:
            return f"at {format_bytes(int(row['nbytes']))} {why}"
    return None


def _times(factor: float) -> str:
    return f"{factor:,.0f}" if factor >= 100 else f"{factor:.3g}"


def host_threads(view: RunView) -> str:
    """``torch's default threads (8)``, or without a count where the fingerprint has none."""
    threads = (view.machine_info.get("xferbench") or {}).get("host", {}).get("torch_threads")
    return f"torch's default threads ({threads})" if threads else "torch's default threads"


def threads_against_one(view: RunView) -> str | None:
    """The size where the default threads and one thread differ most, among the sizes whose two copies lie apart
    (``apart``: beyond their spread and the drift floor), in one sentence: which took longer and how many times, and
    the load where the run recorded one; None where no size tells them apart (the β sentence says can't tell)."""
    pairs = thread_pairs(view)
    told = pairs[[apart(view, row) is None for _, row in pairs.iterrows()]] if not pairs.empty else pairs
    if told.empty:
        return None
    ratio = told["median_s_many"] / told["median_s_one"]
    row = told.loc[(ratio.where(ratio >= 1, 1 / ratio)).idxmax()]
    load = view.busy
    under = f", under load ({load})" if load else ""
    size = format_bytes(int(row["nbytes"]))
    many, one = float(row["median_s_many"]), float(row["median_s_one"])
    if many > one:
        measured = (f"A {size} host copy_ with {host_threads(view)} took {_times(many / one)}× as long as on one thread "
                    f"({format_seconds(many)} against {format_seconds(one)}){under}")
        beside = _neighbours_disagree(view, pairs, int(row["nbytes"]))
        if beside:  # a figure out of line with its neighbours is no thread effect this run shows
            return f"{measured}; {beside}, so whether more threads made it slower, can't tell."
        return f"{measured}: more threads made it slower at this size."
    return (f"A {size} host copy_ on one thread took {_times(one / many)}× as long as with {host_threads(view)} "
            f"({format_seconds(one)} against {format_seconds(many)}){under}.")


def _neighbours_disagree(view: RunView, pairs: pd.DataFrame, nbytes: int) -> str | None:
    """Where a size next to ``nbytes`` (the next smaller and larger both copies ran) does not also show the default
    threads slower and apart from one thread: the clause saying so; None where every neighbour bears it out."""
    sizes = sorted(pairs["nbytes"].unique())
    at = sizes.index(nbytes)
    beside = [n for n in sizes[max(at - 1, 0):at + 2] if n != nbytes]
    kept = []
    for n in beside:
        row = pairs[pairs["nbytes"] == n].iloc[0]
        if apart(view, row) is not None or row["median_s_many"] <= row["median_s_one"]:
            kept.append(f"{format_bytes(int(n))} {format_seconds(float(row['median_s_many']))} against "
                        f"{format_seconds(float(row['median_s_one']))}")
    if not kept:
        return None
    several = len(kept) > 1
    return f"the size{'s' if several else ''} beside it do{'' if several else 'es'} not bear it out ({'; '.join(kept)})"
