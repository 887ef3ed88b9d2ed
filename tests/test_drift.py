"""The run's drift floor (analyze/drift.py): hand-fed pairs with exact answers, the H200 sample, the simulated machine.

Calls that run the same code (``.cpu()``/``.to('cpu')``, ``.cuda(i)``/``.to('cuda:i')``, cuda_vs_to's three forms)
measure how far a run moves by itself; a comparison of two of its cases within that is "can't tell".
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from xferbench.analyze.drift import Drift, same_code_pairs
from xferbench.analyze.ladder import Ladder, Rung, Step
from xferbench.analyze.load.results import load
from xferbench.analyze.report import drift_text, ladder_text
from xferbench.analyze.report.findings import h2d_pinned_vs_pageable, pinning_break_even, scenario_findings
from xferbench.analyze.report.page import write_report
from xferbench.analyze.view import RunView
from xferbench.families.base import ratios

from fakes import drifting_spec, view_of_rows

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "reports" / "samples" / "h200"
MiB = 2**20


def row(op: str, method: str, nbytes: int, median_s: float, *, run: str = "a", variant: str | None = None,
        src: str = "cpu", dst: str = "cuda:0", host_memory: str | None = "pageable") -> dict:
    return {"op": op, "method": method, "variant": variant, "nbytes": nbytes, "median_s": median_s, "run": run,
            "src": src, "dst": dst, "host_memory": host_memory, "non_blocking": False, "dtype": "float32",
            "path": f"{op} {method if variant is None else variant} {nbytes} {run}"}


def handfed() -> pd.DataFrame:
    """d2h .cpu()/.to('cpu') 10% apart at 1 MiB, h2d .cuda/.to 25% at 1 MiB, cuda_vs_to 20% at 64 MiB; a no-op pair
    80% apart (argument parsing, not drift) and a .cpu() whose .to('cpu') ran in another run (no pair)."""
    return pd.DataFrame([
        row("d2h", "cpu", MiB, 1.0e-3, src="cuda:0", dst="cpu"), row("d2h", "to", MiB, 1.1e-3, src="cuda:0", dst="cpu"),
        row("h2d", "cuda", MiB, 2.0e-3), row("h2d", "to", MiB, 2.5e-3), row("h2d", "copy_", MiB, 9.0e-3),
        row("cuda_vs_to", "cuda", 64 * MiB, 10e-3, variant="cuda", host_memory=None),
        row("cuda_vs_to", "to_str", 64 * MiB, 12e-3, variant="to_str", host_memory=None),
        row("cuda_vs_to", "to_device", 64 * MiB, 11e-3, variant="to_device", host_memory=None),
        row("noop", "cpu", 4, 0.3e-6, src="cpu", dst="cpu", host_memory=None),
        row("noop", "to", 4, 0.54e-6, src="cpu", dst="cpu", host_memory=None),
        row("d2h", "cpu", 4 * MiB, 1.0e-3, src="cuda:0", dst="cpu", run="a"),
        row("d2h", "to", 4 * MiB, 3.0e-3, src="cuda:0", dst="cpu", run="b"),
    ])


# -- hand-fed: exact values --------------------------------------------------------------------------------------

def test_the_pairs_are_same_code_calls_of_one_run_and_size():
    pairs = same_code_pairs(handfed())
    assert [(p.op, p.nbytes, round(p.spread, 6)) for p in pairs] == [("h2d", MiB, 0.25), ("cuda_vs_to", 64 * MiB, 0.2),
                                                                     ("d2h", MiB, 0.1)]


def test_the_floor_is_the_largest_pair_and_a_pair_is_judged_by_the_others():
    drift = Drift(same_code_pairs(handfed()))
    h2d, scenario, d2h = drift.pairs
    assert drift.floor() == pytest.approx(0.25)
    assert drift.floor(h2d) == pytest.approx(0.2)  # leave-one-out: never the pair it judges
    assert drift.floor(scenario) == drift.floor(d2h) == pytest.approx(0.25)
    assert drift.within(1.0, 1.25) and drift.within(1.2, 1.0) and not drift.within(1.0, 1.26)
    assert drift_text.clause(drift) == "within this run's drift floor (25.0%)"
    # the widest pair's own two times, judged by the others (20%): beyond them; judged by all (25%): within
    assert drift.within(1.25, 1.0) and not drift.within(1.25, 1.0, judged=h2d)
    assert not drift.within(0.0, 1.0) and not drift.within(1.0, 0.0)  # a zero time is no measurement to compare


def test_a_lone_pair_says_it_has_nothing_to_be_held_against():
    drift = Drift(same_code_pairs(handfed()[lambda f: f["op"] == "d2h"]))
    assert drift_text.verdict(drift, "d2h") == ("Held against this run's other same-code pairs (.cpu() and .to('cpu')): 10.0% at "
                                    "1 MiB (no other pair to hold it against).")
    assert drift_text.verdict(drift, "h2d") is None


def test_a_run_without_pairs_gives_no_floor_and_no_verdict():
    drift = Drift(same_code_pairs(handfed()[lambda f: f["op"].isin(["noop", "h2d"]) & (f["method"] != "to")]))
    assert drift.floor() is None and not drift.within(1.0, 1.0001)
    assert drift_text.statement(drift) == ("This run measured no two calls that run the same code at one size, so it gives no "
                                 "drift floor: its comparisons carry no drift verdict.")


def test_the_page_sentence_and_a_same_code_verdict_read_back():
    view = view_of_rows(handfed())
    assert drift_text.statement(view.drift) == (
        "This run's drift floor: 25.0%, from its 3 same-code pairs (calls that run the same code, measured at different "
        "times: the largest, .cuda(i) and .to('cuda:i') (h2d) at 1 MiB); the run has no repeated reference cases, so "
        "the floor rests on those pairs alone. A difference between two of its cases within it is \"can't tell\"; a "
        "sentence about a same-code pair judges it against the other pairs.")
    assert drift_text.verdict(view.drift, "cuda_vs_to") == (
        "Held against this run's other same-code pairs (.cuda(i), .to('cuda:i') and .to(torch.device)): 20.0% at "
        "64 MiB, within the other pairs' 25.0%: can't tell.")
    assert drift_text.verdict(view.drift, "h2d") == (
        "Held against this run's other same-code pairs (.cuda(i) and .to('cuda:i')): 25.0% at 1 MiB, beyond the other "
        "pairs' 20.0%: the run drifted more there.")


def test_the_cuda_vs_to_section_says_drift_not_a_cost():
    said = scenario_findings(view_of_rows(handfed()), "cuda_vs_to")
    assert said == [".cuda(i), .to('cuda:i') and .to(torch.device) run the same code: they differed by 20.0% at 64 MiB "
                    "(slowest over fastest of the same size), which measures the run's drift, not a cost of the call.",
                    "Held against this run's other same-code pairs (.cuda(i), .to('cuda:i') and .to(torch.device)): "
                    "20.0% at 64 MiB, within the other pairs' 25.0%: can't tell."]


def _ladder(above: float, below: float, floor: float | None) -> tuple[Ladder, Step]:
    top, rung = Rung("call", "a", above, above * 0.99, above * 1.01, 9), Rung("control", "b", below, below, below, 9)
    step = Step("the factor", top, rung, floor)
    return Ladder("k", "t", "run", MiB, (top, rung), (step,), "the rest"), step


def test_a_ladder_step_within_the_floor_is_cant_tell_with_its_figure():
    ladder, step = _ladder(1.10e-3, 1.0e-3, 0.25)  # 10% apart, intervals apart: told without the floor
    assert not step.told and ladder.share(step) is None
    assert ladder_text.sentence(ladder, step) == ("the factor: can't tell (100 µs, the two rungs 10.0% apart, within this run's "
                                     "drift floor of 25.0%)")
    assert ladder_text.why_not(step) == "within this run's drift floor of 25.0%"
    ladder, step = _ladder(1.10e-3, 1.0e-3, 0.05)
    assert step.told and ladder_text.sentence(ladder, step) == "the factor: 100 µs (9%; 89 µs to 111 µs)"
    ladder, step = _ladder(1.10e-3, 1.0e-3, None)  # no floor: no drift verdict
    assert step.told


def test_a_familys_ratio_within_the_floor_is_cant_tell():
    rows = pd.DataFrame([{"variant": "slow", "nbytes": MiB, "dst": "cuda:0", "median_s": 1.2e-3},
                         {"variant": "fast", "nbytes": MiB, "dst": "cuda:0", "median_s": 1.0e-3}])
    assert ratios(rows, "slow", "fast", "X") == ["X at 1 MiB on cuda:0: fast took 1 ms, slow 1.2 ms (1.20x)."]
    rows.attrs["drift_floor"] = 0.25
    assert ratios(rows, "slow", "fast", "X") == ["X at 1 MiB on cuda:0: fast took 1 ms, slow 1.2 ms (1.20x, within this "
                                                 "run's drift floor of 25.0%: can't tell)."]
    rows.attrs["drift_floor"] = 0.1
    assert ratios(rows, "slow", "fast", "X")[0].endswith("(1.20x).")


# -- the H200 sample -----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def h200():
    return RunView.of(load([H200 / "full.json.gz"]))


def test_the_h200_floor_is_its_widest_same_code_pair(h200):
    """61 pairs; the widest, h2d pageable .cuda() 1.25 ms against .to('cuda:0') 1.62 ms at 16 MiB, 29.8%."""
    drift = h200.drift
    assert len(drift.pairs) == 61 and f"{drift.floor():.1%}" == "29.8%"
    assert drift_text.label(drift.widest) == ".cuda(i) and .to('cuda:i') (h2d) at 16 MiB"
    # Every pair but the widest lies within the floor of the others (the widest tops them by construction).
    assert [drift_text.label(p) for p in drift.pairs if p.spread > drift.floor(p)] == [drift_text.label(drift.widest)]


def test_the_issues_same_code_pairs_are_cant_tell_on_h200(h200):
    """.cpu() against .to('cpu') at 256 MiB (19.9%) and cuda_vs_to at 64 MiB (26.7%): the run's drift, within the floor."""
    by_label = {drift_text.label(p): p for p in h200.drift.pairs}
    d2h = by_label[".cpu() and .to('cpu') (d2h) at 256 MiB"]
    scenario = by_label[".cuda(i), .to('cuda:i') and .to(torch.device) (cuda_vs_to) at 64 MiB"]
    assert (f"{d2h.spread:.1%}", f"{scenario.spread:.1%}") == ("19.9%", "26.7%")
    assert d2h.spread <= h200.drift.floor(d2h) and scenario.spread <= h200.drift.floor(scenario)
    assert "26.7% at 64 MiB, within the other pairs' 29.8%: can't tell" in drift_text.verdict(h200.drift, "cuda_vs_to")


