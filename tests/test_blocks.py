"""Cases measured in blocks (measure/session/blocks.py, analyze/load/blocks.py): the reference cases run at the start,
the middle and the end of a run, any case in N blocks under --xfer-blocks; a case's blocks are one row on load, and
their spread is part of the run's drift floor (analyze/drift.py)."""

import copy
import json
import math
import os
import subprocess
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from handfed import bench, gpu_machine
from xferbench.analyze.drift import run_drift
from xferbench.analyze.gate.compare import compare
from xferbench.analyze.load.blocks import rows_of, run_tick
from xferbench.analyze.load.results import Document, ResultsError, load
from xferbench.analyze.load.rows import bench_row
from xferbench.analyze.report import drift_text
from xferbench.analyze.view import RunView
from xferbench.contract import Block
from xferbench.measure.cases import build_cases
from xferbench.measure.session.blocks import blocked_ids, spread_blocks

from fakes import drifting_spec
from hostile_inputs import FAST, assert_refused, run_cli

ROOT = Path(__file__).resolve().parents[1]
MiB = 2**20


# -- the order: blocks at the start, the middle and the end --------------------------------------------------------

def item(nodeid, block=None, scope="function"):
    marker = types.SimpleNamespace(args=(block.index, block.count, block.case_id)) if block else None
    fixture = types.SimpleNamespace(scope=scope)
    return types.SimpleNamespace(nodeid=nodeid, get_closest_marker=lambda name: marker,
                                 _fixtureinfo=types.SimpleNamespace(name2fixturedefs={"f": [fixture]}))


def blocks_of(case, count):
    return [item(f"bench/test_host.py::test_host[{Block(k, count, case).param_id}]", Block(k, count, case))
            for k in range(count)]


def together(it):
    return it.nodeid.split("::")[0] if "world" in it.nodeid else it.nodeid


def test_a_references_blocks_run_at_the_start_the_middle_and_the_end():
    plain = [item(f"bench/test_d2h.py::test_d2h[{i}]") for i in range(10)]
    order = [i.nodeid for i in spread_blocks([*plain[:4], *blocks_of("ref", 3), *plain[4:]], together)]
    assert order[0].endswith("ref-block1of3]") and order[-1].endswith("ref-block3of3]")
    assert order.index("bench/test_host.py::test_host[ref-block2of3]") == 6  # after 5 of the 10 other cases
    assert [o for o in order if "block" not in o] == [i.nodeid for i in plain]  # the others keep their order


def test_every_case_in_blocks_runs_in_passes_and_a_held_world_stays_whole():
    world = [item(f"bench/test_distributed.py::world[{i}]", scope="module") for i in range(4)]
    cases = [it for case in ("a", "b", "c") for it in blocks_of(case, 2)]
    order = [i.nodeid for i in spread_blocks([*cases, *world], together)]
    assert [o.split("[")[1] for o in order if "block" in o] == ["a-block1of2]", "b-block1of2]", "c-block1of2]",
                                                                "c-block2of2]", "b-block2of2]", "a-block2of2]"]
    places = [n for n, o in enumerate(order) if "world" in o]
    assert places == list(range(places[0], places[0] + 4))  # never split by a block: the world is set up once


def test_the_paired_cases_and_the_references_measured_in_blocks():
    """Paired: what the report compares, at the size nearest 64 MiB and the largest up to 256 MiB, of the first dtype
    and device pair; references: host copy_ at the smallest size and nearest 1 MiB, pinned h2d .to nearest 64 MiB."""
    sizes = [4, 1024, MiB, 64 * MiB, 256 * MiB, 1024 * MiB]
    host = blocked_ids("host", build_cases("host", ["cpu"], sizes, ["float32", "float16"]))
    assert set(host) == {f"pageable-{call}-{size}-float32-{variant}cpu->cpu" for call in ("clone", "copy_")
                    for size in ("64MiB", "256MiB") for variant in ("",)} | {
        "pageable-copy_-64MiB-float32-single_thread-cpu->cpu", "pageable-copy_-256MiB-float32-single_thread-cpu->cpu",
        "pageable-copy_-4B-float32-cpu->cpu", "pageable-copy_-1MiB-float32-cpu->cpu"}
    create = blocked_ids("create", build_cases("create", ["cpu", "cuda:0"], sizes, ["float32"]))
    assert set(create) == {f"{call}-{size}-float32-cpu" for call in ("empty", "zeros") for size in ("64MiB", "256MiB")}
    h2d = blocked_ids("h2d", build_cases("h2d", ["cpu", "cuda:0", "cuda:1"], sizes, ["float32"]))
    assert {i for i in h2d if i.endswith("cuda:1")} == set() and len(h2d) == 24  # every call, two sizes, first GPU
    assert blocked_ids("noop", build_cases("noop", ["cpu", "cuda:0"], sizes, ["float32"])) == {}
    small = blocked_ids("host", build_cases("host", ["cpu"], [4, 1024], ["float32"]))
    assert small == {"pageable-copy_-4B-float32-cpu->cpu": 10, "pageable-copy_-1KiB-float32-cpu->cpu": 10}  # references
    # a reference's blocks hold 10 rounds at least (its median against its rounds' noise is the drift evidence), a
    # paired case's 5 (its interval comes from the spread of its six per-block ratios)
    assert {host[f"pageable-copy_-{size}-float32-cpu->cpu"] for size in ("4B", "1MiB")} == {10}
    assert {host["pageable-clone-64MiB-float32-cpu->cpu"], create["zeros-64MiB-float32-cpu"]} == {5}


def test_the_blocks_of_one_slot_alternate_their_order():
    """A B, B A, B A, A B (Thue-Morse): a drift whose slope changes over the run favours neither side of a pair (plain
    alternation let the simulated machine's steeper early drift read .to() 0.27% cheaper than .cuda())."""
    cases = [it for case in ("a", "b") for it in blocks_of(case, 4)]
    order = [i.nodeid.split("[")[1] for i in spread_blocks(cases, together)]
    assert order == ["a-block1of4]", "b-block1of4]", "b-block2of4]", "a-block2of4]", "b-block3of4]", "a-block3of4]",
                     "a-block4of4]", "b-block4of4]"]


# -- the loader: a case's blocks are one row -----------------------------------------------------------------------

