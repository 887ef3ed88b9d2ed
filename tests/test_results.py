import copy
import json
import math
import os
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given
from hypothesis import strategies as st

from xferbench.analyze.load.results import (
    ResultsError,
    bounded_read,
    find_json,
    fingerprint_problem,
    is_journal,
    load,
)
from xferbench.analyze.load.rows import QUARTILE_ROUNDING

from hang import no_hang
from hostile_inputs import (
    BASE,
    DATA,
    FAST,
    assert_refused,
    dump,
    hostile_numbers,
    json_values,
    mutate,
    property_settings,
    put,
    run_cli,
    small,
)

SAMPLE = Path(__file__).parent / "data" / "cpu-sample.json"


@pytest.fixture(scope="module")
def sample():
    return json.loads(SAMPLE.read_text())


def write(tmp_path: Path, name: str, content) -> Path:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


class TestGolden:
    def test_one_row_per_benchmark(self, sample):
        """Every xferbench benchmark of the file becomes exactly one row."""
        results = load([SAMPLE])
        assert len(results.frame) == len(sample["benchmarks"]) == 58
        assert results.notes == []
        assert not results.has_accelerator

    def test_row_values_come_from_the_json(self, sample):
        """Median, IQR, rounds and the contract fields are the file's, bandwidth is bytes once / median."""
        bench = next(b for b in sample["benchmarks"] if b["name"] == "test_host[pageable-copy_-16MiB-float32-cpu->cpu]")
        row = load([SAMPLE]).frame.set_index("name").loc[bench["name"]]
        assert row["median_s"] == bench["stats"]["median"]
        assert row["iqr_s"] == bench["stats"]["iqr"]
        assert row["rounds"] == bench["stats"]["rounds"]
        assert row["nbytes"] == 16 * 2**20
        assert row["bandwidth_gbps"] == pytest.approx(16 * 2**20 / bench["stats"]["median"] / 1e9, rel=1e-12)
        assert row["path"] == "host pageable copy_ cpu"
        assert row["data"] == bench["stats"]["data"]

    def test_noop_has_no_bandwidth(self):
        frame = load([SAMPLE]).frame
        assert frame[frame["op"] == "noop"]["bandwidth_gbps"].isna().all()


class TestSeveralFiles:
    def test_foreign_benchmarks_are_counted(self, tmp_path, sample):
        """A benchmark without xferbench's extra_info is left out and counted in a note."""
        sample = json.loads(json.dumps(sample))
        sample["benchmarks"].append({"name": "test_other", "extra_info": {}, "stats": sample["benchmarks"][0]["stats"]})
        results = load([write(tmp_path, "mixed.json", sample)])
        assert len(results.frame) == 58
        assert results.notes == ["Left out, not xferbench's: 1 benchmark."]

    def test_a_case_in_two_files_reads_one_instance_and_keeps_both(self, tmp_path, sample):
        """The same case in two files with as many rounds: the newer run's row is read, the older one kept in
        ``measured``, and a note says how many cases and which run each figure reads."""
        newer = json.loads(json.dumps(sample))
        newer["datetime"] = "2099-01-01T00:00:00"
        newer["benchmarks"] = newer["benchmarks"][:1]
        newer["benchmarks"][0]["stats"] |= {"median": 123.0, "data": [123.0]}
        results = load([write(tmp_path, "newer.json", newer), SAMPLE])
        assert len(results.frame) == 58 and len(results.measured) == 59
        assert (results.frame["median_s"] == 123.0).sum() == 1
        assert results.notes == [results.repeated]
        assert results.repeated == (
            "1 case was measured in more than one run: each figure and sentence reads one instance of each, the one "
            "with more rounds (ties: the newest run): 1 from newer. The others, 1 instance, is kept with the loaded data "
            "(a report's CSV lists every instance, its read column false for these), never averaged with these, drawn "
            "on one line with them nor divided by them.")

    def test_folder_reads_every_json(self, tmp_path, sample):
        (tmp_path / "run").mkdir()
        write(tmp_path / "run", "a.json", sample)
        assert len(load([tmp_path / "run"]).frame) == 58


class TestBadInput:
    @pytest.mark.parametrize(("name", "content", "message"), [
        ("empty.json", "", "the file is empty"),
        ("notjson.json", "<html>", "not JSON, or cut short (line 1, column 1"),
        ("other.json", {"results": [1, 2]}, "not a pytest-benchmark JSON file"),
        ("list.json", [1, 2], "not a pytest-benchmark JSON file"),
        ("none.json", {"machine_info": {}, "benchmarks": []}, "holds no benchmarks"),
        ("foreign.json", {"machine_info": {}, "benchmarks": [{"name": "x", "extra_info": {}, "stats": {}}]},
         "none of its 1 benchmarks are xferbench's"),
        ("newer.json", {"machine_info": {}, "benchmarks": [{"name": "x", "extra_info": {"xfer_schema": 99}, "stats": {}}]},
         "written by a newer xferbench (data schema 99)"),
        ("broken.json", {"machine_info": {}, "benchmarks": [{"name": "x", "extra_info": {"xfer_schema": 1}, "stats": {}}]},
         "benchmark 'x': field 'op' is missing"),
    ])
    def test_one_line_error_naming_the_file(self, tmp_path, name, content, message):
        """Each unusable file is a ResultsError whose one line names the file and the problem."""
        path = write(tmp_path, name, content)
        with pytest.raises(ResultsError) as error:
            load([path])
        assert str(error.value).startswith(f"{path}: ")
        assert message in str(error.value)
        assert "\n" not in str(error.value)

    def test_truncated(self, tmp_path):
        """A file cut short mid-write is reported as such."""
        path = write(tmp_path, "cut.json", SAMPLE.read_text()[:5000])
        with pytest.raises(ResultsError, match="not JSON, or cut short"):
            load([path])

    def test_missing(self, tmp_path):
        with pytest.raises(ResultsError, match="no such file"):
            load([tmp_path / "nope.json"])

    def test_empty_folder(self, tmp_path):
        with pytest.raises(ResultsError, match="no JSON files in this folder"):
            load([tmp_path])


@pytest.mark.parametrize(("devices", "expected"), [
    (["cpu"], False), (["rank0:cpu", "all:cpu"], False), (["cuda:0"], True), (["rank0:cuda"], True), (["all:cuda"], True),
])
def test_has_accelerator_looks_past_rank_prefixes(devices, expected):
    """Distributed rows name devices per rank; only the device kind decides."""
    results = load([SAMPLE])
    results.frame = results.frame.head(len(devices)).assign(src=devices, dst=devices)
    assert results.has_accelerator is expected


def xfer(op="h2d", *, median=1e-3, name=None, stats=None, **fields):
    """One xferbench benchmark as pytest-benchmark writes it; ``fields`` override the identity and measured fields."""
    info = {"xfer_schema": 1, "op": op, "method": "copy_", "src": "cpu", "dst": "cuda:0", "nbytes": 2**20,
            "dtype": "float32", "shape": [2**18], "clock": "wall+sync"} | fields
    base = {"min": median, "max": median, "mean": median, "median": median, "iqr": 0.0, "q1": median,
            "q3": median, "stddev": 0.0, "rounds": 7, "iterations": 3, "data": [median] * 7}
    return {"name": name or f"test_{op}", "group": op, "extra_info": info, "stats": base | (stats or {})}


def run_file(tmp_path, name, benchmarks, *, when="2026-01-01T00:00:00", machine=None, commit=None):
    data = {"machine_info": {"node": name} if machine is None else machine, "commit_info": commit or {"id": name},
            "benchmarks": benchmarks, "datetime": when}
    return write(tmp_path, f"{name}.json", data)


def one_row(tmp_path, **kwargs):
    return load([run_file(tmp_path, "run", [xfer(**kwargs)])]).frame.iloc[0]


