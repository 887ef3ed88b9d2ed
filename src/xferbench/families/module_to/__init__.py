"""module_to: ``net.to(device)``, a first move and a second one that copies nothing.

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...ratios import UNJUDGED, Ratio, split_in_time
from ...units import count, format_bytes, format_seconds
from ..base import Family, Judge, judge_of, ms, of_variant, span

if TYPE_CHECKING:
    import pandas as pd


def _apart(slow: pd.DataFrame, fast: pd.DataFrame, judge: Judge, made: dict[Any, pd.Series]) -> bool:
    """Whether every case of ``slow`` took longer than every one of ``fast``, each pair's ratio resolved; ``made``: each
    row by label, made once by the caller (a Series made for each pair tried was most of a large run's report)."""
    return all((r := judge(made[a], made[b])).resolved and r.value > 1 for a in slow.index for b in fast.index)


def _step(again: pd.DataFrame, judge: Judge) -> tuple[str, Ratio, pd.DataFrame, pd.DataFrame] | None:
    """Where the sizes split into a smaller and a larger run of sizes whose times lie apart (``_apart``), the step in
    words, its ratio (slower over faster) and the two runs of sizes; else None. The second move copies nothing, yet the
    H200 timed 74.7-79.4 µs up to 393 KiB and 44.7-45.5 µs from 3.82 MiB on."""
    rows, made = again.sort_values("nbytes"), dict(again.iterrows())
    for cut in range(1, len(rows)):
        small, large = rows.iloc[:cut], rows.iloc[cut:]
        for slow, fast in ((small, large), (large, small)):
            if _apart(slow, fast, judge, made):
                step = judge(slow.loc[slow["median_s"].idxmin()], fast.loc[fast["median_s"].idxmax()])
                return (f"{ms(small['median_s'])} up to {format_bytes(small['nbytes'].max())} of parameters and "
                        f"{ms(large['median_s'])} from {format_bytes(large['nbytes'].min())}", step, small, large)
    return None


def _elsewhere(rows: pd.DataFrame | None, dst: str, judge: Judge,
               step: tuple[str, Ratio, pd.DataFrame, pd.DataFrame]) -> tuple[str, bool]:
    """What another machine instance measured of the second move to ``dst`` at two sizes or more, where this one's
    sizes ran in order and stepped: its span and its growth with its own interval, and whether that interval excludes
    what a step the bytes set would give there (the H200's quick-scenarios: 1.07× (0.867-1.32) as long from 3.75 KiB
    to 38.2 MiB, where full.json's drop of 1.64× (1.33-2.02) at 3.82 MiB would give 0.495-0.752×). Each instance is
    judged alone: none is divided by the other."""
    _, ratio, small, large = step
    again, said, ruled_out = of_variant(rows, "again") if rows is not None else None, "", False
    # the larger sizes' time over the smaller's, were the bytes to set the step
    low, high = (1 / ratio.high, 1 / ratio.low) if small["median_s"].min() > large["median_s"].max() \
        else (ratio.low, ratio.high)
    for run, theirs in [] if again is None else again[again["dst"] == dst].groupby("run"):
        if theirs["nbytes"].nunique() < 2:
            continue
        grew = _grown(theirs, judge)
        spans = theirs["nbytes"].min() <= small["nbytes"].max() and theirs["nbytes"].max() >= large["nbytes"].min()
        out = spans and grew.judged and (grew.high < low or grew.low > high)
        said += (f" Another machine instance ({run}) took {ms(theirs['median_s'])} from {format_bytes(theirs['nbytes'].min())} "
                 f"to {format_bytes(theirs['nbytes'].max())}, {_growth(theirs, grew)}" + (
                     f", where a step the bytes set would give {low:.3g}-{high:.3g}×: the size does not set this one"
                     if out else "") + ".")
        ruled_out |= out
    return said, ruled_out


def _as_it_ran(again: pd.DataFrame, ratio: Ratio) -> str:
    """Where one size's rounds split in time (``ratios.split_in_time``) by a ratio inside the step's interval, that case
    in words; else "". The size is one, so the step is one in time."""
    for _, row in again[again["mixed_iterations"].ne(True)].iterrows() if "mixed_iterations" in again else again.iterrows():
        split = split_in_time(row.get("data") if isinstance(row.get("data"), list) else [])
        if split is not None and ratio.low <= split.ratio <= ratio.high:
            return (f"the {format_bytes(row['nbytes'])} case itself stepped as it ran, its first {len(split.before)} rounds at "
                    f"{ms(split.before)} a call and the {len(split.after)} after them at {ms(split.after)}")
    return ""


def _odd_one(again: pd.DataFrame, judge: Judge) -> str:
    """Where one size lies apart (``_apart``) from every other and the others do not (the H200's .to(cpu): 68-73.3 µs
    but 40.7 µs at 38.2 MiB), the others' span and that size named, with how its loop differed where it did (that row
    ran 100 calls a round, the others 14-15); else nothing."""
    if len(again) < 3:
        return ""
    made = dict(again.iterrows())
    for label, one in made.items():
        rest = again.drop(index=label)
        if not (_apart(rest, again.loc[[label]], judge, made) or _apart(again.loc[[label]], rest, judge, made)):
            continue
        if _step(rest, judge):
            return ""
        loop = ""
        if int(one["iterations"]) not in set(rest["iterations"].astype(int)):
            loop = (f" (that case ran {int(one['iterations'])} calls a round, the others {span(rest['iterations'], '.0f')}:"
                    " the loop differs, so the run cannot say the bytes set it)")
        return (f"{ms(rest['median_s'])} from {format_bytes(again['nbytes'].min())} to "
                f"{format_bytes(again['nbytes'].max())} of parameters, but {format_seconds(one['median_s'])} at "
                f"{format_bytes(one['nbytes'])}{loop}: nothing is copied (every parameter tensor is visited).")
    return ""


def _grown(again: pd.DataFrame, judge: Judge) -> Ratio:
    """The most parameters' bytes' time over the fewest's, with its interval."""
    return judge(again.loc[again["nbytes"].idxmax()], again.loc[again["nbytes"].idxmin()])


def _growth(again: pd.DataFrame, grew: Ratio) -> str:
    """How the cost grew from the fewest parameters' bytes to the most (``_grown``), with its interval: a flat cost says
    the bytes set little of it, without a claim the interval does not make (the CPU sample's cannot be judged: its
    medians are said, 0.99× as long at 10,421× the bytes, and that whether they differ the run cannot tell)."""
    times = f"{again['nbytes'].max() / again['nbytes'].min():,.0f}×"
    if not grew.judged:
        return (f"and at {times} the bytes it took {grew.value:.3g}× as long (whether that differs from 1, can't tell: "
                f"{UNJUDGED[grew.basis]})")
    if grew.same:  # the simulated run's: a cost model's times, alike by design
        return f"and at {times} the bytes it took the same time"
    return f"and at {times} the bytes it took {grew.figures()} as long"


def _fastest(again: pd.DataFrame) -> str:
    """What the fastest rounds bound where a median mixes two loops or holds a wait: a call took at most its fastest
    round's time a call, so the largest size's bytes cost no more (the quick run's 38.2 MiB: 40.6 µs, 986 GB/s)."""
    big = again.loc[again["nbytes"].idxmax()]
    return (f"and its fastest rounds took {ms(again['min_s'])} a call, {format_seconds(big['min_s'])} at "
            f"{format_bytes(big['nbytes'])}{_which_rounds(big)}: {big['nbytes'] / big['min_s'] / 1e9:,.3g} GB/s, were "
            "those bytes copied")


def _which_rounds(row: pd.Series) -> str:
    """Where a mixed row's fastest round ran fewer calls than its most (the quick run's 38.2 MiB: one call, 40.6 µs,
    beside rounds of 100 at 7.88 ms, 78.8 µs a call, which the appendix gives), which rounds it was; else ""."""
    calls, many = row.get("block_iterations"), row.get("many_rounds")
    if row.get("mixed_iterations") not in (True,) or not isinstance(calls, list) or not isinstance(many, list) or not many \
            or row["min_s"] * max(calls) >= min(many):
        return ""
    return (f" (a round of {count(int(min(calls)), 'call')}; its rounds of {int(max(calls))}: "
            f"{format_seconds(min(many) / max(calls))} a call at fastest)")


def finding(rows: pd.DataFrame) -> list[str]:
    out, judge, shuffled = [], judge_of(rows), bool(rows.attrs.get("shuffled"))
    for dst, again in of_variant(rows, "again").sort_values("nbytes").groupby("dst"):
        # an unshuffled step may be time, not size: another instance's growth at those sizes beside it
        stepped = _step(again, judge)
        elsewhere, ruled_out = _elsewhere(rows.attrs.get("elsewhere"), dst, judge, stepped) if stepped and not shuffled \
            else ("", False)
        within = _as_it_ran(again, stepped[1]) if stepped and not shuffled else ""
        order = (", and it lines up with size (the cases ran shuffled)" if shuffled else "; the sizes ran one after "
                 "another" + (", so it is as much a step in time" if ruled_out else
                              ", so whether it follows the size or the time, can't tell (--xfer-shuffle would)"))
        # a step inside one size's rounds is one in time: said first, the sizes' ratio no finding of its own
        step = ((f"{stepped[0]}, though nothing is copied (every parameter tensor is visited): a step in time, not "
                 f"size: {within}.{elsewhere}" if within else f"{stepped[0]}: a step of {stepped[1].text()} though "
                 f"nothing is copied (every parameter tensor is visited){order}.{elsewhere}") if stepped else
                _odd_one(again, judge))
        # a median of two loops (blocks timed calls a round 2x or more apart), or one holding a wait for the CPU
        # (analyze/load/blocks.py), decides nothing: the fastest rounds bound the call
        flags = again.reindex(columns=["mixed_iterations", "on_ticks"])  # NaN where the run recorded neither
        ticked = again[flags["on_ticks"].notna()]
        bytes_said = _fastest(again) if flags["mixed_iterations"].eq(True).any() or len(ticked) else \
            _growth(again, _grown(again, judge))
        waited = "" if ticked.empty else (f" (its rounds at {', '.join(format_bytes(n) for n in ticked['nbytes'])} "
                                          "waited for the CPU)")
        out.append(f"A second .to('{dst}') of a module already there took " + (step or (
            f"{ms(again['median_s'])} from {format_bytes(again['nbytes'].min())} to "
            f"{format_bytes(again['nbytes'].max())} of parameters{waited}: nothing is copied (every parameter tensor "
            f"is visited), {bytes_said}.")))
    first = of_variant(rows, "first")
    if not first.empty:
        big = first.loc[first["nbytes"].idxmax()]
        out.append(f"The first move of {format_bytes(big['nbytes'])} of parameters to {big['dst']} took "
                   f"{format_seconds(big['median_s'])} ({big['bandwidth_gbps']:.3g} GB/s).")
    return out


RECORD = Family("module_to", "Scenario: moving a module (net.to(device))", "net.to(device): a first move and a second no-op one",
                "scenario", "tab:cyan", finding=finding,
                caption="The first move copies every parameter; a second .to() to the same device copies nothing but still "
                        "visits every parameter tensor.")
