"""How far a run moves by itself, per regime (analyze/drift.py), and the verdicts it feeds (RunView.ratio): hand-fed
rows with exact answers, the H200 sample, the simulated machine."""

import math
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from xferbench.analyze.drift import median_bounds, paired_blocks, regime, regimes_of, run_drift, same_code_pairs, side
from xferbench.analyze.ladder import Ladder, Rung, Step
from xferbench.analyze.load.results import load
from xferbench.analyze.report import drift_text, findings, ladder_text
from xferbench.analyze.report.break_even import pinning_break_even
from xferbench.analyze.report.findings import h2d_pinned_vs_pageable
from xferbench.analyze.view import RunView
from xferbench.families.base import Rule, ratios
from xferbench.ratios import Ratio, log_se, median_span, order_bounds, order_se

from fakes import drifting_spec, view_of_rows

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "reports" / "samples" / "h200"
MiB = 2**20


def row(op: str, method: str, nbytes: int, median_s: float, *, run: str = "a", variant: str | None = None,
        src: str = "cpu", dst: str = "cuda:0", host_memory: str | None = "pageable", **more) -> dict:
    return {"op": op, "method": method, "variant": variant, "nbytes": nbytes, "median_s": median_s, "iqr_s": 0.0,
            "rounds": 30, "run": run, "src": src, "dst": dst, "host_memory": host_memory, "non_blocking": False,
            "dtype": "float32", "path": f"{op} {method if variant is None else variant} {nbytes} {run}"} | more


def handfed() -> pd.DataFrame:
    """d2h .cpu()/.to('cpu') 10% apart at 1 MiB, h2d .cuda/.to 25% at 1 MiB (pageable), cuda_vs_to 20% at 64 MiB and
    its Module.to/Module.cuda 40%; a no-op pair 80% apart (argument parsing, not drift), a .cpu() whose .to('cpu') ran
    in another run (no pair), and a pinned h2d pair 1% apart at 1 MiB. No spread within a case: exact figures."""
    return pd.DataFrame([
        row("d2h", "cpu", MiB, 1.0e-3, src="cuda:0", dst="cpu"), row("d2h", "to", MiB, 1.1e-3, src="cuda:0", dst="cpu"),
        row("h2d", "cuda", MiB, 2.0e-3), row("h2d", "to", MiB, 2.5e-3), row("h2d", "copy_", MiB, 9.0e-3),
        row("h2d", "cuda", MiB, 1.0e-3, host_memory="pinned"), row("h2d", "to", MiB, 1.01e-3, host_memory="pinned"),
        *(row("cuda_vs_to", v, 64 * MiB, t, variant=v, host_memory=None) for v, t in
          (("cuda", 10e-3), ("to_str", 12e-3), ("to_device", 11e-3), ("module_to", 14e-3), ("module_cuda", 10e-3))),
        row("noop", "cpu", 4, 0.3e-6, src="cpu", dst="cpu", host_memory=None),
        row("noop", "to", 4, 0.54e-6, src="cpu", dst="cpu", host_memory=None),
        row("d2h", "cpu", 4 * MiB, 1.0e-3, src="cuda:0", dst="cpu", run="a"),
        row("d2h", "to", 4 * MiB, 3.0e-3, src="cuda:0", dst="cpu", run="b"),
    ])


# -- hand-fed: exact values --------------------------------------------------------------------------------------

def test_the_pairs_are_same_code_calls_of_one_run_and_size():
    pairs = same_code_pairs(handfed())
    assert [(p.op, p.calls.split()[0], p.nbytes, round(p.spread, 6)) for p in pairs] == [
        ("cuda_vs_to", "Module.to", 64 * MiB, 0.4), ("h2d", ".cuda(i)", MiB, 0.25), ("cuda_vs_to", ".cuda(i),", 64 * MiB, 0.2),
        ("d2h", ".cpu()", MiB, 0.1), ("h2d", ".cuda(i)", MiB, 0.01)]



def test_a_pair_is_found_whatever_the_rows_order_and_leaves_out_zero_medians_and_lone_calls():
    """A .cpu() alone in run a does not stop run b's pair from being found; a zero median is no call; pairs of equal
    spread come in the order of their runs, whatever the order of the rows."""
    rows = [row("d2h", "cpu", MiB, 1.0e-3, src="cuda:0", dst="cpu", run="a"),
            *(row("d2h", m, MiB, t, src="cuda:0", dst="cpu", run=r) for r in ("c", "b") for m, t in (("cpu", 1e-3),
                                                                                                    ("to", 1.1e-3))),
            row("d2h", "to", 2 * MiB, 0.0, src="cuda:0", dst="cpu", run="c"),
            row("d2h", "cpu", 2 * MiB, 1.0e-3, src="cuda:0", dst="cpu", run="c")]
    for frame in (pd.DataFrame(rows), pd.DataFrame(rows[::-1])):
        assert [(p.run, p.nbytes, p.slow["method"], round(p.spread, 6)) for p in same_code_pairs(frame)] == [
            ("b", MiB, "to", 0.1), ("c", MiB, "to", 0.1)]