class TestRowFields:
    def test_identity_fields_from_their_own_keys(self, tmp_path):
        """Non-default dtype, variant, blocking, world size and backend reach the row unchanged."""
        row = one_row(tmp_path, dtype="bfloat16", variant="queued", non_blocking=True, world_size=4, backend="gloo",
                      host_memory="pinned", shape=[2, 3], nbytes=12, method="to", src="cuda:1", dst="cuda:2")
        assert (row["dtype"], row["variant"], row["non_blocking"], row["world_size"], row["backend"]) == \
            ("bfloat16", "queued", True, 4, "gloo")
        assert (row["host_memory"], row["method"], row["src"], row["dst"], row["nbytes"]) == \
            ("pinned", "to", "cuda:1", "cuda:2", 12)
        assert row["shape"] == "2x3"

    def test_statistics_and_run(self, tmp_path):
        """Each statistic comes from its own key; run, datetime, name and group identify where the row is from."""
        stats = {"min": 1.0, "q1": 2.0, "mean": 3.0, "median": 4.0, "q3": 5.0, "iqr": 6.0, "max": 7.0, "stddev": 8.0}
        path = run_file(tmp_path, "0001_abc", [xfer(stats=stats | {"data": [4.0] * 7}, name="test_h2d[1MiB]")],
                        when="2026-02-03T04:05:06")
        row = load([path]).frame.iloc[0]
        assert {k: row[f"{k}_s"] for k in stats} == stats
        assert (row["rounds"], row["iterations"], row["data"]) == (7, 3, [4.0] * 7)
        assert (row["run"], row["datetime"], row["name"], row["group"]) == ("0001_abc", "2026-02-03T04:05:06",
                                                                          "test_h2d[1MiB]", "h2d")

    def test_iterations_default_to_one(self, tmp_path):
        """An older JSON without 'iterations' counts one call per round."""
        bench = xfer()
        del bench["stats"]["iterations"]
        assert load([run_file(tmp_path, "run", [bench])]).frame.iloc[0]["iterations"] == 1

    def test_bandwidth_is_bytes_once_over_the_median(self, tmp_path):
        row = one_row(tmp_path, nbytes=2 * 10**9, median=0.5)
        assert row["transfer_s"] == 0.5
        assert row["bandwidth_gbps"] == 4.0
        assert np.isnan(row["busbw_gbps"])

    def test_round_trip_is_two_transfers(self, tmp_path):
        """A ping-pong call carries the payload there and back: one transfer is half the call, so the bandwidth
        is not halved."""
        row = one_row(tmp_path, op="send_recv", world_size=2, backend="gloo", nbytes=10**9, median=0.5, round_trip=True)
        assert (row["median_s"], row["transfer_s"], row["bandwidth_gbps"]) == (0.5, 0.25, 4.0)

    def test_not_a_round_trip(self, tmp_path):
        row = one_row(tmp_path, nbytes=10**9, median=0.5, round_trip=False)
        assert (row["transfer_s"], row["bandwidth_gbps"]) == (0.5, 2.0)

    def test_bus_bandwidth(self, tmp_path):
        """busbw = algbw x the collective's bus factor, as nccl-tests reports it."""
        row = one_row(tmp_path, op="all_reduce", nbytes=10**9, median=0.5, bus_factor=1.5, world_size=2,
                      backend="nccl")
        assert (row["bandwidth_gbps"], row["busbw_gbps"], row["bus_factor"]) == (2.0, 3.0, 1.5)

    @pytest.mark.parametrize(("fields", "moves"), [
        ({"op": "noop", "method": "to"}, False),
        ({"op": "module_to", "variant": "again"}, False),
        ({"op": "module_to", "variant": "first"}, True),
        ({"op": "someone_elses_op"}, True),
    ])
    def test_which_rows_have_a_bandwidth(self, tmp_path, fields, moves):
        """No-ops and a second module.to() have no bandwidth (a zero time is refused at load); an unknown op
        is assumed to move."""
        row = one_row(tmp_path, **fields)
        assert np.isnan(row["bandwidth_gbps"]) != moves

    def test_measured_fields_and_path(self, tmp_path):
        """Device time reads as a number (absent: NaN); the path label and case key come from the identity."""
        timed = xfer(device_seconds=2e-4, host_memory="pinned", device_time_method="profiler", name="a")
        rows = load([run_file(tmp_path, "run", [timed,
                                                xfer(op="d2h", src="cuda:0", dst="cpu", name="b")])]).frame
        assert rows["device_seconds"].iloc[0] == 2e-4 and np.isnan(rows["device_seconds"].iloc[1])
        assert rows["device_seconds"].dtype == float
        assert list(rows["path"]) == ["h2d pinned copy_ cpu->cuda:0", "d2h copy_ cuda:0->cpu"]
        assert rows["case_key"].iloc[0] == "h2d|copy_|cpu|cuda:0|1048576|float32|(262144,)|pinned|False|None|None|None"
        assert rows["clock"].iloc[0] == "wall+sync"


class TestFilesAndOrder:
    def test_foreign_benchmark_first(self, tmp_path):
        """A foreign benchmark before xferbench's does not hide them; non-dict entries count as foreign too."""
        foreign = {"name": "test_other", "extra_info": {}, "stats": xfer()["stats"]}
        path = run_file(tmp_path, "run", [foreign, "junk", {"name": "x", "extra_info": None}, xfer(name="a"),
                                          xfer(op="d2h", name="b")])
        results = load([path])
        assert list(results.frame["name"]) == ["a", "b"]
        assert results.notes == ["Left out, not xferbench's: 3 benchmarks."]

    def test_ties_read_the_newest_whatever_the_order_given(self, tmp_path):
        """Two runs of one case with as many rounds: the newer run's figure is read, given in either order; the run
        each row came from stays on it, and the machine is the newest run's."""
        old = run_file(tmp_path, "old", [xfer(median=2.0), xfer(op="d2h", name="only_old")], when="2026-01-01T00:00:00")
        new = run_file(tmp_path, "new", [xfer(median=1.0)], when="2026-06-01T00:00:00")
        for paths in ([old, new], [new, old]):
            results = load(paths)
            rows = results.frame.set_index("op")
            assert rows.loc["h2d", "median_s"] == 1.0 and rows.loc["h2d", "run"] == "new"
            assert rows.loc["d2h", "run"] == "old"
            assert results.machine_info == {"node": "new"} and results.commit_info == {"id": "new"}
            assert results.sources == [str(p) for p in paths]
            assert sorted(results.measured["run"]) == ["new", "old", "old"]
            assert "1 from new." in results.notes[0]

    def test_a_short_second_run_never_displaces_a_longer_first(self, tmp_path):
        """A newer run of fewer rounds (a quick run after a full one) is kept beside the older, not read: each case
        reads the instance with more rounds, whichever is newer, and the rows keep the files' order."""
        full = run_file(tmp_path, "full", [xfer(median=2.0, stats={"rounds": 30, "data": [2.0] * 30}),
                                           xfer(op="d2h", median=3.0)], when="2026-01-01T00:00:00")
        quick = run_file(tmp_path, "quick", [xfer(median=9.0, stats={"rounds": 5, "data": [9.0] * 5}),
                                             xfer(op="d2h", median=4.0, stats={"rounds": 8, "data": [4.0] * 8})],
                         when="2026-06-01T00:00:00")
        results = load([full, quick])
        assert list(zip(results.frame["op"], results.frame["run"], results.frame["median_s"], strict=True)) == [
            ("h2d", "full", 2.0), ("d2h", "quick", 4.0)]
        assert len(results.measured) == 4
        assert "2 cases were measured in more than one run" in results.repeated
        assert "1 from full, 1 from quick." in results.repeated

    def test_the_run_named_is_read_where_it_measured_the_case(self, tmp_path):
        """--read-run: the named run's instance wherever it measured the case, the rule elsewhere; a name that is no
        run of the files given is refused."""
        full = run_file(tmp_path, "full", [xfer(median=2.0, stats={"rounds": 30, "data": [2.0] * 30}),
                                           xfer(op="d2h", median=3.0)], when="2026-01-01T00:00:00")
        quick = run_file(tmp_path, "quick", [xfer(median=9.0, stats={"rounds": 5, "data": [9.0] * 5})],
                         when="2026-06-01T00:00:00")
        results = load([full, quick], prefer="quick")
        assert list(zip(results.frame["op"], results.frame["run"], results.frame["median_s"], strict=True)) == [
            ("d2h", "full", 3.0), ("h2d", "quick", 9.0)]
        assert "reads one instance of each, the run named (quick) where it measured the case, else the one with more " \
               "rounds (ties: the newest run): 1 from quick." in results.repeated
        with pytest.raises(ResultsError, match="no run named 'other' among the files given"):
            load([full, quick], prefer="other")

    def test_two_files_of_one_stem_are_two_runs(self, tmp_path, capsys):
        """a/run.json and b/run.json: each its own run, named by its path from the folder they share, so --read-run can
        name either, their rows stay apart, and the report's CSV says which file each row came from."""
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        first = run_file(tmp_path / "a", "run", [xfer(median=2.0), xfer(op="d2h", median=3.0)], when="2026-01-01T00:00:00")
        second = run_file(tmp_path / "b", "run", [xfer(median=9.0)], when="2026-06-01T00:00:00")
        results = load([first, second], prefer="b/run.json")
        assert list(zip(results.frame["op"], results.frame["run"], results.frame["median_s"], strict=True)) == [
            ("d2h", "a/run.json", 3.0), ("h2d", "b/run.json", 9.0)]
        assert list(results.measured["run"]) == ["a/run.json", "a/run.json", "b/run.json"]
        assert list(results.boot_ids) == ["a/run.json", "b/run.json"]
        out = tmp_path / "r.html"
        code, _, err = run_cli(capsys, "report", first, second, "--read-run", "a/run.json", "-o", out)
        assert code == 0, err
        rows = [line.split(",")[:3] for line in out.with_suffix(".csv").read_text().splitlines()[1:]]
        assert rows == [["a/run.json", "1", "True"], ["a/run.json", "1", "True"], ["b/run.json", "2", "False"]]

    @pytest.mark.parametrize(("paths", "names"), [
        (["x/full.json", "x/quick.json"], ["full", "quick"]),
        (["a/run.json", "b/run.json", "c.json"], ["a/run.json", "b/run.json", "c"]),
        (["r/a/run.json", "r/b/c/run.json"], ["a/run.json", "b/c/run.json"]),
        (["d/run.json", "d/run.jsonl"], ["run.json", "run.jsonl"]),
    ])
    def test_run_names_tell_files_of_one_stem_apart(self, paths, names):
        from xferbench.analyze.load.results import run_names

        assert run_names([Path(p) for p in paths]) == names

    def test_one_run_has_no_note_on_instances(self, tmp_path):
        results = load([run_file(tmp_path, "one", [xfer(), xfer(op="d2h")])])
        assert results.measured is None and results.repeated is None and results.notes == []

    def test_no_stray_columns_after_dropping_older_rows(self, tmp_path):
        """Replacing older rows leaves a clean 0..n-1 table, without an extra 'index' column in the report."""
        old = run_file(tmp_path, "old", [xfer(median=2.0), xfer(op="d2h")], when="2026-01-01T00:00:00")
        new = run_file(tmp_path, "new", [xfer(median=1.0)], when="2026-06-01T00:00:00")
        frame = load([old, new]).frame
        assert "index" not in frame.columns
        assert list(frame.index) == [0, 1]

    def test_cpu_run_has_numeric_device_times(self, tmp_path):
        """A run without any device time still has a numeric (all-NaN) device_seconds column to plot and average."""
        frame = load([run_file(tmp_path, "run", [xfer(), xfer(op="d2h")])]).frame
        assert frame["device_seconds"].dtype == float
        assert frame["device_seconds"].isna().all()

    def test_run_without_datetime_counts_as_oldest(self, tmp_path):
        undated = run_file(tmp_path, "undated", [xfer(median=9.0)], when=None)
        dated = run_file(tmp_path, "dated", [xfer(median=1.0)])
        assert load([dated, undated]).frame.iloc[0]["median_s"] == 1.0

    def test_missing_machine_and_commit_blocks(self, tmp_path):
        """null machine_info and commit_info read as empty, not as a crash in the report."""
        path = write(tmp_path, "nulls.json", {"machine_info": None, "commit_info": None, "benchmarks": [xfer()]})
        results = load([path])
        assert (results.machine_info, results.commit_info) == ({}, {})

    def test_folder_is_read_recursively_in_name_order(self, tmp_path):
        (tmp_path / "b").mkdir()
        second = run_file(tmp_path / "b", "2", [xfer(op="d2h")])
        first = run_file(tmp_path, "1", [xfer()])
        assert find_json(tmp_path) == [first, second]
        assert find_json(first) == [first]


