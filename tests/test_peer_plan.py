"""The peer plan a run recorded (machine_info.xferbench.peer_plan, --xfer-peer-pairs) in the report and in compare:
which pairs were measured at which sizes and why, and a pair measured on one side only is "not compared"."""

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from xferbench.analyze.gate.compare import Comparison, compare, plan_notes, summary
from xferbench.analyze.gate.verdicts import NOT_COMPARED
from xferbench.analyze.load.results import load
from xferbench.analyze.peer_plan import RecordedPlan, difference, same_cases
from xferbench.cli import main
from xferbench.families.core import peer_plan_sentences as sentences
from xferbench.measure.cases import LinkClasses, peer_plan

from fakes import build_html

ROOT = Path(__file__).resolve().parents[1]
EIGHT = ROOT / "examples" / "sim-8gpu-nvswitch-2socket.toml"
THREE = ["cuda:0", "cuda:1", "cuda:2"]
SIZES = "4B,1KiB,64KiB,1MiB,16MiB"
SAMPLE = Path(__file__).parent / "data" / "cpu-sample.json"


def recorded(plan) -> RecordedPlan:
    found = RecordedPlan.of({"xferbench": {"peer_plan": plan.as_json()}})
    assert found is not None
    return found


def peer_rows(sizes_by_pair: dict[tuple[str, str], list[int]]) -> pd.DataFrame:
    return pd.DataFrame([{"op": "peer", "src": s, "dst": d, "nbytes": n}
                         for (s, d), sizes in sizes_by_pair.items() for n in sizes])


NVSWITCHED = {(s, d): "NVLink 4.0 x18 via NVSwitch" for s in THREE for d in THREE if s != d}


class TestSentences:

    def test_one_per_class_names_the_pair_that_stands_for_its_class(self):
        plan = recorded(peer_plan(THREE, NVSWITCHED))
        frame = peer_rows({pair: [4, 1024, 2**20] if pair == ("cuda:0", "cuda:1") else [4, 2**20] for pair in NVSWITCHED})
        lines = sentences(plan, frame)
        assert lines[0].startswith("Peer pairs: one-per-class (default: every pair's link is known (NVLink 4.0 x18 via "
                                   "NVSwitch), one pair per link swept): 1 of 6 ordered GPU pairs swept at every size; "
                                   "the other 5 at the smallest")
        assert lines[1] == ("Link class NVLink 4.0 x18 via NVSwitch: cuda:0->cuda:1 swept, standing for its 5 other "
                            "pairs (cuda:0->cuda:2, cuda:1->cuda:0, cuda:1->cuda:2, cuda:2->cuda:0, cuda:2->cuda:1).")
        assert lines[2] == ("Measured: cuda:0->cuda:1 at 3 sizes (4 B, 1 KiB, 1 MiB); cuda:0->cuda:2, cuda:1->cuda:0, "
                            "cuda:1->cuda:2, cuda:2->cuda:0, cuda:2->cuda:1 at 2 sizes (4 B, 1 MiB).")

    def test_unknown_links_and_a_pair_without_results(self):
        """A real box without NVML: every pair swept, the reason says why; a planned pair with no row is named."""
        classes = LinkClasses(dict.fromkeys(NVSWITCHED))
        classes.why.update(dict.fromkeys(NVSWITCHED, "no NVML"))
        plan = recorded(peer_plan(THREE, classes))
        lines = sentences(plan, peer_rows({pair: [4] for pair in NVSWITCHED if pair != ("cuda:2", "cuda:1")}))
        assert lines[0] == ("Peer pairs: all (default: the link of 6 of 6 GPU pairs is unknown (cuda:0->cuda:1: no NVML), "
                            "every pair swept): 6 of 6 ordered GPU pairs swept at every size.")
        assert lines[1].startswith("Link unknown: 6 pairs, every one swept (cuda:0->cuda:1, ")
        assert lines[2].endswith("; cuda:2->cuda:1 not measured (planned, no result).")

    def test_ring_says_which_pairs_of_a_class_were_swept(self):
        gpus = [f"cuda:{i}" for i in range(4)]
        plan = recorded(peer_plan(gpus, {}, "ring"))
        assert sentences(plan, peer_rows({}))[1].startswith(
            "Link unknown: 8 pairs swept (cuda:0->cuda:1, cuda:0->cuda:3, cuda:1->cuda:0, cuda:1->cuda:2, "
            "cuda:2->cuda:1, cuda:2->cuda:3, cuda:3->cuda:0, cuda:3->cuda:2), 4 at the fit sizes (cuda:0->cuda:2, ")

    def test_plans_of_the_same_cases_are_the_same_whatever_their_reason(self):
        given = recorded(peer_plan(THREE, NVSWITCHED, "one-per-class"))
        default = recorded(peer_plan(THREE, NVSWITCHED))
        assert given.reason != default.reason and same_cases(given, default) and difference(given, default) is None
        every = recorded(peer_plan(THREE, NVSWITCHED, "all"))
        assert difference(every, None) == (
            "Peer plans differ: base all (given): 6 of 6 ordered GPU pairs swept at every size; new no peer plan "
            "recorded (fewer than two GPUs, or an older run). A peer case measured on one side only is not compared.")


