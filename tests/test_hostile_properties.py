"""Property-based hostile input (Hypothesis): parsers, the result loader and the CLI.

Properties: a parser returns a valid value or raises ValueError; the loader returns
validated rows or raises ResultsError; the CLI exits 0, 1 or 2 with their documented
meaning, never with a traceback nor a hang, and leaves its inputs byte-identical.
"""

import contextlib
import copy
import io
import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xferbench.analyze.results import ResultsError, load
from xferbench.cli import main
from xferbench.measure.devices import parse_device_list
from xferbench.units import DTYPE_SIZES, parse_dtype, parse_size, parse_sizes

from hang import no_hang

SAMPLE = json.loads((Path(__file__).parent / "data" / "cpu-sample.json").read_text())
#: A few benchmarks of each kind (creation, host copy, no-op, scenario, distributed), so a report is quick.
BASE = {**SAMPLE, "benchmarks": [b for i, b in enumerate(SAMPLE["benchmarks"]) if i % 12 == 0]}

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
SLOW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                          HealthCheck.too_slow])

scalars = st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**400) \
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
size_words = st.sampled_from(["4B", "1KiB", "64MiB", "1GB", "0B", "2x3", "1x0", "..", ":x4", "x1", ",", " ", "TiB", "-1B",
                              "99999999999999999999GiB", "4B..1GiB", "1GiB..4B", "4B..1MiB:x1", "4B..1MiB:x99"])


class TestParsers:
    @pytest.mark.slow
    @FAST
    @given(st.text(max_size=30) | st.lists(size_words, min_size=1, max_size=4).map("".join))
    def test_size_is_positive_bytes_or_value_error(self, text):
        try:
            nbytes = parse_size(text)
        except ValueError as error:
            assert "\n" not in str(error)
        else:
            assert type(nbytes) is int and nbytes > 0

    @FAST
    @given(st.integers(min_value=1, max_value=2**40), st.sampled_from(["B", "KiB", "MiB", "GiB", "KB", "MB", "GB"]))
    def test_size_reads_back_what_it_says(self, number, unit):
        factor = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "KB": 10**3, "MB": 10**6, "GB": 10**9}[unit]
        assert parse_size(f" {number}{unit} ") == number * factor

    @FAST
    @given(st.text(max_size=40) | st.lists(size_words, min_size=1, max_size=5).map(",".join))
    def test_size_list_is_sizes_and_shapes_or_value_error(self, text):
        with no_hang(30):
            try:
                items = parse_sizes(text)
            except ValueError:
                return
        assert items and len(items) == len(set(items))
        assert all((type(i) is int and i > 0) or (isinstance(i, tuple) and i and min(i) >= 1) for i in items)

    @FAST
    @given(st.text(max_size=20) | st.sampled_from([*DTYPE_SIZES, *(f"torch.{d}" for d in DTYPE_SIZES), "float8", "torch."]))
    def test_dtype_is_known_or_value_error(self, text):
        try:
            assert parse_dtype(text) in DTYPE_SIZES
        except ValueError:
            pass

    @FAST
    @given(st.text(max_size=30) | st.lists(st.sampled_from(["cpu", "cuda:0", "cuda:1", "cuda : 0", "gpu", "all", " ", "cuda"]),
                                           min_size=1, max_size=4).map(",".join))
    def test_device_list_is_available_devices_or_value_error(self, text):
        available = ["cpu", "cuda:0"]
        try:
            devices = parse_device_list(text, available)
        except ValueError:
            return
        assert devices and set(devices) <= set(available)


#: Values that broke the analysis before it validated at load: zero, negative, non-finite, huge, wrong type.
hostile_numbers = st.sampled_from([0, 0.0, -1e-6, -1, 10**400, 2**64, 1e-320, "1e-6", True, None, [], {}]) \
    | st.floats(allow_nan=True, allow_infinity=True)