class TestMalformedBenchmarks:
    def test_missing_statistic(self, tmp_path):
        """A benchmark without a median is named, with what is missing, in one line."""
        bench = xfer(name="test_h2d[1MiB]")
        del bench["stats"]["median"]
        path = run_file(tmp_path, "run", [bench])
        with pytest.raises(ResultsError) as error:
            load([path])
        assert str(error.value) == (f"{path}: benchmark 'test_h2d[1MiB]': stats field 'median' must be a finite number "
                                    "of seconds, 0 to 3e+07, got None")

    def test_wrong_field_type(self, tmp_path):
        path = run_file(tmp_path, "run", [xfer(name="n", nbytes="big")])
        with pytest.raises(ResultsError) as error:
            load([path])
        assert str(error.value) == f"{path}: benchmark 'n': field 'nbytes' must be a whole number >= 0, got 'big'"

    def test_unreadable_file(self, tmp_path):
        path = tmp_path / "binary.json"
        path.write_bytes(b"\xff\xfe\x00junk")
        with pytest.raises(ResultsError) as error:
            load([path])
        assert str(error.value) == f"{path}: cannot read it (UnicodeDecodeError)"

    def test_without_machine_info(self, tmp_path):
        """A JSON with benchmarks but no machine_info is not pytest-benchmark's."""
        path = write(tmp_path, "x.json", {"benchmarks": [xfer()]})
        with pytest.raises(ResultsError, match="not a pytest-benchmark JSON file"):
            load([path])

    def test_schema_of_this_version_is_read(self, tmp_path):
        """Schema 1 (this version) is read; only a newer one is refused."""
        assert len(load([run_file(tmp_path, "run", [xfer(xfer_schema=1)])]).frame) == 1


class TestSimulatedRun:
    def test_spec_of_a_simulated_run(self, tmp_path):
        """A run made with --xfer-simulate carries its machine spec, so report and check can label it."""
        spec = {"gpus": 2, "pcie": "gen5"}
        path = run_file(tmp_path, "sim", [xfer()], machine={"xferbench": {"simulated": spec}})
        assert load([path]).simulated == spec

    @pytest.mark.parametrize("machine", [{}, {"xferbench": "junk"}, {"xferbench": {}},
                                         {"xferbench": {"simulated": True}}])
    def test_measured_runs_are_not_simulated(self, tmp_path, machine):
        """A measured run, a foreign JSON or a malformed flag never reads as simulated."""
        assert load([run_file(tmp_path, "run", [xfer()], machine=machine)]).simulated is None


def journal_file(tmp_path, lines, *, name="run.journal.jsonl", cut=False):
    """A journal as measure/record/journal.py writes it: one JSON object a line; ``cut`` leaves the last line unfinished."""
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines)
    return write(tmp_path, name, text if cut else text + "\n")


NOT_JOURNAL = "not an xferbench journal (its first line needs 'xfer_journal')"
HEADER = {"xfer_journal": 1, "datetime": "2026-11-30T12:00:00", "planned": 5, "machine_info": {"node": "gpu-box"},
          "commit_info": {"id": "abc"}}


class TestJournal:
    def test_finished_journal_reads_like_a_results_file(self, tmp_path):
        """A journal whose run ended normally gives the same rows, machine and commit as the JSON would; nothing
        is labelled incomplete."""
        path = journal_file(tmp_path, [HEADER, {"benchmark": xfer(name="a")}, {"benchmark": xfer(op="d2h", name="b")},
                                       {"end": {"exitstatus": 0, "interrupted": False}}])
        results = load([path])
        assert list(results.frame["name"]) == ["a", "b"]
        assert list(results.frame["run"]) == ["run.journal"] * 2
        assert list(results.frame["datetime"]) == ["2026-11-30T12:00:00"] * 2
        assert (results.machine_info, results.commit_info) == ({"node": "gpu-box"}, {"id": "abc"})
        assert (results.incomplete, results.notes) == ([], [])

    @pytest.mark.parametrize("end", [[], [{"end": {"exitstatus": 2, "interrupted": True}}], [{"end": {"exitstatus": 2}}],
                                     [{"end": None}], [{"end": {"interrupted": False}}, {"end": {"interrupted": True}}]])
    def test_run_that_did_not_finish_is_labelled(self, tmp_path, end):
        """No end record, an interrupted end, or an end that does not say it finished: the page says how far the
        run got, in the labels and in the notes; the last end record decides."""
        path = journal_file(tmp_path, [HEADER, {"benchmark": xfer(name="a")}, {"benchmark": xfer(op="d2h", name="b")},
                                       *end])
        results = load([path])
        label = "Incomplete run: 2 of 5 cases finished before it stopped (run.journal.jsonl)."
        assert (results.incomplete, results.notes) == ([label], [label])
        assert len(results.frame) == 2

    def test_last_end_record_decides_finished(self, tmp_path):
        path = journal_file(tmp_path, [HEADER, {"benchmark": xfer()}, {"end": {"interrupted": True}},
                                       {"end": {"interrupted": False}}])
        assert load([path]).incomplete == []

    @pytest.mark.parametrize(("planned", "said"), [(2, " of 2"), (None, ""), (1, ""), (True, ""), ("5", ""),
                                                   (2.0, "")])
    def test_planned_count_only_when_it_is_a_plausible_whole_number(self, tmp_path, planned, said):
        """'2 of N' only when the header's plan is a whole number at least the finished count; else just '2'."""
        path = journal_file(tmp_path, [HEADER | {"planned": planned}, {"benchmark": xfer(name="a")},
                                       {"benchmark": xfer(op="d2h", name="b")}])
        assert load([path]).incomplete == [f"Incomplete run: 2{said} cases finished before it stopped "
                                           "(run.journal.jsonl)."]

    def test_line_cut_short_by_the_interruption_is_dropped(self, tmp_path):
        """A run killed mid-write leaves half a last line: the finished benchmarks before it still load."""
        path = journal_file(tmp_path, [HEADER, {"benchmark": xfer(name="a")}, '{"benchmark": {"name": "b", "ext'],
                            cut=True)
        results = load([path])
        assert list(results.frame["name"]) == ["a"]
        assert results.incomplete == ["Incomplete run: 1 of 5 cases finished before it stopped (run.journal.jsonl)."]

    @pytest.mark.parametrize(("lines", "cut", "message"), [
        ([HEADER, "{broken", {"benchmark": xfer()}], True, "journal line 2 is not JSON"),
        ([HEADER, {"benchmark": xfer()}, "{broken"], False, "journal line 3 is not JSON"),
        ([HEADER, "", "", "{broken", {"benchmark": xfer()}], False, "journal line 4 is not JSON"),
        ([HEADER, [1, 2], {"benchmark": xfer()}], False, "journal line 2 is not a JSON object"),
        ([{"planned": 1}, {"benchmark": xfer()}], False, NOT_JOURNAL),
        ([HEADER | {"xfer_journal": True}, {"benchmark": xfer()}], False, NOT_JOURNAL),
        ([HEADER | {"xfer_journal": "1"}, {"benchmark": xfer()}], False, NOT_JOURNAL),
        (['{"xfer_journal": 1, "planned'], True, NOT_JOURNAL),
        ([HEADER, {"end": {"interrupted": True}}], False,
         "the journal holds no finished benchmark (the run stopped before the first)"),
        ([HEADER | {"machine_info": [1]}, {"benchmark": xfer()}], False, "field 'machine_info' must be an object, got [1]"),
    ])
    def test_unusable_journal_is_one_line_naming_file_and_line(self, tmp_path, lines, cut, message):
        """A corrupt line that is not the interrupted last write, a foreign JSON Lines file or an empty run is an
        error that names the file and the line (blank lines counted), never a traceback."""
        path = journal_file(tmp_path, lines, cut=cut)
        with pytest.raises(ResultsError) as error:
            load([path])
        assert str(error.value) == f"{path}: {message}"

    def test_missing_header_blocks_read_as_empty(self, tmp_path):
        path = journal_file(tmp_path, [{"xfer_journal": 1, "machine_info": None}, {"benchmark": xfer()}])
        results = load([path])
        assert (results.machine_info, results.commit_info) == ({}, {})
        assert results.frame["datetime"].isna().all()

    @pytest.mark.parametrize("text", ['{"xfer_journal": 1}\n', '\n  {"xfer_journal": 1}\n'])
    def test_journal_named_json_is_known_by_its_first_line(self, tmp_path, text):
        """A journal renamed *.json (or with a blank first line) is still read as a journal, not refused as JSON."""
        path = write(tmp_path, "copied.json", text + json.dumps({"benchmark": xfer(name="a")}) + "\n")
        results = load([path])
        assert list(results.frame["name"]) == ["a"]
        assert results.incomplete == ["Incomplete run: 1 cases finished before it stopped (copied.json)."]

    def test_jsonl_is_a_journal_whatever_its_first_key(self, tmp_path):
        """A *.jsonl file is read as a journal even when its header lists other keys first."""
        header = {"datetime": "2026-11-30T12:00:00"} | HEADER
        path = journal_file(tmp_path, [header, {"benchmark": xfer()}, {"end": {"interrupted": False}}], name="x.jsonl")
        assert len(load([path]).frame) == 1

    def test_jsonl_that_is_not_a_journal(self, tmp_path):
        path = journal_file(tmp_path, [{"machine_info": {}}, {"benchmark": xfer()}], name="other.jsonl")
        with pytest.raises(ResultsError) as error:
            load([path])
        assert str(error.value) == f"{path}: not an xferbench journal (its first line needs 'xfer_journal')"

    def test_a_results_file_named_jsonl_is_read_as_one(self, tmp_path):
        """The kind is told by content: one whole results document is no journal, whatever its name."""
        path = journal_file(tmp_path, [{"machine_info": {}, "benchmarks": [xfer()]}], name="other.jsonl")
        assert len(load([path]).frame) == 1

    def test_incomplete_journal_beside_a_finished_run(self, tmp_path):
        """Only the journal that did not finish is labelled, by its own file name."""
        finished = run_file(tmp_path, "done", [xfer(op="d2h")])
        partial = journal_file(tmp_path, [HEADER | {"planned": 3}, {"benchmark": xfer()}], name="late.jsonl")
        results = load([finished, partial])
        assert results.incomplete == ["Incomplete run: 1 of 3 cases finished before it stopped (late.jsonl)."]
        assert len(results.frame) == 2