def blocked(seconds, count=None, case="pageable-clone-1MiB-float32-cpu->cpu", data=True, **info):
    """A host clone of 1 MiB measured in blocks whose rounds are ``seconds`` (one list a block)."""
    count = len(seconds) if count is None else count
    out = []
    for k, rounds in enumerate(seconds):
        b = bench("host", "clone", "cpu", "cpu", MiB, float(np.median(rounds)), host_memory="pageable")
        b["name"] = f"test_host[{Block(k, count, case).param_id}]"
        times = np.asarray(rounds)
        b["stats"] |= {"min": min(rounds), "max": max(rounds), "mean": float(times.mean()), "rounds": len(rounds),
                       "q1": float(np.percentile(times, 25)), "q3": float(np.percentile(times, 75)),
                       "stddev": float(times.std(ddof=1))}
        b["stats"]["iqr"] = b["stats"]["q3"] - b["stats"]["q1"]
        if data:
            b["stats"]["data"] = list(map(float, rounds))
        b["extra_info"] |= Block(k, count, case).extra_info() | info
        out.append(b)
    return out


def document(benchmarks):
    return {"machine_info": gpu_machine(), "commit_info": {}, "benchmarks": benchmarks,
            "datetime": "2026-12-01T12:00:00"}


def loaded(benchmarks, name="run"):
    return load([Document(Path(f"{name}.json"), document(benchmarks))])


OTHER = bench("host", "copy_", "cpu", "cpu", MiB, 2e-4, host_memory="pageable")
OTHER["stats"]["data"] = [2e-4] * 5
ROUNDS = [[1.0e-4, 1.1e-4, 1.2e-4], [1.3e-4, 1.2e-4], [1.0e-4, 1.05e-4, 1.0e-4, 1.1e-4]]


def test_a_cases_blocks_are_one_row_with_the_median_of_all_their_rounds():
    results = loaded([blocked(ROUNDS)[0], OTHER, *blocked(ROUNDS)[1:]])
    frame = results.frame
    assert len(frame) == 2 and frame["case_key"].is_unique
    row = frame.iloc[0]  # where its first block was
    every = [t for rounds in ROUNDS for t in rounds]
    assert row["rounds"] == 9 and row["data"] == every
    assert row["median_s"] == pytest.approx(np.median(every)) and (row["min_s"], row["max_s"]) == (1.0e-4, 1.3e-4)
    assert row["blocks"] == 3 and row["block_spread"] == pytest.approx(1.25e-4 / 1.025e-4 - 1)
    assert row["name"] == "test_host[pageable-clone-1MiB-float32-cpu->cpu]"
    assert frame.iloc[1]["blocks"] != frame.iloc[1]["blocks"]  # NaN: a case measured whole


def test_without_rounds_the_blocks_medians_are_weighted_by_their_rounds():
    row = loaded(blocked(ROUNDS, data=False)).frame.iloc[0]
    medians, rounds = [np.median(r) for r in ROUNDS], [len(r) for r in ROUNDS]
    assert row["median_s"] == pytest.approx(np.dot(medians, rounds) / sum(rounds))
    assert row["rounds"] == 9 and row["data"] is None and row["q1_s"] <= row["q3_s"]
    every = np.asarray([t for r in ROUNDS for t in r])
    assert row["stddev_s"] == pytest.approx(every.std(ddof=1), rel=1e-9)  # pooled, as if from every round


def test_a_run_cut_short_merges_the_blocks_it_holds():
    row = loaded(blocked(ROUNDS)[:2], "cut").frame.iloc[0]
    assert row["blocks"] == 2 and row["rounds"] == 5


def test_compare_and_the_drift_see_the_merged_case_once():
    base, new = loaded([*blocked(ROUNDS), OTHER], "base"), loaded([*blocked(ROUNDS), OTHER], "new")
    rows = compare([base], [new])
    assert sorted(r.path for r in rows) == ["host pageable clone cpu", "host pageable copy_ cpu"]
    row = new.frame.iloc[0]
    assert row["block_medians"] == pytest.approx([1.1e-4, 1.25e-4, 1.025e-4])
    logs = np.log(row["block_medians"])
    (evidence,) = RunView.of(new).drift.evidence  # the blocks' spread beyond what their own rounds explain
    noise = (len(logs) - 1) * np.mean(np.square(row["block_log_se"]))
    assert evidence.df == 2 and evidence.square == pytest.approx(2 * max(np.sum((logs - logs.mean())**2) - noise, 0))


