"""pytest-benchmark's own ``--benchmark-json`` is written atomically: a run killed during the write
leaves the earlier file whole, never half of the new one."""

import json
import os

import torch  # noqa: F401  loaded before pytester's in-process runs, which unload what they import

CONFTEST = 'pytest_plugins = ("xferbench.measure.record.journal",)\n'


def test_the_json_replaces_the_old_file_by_rename_not_in_place(pytester):
    """A rename gives the target a new inode; an in-place open('wb') would keep the old one and, if
    killed meanwhile, leave a truncated file."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_one="def test_one(benchmark):\n    benchmark(sum, [1, 2])\n")
    target = pytester.path / "run.json"
    target.write_text("an earlier run\n")
    before = os.stat(target).st_ino
    result = pytester.runpytest("--benchmark-json=run.json", "--benchmark-max-time=0.001")
    result.assert_outcomes(passed=1)
    assert os.stat(target).st_ino != before
    assert [b["name"] for b in json.loads(target.read_text())["benchmarks"]] == ["test_one"]
    assert not list(pytester.path.glob(".xfb.*.tmp"))  # no temporary left behind
    assert "Wrote benchmark data in: run.json" in result.stdout.str() + result.stderr.str()