class TestWhatAFileIs:
    """A journal is told by its first line; a ``.jsonl`` name alone does not make a plain results file one."""

    DOCUMENT: ClassVar[dict] = {"machine_info": {}, "benchmarks": [{"name": "a"}]}

    def test_a_journal_by_its_first_line_whatever_its_name(self):
        assert is_journal(Path("run.json"), '  {"xfer_journal": 1}\n{"name": "a"}\n')
        assert is_journal(Path("run.jsonl"), '{"name": "a"}\n{"name": "b"}\n')

    def test_a_results_file_named_jsonl_is_not_a_journal(self):
        """pytest-benchmark's pretty-printed JSON starts with a lone ``{``; one written on one line holds its
        benchmarks there."""
        assert not is_journal(Path("run.jsonl"), json.dumps(self.DOCUMENT, indent=4) + "\n")
        assert not is_journal(Path("run.jsonl"), json.dumps(self.DOCUMENT) + "\n")
        assert not is_journal(Path("run.json"), '{"name": "a"}\n{"name": "b"}\n')

    def test_a_bounded_read_keeps_to_its_limit(self, tmp_path):
        """The first bytes of a file when told so, else refused past the limit (compare sniffs a file's start)."""
        path = tmp_path / "run.json"
        path.write_bytes(b"0123456789" * 3)
        assert bounded_read(path, 4, whole=False) == b"0123"
        assert bounded_read(path, 30) == b"0123456789" * 3
        with pytest.raises(ResultsError, match="larger than 0 MiB"):
            bounded_read(path, 29)


class TestSavedCompleteness:
    """A run cut short saves ``xfer_completeness`` (measure/record/journal.py): the page says how far it got."""

    def save(self, tmp_path, completeness, **fields):
        data = {"machine_info": {"node": "n"}, "commit_info": {"id": "c"}, "datetime": "2026-01-01T00:00:00",
                "benchmarks": [xfer(name="a"), xfer(name="b", nbytes=2**21, shape=[2**19])], **fields}
        if completeness is not ...:
            data["xfer_completeness"] = completeness
        return write(tmp_path, "run.json", data)

    @pytest.mark.parametrize(("completeness", "said"), [
        ({"complete": False, "planned": 12}, "Incomplete run: 2 of 12 cases finished before it stopped (run.json)."),
        ({"complete": False, "planned": 0}, "Incomplete run: 2 cases finished before it stopped (run.json)."),
        ({"complete": False, "planned": "12"}, "Incomplete run: 2 cases finished before it stopped (run.json)."),
        ({"complete": False}, "Incomplete run: 2 cases finished before it stopped (run.json)."),
    ])
    def test_a_run_cut_short_says_so(self, tmp_path, completeness, said):
        assert load([self.save(tmp_path, completeness)]).notes == [said]

    @pytest.mark.parametrize("completeness", [{"complete": True, "planned": 2}, {"complete": None}, "no", ...])
    def test_a_whole_run_says_nothing(self, tmp_path, completeness):
        assert load([self.save(tmp_path, completeness)]).notes == []

    def test_a_progress_field_in_the_file_is_not_believed(self, tmp_path):
        """Only reading a journal sets the progress: a saved file's own ``xfer_progress`` is ignored."""
        assert load([self.save(tmp_path, ..., xfer_progress=[1, 9])]).notes == []


class TestRunLevelFields:
    @pytest.mark.parametrize(("fields", "message"), [
        ({"machine_info": [1, 2]}, "field 'machine_info' must be an object, got [1, 2]"),
        ({"commit_info": "abc"}, "field 'commit_info' must be an object, got 'abc'"),
        ({"datetime": 20260101}, "field 'datetime' must be a string, got 20260101"),
        ({"commit_info": "x" * 100}, "field 'commit_info' must be an object, got '" + "x" * 59),
        # the page shows a commit id's first 12 characters: a number there is no commit
        ({"commit_info": {"id": 12345678901234}}, "field 'commit_info.id' must be a string, got 12345678901234"),
    ])
    def test_wrong_type_is_named_with_its_value(self, tmp_path, fields, message):
        """A run-level field of the wrong type is refused at load, naming the file, the field and (cut to 60
        characters) its value, instead of a crash deep in the report."""
        data = {"machine_info": {}, "commit_info": {}, "datetime": "2026-01-01T00:00:00", "benchmarks": [xfer()]}
        path = write(tmp_path, "run.json", data | fields)
        with pytest.raises(ResultsError) as error:
            load([path])
        assert str(error.value) == f"{path}: {message}"

    def test_nesting_past_the_stack(self, tmp_path):
        path = write(tmp_path, "deep.json", "[" * 100_000 + "]" * 100_000)
        with pytest.raises(ResultsError) as error:
            load([path])
        assert str(error.value) == (f"{path}: not a results file (RecursionError: nested too deeply or a number "
                                    "too long)")

    def test_number_too_long(self, tmp_path):
        path = write(tmp_path, "long.json", '{"machine_info": {}, "benchmarks": [' + "9" * 5000 + "]}")
        with pytest.raises(ResultsError) as error:
            load([path])
        assert str(error.value) == f"{path}: not a results file (ValueError: nested too deeply or a number too long)"


class TestFilesThatAreNotFiles:
    def test_fifo_is_refused_before_it_is_opened(self, tmp_path):
        """A FIFO named *.json would block the read forever: it is refused by name."""
        fifo = tmp_path / "results.json"
        os.mkfifo(fifo)
        with pytest.raises(ResultsError) as error:
            load([fifo])
        assert str(error.value) == f"{fifo}: not a regular file (a FIFO, device or socket); give a results file"

    def test_dangling_link_in_a_folder(self, tmp_path):
        """A link in a results folder whose target is gone is named, not a traceback."""
        link = tmp_path / "gone.json"
        link.symlink_to(tmp_path / "nowhere.json")
        with pytest.raises(ResultsError) as error:
            load([tmp_path])
        assert str(error.value) == f"{link}: cannot read it (FileNotFoundError)"


def load_error(tmp_path, bench) -> str:
    path = run_file(tmp_path, "run", [bench])
    with pytest.raises(ResultsError) as error:
        load([path])
    prefix = f"{path}: benchmark {bench.get('name')!r}: "
    assert str(error.value).startswith(prefix)
    return str(error.value).removeprefix(prefix)


