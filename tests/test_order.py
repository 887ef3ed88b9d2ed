"""measure/session/order.py: --xfer-shuffle runs the cases in a seeded random order and records it."""

import itertools
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from xferbench.measure.session.order import shuffled

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "examples" / "sim-2gpu-pcie5-nvlink.toml"


def item(nodeid, scope="function"):
    fixture = types.SimpleNamespace(scope=scope)
    return types.SimpleNamespace(nodeid=nodeid, _fixtureinfo=types.SimpleNamespace(name2fixturedefs={"f": [fixture]}))


ITEMS = [item(f"bench/test_{m}.py::test[{i}]") for m in ("h2d", "d2h", "host") for i in range(6)]


class TestShuffled:

    def test_a_seed_gives_one_order_and_another_seed_another(self):
        once, again = shuffled(ITEMS, 7), shuffled(ITEMS, 7)
        assert [i.nodeid for i in once] == [i.nodeid for i in again]
        assert sorted(i.nodeid for i in once) == sorted(i.nodeid for i in ITEMS)
        assert [i.nodeid for i in shuffled(ITEMS, 8)] != [i.nodeid for i in once]

    def test_families_are_interleaved_not_shuffled_as_blocks(self):
        """Two families' cases mix (pytest-randomly keeps a module together): drift hits both alike."""
        modules = [i.nodeid.split("::")[0] for i in shuffled(ITEMS, 7)]
        runs = sum(1 for a, b in itertools.pairwise(modules) if a != b) + 1
        assert runs > 3

    def test_cases_of_a_module_held_fixture_stay_together(self):
        """The 2-rank world is module-scoped: its cases run as one block (shuffled within), never set up again."""
        world = [item(f"bench/test_distributed.py::test[{i}]", scope="module") for i in range(5)]
        order = [i.nodeid for i in shuffled([*ITEMS, *world], 3)]
        places = [n for n, nodeid in enumerate(order) if "distributed" in nodeid]
        assert places == list(range(places[0], places[0] + 5))


def run(out, *args):
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "bench/test_h2d.py", "bench/test_host.py", "--benchmark-only", "-q",
         "-p", "no:cacheprovider", "-p", "no:randomly", f"--xfer-simulate={SPEC}", "--xfer-sizes=4B",
         f"--benchmark-json={out}", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(out.read_text()), proc.stdout


@pytest.mark.slow
def test_the_run_records_its_seed_and_the_order_its_cases_ran_in(tmp_path):
    data, output = run(tmp_path / "a.json", "--xfer-shuffle=11", "-vv")
    order = data["xferbench_run"]["case_order"]
    assert (order["by"], order["seed"]) == ("--xfer-shuffle", 11) and "--xfer-shuffle=11" in output
    ran = [line.split(" ")[0] for line in output.splitlines() if " PASSED" in line]
    assert order["order"] == ran and len(ran) == len(data["benchmarks"])
    assert {"boot_id", "started", "load"} <= data["xferbench_run"].keys()  # beside the run's other facts
    assert {b["fullname"] for b in data["benchmarks"]} == set(ran)
    plain, _ = run(tmp_path / "b.json")
    assert "case_order" not in plain["xferbench_run"]  # the default run is as before


@pytest.mark.hostile
def test_a_seed_that_is_not_a_number_is_one_line(tmp_path):
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    proc = subprocess.run([sys.executable, "-m", "pytest", "bench/test_host.py", "--collect-only", "-q",
                           "-p", "no:cacheprovider", "--xfer-shuffle=soon"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 4 and "argument --xfer-shuffle: expected a whole number or 'random', got 'soon'" in proc.stderr
