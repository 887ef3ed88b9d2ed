"""The registry is the one home of a benchmark family: every stage reads it, nothing else lists ops."""

import dataclasses
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from xferbench import families
from xferbench.analyze.load.results import load
from xferbench.analyze.model import fit_paths
from xferbench.analyze.report import drift_text
from xferbench.families import FAMILIES, Family, Variant
from xferbench.measure.cases import Skipped

from fakes import build_html, view_of_rows

ROOT = Path(__file__).resolve().parents[1]


def test_every_core_scenario_and_concurrent_family_has_one_bench_file():
    """Adding a family is a record plus one bench/test_*.py (also the package xferbench.bench): each registered op
    is marked in exactly one file, and every one of them runs with the same two fixtures."""
    marked: dict[str, list[str]] = {}
    for path in sorted((ROOT / "bench").glob("test_*.py")):
        text = path.read_text()
        for op in re.findall(r'@pytest\.mark\.xfer\("(\w+)"\)', text):
            marked.setdefault(op, []).append(path.name)
        if "@pytest.mark.xfer(" in text:
            assert set(re.findall(r"def test_\w+\((.*)\):", text)) == {"xfer_case, xfer"}, path.name
    expected = {op for op, f in FAMILIES.items() if f.kind in ("core", "scenario", "concurrent")}
    assert set(marked) == expected, "bench/ and the registry disagree on which families exist"
    assert all(len(files) == 1 for files in marked.values()), marked


SCENARIO_KINDS = ("scenario", "concurrent")


def test_every_scenario_and_concurrent_family_has_one_object_with_every_hook():
    """One object per family, registered once: its plan, sizes for each profile, preparation, simulated price,
    and its record's finding (declared, None where its section has the caption alone)."""
    from xferbench.measure.cases import PROFILES
    from xferbench.measure.families.registry import SCENARIO_FAMILIES

    declared = {op for op, f in FAMILIES.items() if f.kind in SCENARIO_KINDS}
    assert set(SCENARIO_FAMILIES) == declared
    for op, obj in SCENARIO_FAMILIES.items():
        assert obj.op == op and obj.record is FAMILIES[op]
        assert all(callable(hook) for hook in (obj.plan, obj.prepare, obj.price)), op
        assert all(obj.sizes[profile] for profile in PROFILES), op
        assert obj.finding is None or callable(obj.finding), op
        # Both halves in one folder: the record and finding in its __init__, the object in its run.py.
        assert obj.finding is None or obj.finding.__module__ == f"xferbench.families.{op}", op
        assert sys.modules[f"xferbench.families.{op}.run"].FAMILY is obj, op


def test_the_records_and_findings_load_without_torch_nor_the_measuring_side():
    """The analysis side reads every family's record and finding; none of that loads torch, measure/ or a
    family's run.py (import-linter checks the imports; this, what actually loads)."""
    code = ("import sys, xferbench.families, xferbench.analyze.report.page, xferbench.analyze.gate.compare; "
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('xferbench.measure') "
            "or m.endswith('.run')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")}).stdout
    assert out.strip() == "[]"


def test_a_report_loads_no_scipy(tmp_path):
    """scipy's import is a third of a second of CPU, more than a report's every comparison and fit: the report
    solves its quantiles and its soft-L1 fit itself (ratios.py, analyze/model.py), and loads none of it."""
    code = ("import sys; from xferbench.cli import main; "
            f"main(['report', {str(ROOT / 'tests' / 'data' / 'cpu-quick-sample.json')!r}, '-o', "
            f"{str(tmp_path / 'index.html')!r}]); print(sorted(m for m in sys.modules if m.startswith('scipy')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")}).stdout
    assert out.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("hook", ["plan", "prepare", "price"])
def test_a_family_object_without_a_hook_is_refused(hook):
    from xferbench.measure.families.base import ScenarioFamily
    from xferbench.measure.families.registry import SCENARIO_FAMILIES

    fields = {name: getattr(SCENARIO_FAMILIES["bidir"], name) for name in ("op", "sizes", "plan", "prepare", "price")}
    with pytest.raises(ValueError, match=f"scenario family 'bidir' lacks {hook}"):
        ScenarioFamily(**(fields | {hook: None}))
    with pytest.raises(ValueError, match=r"lacks sizes\['full'\]"):
        ScenarioFamily(**(fields | {"sizes": {"quick": (1,)}}))


def test_a_family_object_needs_a_scenario_or_concurrent_record():
    from xferbench.measure.families import registry

    toy = registry.SCENARIO_FAMILIES["bidir"]
    with pytest.raises(ValueError, match="two scenario families are named 'bidir'"):
        registry._registered((toy, toy))
    with pytest.raises(ValueError, match=r"'h2d' is a core family in xferbench\.families"):
        registry._registered((dataclasses.replace(toy, op="h2d"),))