class TestStatisticsChecked:
    @pytest.mark.parametrize(("stats", "message"), [
        ({"median": "fast"}, "stats field 'median' must be a finite number of seconds, 0 to 3e+07, got 'fast'"),
        ({"q3": 3.1e7}, "stats field 'q3' must be a finite number of seconds, 0 to 3e+07, got 31000000.0"),
        ({"min": -3e7}, "stats field 'min' must be a finite number of seconds, 0 to 3e+07, got -30000000.0"),
        ({"median": 0.0}, "stats field 'median' must be above 0 (a time per call), got 0.0"),
        ({"max": 1e-16}, "stats field 'max' must be above 0 (a time per call), got 1e-16"),
        ({"rounds": 2.5}, "stats field 'rounds' must be a whole number >= 1, got 2.5"),
        ({"rounds": 0}, "stats field 'rounds' must be a whole number >= 1, got 0"),
        ({"iterations": True}, "stats field 'iterations' must be a whole number >= 1, got True"),
        ({"data": [1e-3, -1e-3]}, "stats field 'data' must be a list of finite times >= 0 (one per round)"),
        ({"data": [1e-3, None]}, "stats field 'data' must be a list of finite times >= 0 (one per round)"),
        ({"data": {}}, "stats field 'data' must be a list of finite times >= 0 (one per round)"),
        ({"data": []}, "stats field 'data' holds no round: no time was measured"),
        ({"min": 2e-3}, "stats out of order: min 0.002 > max 0.001 (min <= q1 <= q3 <= max)"),
        ({"max": 5e-4}, "stats out of order: min 0.001 > max 0.0005 (min <= q1 <= q3 <= max)"),
        ({"q1": 1e-3, "q3": 9e-4, "min": 8e-4}, "stats out of order: q1 0.001 > q3 0.0009 (min <= q1 <= q3 <= max)"),
        ({"q3": 2e-3}, "stats out of order: q3 0.002 > max 0.001 (min <= q1 <= q3 <= max)"),
    ])
    def test_implausible_statistic_is_named(self, tmp_path, stats, message):
        """Each statistic out of its range or of the wrong type is refused, naming the benchmark, the field and
        the value: a corrupt file never becomes a bandwidth."""
        bench = xfer(name="n")
        bench["stats"] |= stats
        assert load_error(tmp_path, bench) == message

    @FAST
    @given(times=st.lists(st.floats(1e-9, 10.0), min_size=5, max_size=5), rounds=st.lists(st.floats(1e-9, 1), max_size=3))
    @example(times=[1.0000000000000003e-09, 1e-09, 1.0, 1.0, 1.0], rounds=[])  # min one unit in the last place above q1
    @example(times=[1e-3 * (1 + 2e-12), 1e-3, 1.0, 1.0, 1.0], rounds=[])  # q1 below min by twice QUARTILE_ROUNDING
    def test_any_statistics_load_in_order_or_are_refused(self, tmp_path, times, rounds):
        """Whatever five times say they are min, q1, q3, max and mean, a run loads exactly when min <= max and each
        quartile lies past its neighbour by at most QUARTILE_ROUNDING (relatively); every row loaded is in order."""
        stats = dict(zip(("min", "q1", "q3", "max", "mean"), times, strict=True)) | {"data": rounds or None}
        if rounds:
            stats["median"] = float(np.median(rounds))
        low, q1, q3, high = times[:4]
        loads = low <= high and all(a <= b * (1 + QUARTILE_ROUNDING) for a, b in ((q1, q3), (low, q1), (q3, high)))
        try:
            row = load([run_file(tmp_path, "h", [xfer(stats=stats)])]).frame.iloc[0]
        except ResultsError as error:
            assert "\n" not in str(error) and "stats out of order" in str(error) and not loads
            return
        assert loads and row["min_s"] <= row["q1_s"] <= row["q3_s"] <= row["max_s"]

    def test_a_quartile_rounded_past_its_neighbour_is_read_as_it(self, tmp_path):
        """A quartile averaged over blocks may round a few units in the last place past its neighbour: it is read as
        that neighbour, so every reader gets min <= q1 <= q3 <= max; min and max are rounds, never let slip."""
        row = one_row(tmp_path, stats={"q1": 1e-3 * (1 - 1e-13), "q3": 1e-3 * (1 + 1e-13), "data": None})
        assert (row["min_s"], row["q1_s"], row["q3_s"], row["max_s"]) == (1e-3, 1e-3, 1e-3, 1e-3)
        crossed = one_row(tmp_path, stats={"min": 5e-4, "max": 2e-3, "q1": 1e-3 * (1 + 1e-13), "q3": 1e-3, "data": None})
        assert crossed["q1_s"] == crossed["q3_s"] == 1e-3 * (1 + 1e-13)
        bench = xfer(name="n", stats={"min": math.nextafter(1e-3, 1), "q1": 2e-3, "q3": 2e-3, "data": None})
        assert load_error(tmp_path, bench) == "stats out of order: min 0.001 > max 0.001 (min <= q1 <= q3 <= max)"

    def test_stats_not_an_object(self, tmp_path):
        bench = xfer(name="n")
        bench["stats"] = [1, 2]
        assert load_error(tmp_path, bench) == "'stats' must be an object, got [1, 2]"

    @pytest.mark.parametrize(("stats", "column", "value"), [
        ({"median": 3e7, "data": [3e7]}, "median_s", 3e7), ({"median": 1e-15, "data": [1e-15]}, "median_s", 1e-15),
        ({"data": [0.0, 2e-3]}, "data", [0.0, 2e-3]),
        ({"data": None}, "data", None), ({"iqr": 0}, "iqr_s", 0.0),
    ])
    def test_values_on_the_bounds_are_read(self, tmp_path, stats, column, value):
        """The stated bounds hold: a time of exactly 3e+07 s or 1e-15 s, a round of 0 s (below the timer's
        resolution), no per-round data and a zero spread are all read, not refused."""
        assert one_row(tmp_path, stats=stats)[column] == value

    def test_a_median_changed_after_the_run_is_refused(self, tmp_path):
        """compare reads the rounds and the report the median: a median that is not the rounds' is named, with
        both figures; one within pytest-benchmark's float printing (1e-7 apart) is the same median."""
        bench = xfer(name="n", stats={"median": 2e-3, "data": [1e-3, 1e-3, 3e-3]})
        assert load_error(tmp_path, bench) == (
            "stats field 'median' (0.002 s) is not the median of its rounds 'data' (0.001 s): changed after "
            "pytest-benchmark wrote it")
        close = xfer(stats={"median": 1e-3 * (1 + 1e-7), "data": [1e-3] * 3})
        assert load([run_file(tmp_path, "close", [close])]).frame.iloc[0]["median_s"] == 1e-3 * (1 + 1e-7)
        off = xfer(name="n", stats={"median": 1e-3 * (1 + 1e-5), "data": [1e-3] * 3})
        assert "is not the median of its rounds" in load_error(tmp_path, off)

    def test_whole_number_rounds_are_times(self, tmp_path):
        """Rounds written as whole numbers (0 s included, below the timer's resolution) are read like floats."""
        row = one_row(tmp_path, stats={"median": 1.0, "data": [0, 1, 2]})
        assert row["data"] == [0, 1, 2] and row["median_s"] == 1.0

    def test_the_timer_is_read_from_the_options(self, tmp_path):
        """pytest-benchmark's --benchmark-timer, as it records it: compare refuses runs of two clocks."""
        bench = xfer() | {"options": {"timer": "time.process_time"}}
        assert load([run_file(tmp_path, "run", [bench])]).frame.iloc[0]["timer"] == "time.process_time"
        assert one_row(tmp_path)["timer"] is None
        long = xfer() | {"options": {"timer": "t" * 100}}  # a timer's name is cut to 80 characters where shown
        assert load([run_file(tmp_path, "run", [long])]).frame.iloc[0]["timer"] == "t" * 80

    @pytest.mark.parametrize(("field", "value", "message"), [
        ("name", 5, "'name' must be a string, got 5"),
        ("group", ["h2d"], "'group' must be a string, got ['h2d']"),
    ])
    def test_name_and_group_must_be_text(self, tmp_path, field, value, message):
        bench = xfer(name="n")
        bench[field] = value
        assert load_error(tmp_path, bench) == message

    def test_name_and_group_may_be_absent(self, tmp_path):
        bench = xfer()
        del bench["group"]
        assert load([run_file(tmp_path, "run", [bench])]).frame.iloc[0]["group"] is None

    def test_largest_plausible_payload(self, tmp_path):
        """2**62 bytes is read; one byte more is a corrupt number, named."""
        assert one_row(tmp_path, nbytes=2**62)["nbytes"] == 2**62
        assert load_error(tmp_path, xfer(name="n", nbytes=2**62 + 1)) == \
            "field 'nbytes' is not a plausible payload, got 4611686018427387905"

    def test_schema_must_be_a_whole_number(self, tmp_path):
        assert load_error(tmp_path, xfer(name="n", xfer_schema="1")) == \
            "field 'xfer_schema' must be a whole number, got '1'"


def test_a_path_the_system_cannot_look_up_is_one_line(tmp_path):
    """A file name longer than the system allows is a ResultsError (exit 2), not an OSError traceback."""
    from xferbench.analyze.load.results import find_json

    path = tmp_path / ("x" * 300 + ".json")
    with pytest.raises(ResultsError) as error:
        find_json(path)
    # The path is cut to its first 120 characters: the message names the file and stays one short line.
    assert str(error.value) == f"{str(path)[:120]}: cannot read it (File name too long)"


#: (where, the value put there, what the message must say). "stats." means the first benchmark's
#: stats, "info." its extra_info, "run." the file's top level.
BAD_FIELDS = [
    ("info.xfer_schema", "1", "field 'xfer_schema' must be a whole number"),
    ("info.xfer_schema", 1.0, "field 'xfer_schema' must be a whole number"),
    ("info.xfer_schema", True, "field 'xfer_schema' must be a whole number"),
    ("info.xfer_schema", {"v": 1}, "field 'xfer_schema' must be a whole number"),
    ("run.machine_info", [1, 2], "field 'machine_info' must be an object"),
    ("run.commit_info", "abc", "field 'commit_info' must be an object"),
    ("run.datetime", {"y": 2026}, "field 'datetime' must be a string"),
    ("run.datetime", 20261130, "field 'datetime' must be a string"),
    ("info.src", ["cpu"], "field 'src' must be a non-empty string"),
    ("info.non_blocking", "false", "field 'non_blocking' must be true or false"),
    ("info.shape", "2x3", "field 'shape' must be a list of positive whole numbers"),
    ("info.nbytes", 2**62 + 1, "field 'nbytes' is not a plausible payload"),
    ("info.nbytes", -4, "field 'nbytes' must be a whole number >= 0"),
    ("info.device_seconds", -1e-3, "field 'device_seconds' must be a finite number >= 0"),
    ("stats.median", 3e7 * 2, "stats field 'median' must be a finite number of seconds"),
    ("stats.median", float("nan"), "stats field 'median' must be a finite number of seconds"),
    ("stats.data", [1e-6, float("nan")], "stats field 'data' must be a list of finite times"),
    ("info.host_rss_bytes", "1GB", "field 'host_rss_bytes' must be a whole number"),
    ("stats.median", 0, "stats field 'median' must be above 0"),
    ("stats.median", 0.0, "stats field 'median' must be above 0"),
    ("stats.median", -5e-6, "stats field 'median' must be a finite number of seconds"),
    ("stats.median", "fast", "stats field 'median' must be a finite number of seconds"),
    ("stats.median", None, "stats field 'median' must be a finite number of seconds"),
    ("stats.median", 1e-300, "stats field 'median' must be above 0"),
    ("stats.min", 0, "stats field 'min' must be above 0"),
    ("stats.stddev", -1.0, "stats field 'stddev' must be a finite number of seconds"),
    ("stats.iqr", [1], "stats field 'iqr' must be a finite number of seconds"),
    ("stats.rounds", 0, "stats field 'rounds' must be a whole number >= 1"),
    ("stats.rounds", 1.5, "stats field 'rounds' must be a whole number >= 1"),
    ("stats.iterations", 0, "stats field 'iterations' must be a whole number >= 1"),
    ("stats.data", ["a"], "stats field 'data' must be a list of finite times"),
    ("stats.data", "1,2,3", "stats field 'data' must be a list of finite times"),
    ("bench.stats", [1, 2], "'stats' must be an object"),
    ("bench.name", ["x"], "'name' must be a string"),
]