def test_a_side_is_its_rounds_else_its_iqr_else_one_round_without_error():
    median, iqr = 1e-3, 0.1e-3
    assert side(pd.Series(row("h2d", "cuda", MiB, median, iqr_s=iqr, rounds=30))) == (median, log_se(median, iqr, 30), 30)
    assert side(pd.Series(row("h2d", "cuda", MiB, median, iqr_s=iqr, rounds=9, data=[1e-3]))) == (
        median, log_se(median, iqr, 9), 9)  # one round kept: the IQR's
    assert side(pd.Series(row("h2d", "cuda", MiB, median, iqr_s=iqr, rounds=9, data=[1e-3, 2e-3]))) == (
        median, order_se([1e-3, 2e-3]), 2)
    for missing in ({"iqr_s": None}, {"iqr_s": math.nan}, {"rounds": None}, {"rounds": math.nan}):
        assert side(pd.Series(row("h2d", "cuda", MiB, median, iqr_s=iqr) | missing)) == (median, 0.0, 1)


def test_blocks_pair_only_within_one_run_and_the_same_count():
    def blocks(medians, run="a"):
        return pd.Series(row("d2h", "cpu", MiB, 1e-3, src="cuda:0", dst="cpu", run=run, block_medians=medians))

    x, y = paired_blocks(blocks([1.0, 2.0]), blocks([3.0, 4.0]))
    assert (x.tolist(), y.tolist()) == ([1.0, 2.0], [3.0, 4.0])
    # Only the slots where both blocks have a positive median pair: two such are enough, one is not.
    x, y = paired_blocks(blocks([1e-3, 2e-3, math.nan, 3e-3, 0.0]), blocks([2e-3, 0.0, 1e-3, 4e-3, 1e-3]))
    assert (x.tolist(), y.tolist()) == ([1e-3, 3e-3], [2e-3, 4e-3])
    for a, b in ((blocks([1.0, 2.0]), blocks([3.0, 4.0], run="b")), (blocks([1.0, 2.0, 3.0]), blocks([3.0, 4.0])),
                 (blocks([1e-3, math.nan]), blocks([1e-3, 1e-3]))):
        assert [found.size for found in paired_blocks(a, b)] == [0, 0]


@pytest.mark.parametrize(("calls", "other", "kept"), [
    ([100, 100, 1, 1, 1, 1], [1] * 6, [2, 3, 4, 5]),  # the busy run's 1 MiB beside 64 MiB: the four timed alike
    ([100, 100, 1, 1, 1, 1], [100, 100, 100, 1, 1, 1], [0, 1, 3, 4, 5]),  # both mixed: pair by pair
    ([100, 1, 100, 100, 100, 100], [1] * 6, [0, 1, 2, 3, 4, 5]),  # one pair timed alike is too few: every pair
    ([100, 60, 1, 1, 1, 1], [1] * 6, [2, 3, 4, 5])])  # 60 against 1 is 2x or more apart
def test_a_mixed_rows_blocks_pair_only_where_timed_alike(calls, other, kept):
    """A row whose blocks timed calls a round 2x or more apart pairs only its blocks timed as the other row's (calls a
    round under 2x apart), where two or more are; else every pair, as a row timed alike throughout pairs."""
    def blocks(iterations):
        return pd.Series(row("host", "copy_", MiB, 1e-3, block_medians=[float(i + 1) for i in range(6)],
                             block_iterations=[float(n) for n in iterations],
                             mixed_iterations=max(iterations) >= 2 * min(iterations)))

    x, y = paired_blocks(blocks(calls), blocks(other))
    assert x.tolist() == y.tolist() == [float(i + 1) for i in kept]
    # a row timed alike throughout, beside another, pairs every block whatever its calls a round
    assert paired_blocks(blocks([1000] * 6), blocks([1] * 6))[0].size == 6


def test_regimes_split_pageable_from_pinned_and_latency_from_bandwidth():
    frame = handfed()
    assert [regime(r) for _, r in frame.iloc[[0, 5, 7, 12]].iterrows()] == [
        ("pageable", "bandwidth"), ("device", "bandwidth"), ("pageable", "bandwidth"), ("pageable", "latency")]
    assert regime(pd.Series(row("d2d", "copy_", 4, 1e-6, src="cuda:0", dst="cuda:0", host_memory=None))) == (
        "device", "latency")
    # a gloo world's ranks move host memory: "rank0:cpu" to "rank1:cpu" or "all:cpu"; an NCCL world's are devices
    assert regime(pd.Series(row("send_recv", "send", MiB, 1e-3, src="rank0:cpu", dst="rank1:cpu", host_memory=None))) \
        == ("pageable", "bandwidth")
    assert regime(pd.Series(row("all_reduce", "x", 4, 1e-5, src="rank0:cuda:0", dst="all:cuda:0", host_memory=None))) \
        == ("device", "latency")
    # torch.empty touches no byte at any size: latency, where torch.ones of the same size writes its pages
    created = {m: regime(pd.Series(row("create", m, 64 * MiB, 1e-5, src="cpu", dst="cpu", host_memory=None)))
               for m in ("empty", "ones")}
    assert created == {"empty": ("pageable", "latency"), "ones": ("pageable", "bandwidth")}
    assert regime(pd.Series(row("host", "empty", 64 * MiB, 1e-5, host_memory="pageable"))) == ("pageable", "bandwidth")