def test_ladder_rungs_beyond_the_floor_keep_their_figures(h200):
    cpu = next(ladder for ladder in h200.ladders if ladder.key == "d2h-cpu")
    told = [(step.factor.split(":")[0], ladder_share) for step in cpu.steps
            if (ladder_share := cpu.share(step)) is not None]
    assert [(factor, f"{share:.0%}") for factor, share in told] == [("the fresh destination", "90%"),
                                                                    ("the driver's staging copy through its pinned bounce "
                                                                     "buffer", "7%")]
    launch = cpu.steps[2]
    assert launch.within_floor and f"{launch.relative:.1%}" == "2.4%"
    rows = {row["size"]: row["verdict"] for row in pinning_break_even(h200)}
    assert rows[64 * MiB] == "from copy 6 (pinning = 5.6× one copy's saving)"  # 5.9x apart: far beyond 29.8%
    assert "can't tell" not in h2d_pinned_vs_pageable(h200)


def test_the_page_states_the_floor_once(h200, tmp_path):
    html = write_report(h200.results, tmp_path / "index.html").read_text()
    assert html.count("This run&#39;s drift floor: 29.8%") == 1
    assert "the run has no repeated reference cases, so the floor rests on those pairs alone" in html


# -- the simulated machine: drift that a run cannot see, a difference that it can ----------------------------------

