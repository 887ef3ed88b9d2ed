import json
from pathlib import Path

import pytest

from xferbench.analyze.results import ResultsError, load

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
        assert results.notes == ["1 benchmark(s) that are not xferbench's were left out."]

    def test_newest_result_of_a_case_wins(self, tmp_path, sample):
        """The same case in two files: the newer run's row is kept and a note says so."""
        newer = json.loads(json.dumps(sample))
        newer["datetime"] = "2099-01-01T00:00:00"
        newer["benchmarks"] = newer["benchmarks"][:1]
        newer["benchmarks"][0]["stats"]["median"] = 123.0
        results = load([write(tmp_path, "newer.json", newer), SAMPLE])
        assert len(results.frame) == 58
        assert (results.frame["median_s"] == 123.0).sum() == 1
        assert results.notes == ["1 older result(s) of a case measured again were replaced by the newest."]

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