@pytest.mark.hostile
class TestOneValidationAtLoad:
    @pytest.mark.parametrize(("where", "value", "message"), BAD_FIELDS,
                             ids=[f"{w}={v!r:.20}" for w, v, _ in BAD_FIELDS])
    @pytest.mark.parametrize("command", ["compare", "report"])
    def test_bad_field_is_exit_2_naming_file_benchmark_field(self, tmp_path, capsys, where, value, message, command):
        document = small(3)
        part, name = where.split(".")
        holder = {"run": document, "bench": document["benchmarks"][0], "info": document["benchmarks"][0]["extra_info"],
                  "stats": document["benchmarks"][0]["stats"]}[part]
        holder[name] = value
        bad = put(tmp_path / "bad.json", json.dumps(document))  # NaN and Infinity as Python's json writes them
        good = put(tmp_path / "good.json", small(3))
        args = {"report": ["report", bad, "-o", tmp_path / "r.html"],
                "compare": ["compare", good, bad]}[command]
        code, _, err = run_cli(capsys, *args)
        benchmark = "" if part == "run" else f"benchmark {document['benchmarks'][0]['name']!r}"
        assert_refused(code, err, f"{bad}: ", benchmark, message)

    @pytest.mark.parametrize(("name", "content", "message"), [
        ("latin1.json", "caf\xe9".encode("latin-1"), "cannot read it (UnicodeDecodeError)"),
        ("bom16.json", "{}".encode("utf-16"), "cannot read it (UnicodeDecodeError)"),
        ("long.json", b'{"benchmarks": [' + b"9" * 5000 + b"]}", "a number too long"),
        ("deep.json", b"[" * 100000, "nested too deeply"),
        ("nul.json", b"\x00\x00", "not JSON"),
    ])
    def test_unreadable_file_in_a_folder(self, tmp_path, capsys, name, content, message):
        """One bad file among good runs in a storage folder is named and skipped, the rest reported; given alone it
        is refused; nothing crashes."""
        put(tmp_path / "0001_good.json", small(3))
        (tmp_path / name).write_bytes(content)
        code, _, err = run_cli(capsys, "compare", tmp_path / name, tmp_path / name)
        assert_refused(code, err, name)
        code, _, err = run_cli(capsys, "report", tmp_path, "-o", tmp_path.parent / "r.html")
        assert code == 0 and "Traceback" not in err and len(err.strip().splitlines()) == 1
        assert name in err and "skipped" in err
        code, _, err = run_cli(capsys, "compare", tmp_path / name, tmp_path / name)
        assert message in err

    def test_fifo_in_a_storage_folder_does_not_hang(self, tmp_path, capsys):
        """A FIFO named *.json would block its reader forever: it is never opened; given alone it is refused, in a
        storage folder it is skipped with a note naming it."""
        put(tmp_path / "0001_good.json", small(3))
        os.mkfifo(tmp_path / "0002_pipe.json")
        with no_hang(60):
            code, _, err = run_cli(capsys, "compare", tmp_path / "0002_pipe.json", tmp_path / "0002_pipe.json")
        assert_refused(code, err, "0002_pipe.json: not a regular file")
        for args in (["report", tmp_path, "-o", tmp_path.parent / "r.html"], ["compare", tmp_path, tmp_path]):
            with no_hang(60):
                code, out, err = run_cli(capsys, *args)
            assert code == 0 and "Traceback" not in err
            assert "0002_pipe.json: skipped, not a regular file" in out + err


@pytest.mark.hostile
class TestNoSilentMerge:
    def test_cases_differing_only_by_shape_are_both_kept(self, tmp_path):
        """2x3 and 24 B hold the same bytes; they are different cases, so neither replaces the other."""
        document = small(1)
        twin = copy.deepcopy(document["benchmarks"][0])
        twin["extra_info"]["shape"] = [2, 3]
        twin["name"] = "twin"
        document["benchmarks"].append(twin)
        results = load([put(tmp_path / "run.json", document)])
        assert len(results.frame) == 2 and results.notes == []

    def test_non_blocking_as_a_string_is_refused_not_merged(self, tmp_path, capsys):
        document = small(1)
        twin = copy.deepcopy(document["benchmarks"][0])
        twin["extra_info"]["non_blocking"] = "False"
        document["benchmarks"].append(twin)
        run = put(tmp_path / "run.json", document)
        code, _, err = run_cli(capsys, "compare", run, run)
        assert_refused(code, err, "field 'non_blocking' must be true or false")


@pytest.mark.hostile
class TestLoader:
    def check_loaded(self, path: Path) -> None:
        with no_hang():
            try:
                results = load([path])
            except ResultsError as error:
                assert str(error).startswith(f"{path}: ") and "\n" not in str(error)
                return
        frame = results.frame
        assert len(frame)
        for column in ("median_s", "min_s", "mean_s", "max_s", "q1_s", "q3_s"):
            assert all(isinstance(t, float) and math.isfinite(t) and t > 0 for t in frame[column]), column
        assert all(isinstance(t, float) and math.isfinite(t) and t >= 0 for t in frame[["iqr_s", "stddev_s"]].stack())
        assert all(type(n) is int and n >= 1 for n in frame["rounds"])

    @FAST
    @given(document=json_values)
    def test_arbitrary_json_documents(self, tmp_path, document):
        path = tmp_path / "any.json"
        path.write_text(dump(document))
        self.check_loaded(path)

    @FAST
    @given(document=st.fixed_dictionaries({"machine_info": json_values, "benchmarks": st.lists(json_values, max_size=3)},
                                          optional={"datetime": json_values, "commit_info": json_values}))
    @pytest.mark.slow
    def test_arbitrary_documents_shaped_like_a_run(self, tmp_path, document):
        path = tmp_path / "shaped.json"
        path.write_text(dump(document))
        self.check_loaded(path)

    @FAST
    @given(raw=st.binary(max_size=200))
    def test_arbitrary_bytes(self, tmp_path, raw):
        path = tmp_path / "bytes.json"
        path.write_bytes(raw)
        self.check_loaded(path)

    @FAST
    @given(index=st.integers(0, len(BASE["benchmarks"]) - 1), value=hostile_numbers,
           name=st.sampled_from(["median", "min", "mean", "max", "q1", "q3", "iqr", "stddev", "rounds", "iterations"]))
    def test_hostile_statistic(self, tmp_path, index, name, value):
        document = copy.deepcopy(BASE)
        document["benchmarks"][index]["stats"][name] = value
        path = tmp_path / "stat.json"
        path.write_text(dump(document))
        self.check_loaded(path)

    @FAST
    @given(data=st.data())
    def test_mutations_of_a_real_run(self, tmp_path, data):
        path = tmp_path / "mutated.json"
        path.write_text(dump(mutate(BASE, data)))
        self.check_loaded(path)


def sim_run() -> dict:
    """The simulated 2-GPU run cut to a few benchmarks of each family: a full fingerprint, a quick report."""
    document = json.loads((DATA / "sim-2gpu.json").read_text())
    seen: dict[str, int] = {}
    keep = []
    for bench in document["benchmarks"]:
        op = bench["extra_info"]["op"]
        seen[op] = seen.get(op, 0) + 1
        if seen[op] <= 2:
            keep.append(bench)
    return {**document, "benchmarks": keep}


@pytest.mark.hostile
class TestMachineDescription:
    """machine_info.xferbench is read by the model (links, caches), the report and check: a damaged one is
    named at load (exit 2), a foreign one (not an object) is left out with a note; never a traceback."""

    @pytest.mark.parametrize(("where", "value"), [
        ("devices", 5), ("devices", [5]), ("devices", {"cuda:0": {}}), ("host", "x"), ("host.cache_bytes", [1]),
        ("host.cache_bytes.L3", "32MiB"), ("host.cache_bytes.L1d", 1e308), ("peer_access", "yes"),
        ("peer_access", [[1, 0], [0, 1]]), ("devices.0.pcie_max_width", "16"), ("devices.0.memory_bytes", -1),
        ("devices.0.l2_cache_bytes", {"a": 1}), ("devices.0.nvlink_version", [4]), ("devices.0.device", 0),
    ])
    @pytest.mark.parametrize("command", ["report", "compare"])
    def test_damaged_fingerprint_is_named(self, tmp_path, capsys, where, value, command):
        document = sim_run()
        holder = document["machine_info"]["xferbench"]
        *parents, name = where.split(".")
        for part in parents:
            holder = holder[int(part)] if part.isdigit() else holder[part]
        holder[name] = value
        run = put(tmp_path / "run.json", document)
        args = ["report", run, "-o", tmp_path / "r.html"] if command == "report" else ["compare", run, run]
        code, _, err = run_cli(capsys, *args)
        assert_refused(code, err, "run.json: field 'machine_info.xferbench.")
        assert not (tmp_path / "r.html").exists()

    GOOD: ClassVar[dict] = {
        "host": {"cache_bytes": {"L1d": 0, "L3": 2**62}},
        "devices": [{"device": "cuda:0", "nvlink_version": "4.0", "memory_bytes": 0, "l2_cache_bytes": 2**62},
                    {"device": None, "nvlink_version": 4}, {"nvlink_version": 4.0}],
        "peer_access": [[True, False], [False, True]],
        "peer_plan": {"mode": "all", "reason": "default", "swept_pairs": ["cuda:0->cuda:1"],
                      "classes": {"cuda:0->cuda:1": "NVLink", "cuda:1->cuda:0": None}}}

    def test_what_xferbench_writes_is_no_problem(self):
        """Every field of the kinds the fingerprint writes, at the bounds (0 and 2**62 bytes), and null ones."""
        assert fingerprint_problem({"xferbench": self.GOOD}) is None
        assert fingerprint_problem({"xferbench": dict.fromkeys(self.GOOD)}) is None
        assert fingerprint_problem({"xferbench": {"devices": []}}) is None

    @pytest.mark.parametrize(("field", "value", "named"), [
        ("host", "x", "xferbench.host"), ("cache_bytes", {"L3": 2**62 + 1}, "xferbench.host.cache_bytes"),
        ("cache_bytes", {"L3": -1}, "xferbench.host.cache_bytes"), ("cache_bytes", {"L3": True}, "xferbench.host.cache_bytes"),
        ("devices", {"cuda:0": {}}, "xferbench.devices"), ("peer_access", [[1]], "xferbench.peer_access"),
        ("peer_plan", {"mode": "all"}, "xferbench.peer_plan"), ("device", 0, "xferbench.devices[0].device"),
        ("nvlink_version", [4], "xferbench.devices[0].nvlink_version"),
        ("memory_bytes", 2**62 + 1, "xferbench.devices[0].memory_bytes"),
    ])
    def test_the_first_damaged_field_is_named_with_its_value(self, field, value, named):
        block = copy.deepcopy(self.GOOD)
        holder = {"cache_bytes": block["host"], "device": block["devices"][0], "nvlink_version": block["devices"][0],
                  "memory_bytes": block["devices"][0]}.get(field, block)
        holder[field] = value
        assert fingerprint_problem({"xferbench": block}) == (
            f"'machine_info.{named}' is not what xferbench writes there, got {value!r}")

    @pytest.mark.parametrize("machine", [{"cpu": "AMD", "xferbench": [1]}, {"xferbench": 5}, {"cpu": ["x"]}])
    def test_foreign_blocks_left_out_with_a_note(self, tmp_path, capsys, machine):
        document = small(4)
        document["machine_info"] |= machine
        run = put(tmp_path / "run.json", document)
        code, _, err = run_cli(capsys, "report", run, "-o", tmp_path / "r.html")
        assert code == 0, err
        assert "not an object (a foreign or damaged JSON): left out" in (tmp_path / "r.html").read_text()

    def test_runs_of_two_machines_are_not_merged_into_one_report(self, tmp_path, capsys):
        """One page names one machine, and a case keeps its newest row: another CPU's figures would
        silently replace this one's under this one's name."""
        ours = put(tmp_path / "ours.json", small(4))
        theirs = small(4)
        theirs["machine_info"]["cpu"]["brand_raw"] = "Another CPU"
        theirs["datetime"] = "2099-01-01T00:00:00"
        other = put(tmp_path / "theirs.json", theirs)
        code, _, err = run_cli(capsys, "report", ours, other, "-o", tmp_path / "r.html")
        assert_refused(code, err, "come from different machines", "Another CPU")
        assert not (tmp_path / "r.html").exists()

    def test_every_file_is_held_against_the_newest(self, tmp_path):
        """Three files, the middle one of another machine: it is named, with each difference, even though the
        first matches the newest."""
        def machine(cpu: str, torch: str) -> dict:
            return {"cpu": {"brand_raw": cpu}, "xferbench": {"torch": torch, "devices": []}}

        files = [run_file(tmp_path, name, [xfer(name=name)], when=when, machine=machine(*box))
                 for name, when, box in (("a", "2026-01-01T00:00:00", ("EPYC", "2.13.0")),
                                         ("b", "2026-01-02T00:00:00", ("Xeon", "2.12.0")),
                                         ("c", "2026-01-03T00:00:00", ("EPYC", "2.13.0")))]
        with pytest.raises(ResultsError) as error:
            load(files)
        assert str(error.value) == (
            f"{files[1]} and {files[2]} come from different machines (torch 2.12.0 -> 2.13.0; CPU Xeon -> EPYC); "
            "give them one at a time (xferbench compare sets two machines side by side)")

    def test_runs_of_one_machine_still_merge(self, tmp_path, capsys):
        first, second = small(2), small(4)
        second["benchmarks"] = second["benchmarks"][2:]
        code, out, err = run_cli(capsys, "report", put(tmp_path / "a.json", first), put(tmp_path / "b.json", second),
                                 "-o", tmp_path / "r.html")
        assert code == 0, err
        assert "(4 benchmarks)" in out