def test_each_regime_pools_its_own_evidence_and_a_pair_never_vouches_for_itself():
    drift = run_drift(handfed())
    pageable = [math.log1p(s) ** 2 for s in (0.4, 0.25, 0.2, 0.1)]
    assert drift.regimes[("pageable", "bandwidth")].sd == pytest.approx(math.sqrt(sum(pageable) / 4))
    assert drift.regimes[("device", "bandwidth")].sd == pytest.approx(math.log1p(0.01))
    pinned = pd.Series(row("h2d", "to", MiB, 1e-3, host_memory="pinned"))
    module = next(p for p in drift.pairs if p.calls.startswith("Module"))
    left = drift.of(module.slow, leave_out=module.key)
    assert (left.sd, left.df) == pytest.approx((math.sqrt(sum(pageable[1:]) / 3), 3))
    assert drift.of(pinned, module.slow).sd == drift.regimes[("pageable", "bandwidth")].sd  # the wider of the two
    latency = pd.Series(row("host", "copy_", 4, 1e-6, src="cpu", dst="cpu"))  # no evidence there: the whole pool
    assert drift.of(latency).df == 5


def test_one_call_a_round_against_many_is_judged_by_the_wider_bandwidth_pool_too():
    """The latency regime's evidence comes from many calls a round; a comparison with a case timed one call a round
    (a DataLoader step: 4.57 ms against 158 µs at 100 a round) takes its memory's bandwidth pool where that is wider."""
    frame = pd.concat([handfed(), pd.DataFrame([row("d2h", "cpu", 4096, 1.0e-5, src="cuda:0", dst="cpu"),
                                                row("d2h", "to", 4096, 1.01e-5, src="cuda:0", dst="cpu")])])
    drift = run_drift(frame)
    latency, bandwidth = drift.regimes[("pageable", "latency")].sd, drift.regimes[("pageable", "bandwidth")].sd
    assert latency == pytest.approx(math.log1p(0.01)) and bandwidth > 10 * latency
    many = pd.Series(row("host", "copy_", 4096, 1e-6, src="cpu", dst="cpu", iterations=100))
    assert drift.of(many, many.copy()).sd == latency
    assert drift.of(many, pd.Series(dict(many) | {"iterations": 50})).sd == bandwidth  # 2x apart: other loops
    assert drift.of(many, pd.Series(dict(many) | {"iterations": 51})).sd == latency
    # the wider pool is added, never put in place of the rows' own: pinned latency 20% stays against pinned bandwidth 1%
    frame = pd.concat([frame, pd.DataFrame([row("h2d", "cuda", 4096, 1.0e-5, host_memory="pinned"),
                                            row("h2d", "to", 4096, 1.2e-5, host_memory="pinned")])])
    pinned = pd.Series(row("h2d", "to", 4096, 1e-5, host_memory="pinned", iterations=100))
    assert run_drift(frame).of(pinned, pd.Series(dict(pinned) | {"iterations": 1})).sd == pytest.approx(math.log1p(0.2))


def test_blocks_count_only_the_spread_beyond_their_own_noise():
    se = 0.01
    frame = pd.DataFrame([row("host", "copy_", MiB, 1e-3, src="cpu", dst="cpu", block_medians=[1.0, 1.1, 0.9, math.nan],
                              block_log_se=[se] * 4)])
    (evidence,) = run_drift(frame).evidence
    logs = np.log([1.0, 1.1, 0.9])
    assert evidence.df == 2 and evidence.square == pytest.approx(2 * (np.sum((logs - logs.mean()) ** 2) - 2 * se**2))
    noisy = frame.assign(block_log_se=[[1.0] * 4])  # a spread the blocks' own rounds explain: no drift
    assert run_drift(noisy).evidence[0].square == 0.0
    # blocks that timed 1 and 100 calls a round measure different things: no evidence at all
    assert run_drift(frame.assign(mixed_iterations=True)).evidence == ()


