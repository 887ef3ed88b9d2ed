"""The registry is the one home of a benchmark family: every stage reads it, nothing else lists ops."""

import json
import re
from pathlib import Path

import pytest

from xferbench import families
from xferbench.analyze.model import fit_paths
from xferbench.analyze.report import build_html
from xferbench.analyze.results import load
from xferbench.families import FAMILIES, Family, Variant

ROOT = Path(__file__).resolve().parents[1]


def test_every_core_and_scenario_family_has_one_bench_file():
    """Adding a family is a record plus one bench/test_*.py: each registered op is marked in exactly one file."""
    marked: dict[str, list[str]] = {}
    for path in sorted((ROOT / "bench").glob("test_*.py")):
        for op in re.findall(r'@pytest\.mark\.xfer\("(\w+)"\)', path.read_text()):
            marked.setdefault(op, []).append(path.name)
    expected = {op for op, f in FAMILIES.items() if f.kind in ("core", "scenario")}
    assert set(marked) == expected, "bench/ and the registry disagree on which families exist"
    assert all(len(files) == 1 for files in marked.values()), marked


def test_two_records_of_one_op_are_refused():
    """A scenario named like a collective (copy_overlap, not overlap) would silently replace it."""
    with pytest.raises(ValueError, match="two families are named 'overlap'"):
        families._by_op((FAMILIES["overlap"], Family("overlap", "copy/compute", "t", "scenario", "k")))


def test_register_refuses_a_second_record_for_an_op():
    with pytest.raises(ValueError, match="a family 'h2d' is registered already"):
        families.register(FAMILIES["h2d"])


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"kind": "plugin"}, "kind must be core, scenario or distributed"),
    ({"endpoints": "everywhere"}, "a core family needs endpoints"),
    ({"variants": ()}, "at least one variant"),
])
def test_a_malformed_record_is_refused_when_declared(kwargs, message):
    """A record that no stage could use fails where it is written, not deep inside a run."""
    fields = {"op": "toy", "title": "toy", "times": "t", "kind": "core", "colour": "k", "endpoints": "host",
              "variants": (Variant("clone", "pageable"),)} | kwargs
    with pytest.raises(ValueError, match=message):
        Family(**fields)


def test_unknown_op_names_the_families():
    with pytest.raises(KeyError, match="unknown op 'nope'; the families are: h2d, d2h"):
        families.family("nope")


TOY_BENCH = '''
import pytest

@pytest.mark.xfer("toy")
def test_toy(xfer_case, xfer):
    xfer(xfer_case)
'''


def test_a_toy_family_needs_one_record_and_one_bench_file(pytester, monkeypatch, tmp_path):
    """A family declared in a test (nothing else edited) is planned, timed, verified, loaded, fitted and reported."""
    toy = Family("toy", "toy host copies", "host clone, registered by a test", "core", "tab:pink", link="host memory",
                 endpoints="host", variants=(Variant("clone", "pageable"),))
    monkeypatch.setitem(FAMILIES, "toy", toy)
    pytester.makeconftest('pytest_plugins = ("xferbench.measure.plugin",)')
    pytester.makepyfile(test_toy=TOY_BENCH)
    out = tmp_path / "toy.json"
    result = pytester.runpytest("--benchmark-only", "--xfer-sizes=1KiB,64KiB,1MiB", "--benchmark-max-time=0.005",
                                f"--benchmark-json={out}")
    result.assert_outcomes(passed=3)
    names = sorted(b["name"] for b in json.loads(out.read_text())["benchmarks"])
    assert names == ["test_toy[pageable-clone-1KiB-float32-cpu->cpu]", "test_toy[pageable-clone-1MiB-float32-cpu->cpu]",
                     "test_toy[pageable-clone-64KiB-float32-cpu->cpu]"]
    results = load([out])
    assert set(results.frame["path"]) == {"toy pageable clone cpu"}
    assert results.frame["bandwidth_gbps"].gt(0).all(), "a payload-moving family gets a bandwidth"
    assert list(fit_paths(results.frame)["path"]) == ["toy pageable clone cpu"], "and an alpha-beta fit"
    assert "toy pageable clone cpu" in build_html(results)
