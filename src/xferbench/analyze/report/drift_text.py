"""How the run's comparisons are judged, in words (xferbench.ratios, analyze/drift.py decide it): the method in one
line for the page's notes, and a family's same-code pairs read as the run's A/A check. No torch here."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...ratios import Split, split_in_time
from ...units import count, format_bytes, format_seconds, format_span
from ..drift import Pair, paired_blocks, regimes_of, rounds_order
from ..view import RunView

__all__ = ["across", "block_times", "statement", "stepped_between", "verdict"]

_REGIME = {("pageable", "bandwidth"): "pageable or host memory from 1 MiB", ("pageable", "latency"): "pageable below 1 MiB",
           ("device", "bandwidth"): "pinned or device from 1 MiB", ("device", "latency"): "pinned or device below 1 MiB",
           ("simulated", "bandwidth"): "the cost model's from 1 MiB", ("simulated", "latency"): "the cost model's below 1 MiB"}


def statement(view: RunView) -> str:
    """The rule every comparison of the page follows, with what this run gives it, in one sentence."""
    rows = view.rows
    blocks = rows["block_medians"].map(lambda b: len(b) if isinstance(b, list) else 0) if "block_medians" in rows else []
    blocked, most = int(sum(n > 0 for n in blocks)), max(blocks, default=0)
    # under 0.05% (a cost model's pairs, alike by design, but for float rounding) reads as none, not as "0.0%"
    drift = "; ".join(f"{_REGIME[r]} {d.sd:.1%} ({d.df} degrees of freedom)" if d.sd >= 0.0005 else
                      f"{_REGIME[r]} none beyond its rounds' own noise" for r, d in view.drift.regimes.items())
    # regimes the run has cases of but no evidence for: their unpaired comparisons can't tell (a simulated run's host
    # copies, run for real beside the cost model's 0.0%)
    if drift and (unmeasured := sorted(regimes_of(rows) - set(view.drift.regimes))):
        drift += "; " + ", ".join(_REGIME[r] for r in unmeasured) + " none measured (their comparisons can't tell)"
    sources = " and ".join(name for name, has in (("same-code pairs", any(not p.paired for p in view.drift.pairs)),
                                                  ("blocks", blocked)) if has)  # a paired pair is no drift evidence
    paired = (f"any two of the {count(blocked, 'case')} measured in interleaved blocks are judged block by block"
              if blocked else "no case was measured in interleaved blocks")
    if drift:
        whose = "; other comparisons rest on their" if blocked else ", so every comparison rests on its cases'"
        rule = (f"{paired}{whose} rounds plus the run's drift between cases of their regime (a standard deviation, "
                f"from its {sources}: {drift})")
    else:  # two cases' rounds bound nothing then: the cases may have drifted apart by any amount
        rule = (f"{paired}; every {'other ' if blocked else ''}comparison can't tell, as nothing in the run measures how "
                f"far two cases drift apart{_in_time(rows)}")
    # what a reader can do about a "can't tell" that blocks can settle: more of them, or blocks at all
    more = (f"A paired interval narrows about as the square root of its blocks (this run: {most}; --xfer-blocks=N "
            "measures every case in N)." if most else "Measured in interleaved blocks (--xfer-blocks=N), two cases "
            "are judged block by block, without the drift between them.")
    return (f"Each comparison carries its own 95% interval and says \"can't tell\" where that interval holds 1 (no "
            f"difference): {rule}. {more}")


def _steps(rows: pd.DataFrame) -> list[tuple[Split, dict]]:
    """Each row whose rounds stepped in time as it ran (``ratios.split_in_time``), with its split."""
    return [(split, row) for row in rows.to_dict("records")
            if isinstance(row.get("data"), list) and (split := split_in_time(row["data"])) is not None]


def _in_time(rows: pd.DataFrame) -> str:
    """What the cases' own rounds show of the drift a run without repeated cases cannot measure between them: those whose
    rounds stepped as they ran (``ratios.split_in_time``), the largest step named (the CPU sample's no-op .cpu() at 4 B:
    2.15×, 24 rounds at 349-536 ns a call, then 25 at 237-261 ns)."""
    if not (found := _steps(rows)):
        return ""
    split, row = max(found, key=lambda f: f[0].ratio)
    first, then = (format_span(format_seconds(part.min()), format_seconds(part.max())) for part in (split.before, split.after))
    whose = "one case's rounds stepped in time:" if len(found) == 1 else f"{len(found)} cases' rounds stepped in time, the most"
    return (f"; yet the machine drifted as they ran: {whose} {row['path']} at {format_bytes(row['nbytes'])} by "
            f"{split.ratio:.3g}× (its first {len(split.before)} rounds at {first} a call, the {len(split.after)} after them "
            f"at {then})")


def stepped_between(rows: pd.DataFrame, a: pd.Series, b: pd.Series) -> str:
    """Where a case of their run that ran between ``a`` and ``b`` (rows keep the order they ran in) stepped in time as
    it ran (``ratios.split_in_time``) the way the earlier of the two stands to the later, by as much as they differ:
    that case in words, the machine alone could part them; else "". The CPU sample's .to(torch.device('cpu')) at 4 B
    and 16 MiB, 743 against 358 ns: the .cpu() at 4 B that ran between them stepped 2.15× down."""
    first, last = (a, b) if a.name < b.name else (b, a)
    between = rows.loc[first.name + 1:last.name - 1]
    between = between[between["run"] == first["run"]] if "run" in between else between
    found = [(split, row) for split, row in _steps(between)  # stepped the way the pair stands, as far
             if (np.median(split.before) > np.median(split.after)) == (first["median_s"] > last["median_s"])
             and split.ratio >= max(a["median_s"], b["median_s"]) / min(a["median_s"], b["median_s"])]
    if not found:
        return ""
    split, row = max(found, key=lambda f: f[0].ratio)
    return (f"{row['path']} at {format_bytes(row['nbytes'])}, which ran between them, stepped {split.ratio:.3g}× as it "
            "ran: the machine alone could part them")


def _where(view: RunView, pair: Pair) -> str:
    """``pinned non-blocking 1 KiB``: what tells one pair of a family from its others."""
    row = pair.slow
    kind = " ".join(str(v) for v in (row.get("host_memory"), "non-blocking" if row.get("non_blocking") else None)
                    if isinstance(v, str) and v)
    where = f"{kind} {format_bytes(pair.nbytes)}".strip()
    return f"{where} ({pair.run})" if len(view.sources) > 1 else where


def verdict(view: RunView, op: str) -> str | None:
    """A family's same-code pairs, each judged by its own interval (an unpaired pair against the run's other drift
    evidence, never its own): they should not differ, so those told apart are named and the rest counted; None when
    the family has none."""
    pairs = sorted(view.drift.pairs_of(op), key=lambda p: (p.calls, p.nbytes))
    if not pairs:
        return None
    said = []
    for calls in dict.fromkeys(p.calls for p in pairs):
        judged = [(pair, view.ratio(pair.slow, pair.fast, leave_out=pair.key)) for pair in pairs if pair.calls == calls]
        apart = [(pair, ratio) for pair, ratio in judged if ratio.resolved]
        rest = [ratio for _, ratio in judged if not ratio.resolved]
        text = f"{calls} run the same code"
        if apart:
            # one code: a pair told apart is the run's drift, said first, never a difference of the calls
            why = ("the machine drifted more than pairing its blocks removes" if all(r.paired for _, r in apart) else
                   "measured one after the other, it drifted beyond the run's other evidence of that regime")
            text += (f": apart by drift at {'; '.join(f'{_where(view, p)} {r.text()}' for p, r in apart)} ({why})")
        if rest:
            seen = sorted(r.could_see for r in rest if r.judged)
            span = f"{seen[0]:.2f}" if seen and f"{seen[0]:.2f}" == f"{seen[-1]:.2f}" else "-".join(
                f"{x:.2f}" for x in seen[::max(len(seen) - 1, 1)])
            could = f" (could see ≥ {span}×)" if seen else ""
            same = all(r.same for r in rest)  # a cost model's pairs: alike by design
            # a pair is one case (size, memory): its slowest call against its fastest
            cases = "its one case" if len(judged) == 1 else f"{len(rest)} of its {len(judged)} cases"
            text += f"{';' if apart else ':'} {cases}, slowest call against fastest, " + (
                "took the same time" if same else f"can't tell{could}")
        said.append(text + ".")
    return " ".join(said)


def block_times(row: pd.Series) -> list[float]:
    """A row's block medians that were measured, fastest first; none for a row measured whole (its ``block_medians``
    NaN beside rows measured in blocks)."""
    blocks = row.get("block_medians")
    return sorted(m for m in blocks if isinstance(m, float) and m > 0) if isinstance(blocks, list) else []


def across(row: pd.Series) -> list[str]:
    """``1.14-2.83 GB/s across its 6 blocks`` where the row was measured in blocks (how far a busy run's blocks drifted
    apart), else nothing."""
    medians = block_times(row)
    if len(medians) < 2:
        return []
    gbps = sorted(float(row["nbytes"]) / m / 1e9 for m in medians)
    return [f"{gbps[0]:.3g}-{gbps[-1]:.3g} GB/s across its {len(gbps)} blocks"]


def one_after_other(a: pd.Series, b: pd.Series, names: tuple[str, str]) -> str:
    """``; every round of the code before took longer than every round of the code after (quickest 896 µs against slowest
    804 µs), one case measured after the other: an order the run's drift could give too``, of rows ``a`` and ``b`` named
    ``names``, where every round of one lies above every round of the other (``rounds_order``) and their rounds were not
    interleaved (where they were, ``rounds_apart`` judges the order); else nothing."""
    if paired_blocks(a, b)[0].size or (order := rounds_order(a, b)) is None:
        return ""
    slower, faster = names if min(a["data"]) > order[1] else names[::-1]  # a's fastest past the other's slowest
    return (f"; every round {slower} took longer than every round {faster} (quickest {format_seconds(order[0])} against "
            f"slowest {format_seconds(order[1])}), one case measured after the other: an order the run's drift could give too")