SPEC = drifting_spec(0.1)


@pytest.fixture(scope="module")
def far_apart(tmp_path_factory):
    """h2d and d2h on a simulated GPU whose costs wander 10% (a sine of 60 simulated s), every .cuda()/.cpu() case run
    first and every .to() last, so that each same-code pair is measured far apart; pinned h2d priced 1.5x pageable."""
    folder = tmp_path_factory.mktemp("drift")
    spec = folder / "spec.toml"
    spec.write_text(SPEC)
    base = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--xfer-simulate={spec}",
            "--xfer-sizes=1MiB,16MiB,64MiB"]
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    collected = subprocess.run([*base, "bench/test_h2d.py", "bench/test_d2h.py", "--collect-only", "-q"], cwd=ROOT,
                               env=env, capture_output=True, text=True, timeout=300)
    ids = [line for line in collected.stdout.splitlines() if "::" in line]
    first = [i for i in ids if re.search(r"-(cuda|cpu)-\d", i)]
    last = [i for i in ids if re.search(r"blocking-to-\d", i)]
    out = folder / "run.json"
    done = subprocess.run([*base, *first, *(i for i in ids if i not in first + last), *last, "--benchmark-only", "-q",
                           f"--benchmark-json={out}"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return RunView.of(load([out]))


def test_identical_calls_run_far_apart_are_cant_tell_and_a_real_difference_is_said(far_apart):
    drift = far_apart.drift
    assert len(drift.pairs) == 15
    # The wander moved identical calls apart by 3%: without the floor each pair would read as a cost of the call. (The
    # pinned blocking .to() is a reference, measured at the start, middle and end: its pairs are not run far apart.)
    far = [p for p in drift.pairs if "h2d pinned to cpu->cuda:0" not in p.paths or p.nbytes == 16 * MiB]
    assert len(far) == 13 and all(pair.spread > 0.02 for pair in far)
    # The references' blocks saw more of the wander than any pair: the floor rests on them, and every pair lies within.
    assert [drift_text.label(r) for r in drift.repeats] == ["h2d pinned to cpu->cuda:0 at 1 MiB",
                                                            "h2d pinned to cpu->cuda:0 at 64 MiB"]
    assert drift.floor() == drift.repeats[0].spread > drift.widest.spread
    assert all(p.spread <= drift.floor(p) for p in drift.pairs)
    sentence = drift_text.statement(drift)
    assert "from its 2 repeated references" in sentence and "and its 15 same-code pairs" in sentence
    said = h2d_pinned_vs_pageable(far_apart)
    # still said: 1.5x, each kind's figure a range across the references' wider floor
    assert said is not None and "can't tell" not in said and "1.5×; each kind's calls lie within the run's drift floor" in said


def test_a_key_finding_ratio_within_the_floor_is_cant_tell():
    """Pinned h2d 1.1x pageable, in a run whose .cuda()/.to() lie 25% apart: the 1.1x is the run's drift as far as it
    can tell; without a floor (no same-code pair) the sentence carries no verdict."""
    frame = pd.DataFrame([row("h2d", "cuda", MiB, 1.0e-3), row("h2d", "to", MiB, 1.25e-3),
                          row("h2d", "copy_", MiB, 0.9e-3, host_memory="pinned")])
    frame = frame.assign(bandwidth_gbps=frame["nbytes"] / frame["median_s"] / 1e9)
    assert h2d_pinned_vs_pageable(view_of_rows(frame)) == (  # the pageable two lie within the floor: a span
        "Host to device at 1 MiB: pinned sources reached 1.17 GB/s, pageable ones 0.839-1.05 GB/s (1.1-1.4×, within "
        "this run's drift floor (25.0%): can't tell; each kind's calls lie within the run's drift floor of each other, "
        "so each figure spans them).")
    alone = frame[frame["method"] != "to"]
    assert h2d_pinned_vs_pageable(view_of_rows(alone)) == (
        "Host to device at 1 MiB: pinned sources reached 1.17 GB/s, pageable ones 1.05 GB/s (1.1×).")


def test_a_run_that_does_not_drift_gives_no_cant_tell():
    """Same code timed alike (the simulated machine without drift or noise): a floor of 0, and 1.00x stays 1.00x."""
    frame = pd.DataFrame([row("h2d", "cuda", MiB, 1.0e-3), row("h2d", "to", MiB, 1.0e-3)])
    drift = view_of_rows(frame).drift
    assert drift.floor() == 0.0 and not drift.within(1.0e-3, 1.0e-3)
    rows = pd.DataFrame([{"variant": "slow", "nbytes": MiB, "dst": "cuda:0", "median_s": 1.0e-3},
                         {"variant": "fast", "nbytes": MiB, "dst": "cuda:0", "median_s": 1.0e-3}])
    rows.attrs["drift_floor"] = 0.0
    assert ratios(rows, "slow", "fast", "X") == ["X at 1 MiB on cuda:0: fast took 1 ms, slow 1 ms (1.00x)."]
    assert _ladder(1.0e-3, 0.5e-3, 0.0)[1].told
