"""A damaged run given to ``report``: one line and exit 2, or a page without the part that cannot be drawn;
never a traceback (exit 3) nor a matplotlib warning in the CI log."""

import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handfed import gpu_machine, write

from hostile_inputs import FAST, assert_refused, json_values, put, run_cli, small

MiB = 2**20


def _dist(op, world, **info):
    """A distributed nccl row as the suite writes it, with ``info`` laid over its extra_info."""
    from xferbench.measure.distributed import DistCase

    case = DistCase(op, 64 * MiB, "nccl", max(world, 2), "cuda", pair=(0, 1))
    stats = {k: 0.01 for k in ("min", "max", "mean", "median", "q1", "q3")} | {
        "iqr": 0.0, "stddev": 0.0, "rounds": 3, "iterations": 1}
    extra = case.extra_info() | {"rank_seconds": [[0.01] * 3] * 3, "rank_mean_seconds": [0.009] * 3,
                                 "verified": True, "clock": "wall+sync"} | {"world_size": world} | info
    return {"name": case.id, "group": op, "extra_info": extra, "stats": stats}


@pytest.mark.hostile
class TestCommitInfo:
    @pytest.mark.parametrize("commit", [5, ["abc"], {"a": 1}, True, 1.5])
    def test_an_id_that_is_not_a_string_is_refused(self, tmp_path, capsys, commit):
        run = put(tmp_path / "run.json", {**small(4), "commit_info": {"id": commit, "dirty": False}})
        code, _, err = run_cli(capsys, "report", run, "-o", tmp_path / "r.html")
        assert_refused(code, err, "run.json: field 'commit_info.id' must be a string")

    def test_a_string_id_is_shown(self, tmp_path, capsys):
        run = put(tmp_path / "run.json", {**small(4), "commit_info": {"id": "0123456789abcdef", "dirty": True}})
        code, _, err = run_cli(capsys, "report", run, "-o", tmp_path / "r.html")
        assert code == 0, err
        assert "commit 0123456789ab (dirty)" in (tmp_path / "r.html").read_text()

    @FAST
    @given(commit=json_values)
    def test_any_commit_info_is_shown_or_refused(self, tmp_path, capsys, commit):
        run = put(tmp_path / "run.json", {**small(2), "commit_info": commit if not isinstance(commit, dict)
                                          else commit | {"id": commit.get("")}})
        from xferbench.analyze.load.results import ResultsError, load

        try:
            load([run])
        except ResultsError as error:
            assert "\n" not in str(error)


@pytest.mark.hostile
class TestDistributedRows:
    """Per-rank times that are missing, empty or ragged, and a world of 0 or 1 ranks (no bus bandwidth)."""

    @pytest.mark.parametrize("info", [
        {"rank_seconds": [[], [], []]},  # ranks without a round
        {"rank_seconds": [[1.0], [2.0, 3.0], [1.0]]},  # rounds that do not line up
        {"rank_call_seconds": [[], [], []]},
        {"rank_seconds": None, "rank_mean_seconds": None},
        {"world_size": 0, "bus_factor": 0.0},  # a log axis with no positive value
        {"world_size": 1, "bus_factor": 0.0, "rank_seconds": None},
    ], ids=["empty-ranks", "ragged", "empty-calls", "no-ranks", "world-0", "world-1"])
    def test_the_page_is_written_without_a_warning(self, tmp_path, capsys, info):
        rows = [_dist(op, info.get("world_size", 3), **info) for op in ("all_reduce", "send_recv")]
        run = write(tmp_path / "run.json", rows, gpu_machine())
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a warning matplotlib prints lands in the CI log
            code, _, err = run_cli(capsys, "report", run, "-o", tmp_path / "r.html")
        assert code == 0, err
        assert "Traceback" not in err

    @FAST
    @given(ranks=st.lists(st.lists(st.floats(0, 1) | st.just(0.0), max_size=3), max_size=4))
    def test_any_rank_matrix_is_drawn_or_left_out(self, ranks):
        from xferbench.analyze.report import distributed

        row = {"rank_seconds": ranks, "rank_call_seconds": ranks}
        matrix = distributed._inside_calls(row)
        if matrix is not None:  # what is used is a rectangle of at least one round
            assert len({len(r) for r in matrix}) == 1 and matrix[0]
            distributed.slowest_rank(matrix)
            distributed.late_rank(matrix)


@pytest.mark.hostile
def test_a_case_path_of_5_mb_is_refused_in_one_line(tmp_path, capsys):
    """matplotlib lays out each legend's text: a 5 MB method kept report busy for minutes (bounded by refusing it)."""
    document = small(4)
    document["benchmarks"][1]["extra_info"]["method"] = "m" * 5_000_000
    run = put(tmp_path / "run.json", document)
    code, _, err = run_cli(capsys, "report", run, "-o", tmp_path / "r.html")
    assert_refused(code, err, "run.json: benchmark ", "field 'method' is 5,000,000 characters long")
    assert len(err) < 300
