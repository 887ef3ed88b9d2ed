"""Paired verdicts on the simulated machine, over 20 seeds (docs/design.md, "Verdicts"): a GPU whose costs wander 10%
with 2% jitter, identical calls (.to() and .cuda(), the same code) and a true 1.10x difference (d2h pinned against h2d
pinned), each measured paired (6 interleaved blocks) and unpaired (one piece each; only the reference in blocks).
Known costs in, the verdicts out: identical calls read "can't tell", the 1.10x is resolved and its interval holds it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from xferbench.analyze.load.results import load
from xferbench.analyze.load.rows import matching
from xferbench.analyze.view import RunView
from xferbench.ratios import Ratio

ROOT = Path(__file__).resolve().parents[1]
SEEDS = 20
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> dict[str, list[tuple[Ratio, Ratio]]]:
    """Per mode (``paired``, ``unpaired``), each seed's (identical calls, 1.10x) ratios."""
    out = tmp_path_factory.mktemp("seeds")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests"),
                                                       os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "seeded_sessions.py"), str(out), str(SEEDS)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    found: dict[str, list[tuple[Ratio, Ratio]]] = {"paired": [], "unpaired": []}
    for seed in range(SEEDS):
        for mode, blocks in (("paired", "paired"), ("unpaired", "1")):
            view = RunView.of(load([out / f"{blocks}-{seed}.json"]))
            rows = view.rows[(view.rows["host_memory"] == "pinned") & ~view.rows["non_blocking"].astype(bool)]
            to, cuda, down, up = (matching(rows, match).iloc[0] for match in (
                {"op": "h2d", "method": "to"}, {"op": "h2d", "method": "cuda"}, {"op": "d2h", "method": "copy_"},
                {"op": "h2d", "method": "copy_"}))
            found[mode].append((view.ratio(to, cuda), view.ratio(down, up)))
    return found


def test_identical_calls_measured_paired_read_cant_tell(judged):
    same = [same for same, _ in judged["paired"]]
    assert all(r.paired for r in same)
    assert sum(not r.resolved for r in same) >= 19, [r.text() for r in same]


def test_a_true_tenth_measured_paired_is_resolved_and_held_by_its_interval(judged):
    differ = [differ for _, differ in judged["paired"]]
    assert all(r.paired for r in differ)
    assert sum(r.resolved and r.value > 1 for r in differ) >= 18, [r.text() for r in differ]
    assert sum(r.low <= 1.10 <= r.high for r in differ) >= 18, [r.text() for r in differ]


def test_unpaired_identical_calls_never_claim_a_difference_but_by_chance(judged):
    same = [same for same, _ in judged["unpaired"]]
    assert not any(r.paired for r in same)
    assert sum(r.resolved for r in same) <= 1, [r.text() for r in same]