def test_a_same_code_pair_counts_its_spread_beyond_both_sides_own_noise():
    """.cpu() 1.0 ms and .to('cpu') 1.2 ms at 1 MiB, each with an IQR over 30 rounds: the pair's squared log spread less
    each side's squared standard error (IQR-based), never the sum nor either one alone."""
    frame = pd.DataFrame([row("d2h", "cpu", MiB, 1.0e-3, src="cuda:0", dst="cpu", iqr_s=0.1e-3),
                          row("d2h", "to", MiB, 1.2e-3, src="cuda:0", dst="cpu", iqr_s=0.3e-3)])
    (evidence,) = run_drift(frame).evidence
    a, b = log_se(1.0e-3, 0.1e-3, 30), log_se(1.2e-3, 0.3e-3, 30)
    assert evidence.square == pytest.approx(math.log1p(0.2) ** 2 - a**2 - b**2)



def test_a_case_gives_evidence_from_two_positive_blocks_of_known_noise_and_names_itself():
    """Blocks without a positive median are left out; two left suffice; a case whose per-block errors do not match its
    blocks gives none, and does not stop the cases after it from giving theirs."""
    def copy(nbytes, medians, errors):
        return row("host", "copy_", nbytes, 1e-3, src="cpu", dst="cpu", block_medians=medians, block_log_se=errors)

    frame = pd.DataFrame([copy(4, [1.0, 2.0], [0.0]), copy(8, [1.0, 0.0, math.nan], [0.0] * 3),
                          copy(MiB, [1.0, 0.0, 2.0, math.inf], [0.0] * 4)])
    (evidence,) = run_drift(frame).evidence
    assert evidence.key == f"host copy_ {MiB} a a {MiB}" and evidence.regime == ("pageable", "bandwidth")
    assert (evidence.square, evidence.df) == pytest.approx((2 * 2 * (math.log(2) / 2) ** 2, 1))

def test_a_same_code_pair_measured_in_paired_blocks_is_the_a_a_check_not_evidence():
    frame = pd.DataFrame([row("d2h", m, MiB, t, src="cuda:0", dst="cpu", block_medians=blocks, block_log_se=[0.0] * 6)
                          for m, t, blocks in (("cpu", 1.0e-3, [1.0, 1.1, 1.0, 1.1, 1.0, 1.1]),
                                               ("to", 1.3e-3, [1.3, 1.4, 1.3, 1.45, 1.3, 1.4]))])
    view = view_of_rows(frame)
    (pair,) = view.drift.pairs
    assert pair.paired and all(e.key != pair.key for e in view.drift.evidence)
    assert drift_text.verdict(view, "d2h").startswith(
        ".cpu() and .to(device) run the same code: apart by drift at pageable 1 MiB 1.29× (")
    assert drift_text.verdict(view, "d2h").endswith("(the machine drifted more than pairing its blocks removes).")


def test_the_method_line_and_a_same_code_verdict_read_back():
    view = view_of_rows(handfed())
    assert drift_text.statement(view) == (
        "Each comparison carries its own 95% interval and says \"can't tell\" where that interval holds 1 (no "
        "difference): no case was measured "
        "in interleaved blocks, so every comparison rests on its cases' rounds plus the run's drift between cases of their "
        "regime (a standard deviation, from its same-code pairs: pinned or device from 1 MiB 1.0% (1 degrees of "
        "freedom); pageable or host memory from 1 MiB 22.7% (4 degrees of freedom); pageable below 1 MiB none measured "
        "(their comparisons can't tell)). Measured in interleaved blocks "
        "(--xfer-blocks=N), two cases are judged block by block, without the drift between them.")
    # Module.to and Module.cuda: 40% apart, but judged without its own evidence by three other pairs (t with 3 df)
    assert drift_text.verdict(view, "cuda_vs_to") == (
        ".cuda(i), .to('cuda:i') and .to(torch.device) run the same code: its one case, slowest call against fastest, "
        "can't tell (could see ≥ 2.14×). Module.to and Module.cuda run the same code: its one case, slowest call against "
        "fastest, can't tell (could see ≥ 1.75×).")


