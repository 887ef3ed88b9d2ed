"""nvbandwidth and nccl-tests outputs beside the suite's JSON (fixtures: tests/data/README.md)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handfed import bench, gpu_machine, write
from xferbench.analyze.load.results import ResultsError, load
from xferbench.analyze.report.inputs import kind_of
from xferbench.analyze.report.other_tools import comparisons, headlines, load_peers, parse_nccl_tests, parse_nvbandwidth
from xferbench.analyze.view import RunView

from hang import no_hang
from hostile_inputs import assert_refused, property_settings, put, run_cli, small, values

DATA = Path(__file__).parent / "data"
NVB, NCCL, SAMPLE = DATA / "nvbandwidth-format-sample.json", DATA / "nccl-tests-format-sample.txt", DATA / "cpu-sample.json"
NCCL_SENDRECV = DATA / "nccl-tests-format-sendrecv.txt"
MiB = 2**20


class TestDetection:
    @pytest.mark.parametrize(("path", "kind"), [(SAMPLE, "suite"), (NVB, "nvbandwidth"), (NCCL, "nccl-tests"),
                                                (DATA, "suite")])
    def test_by_content(self, path, kind):
        assert kind_of(path) == kind

    def test_by_content_not_by_name(self, tmp_path):
        """A renamed nvbandwidth output is still nvbandwidth's."""
        renamed = tmp_path / "results.txt"
        renamed.write_text(NVB.read_text())
        assert kind_of(renamed) == "nvbandwidth"

    @pytest.mark.parametrize(("content", "message"), [
        ('{"a": 1}', "neither pytest-benchmark's, nor nvbandwidth's"),
        ("hello\nworld\n", "not a result file xferbench reads"),
        ("", "the file is empty"),
    ])
    def test_foreign_files_are_refused_in_one_line(self, tmp_path, content, message):
        path = tmp_path / "foreign.out"
        path.write_text(content)
        with pytest.raises(ResultsError, match=message) as error:
            kind_of(path)
        assert "\n" not in str(error.value)


def test_nvbandwidth_cells_become_paths():
    """Row/column read as the description's arrow says; N/A, bidirectional and waived testcases are left out."""
    figures = parse_nvbandwidth(json.loads(NVB.read_text()), "nvb.json")
    assert [(f.test, f.op, f.src, f.dst, f.gbps) for f in figures] == [
        ("host_to_device_memcpy_ce", "h2d", "cpu", "cuda:0", 25.5),
        ("host_to_device_memcpy_ce", "h2d", "cpu", "cuda:1", 25.4),
        ("device_to_host_memcpy_ce", "d2h", "cuda:0", "cpu", 26.3),
        ("device_to_host_memcpy_ce", "d2h", "cuda:1", "cpu", 26.2),
        ("device_to_device_memcpy_read_ce", "peer", "cuda:0", "cuda:1", 48.2),
        ("device_to_device_memcpy_read_ce", "peer", "cuda:1", "cuda:0", 48.1),
    ]
    assert all(f.nbytes == 512 * MiB for f in figures)  # nvbandwidth v0.7 and later's default buffer (v0.8 here)


@pytest.mark.parametrize(("version", "buffer", "words"), [("v0.8", 512, "nvbandwidth v0.8"), ("v0.7", 512, "v0.7"),
                                                          ("v0.6", 64, "v0.6"), (None, 512, "version is not recorded")])
def test_nvbandwidth_default_buffer_by_version(version, buffer, words):
    data = json.loads(NVB.read_text())
    if version is None:
        del data["nvbandwidth"]["version"]
    else:
        data["nvbandwidth"]["version"] = version
    figures = parse_nvbandwidth(data, "nvb.json")
    assert {f.nbytes for f in figures} == {buffer * MiB} and all(words in f.note for f in figures)


def test_nccl_tests_rows_are_out_of_place_and_in_place_busbw():
    figures = parse_nccl_tests(NCCL.read_text(), "all_reduce.txt")
    assert [(f.op, f.nbytes, f.variant, f.gbps, f.dst, f.wrong) for f in figures][:4] == [
        ("all_reduce", 1024, "out-of-place", 0.10, "2 ranks", 0), ("all_reduce", 1024, "in-place", 0.10, "2 ranks", 0),
        ("all_reduce", 16384, "out-of-place", 1.39, "2 ranks", 0), ("all_reduce", 16384, "in-place", 1.40, "2 ranks", 0)]
    assert len(figures) == 10 and figures[-1].gbps == 44.83