def test_a_damaged_plan_is_refused_in_one_line(tmp_path, capsys):
    data = json.loads(SAMPLE.read_text())
    data["machine_info"]["xferbench"]["peer_plan"] = {"mode": "all", "swept_pairs": "cuda:0->cuda:1"}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    assert main(["report", str(bad), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert "'machine_info.xferbench.peer_plan' is not what xferbench writes there" in err and "\n" not in err


def test_not_compared_is_counted_apart_never_as_unchanged():
    row = Comparison("peer copy_ cuda:0->cuda:2", 1024, "latency", 1e-5, None, None, None, None, None, None, None,
                     None, NOT_COMPARED, why="measured on the base side only: the peer plans differ")
    assert row.shown_verdict == "not compared (measured on the base side only: the peer plans differ)"
    assert summary([row], 1, 1).startswith("0 regression(s), 0 improvement(s), 0 can't tell, 1 not compared, in 1 case(s)")


def test_runs_without_peer_plans_compare_as_before():
    """Neither side recorded a plan (no peers): no note, and a case missing on one side is still "gone"."""
    base = load([SAMPLE])
    new = copy.copy(base)
    new.frame = base.frame.iloc[1:]
    rows = compare([base], [new])
    assert plan_notes([base], [new]) == [] and {r.verdict for r in rows} >= {"gone"}
    assert NOT_COMPARED not in {r.verdict for r in rows}


# --- read back from simulated runs ------------------------------------------------------------------------------

def simulated_peer_run(out: Path, *args: str) -> Path:
    """bench/test_peer.py's copy_ cases on 3 GPUs of the 8-GPU NVSwitch spec, 5 sizes."""
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    proc = subprocess.run([sys.executable, "-m", "pytest", "bench/test_peer.py", "--benchmark-only", "-q", "-k", "copy_",
                           "-p", "no:cacheprovider", f"--xfer-simulate={EIGHT}", "--xfer-devices=cuda:0,cuda:1,cuda:2",
                           f"--xfer-sizes={SIZES}", f"--benchmark-json={out}", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two simulated runs of one machine: the default plan (one pair per link class) and every pair swept."""
    folder = tmp_path_factory.mktemp("peer-plans")
    return (simulated_peer_run(folder / "default.json"),
            simulated_peer_run(folder / "all.json", "--xfer-peer-pairs=all"))


@pytest.mark.slow  # two simulated benchmark sessions: about 15 s
class TestSimulatedRuns:
    def test_report_says_which_pairs_at_which_sizes_and_why(self, runs, tmp_path):
        out = tmp_path / "report.html"
        assert main(["report", str(runs[0]), "-o", str(out)]) == 0
        markdown = out.with_suffix(".md").read_text()
        expected = [
            "Peer pairs: one-per-class (default: every pair's link is known (peer (one simulated price)), one pair per "
            "link swept): 1 of 6 ordered GPU pairs swept at every size; the other 5 at the smallest, the geometric "
            "middle and the two largest sizes (enough for their own α and β).",
            "Link class peer (one simulated price): cuda:0->cuda:1 swept, standing for its 5 other pairs "
            "(cuda:0->cuda:2, cuda:1->cuda:0, cuda:1->cuda:2, cuda:2->cuda:0, cuda:2->cuda:1).",
            "Measured: cuda:0->cuda:1 at 5 sizes (4 B, 1 KiB, 64 KiB, 1 MiB, 16 MiB); cuda:0->cuda:2, cuda:1->cuda:0, "
            "cuda:1->cuda:2, cuda:2->cuda:0, cuda:2->cuda:1 at 4 sizes (4 B, 64 KiB, 1 MiB, 16 MiB)."]
        section = markdown.split("## Peer pairs measured\n\n", 1)[1].split("\n\n", 1)[0]
        # the last section: the file's provenance line follows it
        assert [line for line in section.splitlines() if not line.startswith("<!--")] == [f"- {line}" for line in expected]
        html = build_html(load([runs[0]]))
        assert 'id="peer-plan-lines"' in html and "cuda:0-&gt;cuda:1 swept, standing for its 5 other pairs" in html

    def test_compare_says_the_plans_differ_and_compares_no_one_sided_pair(self, runs, capsys):
        assert main(["compare", str(runs[1]), str(runs[0])]) == 0
        out = capsys.readouterr().out
        assert ("Peer plans differ: base all (given): 6 of 6 ordered GPU pairs swept at every size; new one-per-class "
                "(default: every pair's link is known (peer (one simulated price)), one pair per link swept): 1 of 6 "
                "ordered GPU pairs swept at every size. A peer case measured on one side only is not compared.") in out
        one_sided = [line for line in out.splitlines() if " 1 KiB " in line and "cuda:0->cuda:1" not in line]
        assert len(one_sided) == 5
        assert all(line.endswith("not compared (measured on the base side only: the peer plans differ)")
                   for line in one_sided)
        assert "5 not compared, in 30 case(s)" in out

    def test_the_same_plan_on_both_sides_says_nothing(self, runs, capsys):
        assert main(["compare", str(runs[0]), str(runs[0])]) == 0
        out = capsys.readouterr().out
        assert "Peer plans differ" not in out and NOT_COMPARED not in out


WHOLE = {"mode": "all", "reason": "given", "swept_pairs": ["cuda:0->cuda:1"], "classes": {"cuda:0->cuda:1": None}}


class TestPlanDetails:
    """What each sentence and check of analyze/peer_plan decides, one behaviour a test (its mutation score)."""

    @pytest.mark.parametrize("damage", [{"mode": 1}, {"reason": None}, {"swept_pairs": "cuda:0->cuda:1"},
                                        {"swept_pairs": [1]}, {"classes": ["cuda:0->cuda:1"]}, {"classes": {"a": 1}}])
    def test_each_field_damaged_alone_is_refused(self, damage):
        from xferbench.analyze.peer_plan import plan_ok

        plan = WHOLE | damage
        assert plan_ok(WHOLE) and plan_ok(None) and not plan_ok(plan) and not plan_ok("all")
        assert RecordedPlan.of({"xferbench": {"peer_plan": plan}}) is None
        assert RecordedPlan.of({"xferbench": {"peer_plan": WHOLE}}) is not None

    def test_pairs_are_ordered_by_device_index_and_names_without_one_come_last(self):
        classes = {"cuda:2->cuda:10": None, "cuda:2->cuda:9": None, "cuda:10->cuda:2": None, "cuda:2->meta": None}
        plan = RecordedPlan("all", "given", frozenset(classes), classes)
        assert plan.pairs == ["cuda:2->cuda:9", "cuda:2->cuda:10", "cuda:2->meta", "cuda:10->cuda:2"]
        frame = peer_rows({("cuda:2", "cuda:10"): [4], ("cuda:2", "cuda:9"): [4]})
        assert sentences(plan, frame)[-1].startswith("Measured: cuda:2->cuda:9, cuda:2->cuda:10 at 1 size (4 B); ")

    def test_more_than_eight_pairs_are_counted(self):
        from xferbench.families.core import named

        pairs = [f"cuda:0->cuda:{i}" for i in range(1, 11)]
        assert named(pairs) == ", ".join(pairs[:8]) + " and 2 more" and named(pairs[:8]) == ", ".join(pairs[:8])

    def test_the_pairs_at_the_fit_sizes_are_said_in_full(self):
        plan = recorded(peer_plan(THREE, NVSWITCHED))
        assert sentences(plan, peer_rows({}))[0].endswith(
            "1 of 6 ordered GPU pairs swept at every size; the other 5 at the smallest, the geometric middle and the "
            "two largest sizes (enough for their own α and β).")

    def test_a_ring_with_one_pair_of_a_class_swept_says_how_many_are_at_the_fit_sizes(self):
        """Only one-per-class has a pair standing for its class; a ring that sweeps one pair of a class, or none,
        says how many of its pairs were swept."""
        gpus = [f"cuda:{i}" for i in range(4)]
        near = {("cuda:0", "cuda:1"), ("cuda:0", "cuda:2")}  # the first in the ring, the second not
        classes = {(s, d): ("near" if (s, d) in near else "far" if {s, d} == {"cuda:0", "cuda:2"}
                            else "ring" if abs(int(s[-1]) - int(d[-1])) in (1, 3) else "other")
                   for s in gpus for d in gpus if s != d}
        lines = sentences(recorded(peer_plan(gpus, classes, "ring")), peer_rows({}))
        assert "Link class near: 1 pair swept (cuda:0->cuda:1), 1 at the fit sizes (cuda:0->cuda:2)." in lines
        assert "Link class far: 0 pairs swept (none), 1 at the fit sizes (cuda:2->cuda:0)." in lines

    def test_a_ring_class_with_one_of_its_pairs_swept(self):
        gpus = [f"cuda:{i}" for i in range(4)]
        classes = {(s, d): "mixed" if s == "cuda:0" else "rest" for s in gpus for d in gpus if s != d}
        lines = sentences(recorded(peer_plan(gpus, classes, "ring")), peer_rows({}))
        assert ("Link class mixed: 2 pairs swept (cuda:0->cuda:1, cuda:0->cuda:3), 1 at the fit sizes "
                "(cuda:0->cuda:2).") in lines

    def test_pairs_with_more_sizes_come_first_and_a_plan_without_pairs_measured_nothing(self):
        classes = {"cuda:0->cuda:1": None, "cuda:1->cuda:0": None}
        plan = RecordedPlan("all", "given", frozenset(classes), classes)
        frame = peer_rows({("cuda:0", "cuda:1"): [4], ("cuda:1", "cuda:0"): [4, 2**20]})
        assert sentences(plan, frame)[-1] == ("Measured: cuda:1->cuda:0 at 2 sizes (4 B, 1 MiB); "
                                              "cuda:0->cuda:1 at 1 size (4 B).")
        empty = RecordedPlan("all", "given", frozenset(), {})
        assert sentences(empty, peer_rows({}))[-1] == "Measured: no peer copy."
        assert sentences(empty, pd.DataFrame({"name": ["create"]}))[-1] == "Measured: no peer copy."

    def test_a_difference_names_both_sides(self):
        every = recorded(peer_plan(THREE, NVSWITCHED, "all"))
        assert difference(None, every) == (
            "Peer plans differ: base no peer plan recorded (fewer than two GPUs, or an older run); new all (given): "
            "6 of 6 ordered GPU pairs swept at every size. A peer case measured on one side only is not compared.")