def test_every_family_object_plans_prepares_and_prices_on_a_simulated_machine():
    """Each hook runs: the plan gives cases on three simulated GPUs (a ring needs three), the price gives calls on
    the simulated clock (forward says it cannot be priced, numa remote needs a second node)."""
    from xferbench.measure.families.concurrent import NotPlaceable
    from xferbench.measure.families.registry import SCENARIO_FAMILIES
    from xferbench.measure.simulate import SimBackend, load_spec
    from xferbench.measure.transfers import CannotRun

    backend = SimBackend(load_spec(ROOT / "examples" / "sim-4gpu-pcie4.toml"))
    for op, obj in SCENARIO_FAMILIES.items():
        planned = [c for c in obj.cases(["cpu", "cuda:0", "cuda:1", "cuda:2"], "quick") if not isinstance(c, Skipped)]
        assert planned and all(c.op == op for c in planned), op
        on_gpu = [c for c in planned if any(d.startswith("cuda:") for d in c.devices)]
        priced = 0
        for case in on_gpu:
            try:
                prepared = obj.prepared(case, backend, lambda: None)
            except (CannotRun, NotPlaceable):
                continue
            with backend.simulating():
                prepared.target()
            priced += 1
        assert priced or op == "forward", op


def test_a_finding_reads_its_family_rows_from_the_record():
    """The report's sentences under a scenario come from the record's finding, on a real-format sample."""
    from xferbench.analyze.report.findings import scenario_findings

    frame = load([ROOT / "tests" / "data" / "sim-2gpu.json"]).frame
    for op, record in FAMILIES.items():
        if record.kind in SCENARIO_KINDS and (frame["op"] == op).any():
            view = view_of_rows(frame)
            sentences = scenario_findings(view, op)
            rows = frame[frame["op"] == op].copy()
            rows.attrs |= {"ratio": view.ratio, "shuffled": view.shuffled}  # the report's rule, read by the family
            verdict = [v] if (v := drift_text.verdict(view, op)) is not None else []
            # a family without a finding of its own (cuda_vs_to: same code) still gets its same-code verdict
            assert sentences == ([] if record.finding is None else record.finding(rows)) + verdict, op
            assert bool(sentences) == (record.finding is not None or bool(verdict)), op


def test_two_records_of_one_op_are_refused():
    """A scenario named like a collective (copy_overlap, not overlap) would silently replace it."""
    with pytest.raises(ValueError, match="two families are named 'overlap'"):
        families.by_op((FAMILIES["overlap"], Family("overlap", "copy/compute", "t", "scenario", "k")))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"kind": "plugin"}, "kind must be one of core, scenario, concurrent, distributed"),
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
    pytester.makeconftest('pytest_plugins = ("xferbench.measure.session.plugin",)')
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
    # the plumbing, not this machine's load: a busy machine's rounds may read as waits (load.blocks), left out of fits
    steady = results.frame.assign(on_ticks=float("nan"), waited_off_ticks=False)
    assert list(fit_paths(steady)["path"]) == ["toy pageable clone cpu"], "and an alpha-beta fit"
    assert "toy pageable clone cpu" in build_html(results)


TOY_SCENARIO_BENCH = '''
import pytest

@pytest.mark.xfer("toy_stage")
def test_toy_stage(xfer_case, xfer):
    xfer(xfer_case)
'''


@pytest.mark.slow
def test_a_toy_scenario_family_needs_one_record_one_object_and_one_bench_file(pytester, monkeypatch, tmp_path):
    """A scenario family declared in a test (a record with its finding, an object with its hooks, a bench file;
    nothing else edited) is planned, priced on the simulated machine, loaded and reported with its sentence."""
    from xferbench.measure.families.base import Prepared, ScenarioFamily
    from xferbench.measure.families.registry import SCENARIO_FAMILIES
    from xferbench.measure.families.scenario import plan_on_gpus

    def refuse(case, sync):
        raise AssertionError("a simulated GPU case reached the real calls")

    def price(case, priced, sync):
        return Prepared(lambda: (priced.copy("h2d_pinned", case.size, case.dst, waits=False), sync()))

    record = Family("toy_stage", "Scenario: a toy staged copy", "a pinned copy, registered by a test", "scenario",
                    "tab:cyan", caption="The toy's caption.",
                    finding=lambda rows: [f"The toy moved {len(rows)} sizes."])
    monkeypatch.setitem(FAMILIES, "toy_stage", record)
    monkeypatch.setitem(SCENARIO_FAMILIES, "toy_stage", ScenarioFamily(
        "toy_stage", {"quick": (2**20, 2**22), "full": (2**20,)}, plan_on_gpus("toy_stage", ("pinned",), "bytes"),
        refuse, price))
    pytester.makeconftest('pytest_plugins = ("xferbench.measure.session.plugin",)')
    pytester.makepyfile(test_toy_stage=TOY_SCENARIO_BENCH)
    out = tmp_path / "toy.json"
    result = pytester.runpytest("--benchmark-only", f"--xfer-simulate={ROOT / 'examples' / 'sim-2gpu-pcie5-nvlink.toml'}",
                                "--xfer-devices=cpu,cuda:0", f"--benchmark-json={out}")
    result.assert_outcomes(passed=2)
    frame = load([out]).frame
    assert sorted(frame["nbytes"]) == [2**20, 2**22] and set(frame["clock"]) == {"simulated"}
    html = build_html(load([out]))
    assert "Scenario: a toy staged copy" in html and "The toy moved 2 sizes." in html