def mutate(document: dict, data: st.DataObject) -> dict:
    """The real run with one field replaced by an arbitrary JSON value, or deleted: half the time a
    field the analysis reads (a statistic, the contract, the run's header), else one anywhere."""
    document = copy.deepcopy(document)
    if data.draw(st.booleans()):
        bench = data.draw(st.sampled_from(document["benchmarks"]))
        holder = data.draw(st.sampled_from([bench["stats"], bench["extra_info"], bench, document]))
        key = data.draw(st.sampled_from(sorted(holder)))
        holder[key] = data.draw(hostile_numbers | json_values)
        return document
    holder: object = document
    while True:
        keys = list(holder) if isinstance(holder, dict) else list(range(len(holder)))  # type: ignore[arg-type]
        if not keys:
            return document
        key = data.draw(st.sampled_from(keys))
        child = holder[key]  # type: ignore[index]
        if not isinstance(child, dict | list) or not child or data.draw(st.booleans()):
            break
        holder = child
    if isinstance(holder, dict) and data.draw(st.booleans()):
        del holder[key]
    else:
        holder[key] = data.draw(json_values)  # type: ignore[index]
    return document


def dump(document) -> str:
    try:
        return json.dumps(document)
    except ValueError:  # an integer past Python's digit limit: write it as a string of digits
        return json.dumps(document, default=str)


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


class TestCli:
    """The CLI on mutated real runs: 0 or 1 with a verdict, or 2 with one line; inputs untouched."""

    def run(self, args: list[str], inputs: list[Path]) -> tuple[int, str]:
        before = [p.read_bytes() for p in inputs]
        out, err = io.StringIO(), io.StringIO()
        with no_hang(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as exit_:
                code = exit_.code
        assert [p.read_bytes() for p in inputs] == before
        assert code in (0, 1, 2)
        if code == 2:
            assert len(err.getvalue().strip().splitlines()) == 1, err.getvalue()
        else:
            assert err.getvalue() == "" or "Traceback" not in err.getvalue()
        return code, out.getvalue()

    @SLOW
    @given(data=st.data())
    def test_check(self, tmp_path, data):
        path = tmp_path / "run.json"
        path.write_text(dump(mutate(BASE, data)))
        code, out = self.run(["check", str(path)], [path])
        assert code == 2 or ("held" in out or "measured" in out)

    @SLOW
    @given(data=st.data())
    def test_compare(self, tmp_path, data):
        base, new = tmp_path / "base.json", tmp_path / "new.json"
        base.write_text(dump(BASE))
        new.write_text(dump(mutate(BASE, data)))
        outputs = [tmp_path / "c.md", tmp_path / "c.json"]
        code, out = self.run(["compare", str(base), str(new), "--markdown", str(outputs[0]), "--json", str(outputs[1])],
                             [base, new])
        if code == 1:
            assert "regression" in out
        if code in (0, 1):
            assert all(p.exists() for p in outputs)
            json.loads(outputs[1].read_text())

    @SLOW
    @given(data=st.data(), threshold=st.sampled_from(["10%", "0", "-5%", "abc", "nan", "1e9", "0.5", "inf%", ""]))
    def test_compare_options(self, tmp_path, data, threshold):
        base, new = tmp_path / "base.json", tmp_path / "new.json"
        base.write_text(dump(mutate(BASE, data)))
        new.write_text(dump(BASE))
        self.run(["compare", str(base), str(new), f"--threshold={threshold}"], [base, new])

    @settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                     HealthCheck.too_slow])
    @pytest.mark.slow
    @given(data=st.data())
    def test_report(self, tmp_path, data):
        path = tmp_path / "run.json"
        path.write_text(dump(mutate(BASE, data)))
        output = tmp_path / "report.html"
        output.unlink(missing_ok=True)
        code, _ = self.run(["report", str(path), "-o", str(output)], [path])
        assert code in (0, 2)  # a report never finds a regression
        assert output.exists() == (code == 0)


@pytest.mark.parametrize("args", [
    [], ["report"], ["compare", "a.json"], ["nope"], ["compare", "a", "b", "--nope"], ["report", "x", "-o"],
])
def test_argparse_errors_are_exit_2(args, capsys):
    """A missing or unknown argument is argparse's usage error: exit 2, no traceback."""
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2
    assert "Traceback" not in capsys.readouterr().err