def test_blocked_cases_are_counted_and_same_code_pairs_told_apart_are_named_the_rest_counted():
    """Four .cpu()/.to() pairs in six paired blocks: 1 MiB (non-blocking) told apart, three can't tell (8 MiB's blocks
    lie 1.00-1.03x apart: the first blocks' 1.02x is no paired figure)."""
    def pair(nbytes, a, b, non_blocking=False):
        return [row("d2h", m, nbytes, blocks[0] * 1e-3, src="cuda:0", dst="cpu", non_blocking=non_blocking,
                    block_medians=blocks, block_log_se=[0.0] * 6) for m, blocks in (("cpu", a), ("to", b))]

    view = view_of_rows(pd.DataFrame([
        *pair(MiB, [1.0, 1.1, 1.0, 1.1, 1.0, 1.1], [1.3, 1.4, 1.3, 1.45, 1.3, 1.4], non_blocking=True),
        *pair(2 * MiB, [1.0, 1.1, 1.0, 1.1, 1.0, 1.1], [1.0, 1.12, 1.01, 1.09, 1.0, 1.1]),
        *pair(4 * MiB, [1.0, 1.2, 1.0, 1.1, 1.0, 1.1], [1.1, 1.0, 1.1, 1.2, 1.0, 1.0]),
        *pair(8 * MiB, [1.0, 1.1, 1.0, 1.1, 1.0, 1.1], [1.02, 1.1, 1.03, 1.1, 1.0, 1.12])]))
    assert drift_text.statement(view) == (
        "Each comparison carries its own 95% interval and says \"can't tell\" where that interval holds 1 (no "
        "difference): any two of the 8 "
        "cases measured in interleaved blocks are judged block by block; other comparisons rest on their rounds plus "
        "the run's drift between cases of their regime (a standard deviation, from its blocks: pageable or host "
        "memory from 1 MiB 8.2% (40 degrees of freedom)). A paired interval narrows about as the square root of its "
        "blocks (this run: 6; --xfer-blocks=N measures every case in N).")
    assert drift_text.verdict(view, "d2h") == (
        ".cpu() and .to(device) run the same code: apart by drift at pageable non-blocking 1 MiB 1.29× (1.28-1.31) (the "
        "machine drifted more than pairing its blocks removes); 3 of its 4 cases, slowest call against fastest, can't "
        "tell (could see ≥ 1.01-1.13×).")


def test_a_run_without_evidence_judges_nothing_unpaired():
    frame = handfed()[lambda f: f["op"].isin(["noop"]) | (f["method"] == "copy_")]
    view = view_of_rows(frame)
    assert view.drift.evidence == () and view.ratio(frame.iloc[0], frame.iloc[1]).basis == "unjudged"
    assert ("no case was measured in interleaved blocks; every comparison can't tell, as nothing in the run measures "
            "how far two cases drift apart.") in drift_text.statement(view)


def test_a_run_without_drift_between_cases_says_what_its_rounds_show_of_it():
    """A seventh reading: the CPU sample was said to give "no evidence of its drift", yet its no-op .cpu() at 4 B ran
    24 rounds at 349-536 ns a call, then 25 at 237-261 ns (the .to() before it all slow, the 16 MiB cases after it all
    fast). It repeated no case, so no comparison is judged; its rounds' own step is said beside that."""
    view = RunView.of(load([Path(__file__).parent / "data" / "cpu-sample.json"]))
    assert drift_text.statement(view).endswith(
        "every comparison can't tell, as nothing in the run measures how far two cases drift apart; yet the machine "
        "drifted as they ran: 3 cases' rounds stepped in time, the most noop .cpu() on cpu at 4 B by 2.15× (its first 24 "
        "rounds at 349-536 ns a call, the 25 after them at 237-261 ns). Measured in interleaved blocks (--xfer-blocks=N), "
        "two cases are judged block by block, without the drift between them.")
    # one case's step is said as one; rounds that overlap, or too few to part by more than chance, are none
    one = pd.DataFrame({"path": ["noop"], "nbytes": [4], "data": [[2e-6] * 6 + [1e-6] * 20]})
    assert drift_text._in_time(one) == ("; yet the machine drifted as they ran: one case's rounds stepped in time: noop "
                                        "at 4 B by 2× (its first 6 rounds at 2 µs a call, the 20 after them at 1 µs)")
    assert drift_text._in_time(one.assign(data=[[2e-6, 1e-6] * 13])) == ""
    assert drift_text._in_time(one.assign(data=[[2e-6, 1e-6, 1e-6]])) == ""


def _ladder(ratio: Ratio) -> tuple[Ladder, Step]:
    top = Rung("call", pd.Series(row("d2h", "cpu", MiB, 1.1e-3)), 1.1e-3)
    rung = Rung("control", pd.Series(row("d2h", "copy_", MiB, 1.0e-3)), 1.0e-3)
    step = Step("the factor", top, rung, ratio)
    return Ladder("k", "t", "run", MiB, (top, rung), (step,), "the rest"), step


def test_a_ladder_step_is_its_rungs_ratio():
    ladder, step = _ladder(Ratio(1.1, 0.95, 1.27, "rounds", 9))
    assert not step.told and ladder.share(step) is None
    assert ladder_text.sentence(ladder, step) == "the factor: can't tell (100 µs; the two rungs could see ≥ 1.16×)"
    ladder, step = _ladder(Ratio(1.1, 1.05, 1.15, "paired", 6))
    assert step.told and ladder.share_bounds(step) == pytest.approx((1 - 1 / 1.05, 1 - 1 / 1.15))
    assert ladder_text.sentence(ladder, step) == "the factor: 100 µs (9%; 5-13%)"


def test_a_familys_ratio_carries_its_interval():
    rows = pd.DataFrame([{"variant": "slow", "nbytes": MiB, "dst": "cuda:0", "median_s": 1.2e-3},
                         {"variant": "fast", "nbytes": MiB, "dst": "cuda:0", "median_s": 1.0e-3}])
    with pytest.raises(KeyError, match=r"rows\.attrs\['ratio'\]"):
        ratios(rows, "slow", "fast", "X")
    rows.attrs["ratio"] = lambda a, b: Ratio(a["median_s"] / b["median_s"], 1.1, 1.3, "paired", 6)
    assert ratios(rows, "slow", "fast", "X") == ["X at 1 MiB on cuda:0: fast took 1 ms, slow 1.2 ms (1.2× (1.1-1.3))."]