def test_nccl_tests_own_output_with_wrong_elements():
    """sendrecv_perf over MPI, 4 ranks on 2 hosts, one in-place cell with 1024 wrong elements (#wrong)."""
    figures = load_peers([NCCL_SENDRECV])
    assert {(f.test, f.op, f.dst) for f in figures} == {("sendrecv_perf", "send_recv", "4 ranks")}
    assert [(f.nbytes, f.variant, f.wrong) for f in figures if f.wrong] == [(16 * MiB, "in-place", 1024)]
    assert len(figures) == 8 and all(f.note.endswith("mean over ranks") for f in figures if not f.wrong)
    lines = headlines(comparisons(RunView.of(load([SAMPLE])), figures))
    assert lines[0] == ("nccl-tests counted wrong elements (#wrong) in 1 of its figures, 1024 in all (e.g. "
                        "sendrecv_perf in-place at 16 MiB): those runs delivered wrong data, so their bandwidth is no "
                        "reference.")


def test_a_wrong_count_not_checked_is_unknown(tmp_path):
    """-c 0: nccl-tests prints N/A in #wrong."""
    text = NCCL.read_text().replace("       0\n", "     N/A\n", 1)
    path = tmp_path / "all_reduce_perf.txt"
    path.write_text(text)
    assert load_peers([path])[1].wrong is None


def test_nccl_tests_without_result_lines_is_refused(tmp_path):
    cut = tmp_path / "all_reduce_perf.txt"
    cut.write_text("".join(NCCL.read_text().splitlines(keepends=True)[:11]))  # the header, then the run died
    with pytest.raises(ResultsError, match="no result lines"):
        load_peers([cut])


def test_pytorch_beside_the_copy_engine(tmp_path):
    """The issue's sentence: PyTorch's pinned .to reaches 96% of nvbandwidth's host_to_device_memcpy_ce."""
    n = 512 * MiB
    rows = [bench("h2d", "to", "cpu", "cuda:0", n, n / 24.48e9, host_memory="pinned"),
            bench("h2d", "to", "cpu", "cuda:0", n, n / 9e9, host_memory="pageable")]
    results = load([write(tmp_path / "run.json", rows, gpu_machine())])
    compared = comparisons(RunView.of(results), load_peers([NVB]))
    lines = headlines(compared)
    assert lines[0] == ("h2d pinned to cpu->cuda:0 reaches 96% of nvbandwidth's host_to_device_memcpy_ce (cpu→cuda:0): "
                        "24.48 against 25.5 GB/s (the suite at 512 MiB; copy engine; buffer size not in its JSON "
                        "(512 MiB unless --bufferSize, nvbandwidth v0.8)).")
    assert lines[-1].startswith("5 figures of the other tools have no counterpart in this run")


def test_gloo_is_not_set_beside_nccl():
    """The CPU sample's all_reduce ran on gloo: NCCL's figure is another path, so nothing is compared."""
    compared = comparisons(RunView.of(load([SAMPLE])), load_peers([NCCL]))
    assert all(row["path"] is None for row in compared)


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "xferbench.cli", "report", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd)


