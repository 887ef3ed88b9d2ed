"""A run kept gzipped (``full.json.gz``, as the GPU reference run writes it) reads like its JSON."""

import gzip
import json
from pathlib import Path

import pytest

from xferbench.analyze.load.results import ResultsError, find_json, load
from xferbench.cli import main
from xferbench.output import write_atomic

SAMPLE = Path(__file__).parent / "data" / "cpu-sample.json"


@pytest.fixture
def gzipped(tmp_path):
    path = tmp_path / "run.json.gz"
    write_atomic(path, gzip.compress(SAMPLE.read_bytes()))
    return path


def test_a_gzipped_run_loads_the_same_rows(gzipped):
    plain, packed = load([SAMPLE]).frame, load([gzipped]).frame
    assert len(packed) == len(plain) > 0
    assert packed["median_s"].tolist() == plain["median_s"].tolist()


def test_a_folder_finds_gzipped_runs_beside_plain_ones(tmp_path, gzipped):
    (tmp_path / "other.json").write_text(SAMPLE.read_text())
    assert [p.name for p in find_json(tmp_path)] == ["other.json", "run.json.gz"]


@pytest.mark.parametrize("content, problem", [
    (b"not gzip at all", "not JSON, or cut short"),  # the kind is told by content: plain text, not a gzip
    (gzip.compress(b'{"benchmarks": [')[:-8], "cannot read it (EOFError)"),
    (gzip.compress(b"\xff\xfe"), "cannot read it (UnicodeDecodeError)"),
    (gzip.compress(b""), "the file is empty"),
], ids=["not-gzip", "truncated", "not-utf8", "empty"])  # gzip bytes hold a timestamp: ids from them change each run
def test_a_broken_gzip_is_one_line_naming_the_file(tmp_path, content, problem):
    path = tmp_path / "bad.json.gz"
    path.write_bytes(content)
    with pytest.raises(ResultsError, match=r"bad\.json\.gz: " + problem.replace("(", r"\(").replace(")", r"\)")):
        load([path])


def test_report_and_check_read_it_and_never_write_over_it(gzipped, capsys):
    assert main(["report", str(gzipped), "-o", str(gzipped.with_name("index.html"))]) == 0
    assert main(["report", str(gzipped), "-o", str(gzipped)]) == 2
    assert main(["report", str(gzipped.parent), "-o", str(gzipped.with_name("next.json.gz"))]) == 2
    assert not gzipped.with_name("next.json.gz").exists()
    assert json.loads(gzip.decompress(gzipped.read_bytes())) == json.loads(SAMPLE.read_text())


def test_write_atomic_writes_bytes_as_given(tmp_path):
    write_atomic(tmp_path / "b.gz", b"\x1f\x8b raw")
    write_atomic(tmp_path / "t.txt", "text é")
    assert (tmp_path / "b.gz").read_bytes() == b"\x1f\x8b raw"
    assert (tmp_path / "t.txt").read_text(encoding="utf-8") == "text é"