@pytest.mark.hostile
def test_a_file_named_twice_is_one_run(tmp_path, capsys):
    """run.json ./run.json (or a link to it) is one run: not 'older results of a case measured again replaced'."""
    run = put(tmp_path / "run.json", small(4))
    os.symlink(run, tmp_path / "link.json")
    from xferbench.analyze.load.results import load

    results = load([run, tmp_path / "." / "run.json", tmp_path / "link.json"])
    assert len(results.frame) == 4 and results.notes == [] and results.sources == [str(run)]


class TestBootIds:
    """Each file's boot id (``xferbench_run.boot_id``): which boot of the machine its rows came from."""

    def test_each_run_keeps_the_boot_id_it_recorded_oldest_first(self, tmp_path):
        late = run_file(tmp_path, "late", [xfer(nbytes=8)], when="2026-01-02T00:00:00", machine={"node": "m"})
        early = run_file(tmp_path, "early", [xfer(nbytes=4)], when="2026-01-01T00:00:00", machine={"node": "m"})
        for path, boot in ((late, "b-late"), (early, " a-early ")):
            data = json.loads(path.read_text())
            data["xferbench_run"] = {"boot_id": boot, "started": data["datetime"], "load": {}}
            path.write_text(json.dumps(data))
        assert list(load([late, early]).boot_ids.items()) == [("early", " a-early "), ("late", "b-late")]

    @pytest.mark.parametrize("run", [None, {}, [], "x", {"boot_id": None}, {"boot_id": ""}, {"boot_id": "   "},
                                     {"boot_id": 7}, {"boot_id": ["x"]}])
    def test_a_run_without_a_boot_id_as_text_has_none(self, tmp_path, run):
        path = run_file(tmp_path, "r", [xfer()])
        data = json.loads(path.read_text())
        if run is not None:
            data["xferbench_run"] = run
        path.write_text(json.dumps(data))
        assert load([path]).boot_ids == {"r": None}


def test_device_time_valid_reads_a_frame_without_the_method_column():
    """A frame built without ``device_time_method`` (an older reader's, a notebook's): no method is recorded, so
    a pageable or blocking host copy's device time is refused and a non-blocking pinned one is kept, row by row."""
    import pandas as pd

    from xferbench.analyze.load.results import device_time_valid

    frame = pd.DataFrame({"host_memory": ["pinned", "pageable", "pinned", None], "non_blocking": [True, True, False, False]},
                         index=[10, 11, 12, 13])
    valid = device_time_valid(frame)
    assert list(valid.index) == [10, 11, 12, 13] and valid.tolist() == [True, False, False, True]


class TestRunFacts:
    """What a run recorded about itself: the top-level ``xferbench_run``; a run stored before it had that place kept
    only its load, in ``machine_info.xferbench.load``."""

    def test_the_run_facts_are_the_top_level_section(self):
        from xferbench.analyze.load.results import run_facts

        facts = {"boot_id": "b1", "started": "2026-12-01T00:00:00Z", "load": {"cpus": 2}}
        old = {"machine_info": {"xferbench": {"load": {"cpus": 8}}}}
        assert run_facts({"xferbench_run": facts, **old}) == facts

    def test_an_older_run_keeps_its_load_in_the_machine_description(self):
        from xferbench.analyze.load.results import run_facts

        old = {"machine_info": {"xferbench": {"load": {"cpus": 8}}}}
        assert run_facts(old) == {"boot_id": None, "started": None, "load": {"cpus": 8}}
        assert run_facts({"xferbench_run": "damaged", **old}) == {"boot_id": None, "started": None, "load": {"cpus": 8}}
        for nothing in ({}, {"machine_info": None}, {"machine_info": {"xferbench": "x"}},
                        {"machine_info": {"xferbench": {"load": [1]}}}):
            assert run_facts(nothing) == {}

    def test_a_loaded_run_carries_them(self, sample, tmp_path):
        data = copy.deepcopy(sample)
        data["xferbench_run"] = {"boot_id": "b1", "started": None, "load": None}
        assert load([write(tmp_path, "run.json", data)]).run == {"boot_id": "b1", "started": None, "load": None}


def test_a_machine_description_is_read_without_a_list_for_its_notes():
    """Called without a list for its notes (the run cache reads a description so), an odd block is still
    left out, and nothing fails for want of the list."""
    from xferbench.analyze.load.results import machine_described

    assert machine_described({"machine_info": {"cpu": "x", "node": "n1"}}) == {"node": "n1"}
    notes: list[str] = []
    assert machine_described({"machine_info": {"xferbench": [1], "node": "n1"}}, notes) == {"node": "n1"}
    assert notes == ["machine_info.xferbench not an object (a foreign or damaged JSON): left out, so the machine's CPU, "
                     "GPUs, links and caches are unknown here."]
    assert machine_described({"machine_info": {"cpu": 1, "xferbench": "y"}}, notes) == {}
    assert notes[-1].startswith("machine_info.cpu and xferbench not an object")


def test_device_times_the_contract_refuses_are_dropped_on_a_copy():
    """A pageable copy's device time is the host's memcpy too: NaN, counted; the frame given is left as it was."""
    import pandas as pd

    from xferbench.analyze.load.results import drop_invalid_device_times, frame_from_rows

    frame = frame_from_rows([{"device_seconds": 1e-3, "host_memory": "pageable", "non_blocking": True},
                             {"device_seconds": 2e-3, "host_memory": "pinned", "non_blocking": True},
                             {"device_seconds": "n/a", "host_memory": None, "non_blocking": False}])
    assert frame["device_seconds"].isna().tolist() == [False, False, True]  # a value that is not a number is none
    kept, dropped = drop_invalid_device_times(frame)
    assert dropped == 1 and kept["device_seconds"].isna().tolist() == [True, False, True]
    assert kept["device_seconds"].dtype == float and frame["device_seconds"].tolist()[:2] == [1e-3, 2e-3]
    clean = frame.iloc[1:]
    same, none = drop_invalid_device_times(clean)
    assert none == 0 and same is clean
    pd.testing.assert_frame_equal(same, clean)


def test_a_run_with_device_times_the_contract_refuses_says_so(sample, tmp_path):
    data = copy.deepcopy(sample)
    pageable = [b for b in data["benchmarks"] if b["extra_info"].get("host_memory") == "pageable"]
    for bench in pageable[:2]:
        bench["extra_info"]["device_seconds"] = 1e-6
    results = load([write(tmp_path, "old.json", data)])
    assert results.notes == ["Left out, 2 device times the data contract does not count as measurements: pageable "
                             "copies (the host stages them) and blocking copies timed back to back by events (the host "
                             "paces them), recorded by an older xferbench."]
    assert results.frame["device_seconds"].isna().all()