class TestCli:
    @pytest.mark.slow
    def test_report_with_peers(self, tmp_path):
        done = _cli(SAMPLE, NVB, NCCL, "-o", tmp_path / "r.html", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        html = (tmp_path / "r.html").read_text()
        assert 'id="peers-table"' in html and html.count("<tr><td>nvbandwidth</td>") == 6
        assert (tmp_path / "r.csv").exists() and (tmp_path / "r.md").exists()

    @pytest.mark.parametrize(("args", "message"), [
        ((NVB,), "no xferbench results given"),
        ((SAMPLE, Path(__file__).parent / "hang.py"), "not a result file xferbench reads"),  # no tool's output in it
        ((SAMPLE, "-o", "out.csv"), "the report is an HTML file"),
    ])
    def test_bad_input_is_exit_2_and_one_line(self, tmp_path, args, message):
        done = _cli(*args, cwd=tmp_path)
        assert done.returncode == 2
        assert message in done.stderr and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


NVBANDWIDTH_H2D = {"name": "host_to_device_memcpy_ce", "status": "Passed",
                   "bandwidth_description": "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)",
                   "bandwidth_matrix": [["12.5"]]}


@pytest.mark.hostile
class TestOtherToolsOutputs:
    """nvbandwidth and nccl-tests files given beside the suite's JSON are told apart by content: reading
    them must neither hang, nor crash, nor turn "nan" into a figure."""

    def test_fifo_beside_the_run_does_not_hang(self, tmp_path, capsys):
        run = put(tmp_path / "run.json", small(4))
        os.mkfifo(tmp_path / "nvbandwidth.txt")
        with no_hang(60):
            code, _, err = run_cli(capsys, "report", run, tmp_path / "nvbandwidth.txt", "-o", tmp_path / "r.html")
        assert_refused(code, err, "nvbandwidth.txt: not a regular file")

    @pytest.mark.parametrize(("content", "message"), [
        (b"[" * 100000, "nested too deeply"),
        (b'{"nvbandwidth": ' + b"9" * 5000 + b"}", "a number too long"),
    ])
    def test_json_no_parser_can_hold(self, tmp_path, capsys, content, message):
        run = put(tmp_path / "run.json", small(4))
        other = put(tmp_path / "other.json", content)
        code, _, err = run_cli(capsys, "report", run, other, "-o", tmp_path / "r.html")
        assert_refused(code, err, "other.json: ", message)

    def test_nvbandwidth_testcase_name_not_a_string(self, tmp_path, capsys):
        run = put(tmp_path / "run.json", small(4))
        other = put(tmp_path / "nv.json", {"nvbandwidth": {"testcases": [{**NVBANDWIDTH_H2D, "name": ["x"]}]}})
        code, _, err = run_cli(capsys, "report", run, other, "-o", tmp_path / "r.html")
        assert_refused(code, err, "nv.json: no nvbandwidth testcase in it has a counterpart")

    def test_nvbandwidth_nan_and_inf_cells_are_not_figures(self):
        from xferbench.analyze.report.other_tools import parse_nvbandwidth

        case = {**NVBANDWIDTH_H2D, "bandwidth_matrix": [["nan", "inf", "1e999", "-3", "N/A", "25"]]}
        figures = parse_nvbandwidth({"nvbandwidth": {"testcases": [case]}}, "nv.json")
        assert [(f.dst, f.gbps) for f in figures] == [("cuda:5", 25.0)]

    def test_nccl_line_with_an_impossible_size_or_bandwidth_is_not_a_figure(self):
        from xferbench.analyze.report.other_tools import parse_nccl_tests

        head = "# nccl-tests version 2.19\n#  size count type redop root time algbw busbw #wrong\n"
        rows = [f" {'9' * 5000} 256 float sum -1 1.0 1.0 2.0 0", " 1024 256 float sum -1 1.0 1.0 1e999 0",
                " 2048 512 float sum -1 1.0 1.0 3.5 0"]
        figures = parse_nccl_tests(head + "\n".join(rows) + "\n", "all_reduce_perf.txt")
        assert [(f.nbytes, f.gbps) for f in figures] == [(2048, 3.5)]

    def test_nvbandwidth_cell_past_float_range_is_not_a_figure(self):
        """A JSON integer of 400 digits reads as a Python int that float() cannot hold (OverflowError)."""
        case = {**NVBANDWIDTH_H2D, "bandwidth_matrix": [[10**400, -(10**400), "25"]]}
        figures = parse_nvbandwidth({"nvbandwidth": {"testcases": [case]}}, "nv.json")
        assert [(f.dst, f.gbps) for f in figures] == [("cuda:2", 25.0)]

    @pytest.mark.parametrize("cell", ["1.2.3", "e", "+", "1e5e5", "--1"])
    def test_nccl_cell_that_is_no_number_is_not_a_figure(self, cell):
        head = "# nccl-tests version 2.19\n#  size count type redop root time algbw busbw #wrong\n"
        rows = [f" 1024 256 float sum -1 1.0 1.0 {cell} 0 1.0 1.0 {cell} 0", " 2048 512 float sum -1 1.0 1.0 3.5 0"]
        figures = parse_nccl_tests(head + "\n".join(rows) + "\n", "all_reduce_perf.txt")
        assert [(f.nbytes, f.gbps) for f in figures] == [(2048, 3.5)]

    def test_nccl_file_of_cells_that_are_no_numbers_is_refused(self, tmp_path, capsys):
        run = put(tmp_path / "run.json", small(4))
        other = put(tmp_path / "all_reduce_perf.txt", "#  size count type redop root time algbw busbw #wrong\n"
                    " 1024 256 float sum -1 1.0 1.0 1.2.3 0\n")
        code, _, err = run_cli(capsys, "report", run, other, "-o", tmp_path / "r.html")
        assert_refused(code, err, "all_reduce_perf.txt: nccl-tests output with no result lines")

    @pytest.mark.slow
    def test_suite_rows_of_zero_bytes_beside_nvbandwidth(self, tmp_path, capsys):
        """A copy of 0 bytes has no place on the log size scale the nearest size is found on; it used to crash."""
        sim = json.loads((DATA / "sim-2gpu.json").read_text())
        for row in sim["benchmarks"]:
            if row["extra_info"]["op"] == "h2d" and row["extra_info"]["nbytes"] < 2**20:
                row["extra_info"]["nbytes"] = 0
        run = put(tmp_path / "sim.json", sim)
        other = put(tmp_path / "nv.json", {"nvbandwidth": {"testcases": [NVBANDWIDTH_H2D]}})
        code, _, err = run_cli(capsys, "report", run, other, "-o", tmp_path / "r.html")
        assert code == 0, err
        assert "nvbandwidth&#39;s host_to_device_memcpy_ce (cpu→cuda:0)" in (tmp_path / "r.html").read_text()


def _nccl_text(lines: int) -> str:
    head = ["# Collective test starting: all_reduce_perf", "#  size count type redop root time algbw busbw #wrong"]
    return "\n".join(head + [f" {8 * (i + 1)} {2 * (i + 1)} float sum -1 1.0 1.0 {1 + i / 100:.3f} 0 1.0 1.0 2.0 0"
                             for i in range(lines)]) + "\n"


def _nvbandwidth_matrix(side: int) -> dict:
    matrix = [[str(10 + (r + c) % 7) for c in range(side)] for r in range(side)]
    return {"nvbandwidth": {"version": "v0.8", "testcases": [{
        "name": "device_to_device_memcpy_read_ce", "status": "Passed", "bandwidth_matrix": matrix,
        "bandwidth_description": "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)"}]}}


@pytest.mark.hostile
class TestLargeOutputs:
    """Every figure of another tool was matched by filtering the suite's whole frame (about 6 ms a figure): a
    2,000-line nccl-tests file kept report busy 110 s, a 300x300 nvbandwidth matrix more than 45 s. The work is
    counted here, not timed: the frame is filtered once per kind of match, and the table lists at most TABLE_ROWS."""

    def test_nccl_rows_are_filtered_once_per_test(self, tmp_path, monkeypatch):
        from xferbench.analyze.report import other_tools

        calls = []
        original = other_tools._nccl_rows
        monkeypatch.setattr(other_tools, "_nccl_rows", lambda frame, figure: calls.append(figure) or original(frame, figure))
        results = load([write(tmp_path / "run.json", [_dist("all_reduce", 64 * MiB, 2, 0.01, 0.009)], gpu_machine())])
        rows = comparisons(RunView.of(results), parse_nccl_tests(_nccl_text(2000), "all_reduce_perf.txt"))
        assert len(rows) == 4000 and len(calls) == 2  # out-of-place and in-place

    def test_nvbandwidth_cells_are_matched_once_per_path_and_size(self, tmp_path, monkeypatch):
        from xferbench.analyze.report import other_tools

        calls = []
        original = other_tools._nearest
        monkeypatch.setattr(other_tools, "_nearest", lambda rows, nbytes: calls.append(nbytes) or original(rows, nbytes))
        sim = load([DATA / "sim-2gpu.json"])
        rows = comparisons(RunView.of(sim), parse_nvbandwidth(_nvbandwidth_matrix(300), "nv.json"))
        assert len(rows) == 300 * 300 and sum(row["path"] is not None for row in rows) == 2
        assert len(calls) == 2  # the two pairs the suite measured; the other 89,698 cells have no rows to filter

    @pytest.mark.parametrize("name", ["nccl", "nvbandwidth"])
    def test_the_table_lists_at_most_its_rows_and_says_what_it_left_out(self, tmp_path, capsys, name):
        from xferbench.analyze.report.other_tools import TABLE_ROWS

        run = put(tmp_path / "run.json", small(4))
        other = put(tmp_path / "all_reduce_perf.txt", _nccl_text(2000)) if name == "nccl" else \
            put(tmp_path / "nv.json", _nvbandwidth_matrix(300))
        total = 4000 if name == "nccl" else 300 * 300
        code, _, err = run_cli(capsys, "report", run, other, "-o", tmp_path / "r.html")
        assert code == 0, err
        html = (tmp_path / "r.html").read_text()
        assert html.count("<tr><td>nccl-tests</td>" if name == "nccl" else "<tr><td>nvbandwidth</td>") == TABLE_ROWS
        assert f"The table lists {TABLE_ROWS} of the other tools&#39; {total:,} figures, those with a counterpart in " \
               f"this run first; {total - TABLE_ROWS:,} are left out." in html
        assert "are left out" in (tmp_path / "r.md").read_text()

    def test_matched_rows_are_listed_first(self):
        from xferbench.analyze.report.other_tools import table_rows

        rows = [{"path": None, "n": i} for i in range(5)] + [{"path": "p", "n": 5}]
        listed, note = table_rows(rows, limit=2)
        assert [row["n"] for row in listed] == [5, 0] and note and "4 are left out" in note
        assert table_rows(rows, limit=6) == (rows, None)


@pytest.mark.hostile
class TestProperties:
    """Hypothesis, modest example counts (the cores are shared): any noise file is used or refused in one
    line; any nvbandwidth document gives finite positive figures or one ResultsError."""

    @property_settings(150)
    @given(cells=st.lists(st.text(alphabet="0123456789.e+-", min_size=1, max_size=8), min_size=8, max_size=8))
    def test_nccl_line_of_any_numbers(self, cells):
        import math

        head = "#  size count type redop root time algbw busbw #wrong\n"
        line = " 1024 256 float sum -1 " + " ".join(cells)
        try:
            figures = parse_nccl_tests(head + line + "\n", "all_reduce_perf.txt")
        except ResultsError as error:
            assert "\n" not in str(error)
            return
        assert all(math.isfinite(f.gbps) and f.gbps >= 0 for f in figures)

    @property_settings(80)
    @given(matrix=st.lists(st.lists(st.one_of(values, st.sampled_from(["12.5", "nan", "inf", "-1", "1e999", "N/A", 10**400])),
                                    max_size=4), max_size=4),
           description=st.sampled_from(["memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)",
                                        "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)", "", "x"]),
           name=st.sampled_from(["host_to_device_memcpy_ce", "device_local_copy", "device_to_device_memcpy_read_ce"]))
    def test_nvbandwidth_matrix_of_anything(self, matrix, description, name):
        import math

        from xferbench.analyze.load.results import ResultsError
        from xferbench.analyze.report.other_tools import parse_nvbandwidth

        case = {"name": name, "status": "Passed", "bandwidth_description": description, "bandwidth_matrix": matrix}
        try:
            figures = parse_nvbandwidth({"nvbandwidth": {"testcases": [case]}}, "nv.json")
        except ResultsError as error:
            assert "\n" not in str(error)
            return
        assert all(math.isfinite(f.gbps) and f.gbps > 0 for f in figures)


def _dist(op, nbytes, world, slowest_s, mean_s, variant=None, pair=(0, 1)):
    """A distributed benchmark on nccl as the suite writes it: the slowest rank's time, the ranks' mean beside it."""
    from xferbench.measure.distributed import DistCase

    case = DistCase(op, nbytes, "nccl", world, "cuda", pair=pair, variant=variant)
    stats = {k: slowest_s for k in ("min", "max", "mean", "median", "q1", "q3")} | {
        "iqr": 0.0, "stddev": 0.0, "rounds": 3, "iterations": 1, "data": [slowest_s] * 3}
    info = case.extra_info() | {"rank_seconds": [[slowest_s] * 3] * world, "rank_mean_seconds": [mean_s] * 3,
                                "rank_hosts": ["h"] * world, "verified": True, "clock": "wall+sync"}
    return {"name": case.id, "group": op, "extra_info": info, "stats": stats}


class TestLikeWithLike:
    """nccl-tests reports the mean over ranks' times, out-of-place and in-place; its sendrecv_perf is a ring."""

    def test_all_reduce_is_set_beside_the_in_place_column_by_the_ranks_mean(self, tmp_path):
        n = 64 * MiB  # nccl-tests' in-place busbw at 64 MiB: 44.83 GB/s for 2 ranks
        busbw_mean = 40.0e9  # the suite: 40 GB/s by the ranks' mean, 32 by the slowest rank's
        mean_s = n / busbw_mean
        results = load([write(tmp_path / "run.json", [_dist("all_reduce", n, 2, mean_s * 1.25, mean_s)], gpu_machine())])
        rows = [row for row in comparisons(RunView.of(results), load_peers([NCCL])) if row["figure"].nbytes == n]
        placed = {row["figure"].variant: row for row in rows}
        assert placed["out-of-place"]["path"] is None  # the suite's all_reduce works in place
        assert placed["in-place"]["gbps"] == pytest.approx(40.0) and placed["in-place"]["slowest_gbps"] == pytest.approx(32.0)
        assert placed["in-place"]["share"] == pytest.approx(40.0 / 44.83)
        line = next(line for line in headlines(rows) if "reaches" in line)
        assert line.startswith("all_reduce nccl x2 reaches 89% of nccl-tests's all_reduce_perf (2 ranks, in-place): "
                               "40 against 44.83 GB/s bus bandwidth by the ranks' mean time, as nccl-tests reports it "
                               "(32 GB/s by the slowest rank's; at 64 MiB;")

    def test_sendrecv_perf_is_never_set_beside_a_ping_pong(self, tmp_path):
        """The issue's "send_recv nccl x4 reaches 393% of nccl-tests's sendrecv_perf": a ring set beside a pair."""
        n = 64 * MiB
        pingpong = [_dist("send_recv", n, 4, n / 98e9, n / 98e9, pair=pair) for pair in ((0, 1), (1, 0))]
        results = load([write(tmp_path / "run.json", pingpong, gpu_machine())])
        assert all(row["path"] is None for row in comparisons(RunView.of(results), load_peers([NCCL_SENDRECV])))

    def test_the_ring_is_set_beside_sendrecv_perf(self, tmp_path):
        """The suite's ring (every rank sends to the next at once) is what sendrecv_perf times: set beside its
        out-of-place column (the ring has a send and a receive buffer), by the ranks' mean; the ping-pong beside none."""
        n = 64 * MiB
        ring = _dist("send_recv", n, 4, n / 20e9, n / 24e9, variant="ring")
        pingpong = _dist("send_recv", n, 4, n / 98e9, n / 98e9)
        results = load([write(tmp_path / "run.json", [ring, pingpong], gpu_machine())])
        rows = [row for row in comparisons(RunView.of(results), load_peers([NCCL_SENDRECV])) if row["figure"].nbytes == n]
        placed = {row["figure"].variant: row for row in rows}
        assert placed["in-place"]["path"] is None
        assert placed["out-of-place"]["gbps"] == pytest.approx(24.0) and placed["out-of-place"]["slowest_gbps"] == \
            pytest.approx(20.0)
        assert placed["out-of-place"]["share"] == pytest.approx(24.0 / 24.95)

    def test_each_placement_beside_its_own_column(self, tmp_path):
        """all_gather timed out of place and in place: each set beside nccl-tests' column of the same placement."""
        n = 64 * MiB
        text = NCCL_SENDRECV.read_text().replace("sendrecv_perf", "all_gather_perf")
        (tmp_path / "ag.txt").write_text(text)
        suite = [_dist("all_gather", n, 4, n / 15e9, n / 16e9), _dist("all_gather", n, 4, n / 19e9, n / 20e9, "in_place")]
        results = load([write(tmp_path / "run.json", suite, gpu_machine())])
        rows = [row for row in comparisons(RunView.of(results), load_peers([tmp_path / "ag.txt"]))
                if row["figure"].nbytes == n]
        placed = {row["figure"].variant: row for row in rows}
        # busbw = algbw x (n - 1) / n: 16 GB/s of algbw by the mean is 12 of busbw, 20 in place is 15.
        assert placed["out-of-place"]["gbps"] == pytest.approx(12.0) and placed["in-place"]["gbps"] == pytest.approx(15.0)


def test_the_other_tools_are_read_only_where_their_files_are_given(tmp_path):
    """A report of the suite's JSON alone never loads this module; one with an nvbandwidth file beside it does."""
    check = ("import sys\nfrom xferbench.cli import main\nassert main(sys.argv[1:]) == 0\n"
             "print('xferbench.analyze.report.other_tools' in sys.modules)")
    said = [subprocess.run([sys.executable, "-c", check, "report", *map(str, given), "-o", str(tmp_path / f"{n}.html")],
                           capture_output=True, text=True, timeout=300, check=True).stdout.split()[-1]
            for n, given in enumerate(([SAMPLE], [SAMPLE, NVB]))]
    assert said == ["False", "True"]
