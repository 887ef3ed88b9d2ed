"""A damaged run given to ``report``: one line and exit 2, or a page without the part that cannot be drawn;
never a traceback (exit 3) nor a matplotlib warning in the CI log."""

import pytest
from hypothesis import given

from hostile_inputs import FAST, assert_refused, json_values, put, run_cli, small


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