def _whole_schema() -> dict:
    """A GPU run with a number in every place the schema has one: statistics and rounds, the contract's identity and
    measured fields, a case in two blocks, the machine's device and host caches, and the run's own load."""
    from handfed import bench, gpu_machine

    measured = {"device_seconds": 1e-4, "device_time_method": "nonblocking_twin", "device_repeats": 10,
                "minor_faults_per_call": 2.0, "queued_seconds": 1e-5, "sm_clock_mhz": 1980, "memory_clock_mhz": 3201,
                "pcie_generation_now": 5, "pcie_width_now": 16, "host_numa_node": 0, "host_rss_bytes": 2**30,
                "pinned_host_bytes": 2**20, "device_bytes": 2**24}
    rows = [bench("h2d", "copy_", "cpu", "cuda:0", n, 1e-5 + n / 25e9, "pinned", True, **measured) for n in (2**10, 2**26)]
    rows += [bench("d2d", "clone", "cuda:0", "cuda:0", 2**26, 1e-4, world_size=1)]
    for block in (0, 1):  # one case measured in two blocks
        rows.append(bench("d2h", "copy_", "cuda:0", "cpu", 2**20, 5e-5 * (1 + block), "pinned", True, **measured))
        rows[-1]["extra_info"] |= {"xfer_block": block, "xfer_blocks": 2, "xfer_case_id": "d2h-1MiB"}
        rows[-1]["stats"] |= {"data": [5e-5 * (1 + block)] * 5}
    machine = gpu_machine(memory_bytes=141 * 2**30, l2_cache_bytes=60 * 2**20, memory_peak_gbps=4800.0,
                          sm_clock_max_mhz=1980, pcie_generation=5, pcie_width=16, nvlink_links=18, nvlink_version=4)
    machine["xferbench"]["host"] = {"cache_bytes": {"L2": 2**20, "L3": 32 * 2**20}}
    return {"machine_info": machine, "commit_info": {"id": "abc", "time": "2026-11-30"}, "benchmarks": rows,
            "datetime": "2026-11-30T12:00:00", "version": "5.3.1",
            "xferbench_run": {"boot_id": "b", "started": "2026-11-30T12:00:00",
                              "load": {"cpus": 2, "cpu_others": 0.1, "cpu_steal": 0.0, "load_before": 1.5,
                                       "load_after": 2.5}}}


def _numbers(value, where=()) -> list[tuple]:
    """Where each number of a parsed JSON document lies, as the keys leading to it."""
    if isinstance(value, dict | list):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        return [found for key, item in items for found in _numbers(item, (*where, key))]
    return [where] if type(value) in (int, float) else []


def _set(document: dict, where: tuple, value) -> dict:
    document = copy.deepcopy(document)
    holder = document
    for key in where[:-1]:
        holder = holder[key]
    holder[where[-1]] = value
    return document


def _place(where: tuple) -> str:
    return "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in where).lstrip(".")


#: Numbers at the edges of what a file may hold: past ±2**63 (refused where read), and just inside it.
EDGE_NUMBERS = [10**400, -(10**400), 10**308, 2**63 + 1, -(2**63) - 1, 1.7e308, -1.7e308, float("nan"), float("inf"),
                float("-inf"), 2**63, -(2**63), 2**62, 2**53 + 1, 9.2e18, 0, -1, 0.0, 1e-320, 5e-324, 1.5]


@pytest.mark.hostile
class TestNumbersBounded:
    """Every number of a run is within ±2**63 (bounded_read.out_of_range, checked once where the file is read): past
    that, an infinity too, one line naming the field and exit 2 from every command; no reader converts it later."""

    @pytest.mark.parametrize(("where", "value", "shown"), [
        (("xferbench_run", "load", "cpus"), 10**400, "a number of 401 digits"),
        (("xferbench_run", "load", "cpu_others"), 10**400, "a number of 401 digits"),
        (("xferbench_run", "load", "load_before"), 10**400, "a number of 401 digits"),
        (("xferbench_run", "load", "load_after"), -(10**400), "a number of 401 digits"),
        (("benchmarks", 0, "stats", "rounds"), 10**400, "a number of 401 digits"),
        (("benchmarks", 0, "extra_info", "sm_clock_mhz"), 10**400, "a number of 401 digits"),
        (("benchmarks", 0, "extra_info", "host_rss_bytes"), 2**63 + 1, "a number of 19 digits"),
        (("benchmarks", 4, "extra_info", "sm_clock_mhz"), 10**308, "a number of 309 digits"),  # a block's clock
        (("benchmarks", 4, "extra_info", "device_seconds"), 1.7e308, "1.7e+308"),
        (("benchmarks", 0, "stats", "median"), float("-inf"), "-inf"),
        (("machine_info", "xferbench", "devices", 0, "memory_bytes"), float("inf"), "inf"),
    ])
    @pytest.mark.parametrize("command", ["compare", "report"])
    def test_a_number_past_what_a_float_holds_is_refused_in_one_line(self, tmp_path, capsys, where, value, shown,
                                                                    command):
        bad = put(tmp_path / "bad.json", dump(_set(_whole_schema(), where, value)))
        good = put(tmp_path / "good.json", _whole_schema())
        args = {"report": ["report", bad, "-o", tmp_path / "r.html"], "compare": ["compare", good, bad]}[command]
        code, _, err = run_cli(capsys, *args)
        assert_refused(code, err, f"{bad}: field '{_place(where)}' is {shown}; every number of a run is within ±2**63, "
                                  "so the file is not read")

    def test_two_blocks_of_a_clock_near_the_float_maximum_are_refused(self, tmp_path, capsys):
        """Each block's clock alone is an int a float holds; their median is not (it was infinity, then a traceback)."""
        document = _set(_set(_whole_schema(), ("benchmarks", 3, "extra_info", "sm_clock_mhz"), 10**308),
                        ("benchmarks", 4, "extra_info", "sm_clock_mhz"), 10**308)
        code, _, err = run_cli(capsys, "report", put(tmp_path / "run.json", dump(document)), "-o", tmp_path / "r.html")
        assert_refused(code, err, "extra_info.sm_clock_mhz' is a number of 309 digits")

    def test_the_whole_schema_loads_as_written(self, tmp_path):
        """The document the property below varies is a run the analysis reads, every number in range."""
        results = load([put(tmp_path / "run.json", _whole_schema())])
        assert len(results.frame) == 4 and results.frame["blocks"].max() == 2

    @pytest.mark.parametrize(("document", "found"), [
        ({"a": [1, {"b": 10**400}]}, ("a[1].b", 10**400)), ({"x": [2**63, -(2**63), 1.5, True, "9" * 500]}, None),
        ({"x": {"y": [[float("-inf")]]}}, ("x.y[0][0]", float("-inf"))), ([[]] * 3 + [2**64], ("[3]", 2**64)),
        ({"nan": float("nan")}, None),  # left to the field's own check, which says what it must be
        ({"": -(2**63) - 1}, ("", -(2**63) - 1)),
    ])
    def test_out_of_range_names_the_place(self, document, found):
        from xferbench.bounded_read import out_of_range

        assert out_of_range(document) == found

    def test_a_number_nested_deeper_than_the_stack_is_found(self):
        from xferbench.bounded_read import out_of_range

        document: list = [10**400]
        for _ in range(5000):
            document = [document]
        where, value = out_of_range(document)
        assert where == "[0]" * 5000 + "[0]" and value == 10**400

    @property_settings(25, HealthCheck.function_scoped_fixture, HealthCheck.too_slow)
    @given(data=st.data())
    def test_any_number_of_the_schema_at_an_edge_is_read_or_refused_in_one_line(self, tmp_path_factory, capsys, data):
        """Any number of the run (a statistic, a contract field, a block's, the machine's, the load's) set to an edge of
        what a file may hold: report and compare each read it (exit 0 or 1) or refuse it in one line (exit 2),
        never a traceback (exit 3)."""
        schema = _whole_schema()
        where = data.draw(st.sampled_from(_numbers(schema)), label="where")
        value = data.draw(st.sampled_from(EDGE_NUMBERS), label="value")
        folder = tmp_path_factory.mktemp("edge")
        bad = put(folder / "bad.json", dump(_set(schema, where, value)))
        good = put(folder / "good.json", schema)
        for args in (["compare", good, bad], ["report", bad, "-o", folder / "r.html"]):
            code, _, err = run_cli(capsys, *args)
            assert code in (0, 1, 2) and "Traceback" not in err, err
            assert code != 2 or len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(("load", "said"), [
    ({"cpus": 2, "load_before": 1.0, "load_after": 3}, "load 3 on 2 CPUs"),
    ({"cpus": 2, "load_before": 5, "load_after": 1, "cpu_others": 0.25, "cpu_steal": 0.5},
     "load 5 on 2 CPUs, 25% of CPU time taken by other processes, 50% of CPU time stolen by the hypervisor"),
    ({"cpus": 4, "load_before": 4.5, "cpu_steal": 0.004}, "load 4.5 on 4 CPUs"),  # what prints as 0% is unsaid
    ({"cpus": 2, "load_before": 3, "load_after": "9"}, "load 3 on 2 CPUs"),  # a load that is no number is none
    ({"cpus": 2, "load_after": 3, "cpu_others": -0.5}, "load 3 on 2 CPUs"),
    ({"cpus": 2, "load_after": 2}, None),  # as many runnable as cores: not busy
    ({"cpus": 0, "load_after": 3}, None), ({"cpus": -2, "load_after": 3}, None), ({"cpus": True, "load_after": 3}, None),
    ({"cpus": 2.5, "load_after": True}, None), ({"cpus": 2, "load_after": -3}, None),
    ({"cpus": 2, "load_after": float("nan")}, None), ({"cpus": 2, "load_after": float("inf")}, None),
    ({"cpus": float("inf"), "load_after": 3}, None), ({"load_after": 3}, None),
])
def test_busy_load_is_a_load_above_the_cores(load, said):
    """The run's own load (xferbench_run.load), said only where more was runnable than the cores; a field that is
    not a plain number from 0 up is unknown."""
    from xferbench.analyze.load.results import busy_load

    assert busy_load({"load": load}) == said
    assert busy_load({"load": [load]}) is None and busy_load({"other": load}) is None