def test_the_run_s_rule_rides_a_family_s_rows_by_reference(h200):
    """pandas deep-copies a frame's attrs in every operation on it: the rule the report sets there must not take the
    run's whole view with it (that was 3 of the H200 page's 10 s of CPU)."""
    rows = h200.rows[h200.rows["op"] == "cuda_vs_to"].copy()
    rows.attrs["ratio"] = Rule(h200.ratio)
    narrowed = rows[rows["nbytes"] > 0].iloc[:2]
    assert narrowed.attrs["ratio"] is rows.attrs["ratio"]
    a, b = narrowed.iloc[0], narrowed.iloc[1]
    assert narrowed.attrs["ratio"](a, b) == h200.ratio(a, b)


def test_the_report_gives_a_family_its_rule_by_reference(h200, monkeypatch):
    seen = []
    monkeypatch.setattr(findings, "family", lambda op: SimpleNamespace(finding=lambda rows: seen.append(rows) or []))
    findings.scenario_findings(h200, "cuda_vs_to")
    (rows,) = seen
    assert isinstance(rows.attrs["ratio"], Rule) and rows.iloc[:1].attrs["ratio"] is rows.attrs["ratio"]


# -- the H200 sample -----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def h200():
    return RunView.of(load([H200 / "full.json.gz"]))


def test_the_h200_drift_by_regime(h200):
    """63 same-code pairs; pinned copies' from 1 MiB agree within 2.3% (the 29.8% of a pageable 16 MiB .to no longer
    judges them), pageable ones from 1 MiB 12.0%."""
    drift = h200.drift
    assert len(drift.pairs) == 63
    assert {r: (f"{d.sd:.1%}", d.df) for r, d in drift.regimes.items()} == {
        ("device", "bandwidth"): ("2.3%", 12), ("device", "latency"): ("9.6%", 12),
        ("pageable", "bandwidth"): ("12.0%", 21), ("pageable", "latency"): ("4.0%", 18)}


def test_module_to_against_module_cuda_is_judged_same_code_40_percent_apart(h200):
    said = drift_text.verdict(h200, "cuda_vs_to")
    assert "Module.to and Module.cuda run the same code: apart by drift at 64 MiB 1.4× (1.15-1.72) (measured one after the " \
           "other, it drifted beyond the run's other evidence of that regime)" in said
    assert ".cuda(i), .to('cuda:i') and .to(torch.device) run the same code: apart by drift at 64 MiB 1.27× (1.01-1.6)" in said


def test_pinned_same_code_pairs_are_judged_by_pinned_evidence(h200):
    """Each pinned pair from 1 MiB against the other pinned pairs' 2.3%: one of them (4 MiB, 8.1%) stands out."""
    said = drift_text.verdict(h200, "h2d")
    assert "pinned 4 MiB 1.08× (1.06-1.1)" in said and "44 of its 48 cases, slowest call against fastest, can't tell" in said


def test_ladder_rungs_and_the_break_even_on_h200(h200):
    cpu = next(ladder for ladder in h200.ladders if ladder.key == "d2h-cpu")
    told = [(step.factor.split(":")[0], f"{share:.0%}") for step in cpu.steps if (share := cpu.share(step)) is not None]
    assert told == [("the fresh destination", "90%"), ("the driver's staging copy through its pinned bounce buffer", "7%")]
    assert not cpu.steps[2].told  # 4.97 ms against the DMA's 4.85 ms device time: 2.4% apart, within 5%
    rows = {row["size"]: row["verdict"] for row in pinning_break_even(h200)}
    assert rows[64 * MiB] == "from copy 6 (copies 5-8 by its interval; pinning = 5.56× one copy's saving)"
    assert "pageable took 6.2-7.38× (4.77-9.75) as long" in h2d_pinned_vs_pageable(h200)


# -- the simulated machine: drift that a run cannot see, a difference that it can ----------------------------------

SPEC = drifting_spec(0.1)