@pytest.mark.slow
def test_the_2gpu_quick_plan_is_the_recorded_one():
    """Every case the quick profile plans on the 2-GPU simulated spec, ids and order, is the recorded list
    (tests/data/README.md): a move of the families' code plans exactly what it planned before."""
    spec = importlib.util.spec_from_file_location("golden", ROOT / "tools" / "golden.py")
    golden = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(golden)
    assert golden.planned_ids() == golden.IDS.read_text(), (
        f"the planned cases differ from {golden.IDS.name}: when on purpose, run {golden.COMMAND}")


def test_a_familys_own_words_read_the_queued_work_the_run_recorded():
    """sync_stall's finding and its point of the "why" list (``Family.why``) say the work queued as its rows recorded it,
    never a fixed 2 ms; where the page reads several runs, the "why" sentence names their runs."""
    import pandas as pd

    rows = pd.DataFrame({"op": "sync_stall", "variant": ["item", "cpu", "nonblocking_event"], "run": "a", "src": "cuda:0",
                         "median_s": [5.2e-3, 5.4e-3, 1.2e-5], "queued_seconds": [5e-3, 5e-3, 5e-3], "nbytes": 4})
    record = FAMILIES["sync_stall"]
    # each call's median, none named the quickest (the H200's item 1.953 ms, cpu 1.971: a reading took "even the
    # quickest (item)" for a ranking) nor folded into a span (another found str's 2.3 ms hidden in 1.95-2.3 ms)
    assert record.finding(rows)[0] == ("With 5 ms of work queued, the synchronizing calls of 4 B on cuda:0 took: item 5.2 ms, "
                                       "cpu 5.4 ms.")
    # the first GPU speaks: a second GPU's calls are not listed beside its own (the simulated 2-GPU run's were)
    assert record.finding(pd.concat([rows, rows.assign(src="cuda:1")]))[0] == record.finding(rows)[0]
    # a larger payload's calls pay for their bytes too (the H200's 1 MiB tolist, 6.39 ms): the smallest speaks
    larger = pd.concat([rows, rows.assign(nbytes=2**20, median_s=[9e-3, 5.5e-3, 1.2e-5])])
    assert record.finding(larger)[0] == record.finding(rows)[0]
    assert record.finding(rows.drop(columns="queued_seconds"))[0].startswith("With GPU work queued,")
    key, wait = record.why
    # the "why" box gives the scenario's calls as the scenario does, each median, none named the quickest (a reading
    # found "the quickest synchronizing call took 1.95 ms" where item and cpu can't be told apart) nor folded into a
    # span; the smallest payload's on the first GPU
    assert (key, wait(larger, 1)) == ("wait", "with 5 ms of GPU work queued, the synchronizing calls of 4 B on cuda:0 "
                                              "took: item 5.2 ms, cpu 5.4 ms (scenario below).")
    # where the page reads two runs, the sentence names their runs
    assert wait(rows, 2).endswith("took: item 5.2 ms, cpu 5.4 ms (scenario below, a).")
    assert wait(rows.drop(columns="queued_seconds"), 1) is None
    with pytest.raises(ValueError, match="why names one of wait, staged, fixed, fix"):
        dataclasses.replace(record, why=("waiting", wait))


def test_the_forward_pass_sets_the_cpu_against_a_gpu_of_its_own_clock_only():
    """A simulated machine's GPU forward pass is the cost model's: beside the CPU's measured one it is no comparison, so
    the CPU's time is said alone; a GPU on the same clock is set against it with the rule's interval."""
    import pandas as pd

    from xferbench.ratios import Ratio

    rows = pd.DataFrame({"op": "forward", "variant": "forward", "dst": ["cpu", "cuda:0"], "nbytes": 4096,
                         "shape": "1", "size_unit": "batch", "median_s": [2e-3, 1e-4], "clock": [None, "simulated"]})
    rows.attrs["ratio"] = lambda a, b: Ratio(a["median_s"] / b["median_s"], 15.0, 25.0, "rounds", 10)
    finding = FAMILIES["forward"].finding
    assert finding(rows) == ["A forward pass took, on a batch of 1, 2 ms on the CPU."]
    assert finding(rows.assign(clock=None)) == ["A forward pass took, on a batch of 1, 2 ms on the CPU against 100 µs on "
                                                "cuda:0: "
                                                "the CPU took 20× (15-25) as long."]