def test_history_reads_the_merged_case_once(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    for n in range(2):
        doc = document([*blocked(ROUNDS), OTHER]) | {"datetime": f"2026-12-0{n + 1}T12:00:00"}
        (folder / f"run{n}.json").write_text(json.dumps(doc))
    from xferbench.analyze.load.history import load_storage

    stored = load_storage(folder)
    assert all(len(summary.times) == 2 for summary in stored.summaries)



def merged_row(benchmarks, run="runA", when="2026-12-01T12:00:00"):
    rows = rows_of(benchmarks, run, when)
    assert len(rows) == 1
    return rows[0]


DISTINCT = [[1.0e-4, 1.4e-4, 1.1e-4], [1.3e-4, 1.2e-4], [1.05e-4, 1.5e-4, 1.15e-4, 1.25e-4]]


def test_the_merged_statistics_are_those_of_every_round():
    row = merged_row(blocked(DISTINCT))
    every = np.asarray([t for rounds in DISTINCT for t in rounds])
    q1, median, q3 = np.percentile(every, [25, 50, 75])
    assert (row["q1_s"], row["median_s"], row["q3_s"]) == pytest.approx((q1, median, q3), rel=1e-12)
    assert row["iqr_s"] == pytest.approx(q3 - q1, rel=1e-12)
    assert row["stddev_s"] == pytest.approx(every.std(ddof=1), rel=1e-12)
    assert row["mean_s"] == pytest.approx(every.mean(), rel=1e-12)


@pytest.mark.parametrize(("iterations", "mixed"), [([100, 100, 1, 1], True), ([1000, 1058, 1011, 1000], False),
                                                   ([2, 1, 1, 1], True)])
def test_blocks_timing_calls_a_round_2x_apart_are_mixed_and_no_drift_evidence(iterations, mixed):
    """A block whose first calls stalled is calibrated to one call a round, its siblings to a hundred: their medians
    measure different things, so the row says so and its blocks' spread is no evidence of the run's drift. A 1 µs
    call's 1,000 against 1,058 is calibration's usual wobble."""
    benchmarks = blocked([[1e-3, 1.1e-3]] * 2 + [[12e-3, 12.1e-3]] * 2)
    for one, count in zip(benchmarks, iterations, strict=True):
        one["stats"]["iterations"] = count
    results = loaded(benchmarks)
    row = results.frame.iloc[0]
    assert bool(row["mixed_iterations"]) is mixed
    assert (run_drift(results.frame).evidence == ()) is mixed


def test_without_rounds_the_quartiles_span_the_weighted_ones():
    row = merged_row(blocked(DISTINCT, data=False))
    weights = np.asarray([len(r) for r in DISTINCT]) / 9
    q1, q3 = (float(np.dot(weights, [np.percentile(r, p) for r in DISTINCT])) for p in (25, 75))
    assert (row["q1_s"], row["q3_s"], row["iqr_s"]) == pytest.approx((q1, q3, q3 - q1), rel=1e-12)


def one_round(seconds, data):
    """Blocks of one round each: their own standard deviation is none (0)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        benchmarks = blocked([[s] for s in seconds], data=data)
    for b in benchmarks:
        b["stats"]["stddev"] = 0.0
    return benchmarks


@pytest.mark.parametrize("data", [True, False])
def test_a_lone_block_is_its_own_row_with_no_spread(data):
    row = merged_row(one_round([1e-4], data))
    assert row["blocks"] == 1 and row["block_spread"] != row["block_spread"]  # NaN: nothing to spread over
    assert row["rounds"] == 1 and row["stddev_s"] == 0.0 and row["median_s"] == 1e-4
    two = merged_row(blocked([[1.0e-4, 1.2e-4]], data=data))
    assert two["stddev_s"] == pytest.approx(np.std([1.0e-4, 1.2e-4], ddof=1), rel=1e-12)
    assert two["block_spread"] != two["block_spread"]


@pytest.mark.parametrize("data", [True, False])
def test_two_blocks_of_one_round_spread_as_two_rounds(data):
    row = merged_row(one_round([1e-4, 1.5e-4], data))
    assert row["blocks"] == 2 and row["block_spread"] == pytest.approx(0.5)
    assert row["stddev_s"] == pytest.approx(np.std([1e-4, 1.5e-4], ddof=1), rel=1e-12)


def test_the_merged_row_is_the_first_blocks_run_time_and_whole_name():
    benchmarks = blocked(ROUNDS)
    for b in benchmarks:
        b["stats"]["iterations"] = 4
    benchmarks[0]["extra_info"]["clock"] = "cuda_event"  # the first block's words, where the blocks differ
    plain = copy.deepcopy(OTHER)
    rows = rows_of([*benchmarks[1:], plain, benchmarks[0]], "runA", "2026-12-01T12:00:00")
    assert [(r["run"], r["datetime"]) for r in rows] == [("runA", "2026-12-01T12:00:00")] * 2
    merged = rows[0]
    assert merged["name"] == "test_host[pageable-clone-1MiB-float32-cpu->cpu]" and merged["iterations"] == 4
    assert merged["clock"] == "cuda_event" and merged["blocks"] == 3


def test_blocks_without_names_merge_into_a_row_without_one():
    benchmarks = blocked(ROUNDS)
    for b in benchmarks:
        del b["name"]
    row = merged_row(benchmarks)
    assert row["name"] is None and row["blocks"] == 3


def test_two_tests_timing_one_case_in_blocks_are_two_rows():
    first, second = blocked(ROUNDS[:2]), blocked(ROUNDS[:2])
    for b in second:
        b["name"] = b["name"].replace("test_host[", "test_host_again[")
    rows = rows_of([*first, *second], "runA", None)
    assert [(r["name"], r["blocks"]) for r in rows] == [("test_host[pageable-clone-1MiB-float32-cpu->cpu]", 2),
                                                         ("test_host_again[pageable-clone-1MiB-float32-cpu->cpu]", 2)]


def test_the_measured_numbers_are_the_blocks_median():
    benchmarks = blocked(ROUNDS[:2])
    for b, clock, seconds in zip(benchmarks, (1000, 1003), (1e-5, 3e-5), strict=True):
        b["extra_info"] |= {"sm_clock_mhz": clock, "device_seconds": seconds}
    benchmarks[0]["extra_info"]["pcie_width_now"] = 16  # in one block only: kept as it is
    row = merged_row(benchmarks)
    assert row["sm_clock_mhz"] == 1002 and type(row["sm_clock_mhz"]) is int  # 1001.5, rounded: a whole number
    assert row["device_seconds"] == pytest.approx(2e-5, rel=1e-12) and row["pcie_width_now"] == 16


def test_the_errors_name_the_benchmark_and_the_case():
    case = "pageable-clone-1MiB-float32-cpu->cpu"
    twice = blocked(ROUNDS)
    refused([*twice, copy.deepcopy(twice[1])],
            f"benchmark 'test_host[{case}-block2of3]': case '{case}': block 1 appears twice")
    counts = blocked(ROUNDS)
    counts[0]["extra_info"]["xfer_blocks"] = 4  # the others are checked against the first
    refused(counts, f"benchmark 'test_host[{case}-block2of3]': case '{case}': its blocks disagree on their count "
                    "(4 and 3)")
    odd = blocked(ROUNDS)
    odd[1]["extra_info"]["xfer_block"] = 7
    refused(odd, f"benchmark 'test_host[{case}-block2of3]': field 'xfer_block' must be")

# -- hostile block fields: one line, exit 2, or ignored; never a traceback -----------------------------------------

def refused(benchmarks, fragment):
    with pytest.raises(ResultsError) as error:
        loaded(benchmarks)
    assert fragment in str(error.value) and "\n" not in str(error.value)


@pytest.mark.hostile
def test_hostile_blocks_are_refused_in_one_line():
    twice = blocked(ROUNDS)
    refused([*twice, copy.deepcopy(twice[1])], "block 1 appears twice")
    counts = blocked(ROUNDS)
    counts[2]["extra_info"]["xfer_blocks"] = 4
    refused(counts, "its blocks disagree on their count (3 and 4)")
    other = blocked(ROUNDS)
    other[1]["extra_info"]["nbytes"] = 2 * MiB
    refused(other, "its blocks measure different cases")
    missing = blocked(ROUNDS)
    del missing[0]["extra_info"]["xfer_blocks"]
    refused(missing, "block field(s) 'xfer_blocks' missing")
    for bad in (1.0, "1", True, -1, 3, 2**62):  # past 2**63 the loader refuses any number first
        odd = blocked(ROUNDS)
        odd[1]["extra_info"]["xfer_block"] = bad
        refused(odd, "field 'xfer_block' must be a whole number from 0 to 2")


@pytest.mark.hostile
def test_a_hostile_block_is_one_line_at_the_command_line(tmp_path, capsys):
    benchmarks = blocked(ROUNDS)
    benchmarks[0]["extra_info"]["xfer_blocks"] = "three"
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document(benchmarks)))
    code, _, err = run_cli(capsys, "report", path, "-o", tmp_path / "out" / "index.html")
    assert_refused(code, err, "field 'xfer_blocks' must be a whole number from 1 to 1000")


block_values = st.none() | st.booleans() | st.integers(-3, 6) | st.floats(allow_nan=True) | st.text(max_size=4) \
    | st.sampled_from([10**30, [], {}, "pageable-clone-1MiB-float32-cpu->cpu"])


@pytest.mark.hostile
@FAST
@given(st.data())
def test_any_block_fields_load_or_are_refused_in_one_line(data):
    benchmarks = blocked(ROUNDS, data=data.draw(st.booleans()))
    for b in benchmarks:
        for name in data.draw(st.lists(st.sampled_from(["xfer_block", "xfer_blocks", "xfer_case_id"]), max_size=3)):
            b["extra_info"][name] = data.draw(block_values)
        if data.draw(st.booleans()):
            del b["extra_info"][data.draw(st.sampled_from(["xfer_block", "xfer_blocks", "xfer_case_id"]))]
    benchmarks += data.draw(st.lists(st.sampled_from(benchmarks), max_size=2))  # duplicated blocks
    try:
        frame = loaded(copy.deepcopy(benchmarks)).frame
    except ResultsError as error:
        assert "\n" not in str(error)
        return
    assert frame["rounds"].sum() >= 1 and (frame["median_s"] > 0).all()


# -- on the simulated machine: references in a run that drifts -----------------------------------------------------

SPEC = drifting_spec(0.2)


def pytest_run(folder, *args):
    spec = folder / "spec.toml"
    spec.write_text(SPEC)
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
                           f"--xfer-simulate={spec}", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow
def test_a_simulated_run_pairs_what_the_page_compares_and_merges_it(tmp_path):
    """h2d at 4 B, 1 MiB and 64 MiB on a drifting simulated GPU: every call at 64 MiB in 6 interleaved blocks from the
    run's start to its end, merged into one row each; its same-code pairs are the run's A/A check, judged block by
    block; its blocks are the run's drift evidence."""
    out = tmp_path / "run.json"
    done = pytest_run(tmp_path, "bench/test_h2d.py", "--xfer-sizes=4B,1MiB,64MiB", "--xfer-shuffle=5",
                      "--benchmark-only", "-q", f"--benchmark-json={out}")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    data = json.loads(out.read_text())
    order = data["xferbench_run"]["case_order"]["order"]
    case = "pinned-blocking-to-64MiB-float32-cpu->cuda:0"
    at = [order.index(f"bench/test_h2d.py::test_h2d[{case}-block{k}of6]") for k in range(1, 7)]
    assert at[0] < 12 and at[-1] >= len(order) - 12 and at == sorted(at)  # from the start to the end, in order
    infos = [b["extra_info"] for b in data["benchmarks"] if b["extra_info"].get("xfer_case_id") == case]
    assert sorted((i["xfer_block"], i["xfer_blocks"]) for i in infos) == [(k, 6) for k in range(6)]
    view = RunView.of(load([out]))
    assert view.rows["case_key"].is_unique and len(view.rows) == len(data["benchmarks"]) - 12 * 5
    paired = [p for p in view.drift.pairs if p.nbytes == 64 * MiB]
    assert len(paired) == 4 and all(p.paired and view.ratio(p.slow, p.fast).basis == "paired" for p in paired)
    assert not any(p.paired for p in view.drift.pairs if p.nbytes < 64 * MiB)
    assert len(view.drift.evidence) == 12 + sum(not p.paired for p in view.drift.pairs)
    assert "any two of the 12 cases measured in interleaved blocks" in drift_text.statement(view)


@pytest.mark.slow
def test_every_case_in_two_blocks(tmp_path):
    listed = pytest_run(tmp_path, "bench/test_host.py", "--xfer-sizes=4B,1KiB", "--xfer-blocks=2", "--collect-only",
                        "-q")
    ids = [line for line in listed.stdout.splitlines() if "::" in line]
    # 6 cases in 2 blocks each, but the 2 references (copy_ at 4 B and 1 KiB) in 6: every first block, then the rest
    assert len(ids) == 20 and all("-block1of" in i for i in ids[:6]) and not any("-block1of" in i for i in ids[6:])
    assert {f"bench/test_host.py::test_host[pageable-copy_-{size}-float32-cpu->cpu-block6of6]"
            for size in ("4B", "1KiB")} <= set(ids[-6:])  # the last slot: every case's last block
    refused = pytest_run(tmp_path, "bench/test_host.py", "--xfer-blocks=0", "--collect-only", "-q")
    assert refused.returncode == 4 and "argument --xfer-blocks: expected a whole number from 1 to 100, got '0'" \
        in refused.stderr


def test_a_merged_row_keeps_each_blocks_calls_a_round():
    """The quick run's 1 MiB copy_ ran blocks of 100 calls a round and of one: the merged row keeps them by block, so a
    comparison can pair its blocks timed alike (analyze/drift.py's ``paired_blocks``); the two of one call whose
    median and rounds lay on the scheduler's ticks are left out, NaN as a block never run."""
    frame = load([Path(__file__).parent / "data" / "cpu-quick-sample.json"]).frame
    (one,) = frame[(frame["op"] == "host") & (frame["method"] == "copy_") & (frame["nbytes"] == 2**20)
                   & frame["variant"].isna()].to_dict("records")
    assert np.array_equal(one["block_iterations"], [1, 100, 1, np.nan, 1, np.nan], equal_nan=True)
    assert one["mixed_iterations"] and one["tick_blocks"] == 2 and one["blocks"] == 4


# -- the scheduler's ticks ------------------------------------------------------------------------------------------

def _tick_row(data, iterations=1, name="test_host[x]"):
    return {"data": list(data), "iterations": iterations, "name": name, "median_s": float(np.median(data))}


ON_12 = [11.94e-3, 11.95e-3, 11.98e-3, 12.01e-3, 16.04e-3, 7.95e-3, 11.99e-3, 9.3e-3]  # 7 of 8 on 4 ms multiples


def test_a_run_s_tick_is_the_longest_that_most_rounds_of_two_rows_land_on():
    """Two rows whose rounds lie mostly on 4 ms multiples, on two multiples or more, make 4 ms the run's tick (1 ms's
    multiples hold them too, but 4 ms is the longest to hold as many); one such row is no evidence, nor are rows of
    many calls a round (their count is set to fill a round), nor a steady time near one multiple (the H200's h2d
    64 MiB at 9.82-10.03 ms)."""
    assert run_tick([_tick_row(ON_12), _tick_row([x + 8e-3 for x in ON_12])]) == 4e-3
    assert np.isnan(run_tick([_tick_row(ON_12)]))
    assert np.isnan(run_tick([_tick_row(ON_12, iterations=100), _tick_row(ON_12, iterations=100)]))
    steady = [9.99e-3, 10.0e-3, 10.01e-3, 10.02e-3, 9.98e-3, 10.03e-3]
    assert np.isnan(run_tick([_tick_row(steady), _tick_row(steady)]))
    off = [x + 1.3e-3 for x in ON_12]  # the same spread, off the ticks
    assert np.isnan(run_tick([_tick_row(off), _tick_row(off)]))
    for sample, tick in (("cpu-busy-host.json", 4e-3), ("cpu-loaded-host.json", 4e-3), ("cpu-sample.json", None),
                         ("cpu-threads-sample.json", None)):
        benches = json.loads((ROOT / "tests" / "data" / sample).read_text())["benchmarks"]
        found = run_tick([{"data": b["stats"].get("data"), "iterations": b["stats"]["iterations"],
                           "median_s": b["stats"]["median"]} for b in benches])
        assert found == tick if tick else np.isnan(found), sample


def _plain(data, method="copy_"):
    """A host ``method`` of 1 MiB measured whole (one block), its rounds of one call ``data``."""
    bench = blocked([data], count=1, case=f"pageable-{method}-1MiB-float32-cpu->cpu")[0]
    block = ("xfer_block", "xfer_blocks", "xfer_case_id")
    bench["extra_info"] = {k: v for k, v in bench["extra_info"].items() if k not in block} | {"method": method}
    bench["name"] = f"test_host[{method}]"
    return bench


def _on_ticks_of(data):
    """The ``on_ticks`` of a row of one-call rounds ``data``, in a run that shows the 4 ms ticks (two more rows)."""
    return rows_of([_plain(data, "clone"), _plain(ON_12), _plain(ON_12)], "run", None)[0]["on_ticks"]


def test_a_row_of_five_rounds_on_one_and_two_ticks_is_evidence():
    """Five rounds are enough (the suite's fewest), and a round of one tick is on it (4 ms: a one-call copy that waited
    one tick); four are too few; rounds of a few µs lie near no multiple that counts (0 ticks is no wait)."""
    five = [4.01e-3, 3.99e-3, 8.0e-3, 5.3e-3, 4.0e-3]  # 4 of 5 on 1 and 2 ticks, the median 4.0 ms
    assert run_tick([_tick_row(five), _tick_row(five)]) == 4e-3
    assert np.isnan(run_tick([_tick_row(five[:4]), _tick_row(five[:4])]))
    assert np.isnan(_on_ticks_of([2e-6, 3e-6, 2e-6, 4e-6, 2e-6, 3e-6])) and _on_ticks_of(five) == 4e-3


def test_a_median_on_the_ticks_with_a_quarter_of_its_rounds_is_on_them():
    """The busy run's 64 MiB copy_: a median of 12.004 ms, 12 of its 31 rounds on the ticks. A quarter of the rounds
    with the median is enough (5x what chance puts there); fewer, or a median off them, is not."""
    off = [5.3e-3, 6.1e-3, 13.7e-3, 14.5e-3, 17.3e-3]
    assert _on_ticks_of([11.99e-3, 12.0e-3, 12.01e-3, *off]) == 4e-3  # 3 of 8, and the median 12.0 ms
    assert np.isnan(_on_ticks_of([12.0e-3, 12.01e-3, 9.5e-3, *off, 18.5e-3]))  # 2 of 9, the median 12.01 ms
    # 2 of 8, a quarter, one of them the last round
    assert _on_ticks_of([5.3e-3, 6.1e-3, 9.5e-3, 12.0e-3, 13.7e-3, 14.5e-3, 17.3e-3, 12.01e-3]) == 4e-3
    assert np.isnan(_on_ticks_of([7.99e-3, 8.0e-3, 8.01e-3, 5.3e-3, *off[2:], 18.5e-3]))  # 3 of 8, the median 10.9 ms


def _waited_of(per_call, ticks=True):
    """The ``on_ticks`` of a clone whose rounds of 100 calls took ``per_call`` each, in a run that shows the 4 ms ticks
    (two rows of one call a round on them) or not."""
    bench = _plain(per_call, "clone")
    bench["stats"]["iterations"] = 100
    return rows_of([bench, *([_plain(ON_12), _plain(ON_12)] if ticks else [])], "run", None)[0]["on_ticks"]


def test_rounds_of_many_calls_that_held_a_tick_s_wait_are_on_the_ticks():
    """The busy run's one-thread 1 MiB copy_: rounds of 100 calls, 2.37 ms at fastest, most of them a tick longer (the
    median round 6.47 ms): its median holds a wait, as does the quick run's module move (4.07 ms at fastest, 8.1 ms at
    the median). Under 3/4 of a tick beyond the fastest round, under half a long fastest round beyond it (302 ms,
    4.1 ms beyond: jitter), or in a run that shows no ticks: no wait is read."""
    busy = [23.7e-6, 24.1e-6, 64.7e-6, 63.9e-6, 65.2e-6, 105.0e-6, 64.0e-6]
    assert _waited_of(busy) == 4e-3 and np.isnan(_waited_of(busy, ticks=False))
    assert np.isnan(_waited_of([23.7e-6, 24.1e-6, 50.0e-6, 52.0e-6, 51.0e-6, 24.0e-6, 52.0e-6]))  # 2.7 ms beyond
    assert _waited_of([23.7e-6, 24.1e-6, 54.0e-6, 55.0e-6, 53.8e-6, 24.0e-6, 56.0e-6]) == 4e-3  # 3.01 ms beyond
    assert _waited_of([x + 17e-6 for x in busy]) == 4e-3  # its fastest round 4.07 ms, its median 2x that
    assert np.isnan(_waited_of([x + 3e-3 for x in busy]))  # 302 ms at fastest: a tick's wait past it is no outlier


def test_the_many_call_rule_needs_two_calls_a_round_five_rounds_and_kept_rounds():
    """Two calls a round are many (rounds of 2 × 1.2 ms, the median round 3.1 ms beyond); five rounds are the fewest,
    four too few; a row that kept no rounds is no evidence, nor is one of one call a round whose rounds are off the
    ticks however far apart (1 ms at fastest, 5.5 ms at the median: the one-call rule's, not this one's)."""
    def of(per_call, calls, data=True):
        bench = _plain(per_call, "clone")
        bench["stats"]["iterations"] = calls
        if not data:
            bench["stats"].pop("data")
        return rows_of([bench, _plain(ON_12), _plain(ON_12)], "run", None)[0]["on_ticks"]

    two = [1.2e-3, 1.25e-3, 2.8e-3, 2.75e-3, 2.9e-3]  # rounds 2.4 ms at fastest, 5.6 ms at the median
    assert of(two, 2) == 4e-3 and np.isnan(of(two[:4], 2)) and np.isnan(of(two, 2, data=False))
    assert np.isnan(of([1.0e-3, 1.1e-3, 5.5e-3, 5.7e-3, 6.3e-3, 5.3e-3, 1.05e-3], 1))


def _ticked_run(blocks):
    """A 1 MiB clone in ``blocks`` (calls a round, rounds), and a copy_ of one call a round on the ticks, enough for the
    run to show them: their two rows."""
    benches = blocked([data for _, data in blocks])
    for b, (calls, _) in zip(benches, blocks, strict=True):
        b["stats"]["iterations"] = calls
    return rows_of([*benches, _plain(ON_12)], "run", None)


def test_blocks_on_the_ticks_are_left_out_where_another_timed_many_calls_a_round():
    fast = [15e-6 + k * 1e-7 for k in range(8)]
    merged, copy = _ticked_run([(100, fast), (100, fast), (1, ON_12), (1, ON_12)])
    assert merged["tick_blocks"] == 2 and merged["blocks"] == 2 and np.isnan(merged["on_ticks"])
    assert merged["median_s"] == pytest.approx(15.35e-6) and not merged["mixed_iterations"]
    assert np.isnan(merged["block_medians"][2]) and merged["bandwidth_gbps"] > 0
    # the copy_, one row of one call a round on the ticks: named (its bytes over its median stay in the row, for
    # compare and the history; the report's view states none)
    assert copy["on_ticks"] == 4e-3 and copy["bandwidth_gbps"] > 0
    merged, _ = _ticked_run([(2, fast), (2, fast), (1, ON_12), (1, ON_12)])  # two calls a round are many
    assert merged["tick_blocks"] == 2
    # with no block of many calls, the blocks on the ticks stay: they are how the case ran
    merged, _ = _ticked_run([(1, fast), (1, fast), (1, ON_12), (1, ON_12)])
    assert merged["tick_blocks"] == 0 and merged["blocks"] == 4


def test_blocks_all_of_one_call_a_round_stay_and_the_row_is_judged_on_all_its_rounds():
    off = [x + 1.3e-3 for x in ON_12]
    merged, _ = _ticked_run([(1, off), (1, ON_12), (1, ON_12)])  # 14 of 24 rounds on the ticks
    assert merged["tick_blocks"] == 0 and merged["blocks"] == 3 and merged["on_ticks"] == 4e-3
    merged, _ = _ticked_run([(1, off), (1, off), (1, ON_12)])  # 7 of 24
    assert np.isnan(merged["on_ticks"]) and merged["bandwidth_gbps"] > 0


def test_a_faster_side_on_the_ticks_gives_a_floor_only_under_a_steady_slower_side():
    """A side on the ticks holds a wait for the CPU of unknown length. Where it is the slower side (or both are), the
    wait may be all of the difference: no interval, and the reason in its words. Where it is the faster side alone, the
    wait only adds to it, but the slower side's time is a floor only where its own rounds did not wait: the loaded
    run's 64 MiB clone (median 119 ms, its blocks 100-120 ms, against copy_'s 20 ms on five ticks) is no floor. The same
    clone with its rounds within a tick of its fastest is: at least the interval's near end, and "at most" the other
    way round."""
    view = RunView.of(load([ROOT / "tests" / "data" / "cpu-loaded-host.json"]))
    rows = view.rows[(view.rows["op"] == "host") & (view.rows["nbytes"] == 64 * MiB)]
    copy, clone = (rows[rows["method"].eq(m) & rows["variant"].isna()].iloc[0] for m in ("copy_", "clone"))
    assert pd.notna(copy["on_ticks"]) and pd.isna(clone["on_ticks"]) and clone["median_s"] - clone["min_s"] > 0.003
    assert clone["waited_off_ticks"] and not copy["waited_off_ticks"]  # on the ticks: said there, not twice
    steady = clone.copy()  # its rounds within 3/4 of a 4 ms tick of its median, as its loader would have read them
    steady["min_s"], steady["waited_off_ticks"] = steady["median_s"] - 0.0029, False
    steady["data"] = [max(t, steady["min_s"]) for t in steady["data"]]
    bound, whole = view.ratio(steady, copy), view.ratio(steady, copy.drop("on_ticks"))
    assert bound.paired and bound.resolved and (bound.value, bound.low, bound.high) == (whole.value, whole.low, np.inf)
    assert bound.text() == "at least 5.2× (its faster side waited for the CPU)"
    assert (view.ratio(copy, steady).low, view.ratio(copy, steady).high) == (0.0, whole.faster().high)
    many = clone.copy()  # rounds of many calls off the ticks whose spread load read as no wait (``_waited``)
    many["iterations"], many["waited_off_ticks"] = 100, False
    assert view.ratio(many, copy).text() == bound.text()
    slower = clone.copy()
    slower["on_ticks"] = 0.004
    # clone, the slower side, off the ticks but unsteady: it waited too, and the words say so; so where both lie on ticks
    for a, b in ((clone, copy), (copy, clone), (slower, copy)):
        judged = view.ratio(a, b)
        assert judged.basis == "waited" and not judged.judged and (judged.low, judged.high) == (0.0, np.inf)
        assert judged.value == pytest.approx(a["median_s"] / b["median_s"])
        assert judged.text() == "can't tell (the faster side's rounds waited for the CPU, and the slower side's too)"
    # the slower side alone on the ticks took at most its median: a ceiling, unjudged ("at most"), and a floor the
    # other way round; never resolved, and said as a wait
    quiet = copy.drop("on_ticks")
    quiet["min_s"] = quiet["median_s"] - 0.001
    quiet["data"] = [max(t, quiet["min_s"]) for t in quiet["data"]]
    unwaited = slower.drop("on_ticks")
    unwaited["waited_off_ticks"] = False  # no wait off the ticks either: judged on its blocks, both ends
    ceiling, floor, plain = view.ratio(slower, quiet), view.ratio(quiet, slower), view.ratio(unwaited, quiet)
    assert plain.judged and (ceiling.low, ceiling.high, floor.low, floor.high) == (0.0, plain.high, plain.faster().low, np.inf)
    for judged in (ceiling, floor):
        assert judged.basis == "ticks" and not judged.judged and not judged.resolved
        assert judged.text() == f"can't tell (one side's rounds waited for the CPU; {judged.figures()})"
    assert ceiling.figures() == f"at most {plain.high:.3g}×" and floor.figures() == f"at least {plain.faster().low:.3g}×"
    # the view states no bandwidth of either (clone's one-call rounds waited); the loaded run's rows keep bytes over median
    assert np.isnan(copy["bandwidth_gbps"]) and np.isnan(copy["busbw_gbps"]) and np.isnan(clone["bandwidth_gbps"])
    assert view.results.frame.loc[[copy.name, clone.name], "bandwidth_gbps"].gt(0).all()


def test_one_call_rounds_that_waited_off_the_ticks_are_read_as_waited():
    """A one-call round is the call and its waits: in a run whose rounds land on 4 ms ticks, a median 3/4 of a tick or
    more beyond the fastest round is a wait (the busy run's one-thread 64 MiB copy_, 7.18 against 14.3 ms), however
    far off the multiples; under it, with too few rounds, rounds of many calls, mixed blocks or no tick, it is not."""
    from xferbench.analyze.load.blocks import waited_one_call

    clusters = [7.2e-3, 7.3e-3, 10.2e-3, 10.5e-3, 14.3e-3, 14.6e-3, 14.7e-3]
    row = {"iterations": 1, "data": clusters}
    assert waited_one_call(row, 4e-3) and not waited_one_call(row, float("nan"))
    assert not waited_one_call(row | {"data": [7.2e-3, 7.3e-3, 9.9e-3, 10.1e-3, 10.2e-3]}, 4e-3)  # 2.9 ms beyond
    assert waited_one_call(row | {"data": [7.2e-3, 7.3e-3, 10.25e-3, 10.3e-3, 10.4e-3]}, 4e-3)  # 3.05 ms beyond
    assert not waited_one_call(row | {"data": clusters[:4]}, 4e-3)  # four rounds: too few
    assert not waited_one_call(row | {"iterations": 2}, 4e-3) and not waited_one_call(row | {"mixed_iterations": True}, 4e-3)
    assert not waited_one_call({"iterations": 1, "data": float("nan")}, 4e-3)
    tick = 2.0**-8  # 3/4 of a tick beyond the fastest, exactly (binary fractions): a wait
    assert waited_one_call({"iterations": 1, "data": [2.0**-10, 2.0**-10, tick, tick, tick]}, tick)


def test_the_many_call_rule_s_bounds_are_exact():
    """Rounds of 2 calls: a median round 3/4 of a 4 ms tick beyond a fastest under one (1 → 4 ms) held a wait, 2.98 ms
    beyond did not; past a fastest round longer than a tick, half that round (1 s → 1.5 s) is a wait, 1.49 s not."""
    from xferbench.analyze.load.blocks import _waited

    def rounds(fastest: float, median: float) -> dict[str, object]:
        return {"iterations": 2, "data": [fastest / 2] * 2 + [median / 2] * 3}

    assert _waited(rounds(0.001, 0.004), 4e-3) and not _waited(rounds(0.001, 0.00398), 4e-3)
    assert _waited(rounds(1.0, 1.5), 4e-3) and not _waited(rounds(1.0, 1.49), 4e-3)


def _named(frame: pd.DataFrame) -> list[tuple[str, str, int]]:
    """Each row's method, variant and MiB, sorted."""
    rows = frame[["method", "variant", "nbytes"]].itertuples(index=False)
    return sorted((m, v if isinstance(v, str) else "", n // MiB) for m, v, n in rows)


def test_the_rows_whose_rounds_waited_off_the_ticks_are_read_by_their_own_run_s_tick():
    """The busy run (4 ms ticks): its clone and one-thread copy_ at 64 MiB waited off the ticks (its 1 MiB clone and
    one-thread copy_ and 64 MiB copy_ lie on them); no row of cpu-sample, a quiet run with no tick, however far its
    rounds spread, even merged with the busy run."""
    from xferbench.analyze.load.blocks import waited_rows

    busy = load([ROOT / "tests" / "data" / "cpu-busy-host.json"]).frame
    assert _named(busy[waited_rows(busy)]) == [("clone", "", 64), ("copy_", "single_thread", 64)]
    assert _named(busy[busy["on_ticks"].notna()]) == [("clone", "", 1), ("copy_", "", 64), ("copy_", "single_thread", 1)]
    both = load([ROOT / "tests" / "data" / "cpu-busy-host.json", ROOT / "tests" / "data" / "cpu-sample.json"]).frame
    # merged, a case keeps one row (cpu-sample's, at 1 MiB): the busy run's two 64 MiB rows wait off the ticks
    assert set(both.loc[waited_rows(both), "run"]) == {"cpu-busy-host"} and waited_rows(both).sum() == 2
    big = busy[busy["nbytes"].eq(64 * MiB) & busy["on_ticks"].isna()]  # a subset keeps its rows' own index (fit_paths)
    assert waited_rows(big).index.equals(big.index) and waited_rows(big).all()
    quiet = load([ROOT / "tests" / "data" / "cpu-sample.json"]).frame
    assert not waited_rows(quiet).any() and waited_rows(quiet.iloc[:0]).empty
    assert not waited_rows(quiet.drop(columns="waited_off_ticks")).any()  # rows no loader read


def test_a_busy_run_with_no_tick_reads_its_waits_by_the_longest():
    """The threads run (load 11.6 on 2 CPUs) shows no tick: its rounds far past their fastest, 7.5 ms (3/4 of 10 ms,
    the longest tick) and half that fastest or more, waited: copy_ 1 MiB in rounds of 100 calls (1.27 → 21.6 ms), one
    call of copy_ at 256 KiB and 16 MiB, clone at 16 MiB, the one-thread copy_ of 1 MiB; not its 1 GiB copy_ (506 →
    608 ms: 20% past). Its 256 KiB clone (18.3 → 21.7 ms) waited in every round: its fastest stood 7.5 ms or more past
    the median of a larger size (1 MiB: 16.6 µs). The same rounds in a run that recorded no load are read as no wait."""
    from xferbench.analyze.load.blocks import waited_rows

    path = ROOT / "tests" / "data" / "cpu-threads-sample.json"
    threads = load([path]).frame
    assert threads["on_ticks"].isna().all()
    assert _named(threads[waited_rows(threads)]) == [("clone", "", 0), ("clone", "", 16), ("copy_", "", 0),
                                                     ("copy_", "", 1), ("copy_", "", 16), ("copy_", "single_thread", 1)]
    assert threads.loc[waited_rows(threads), "nbytes"].min() == 256 * 1024
    quiet = json.loads(path.read_text())
    quiet.pop("xferbench_run", None)
    quiet["machine_info"].get("xferbench", {}).pop("load", None)
    assert not waited_rows(load([Document(path, quiet)]).frame).any()


def test_a_row_of_two_loops_reads_its_rounds_of_the_most_calls():
    """The quick run's module move at 38.2 MiB: blocks of 100 calls a round (50 rounds, 7.88 ms at fastest, 20.2 ms at
    the median) beside one of one call a round (41-65 µs). A reading found "its fastest 4.06 ms": 100 x the one-call
    block's 40.6 µs, a round no block ran. Its rounds are the 100-call blocks' alone, for the rule and the page."""
    from xferbench.analyze.load.rows import round_times
    from xferbench.analyze.report.svg import ticks_said

    rows = load([ROOT / "tests" / "data" / "cpu-quick-sample.json"]).frame
    (row,) = (r for _, r in rows.iterrows() if r["op"] == "module_to" and r["variant"] == "again"
              and r["nbytes"] == 40018272)
    calls, rounds = round_times(row)
    assert calls == 100 and len(rounds) == 50 and rounds.min() == pytest.approx(7.878e-3, abs=1e-6)
    assert ticks_said(row, "them") == ("its median round of 100 calls took 20.2 ms, its fastest 7.88 ms: a wait for the "
                                       "CPU is part of them")



def test_a_wait_in_every_round_is_read_against_a_larger_size_only_where_a_busy_run_shows_no_tick():
    """A size whose fastest call stood 3/4 of the longest tick (7.5 ms) or more past a larger size's median call waited
    in every round, bytes only adding time: read so in a busy run with no tick, 7.5 ms past exactly but not 7.49 ms
    (binary fractions: 2**-7 s against 2**-7 + 7.5 ms); not in a quiet run, nor where a tick was found (its rules
    read the waits there)."""
    from xferbench.analyze.load.blocks import least_larger, waited_off

    def row(nbytes: int, fastest: float, median: float) -> dict[str, object]:
        return {"path": "p", "nbytes": nbytes, "min_s": fastest, "median_s": median}

    def every_round_waited(one: dict[str, object], others: list[dict[str, object]]) -> bool:
        """``one`` read in a busy run with no tick, beside ``others`` of its run."""
        return waited_off(one, math.nan, True, least_larger([one, *others])[0])

    big = row(2**20, 2.0**-7, 2.0**-7)
    assert every_round_waited(row(2**18, 2.0**-7 + 0.0075, 0.03), [big])
    assert not every_round_waited(row(2**18, 2.0**-7 + 0.00749, 0.03), [big])
    assert not every_round_waited(row(2**18, 0.03, 0.03), [row(2**16, 0.0, 0.0)])  # a smaller size proves nothing
    assert not every_round_waited(row(2**18, 0.03, 0.03), [big | {"path": "q"}])  # nor another path
    # the least of the larger sizes' medians, each size's own excluded (two rows of one size: neither is larger)
    assert least_larger([big | {"median_s": 0.25}, row(2**18, 1.0, 1.0), row(2**18, 2.0, 0.5), big]) == [
        math.inf, 2.0**-7, 2.0**-7, math.inf]

    def timed(method: str, nbytes: int, rounds: list[float]) -> dict[str, object]:
        made = bench("host", method, "cpu", "cpu", nbytes, float(np.median(rounds)), "pageable")
        made["stats"] |= {"data": rounds, "min": min(rounds), "max": max(rounds)}
        return made

    benches = [timed("clone", 2**18, [0.03] * 5), timed("clone", 2**20, [1e-5] * 5)]
    for busy, waited in ((True, [True, False]), (False, [False, False])):
        assert [r["waited_off_ticks"] for r in rows_of(benches, "r", None, busy)] == waited
    ticks = [timed("copy_", 2**n, [0.004, 0.008, 0.004, 0.008, 0.004]) for n in (10, 12)]  # on 4 ms ticks
    assert run_tick([bench_row(b, "r", None) for b in ticks]) == 0.004
    assert [r["waited_off_ticks"] for r in rows_of(benches + ticks, "r", None, True)][:2] == [False, False]


def test_placement_blocks_the_pair_the_first_screen_judges():
    """placement's first planned case converts on the CPU alone and touches no GPU; its pair, converted then moved
    against moved then converted (the first screen's change), is what runs in blocks, on the first GPU."""
    from xferbench.families.placement.run import plan

    ids = blocked_ids("placement", plan(["cpu", "cuda:0", "cuda:1"], [8, 64, 256]))
    assert ids == {"convert_then_move-256images-cpu->cuda:0": 5, "move_then_convert-256images-cpu->cuda:0": 5}
