"""What a hostile run file can do to compare's verdict and outputs: copies of a run, a median its rounds disagree
with, a gzip bomb, an output that names a run, escapes in a version string (results.py, gate/compare.py)."""

from __future__ import annotations

import copy
import gzip
import json
import re
from pathlib import Path

import pytest

from test_compare import BANDWIDTH_SLOWED, redrawn, save, scaled
from xferbench.analyze.load import results

from hostile_inputs import assert_refused, run_cli

pytestmark = pytest.mark.hostile

SAMPLE = Path(__file__).parent / "data" / "cpu-sample.json"


@pytest.fixture
def sample() -> dict:
    return json.loads(SAMPLE.read_text())


def counts(out: str) -> str:
    return re.search(r"\d+ regression\(s\), \d+ improvement\(s\), \d+ can't tell", out).group(0)  # type: ignore[union-attr]


@pytest.mark.parametrize("resaved", [False, True])
def test_copies_of_a_run_count_once(tmp_path: Path, sample: dict, capsys: pytest.CaptureFixture[str],
                                    resaved: bool) -> None:
    """20 copies of one base run (byte for byte, or saved again with new datetimes) judge as the one run does."""
    new = save(tmp_path, "new.json", scaled(sample, 2.0, {BANDWIDTH_SLOWED}))
    single = run_cli(capsys, "compare", SAMPLE, new)
    for i in range(20):
        copy_ = copy.deepcopy(sample)
        if resaved:
            copy_["datetime"] = f"2026-11-{i + 1:02d}T08:00:00"
        save(tmp_path / "base", f"run-{i:02d}.json", copy_)
    many = run_cli(capsys, "compare", tmp_path / "base", new)
    assert many[0] == single[0] and counts(many[1]) == counts(single[1])
    assert "copy(ies) of a run left out" in many[1]


def _base_folder(tmp_path: Path, sample: dict, runs: int = 5) -> Path:
    for i in range(runs):
        data = redrawn(sample, i)
        data["datetime"] = f"2026-11-{i + 1:02d}T08:00:00"
        save(tmp_path / "base", f"run-{i}.json", data)
    return tmp_path / "base"


def test_a_median_its_rounds_disagree_with_is_refused(tmp_path: Path, sample: dict,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """stats.median x3, rounds unchanged: compare (rounds) and the report (median) would tell two stories."""
    for bench in sample["benchmarks"]:
        bench["stats"]["median"] *= 3
    bad = save(tmp_path, "bad.json", sample)
    code, _, err = run_cli(capsys, "compare", SAMPLE, bad)
    assert_refused(code, err, "is not the median of its rounds")
    code, _, err = run_cli(capsys, "report", bad, "-o", tmp_path / "r.html")
    assert_refused(code, err, "is not the median of its rounds")


def test_a_gzip_bomb_is_refused_before_it_is_inflated(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(results, "MAX_RUN_BYTES", 2**20)
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b" " * (2**21)))
    code, _, err = run_cli(capsys, "compare", SAMPLE, bomb)
    assert_refused(code, err, "decompresses past 1 MiB")
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (2**20 + 1))
    code, _, err = run_cli(capsys, "compare", SAMPLE, big)
    assert_refused(code, err, "larger than 1 MiB")


def test_json_and_markdown_never_replace_a_run(tmp_path: Path, sample: dict, capsys: pytest.CaptureFixture[str]) -> None:
    other = save(tmp_path, "other-run.json", sample)
    before = other.read_bytes()
    for flag in ("--json", "--markdown"):
        code, _, err = run_cli(capsys, "compare", SAMPLE, SAMPLE, flag, other)
        assert_refused(code, err, "not an earlier output")
        code, _, err = run_cli(capsys, "ab", "--base", "true", "--head", "true", "--keep", tmp_path / "ab", flag, other)
        assert_refused(code, err, "not an earlier output")
    assert other.read_bytes() == before
    code, _, err = run_cli(capsys, "ab", "--base", "true", "--head", "true", "--keep", tmp_path / "ab",
                           "--json", tmp_path / "x", "--markdown", tmp_path / "x")
    assert_refused(code, err, "the same file")


def test_escapes_in_a_version_reach_no_terminal(tmp_path: Path, sample: dict, capsys: pytest.CaptureFixture[str]) -> None:
    """A torch version with a newline-led ``::error`` and an OSC link: printed on one line, inert, in the text and the
    Markdown."""
    sample["machine_info"]["xferbench"]["torch"] = "2.13\n::error::All clear\x1b]8;;https://evil\x07x\x1b[2J"
    new = save(tmp_path, "new.json", sample)
    md = tmp_path / "c.md"
    code, out, err = run_cli(capsys, "compare", SAMPLE, new, "--markdown", md)
    assert code in (0, 1), err
    for text in (out, md.read_text()):
        assert "\x1b" not in text and not any(line.startswith("::") for line in text.splitlines())
        assert "\n::error" not in text