@pytest.fixture(scope="module")
def far_apart(tmp_path_factory):
    """h2d and d2h on a simulated GPU whose costs wander 10% (a sine of 60 simulated s), unpaired (--xfer-blocks=1:
    only the references in blocks), every .cuda()/.cpu() case run first and every .to() last, so that each same-code
    pair is measured far apart; pinned h2d priced 1.5x pageable."""
    folder = tmp_path_factory.mktemp("drift")
    spec = folder / "spec.toml"
    spec.write_text(SPEC)
    base = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--xfer-simulate={spec}",
            "--xfer-sizes=1MiB,16MiB,64MiB", "--xfer-blocks=1"]
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    collected = subprocess.run([*base, "bench/test_h2d.py", "bench/test_d2h.py", "--collect-only", "-q"], cwd=ROOT,
                               env=env, capture_output=True, text=True, timeout=300)
    ids = [line for line in collected.stdout.splitlines() if "::" in line]
    first = [i for i in ids if re.search(r"-(cuda|cpu)-\d", i)]
    last = [i for i in ids if re.search(r"blocking-to-\d", i) and "block" not in i.split("-")[-1]]
    out = folder / "run.json"
    done = subprocess.run([*base, *first, *(i for i in ids if i not in first + last), *last, "--benchmark-only", "-q",
                           f"--benchmark-json={out}"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return RunView.of(load([out]))


def test_identical_calls_run_far_apart_are_cant_tell_and_a_real_difference_is_said(far_apart):
    drift = far_apart.drift
    assert len(drift.pairs) == 15 and not any(p.paired for p in drift.pairs)
    # The wander moved identical calls apart by more than 2%: without their regime's drift each would read as a cost.
    assert sum(pair.spread > 0.02 for pair in drift.pairs) >= 10
    judged = [far_apart.ratio(p.slow, p.fast, leave_out=p.key) for p in drift.pairs]
    assert sum(r.resolved for r in judged) <= 1, [r.text() for r in judged]
    said = h2d_pinned_vs_pageable(far_apart)
    assert said is not None and "can't tell" not in said and re.search(r"pageable took 1\.\d+(-1\.\d+)?× \(1\.\d+-1\.\d+\)", said)


def test_the_drift_t_quantile_is_the_evidence_count(far_apart):
    """The unpaired interval's width: the rounds' errors and the regime's drift in quadrature, t with its df."""
    pair = far_apart.drift.pairs[0]
    drift = far_apart.drift.of(pair.slow, pair.fast, leave_out=pair.key)
    ratio = far_apart.ratio(pair.slow, pair.fast, leave_out=pair.key)
    assert drift.df > 0 and math.log(ratio.high / ratio.value) >= stats.t.ppf(0.975, drift.df) * drift.sd


def test_a_rows_blocks_span_in_gb_per_s():
    """A 64 MiB row's six block medians as the GB/s they ran at, slowest to fastest; NaN (a missing block) left out;
    a row without blocks, or with one, says nothing."""
    one = {"nbytes": 64 * MiB, "block_medians": [0.0237, 0.0589, math.nan, 0.030, 0.040, 0.050]}
    assert drift_text.across(pd.Series(one)) == ["1.14-2.83 GB/s across its 5 blocks"]
    assert drift_text.across(pd.Series({"nbytes": MiB, "block_medians": [1e-3, math.nan]})) == []
    assert drift_text.across(pd.Series({"nbytes": MiB})) == []
    # a row measured whole beside rows in blocks: its block_medians is NaN (a float), no list to read
    assert drift_text.across(pd.Series({"nbytes": MiB, "block_medians": math.nan})) == []


def test_the_method_line_names_each_source_and_what_is_left_without_drift_evidence():
    """Blocks without their rounds' errors measure no drift: their two cases are judged block by block and every other
    comparison (the unblocked third case among them) can't tell. Same-code pairs and blocks with errors both measure
    it, and the line names both."""
    blocked = [row("d2h", m, MiB, 1e-3, src="cuda:0", dst="cpu", block_medians=[1.0, 1.1, 1.0]) for m in ("cpu", "to")]
    view = view_of_rows(pd.DataFrame([*blocked, row("h2d", "copy_", MiB, 2e-3)]))
    assert drift_text.statement(view) == (
        "Each comparison carries its own 95% interval and says \"can't tell\" where that interval holds 1 (no "
        "difference): any two of the 2 "
        "cases measured in interleaved blocks are judged block by block; every other comparison can't tell, as "
        "nothing in the run measures how far two cases drift apart. A paired interval narrows about as the square "
        "root of its blocks (this run: 3; --xfer-blocks=N measures every case in N).")
    timed = [row("host", "copy_", MiB, 1e-3, src="cpu", dst="cpu", block_medians=[1.0, 1.2, 1.0, 1.2],
                 block_log_se=[0.0] * 4)]
    assert "(a standard deviation, from its same-code pairs and blocks: " in drift_text.statement(
        view_of_rows(pd.concat([handfed(), pd.DataFrame(timed)], ignore_index=True)))


def test_the_method_line_names_the_regimes_the_run_has_no_evidence_for():
    """The simulated run's host copies ran for real, beside the cost model's 0.0%: the method line says they have no
    drift evidence, so a reader sees why their comparisons can't tell. A run with evidence everywhere says nothing."""
    from xferbench.analyze.report.drift_text import statement

    data = Path(__file__).parent / "data"
    said = statement(RunView.of(load([data / "sim-2gpu.json"])))
    assert ("from its same-code pairs: the cost model's from 1 MiB none beyond its rounds' own noise; the cost model's "
            "below 1 MiB none beyond its rounds' own noise; pageable or host memory from 1 MiB, pageable below 1 MiB none "
            "measured (their comparisons can't tell))") in said  # its 3.6e-13 apart read as none, never as "0.0%"
    assert "none measured" not in statement(RunView.of(load([data / "cpu-busy-host.json"])))


_COPY = {"op": "copy", "method": "copy_", "src": "cpu", "dst": "cuda:0", "host_memory": "pageable", "clock": "measured",
         "nbytes": 2**20}


@pytest.mark.parametrize(("column", "one", "other"), [
    ("op", "create", "copy"), ("method", "empty", "zeros"), ("src", "cpu", "cuda:1"), ("dst", "cpu", "cuda:1"),
    ("host_memory", "pinned", "pageable"), ("clock", "simulated", "measured"), ("nbytes", 2**19, 2**20)])
def test_regimes_of_keeps_two_rows_one_column_tells_apart(column, one, other):
    """Two rows alike but in one column that ``regime`` reads (a create's method, a copy's end, its host memory, its
    clock, its size on either side of 1 MiB) are two regimes: reading each kind of row once must not merge them. The
    size flag was looked up in the frame before it was added, so a path's 512 KiB and 1 MiB read as one regime."""
    base = _COPY | ({"op": "create", "method": "empty"} if column == "method" else {"method": "empty"} if column == "op"
                    else {"src": "cuda:0"} if column == "dst" else {})
    frame = pd.DataFrame([base | {column: one}, base | {column: other}])
    assert regimes_of(frame) == {regime(row) for _, row in frame.iterrows()} and len(regimes_of(frame)) == 2


@pytest.mark.parametrize(("now", "then", "blocks", "apart"), [
    ([5.0, 6.0], [1.0, 2.0], 2, (2, 5.0, 2.0)),
    ([1.0, 2.0], [5.0, 6.0], 2, (2, 5.0, 2.0)),  # the other way round: the slower side's fastest first still
    ([2.0, 6.0], [1.0, 2.0], 2, None),  # a round of each alike: no order
    ([2.5, 6.0], [1.0, 2.5], 2, None),  # touching: no order either
    ([5.0, 6.0], [1.0, 2.0], 0, None),  # not interleaved: drift between them could order them
    ([5.0, 6.0], [], 2, None),  # no rounds recorded on one side
])
def test_only_interleaved_rounds_wholly_apart_give_an_order(now, then, blocks, apart):
    import pandas as pd

    from xferbench.analyze.drift import rounds_apart

    def row(data):
        return pd.Series({"data": data, "run": "r"} | ({"block_medians": [1.0] * blocks} if blocks else {}))

    assert rounds_apart(row(now), row(then)) == apart


def test_a_medians_bounds_are_its_rounds_order_statistics_per_call_else_its_spread():
    """One rule for a median's interval, shared by the α/β table's half of β and the all_reduce bus bandwidth: a row's
    rounds' order statistics, scaled from a round (10 calls here) to a call; a row without rounds, its IQR (``side``),
    never a median taken for exact."""
    rounds = [float(t) for t in np.linspace(10e-3, 14e-3, 30)]  # a round of 10 calls
    kept = pd.Series({"median_s": 1.2e-3, "data": rounds, "iqr_s": 0.2e-3, "rounds": 30})
    low, high = order_bounds(rounds)
    assert median_bounds(kept) == pytest.approx((low / 10, high / 10))
    bare = kept.drop("data")
    assert median_bounds(bare) == pytest.approx(median_span(*side(bare)[:2])) and median_bounds(bare)[0] < 1.2e-3


def test_an_order_of_rounds_one_after_the_other_is_said_only_where_they_were_not_interleaved():
    """Rounds measured one case after the other: their order, with what could give it too; rounds of interleaved
    blocks: nothing here (``rounds_apart`` judges their order, which no drift gives)."""
    from xferbench.analyze.report.drift_text import one_after_other

    slow, fast = pd.Series({"data": [5.0, 6.0], "run": "r"}), pd.Series({"data": [1.0, 2.0], "run": "r"})
    said = ("; every round of a took longer than every round of b (quickest 5 s against slowest 2 s), one case measured "
            "after the other: an order the run's drift could give too")
    assert one_after_other(slow, fast, ("of a", "of b")) == said
    assert one_after_other(fast, slow, ("of b", "of a")) == said  # the slower named first, either way round
    assert one_after_other(slow, pd.Series({"data": [1.0, 5.5], "run": "r"}), ("of a", "of b")) == ""  # they overlap
    blocks = {"block_medians": [5.5, 5.6], "block_log_se": [0.01, 0.01]}
    interleaved = [pd.Series({**row.to_dict(), **blocks}) for row in (slow, fast)]
    assert one_after_other(*interleaved, ("of a", "of b")) == ""
