"""The computed view of a run (analyze/view.py): each fact derived once per page, read by every part of the report,
and the machine instances behind the rows."""

import csv
import inspect
import io
import json
import re
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from xferbench.analyze import model
from xferbench.analyze.load.results import load
from xferbench.analyze.report import break_even, distributed, export, findings, other_tools, page, plots
from xferbench.analyze.report.page import write_report
from xferbench.analyze.report.story import Story
from xferbench.analyze.view import Instance, RunView
from xferbench.contract import Fingerprint

from fakes import view_of_rows

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
GOLDEN = DATA / "golden"
H200 = [ROOT / "reports" / "samples" / "h200" / "full.json.gz", ROOT / "reports" / "samples" / "h200" / "quick-scenarios.json"]
SAMPLE = DATA / "cpu-sample.json"

#: The derivations each page must make once: the machine's fingerprint, the fits, the largest common size.
COUNTED = {"fit_paths": model.fit_paths, "largest_common_size": model.largest_common_size}


def _counting(monkeypatch):
    """How often each counted derivation runs, wherever a module of the package calls it from."""
    seen = dict.fromkeys([*COUNTED, "Fingerprint.of"], 0)

    def counting(name, real):
        def call(*args, **kwargs):
            seen[name] += 1
            return real(*args, **kwargs)
        return call

    for module in [m for name, m in sys.modules.items() if name.startswith("xferbench.") and m is not None]:
        for name, real in COUNTED.items():
            if getattr(module, name, None) is real:
                monkeypatch.setattr(module, name, counting(name, real))
    real_of = Fingerprint.of.__func__
    monkeypatch.setattr(Fingerprint, "of", classmethod(counting("Fingerprint.of", real_of)))
    return seen


@pytest.fixture(scope="module")
def h200():
    return load(H200)


@pytest.fixture(scope="module")
def h200_written(h200, tmp_path_factory):
    """The H200 sample's page, written as ``xferbench report`` writes it, and how often each fact was derived."""
    monkeypatch = pytest.MonkeyPatch()
    try:
        seen = _counting(monkeypatch)
        out = write_report(h200, tmp_path_factory.mktemp("h200") / "index.html")
    finally:
        monkeypatch.undo()
    return out, seen


def test_each_fact_is_derived_once_per_page(h200_written):
    """Before the view, one page of the H200 sample read the fingerprint 250 times, fitted the paths twice and chose
    the largest common size 10 times, each caller its own way."""
    _, seen = h200_written
    assert seen == {"fit_paths": 1, "largest_common_size": 1, "Fingerprint.of": 1}


def test_the_cpu_page_derives_each_fact_once(monkeypatch, tmp_path):
    results = load([SAMPLE])  # loading checks each file's fingerprint: not the page's
    counts = _counting(monkeypatch)
    write_report(results, tmp_path / "index.html")
    assert counts == {"fit_paths": 1, "largest_common_size": 1, "Fingerprint.of": 1}


#: The report's parts that state the run's facts: every public function of theirs reads the view.
READERS = (findings, plots, export, page)


def _public_functions():
    for module in READERS:
        for name, function in inspect.getmembers(module, inspect.isfunction):
            if function.__module__ == module.__name__ and not name.startswith("_"):
                yield f"{module.__name__}.{name}", function
    yield "distributed.section", distributed.section
    yield "other_tools.comparisons", other_tools.comparisons


def test_findings_figures_and_exports_take_the_view_never_rows_nor_machine_info():
    offenders = [name for name, function in _public_functions()
                 for parameter in inspect.signature(function).parameters.values()
                 if parameter.name == "machine_info" or "DataFrame" in str(parameter.annotation)]
    assert offenders == []
    named = [draw for draw in plots._drawings(None).values() if hasattr(draw, "__name__")]  # not partials
    assert all("RunView" in str(next(iter(inspect.signature(f).parameters.values())).annotation)
               for f in (*findings.FINDINGS, *named, findings.findings, plots.render, export.to_csv))
    # the Markdown and the page's scenario sections read the story, which is told from the view
    assert [str(next(iter(inspect.signature(f).parameters.values())).annotation)
            for f in (export.to_markdown, page.scenario_sections)] == ["Story", "Story"]
    assert "RunView" in str(inspect.signature(Story.of).parameters["view"].annotation)


# -- Unchanged by the move but for the instance labelling (golden files from before it) --------------------------

def _markdown_lines(text: str) -> list[str]:
    """The Markdown without the line naming its sources nor its mark (paths differ between a checkout and the golden
    run, and the mark holds the hash of the text with them)."""
    return [line for line in text.splitlines() if not re.match(r"\d+ benchmarks( \(\d+ cases\))? from ", line)
            and "<!-- written by xferbench" not in line]


def test_h200_markdown_is_the_one_before_the_view_but_for_its_instances(h200_written):
    out, _ = h200_written
    lines = _markdown_lines(out.with_suffix(".md").read_text())
    instances = [line for line in lines if line.startswith("- Machine instances:")]
    assert instances == ["- Machine instances: full.json (2026-11-30T17:18, 512 benchmarks); quick-scenarios "
                         "(2026-11-30T17:45, 50 benchmarks): none recorded a boot id, so each run counts as an "
                         "instance of its own; their GPU, driver, torch and CPU match (else they could not share a "
                         "page), and nothing they recorded tells them apart; 42 cases measured in more than one are read "
                         "from the run with more rounds (ties: the newest). Figures of different instances are never "
                         "divided by one another."]
    at = lines.index(instances[0])  # a line of "How this run was judged"
    assert lines[:at] + lines[at + 1:] == _markdown_lines((GOLDEN / "h200.md").read_text())


def test_cpu_markdown_and_csv_are_the_ones_before_the_view(tmp_path):
    out = write_report(load([SAMPLE]), tmp_path / "index.html")
    assert _markdown_lines(out.with_suffix(".md").read_text()) == _markdown_lines((GOLDEN / "cpu-sample.md").read_text())
    rows = list(csv.reader(io.StringIO(out.with_suffix(".csv").read_text())))
    assert rows[0][:2] == ["run", "instance"] and {row[1] for row in rows[1:]} == {"1"}
    assert [row[:1] + row[2:] for row in rows] == list(csv.reader(io.StringIO((GOLDEN / "cpu-sample.csv").read_text())))


# -- Machine instances ------------------------------------------------------------------------------------------

def _with_boot(tmp_path: Path, name: str, boot: object, minutes: int) -> Path:
    data = json.loads(SAMPLE.read_text())
    data["datetime"] = f"2026-11-30T10:{minutes:02d}:00+00:00"
    if boot is not ...:
        data["xferbench_run"] = {"boot_id": boot, "started": data["datetime"], "load": {}}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return path


def test_runs_of_one_boot_are_one_instance_and_a_run_without_a_boot_id_its_own(tmp_path):
    runs = [_with_boot(tmp_path, "a", "5e1f-boot", 1), _with_boot(tmp_path, "b", "5e1f-boot", 2),
            _with_boot(tmp_path, "c", ..., 3), _with_boot(tmp_path, "d", "77aa-other", 4)]
    view = RunView.of(load(runs))
    assert view.instances == (Instance(1, "5e1f-boot", ("a", "b")), Instance(2, None, ("c",)),
                              Instance(3, "77aa-other", ("d",)))
    assert [i.label for i in view.instances] == ["instance 1 (a, b; boot 5e1f-boo)", "instance 2 (c; no boot id recorded)",
                                                 "instance 3 (d; boot 77aa-oth)"]
    # One case reads one row: with as many rounds in every file, the newest's, so every row here is d's.
    assert {view.instance_of(row) for _, row in view.rows.iterrows()} == {view.instances[2]}


@pytest.mark.parametrize("boot", [None, "", "  ", 17, ["x"]])
def test_a_boot_id_not_recorded_as_text_is_none(tmp_path, boot):
    view = RunView.of(load([_with_boot(tmp_path, "a", boot, 1), _with_boot(tmp_path, "b", boot, 2)]))
    assert [i.boot_id for i in view.instances] == [None, None] and len(view.instances) == 2


def test_one_file_is_one_instance_and_the_page_says_nothing_of_instances(tmp_path):
    view = RunView.of(load([SAMPLE]))
    assert view.instances == (Instance(1, None, ("cpu-sample",)),) and not view.several_instances
    assert "Machine instances" not in export.to_markdown(Story.of(view))


def test_a_break_even_spans_the_pins_middle_half_where_it_moves_the_count(h200):
    """The H200's 16 MiB pin took 8.13-8.5 ms in its middle half: 7 copies at both ends, so only the copies' interval
    is said. Hand-fed quartiles of 6 and 9 ms over its 1.29 ms saving give copies 5-7, said beside it."""
    view = RunView.of(h200)
    even = next(e for e in view.break_even if int(e.pin["nbytes"]) == 16 * 2**20)
    assert break_even._between(even) == ("5-10", "")
    spread = replace(even, pin=even.pin.copy())
    spread.pin["q1_s"], spread.pin["q3_s"] = 6e-3, 9e-3
    assert break_even._between(spread) == ("5-10", "5-7")
    assert break_even._verdict(spread)[0] == ("from copy 7 (copies 5-10 by its interval, 5-7 by the pin's middle half; "
                                              "pinning = 6.46× one copy's saving)")
    assert break_even._verdict(spread)[2] == "5-10; 5-7 by the pin's middle half"
    spread.pin["q1_s"] = 1e-3  # a quarter of its pins paid back at the first copy
    assert break_even._between(spread) == ("5-10", "1-7")
    spread.pin["q1_s"] = float("nan")  # a quartile not recorded spans nothing
    assert break_even._between(spread) == ("5-10", "")
    assert break_even._between(replace(even, pin=even.pin.drop(["q1_s", "q3_s"]))) == ("5-10", "")


def test_a_break_even_line_names_each_gpu_where_there_are_several():
    """The simulated 2-GPU run prices 1 and 64 MiB on each GPU: the line said "1 MiB from copy 6; 1 MiB from copy 6"."""
    view = RunView.of(load([Path(__file__).parent / "data" / "sim-2gpu.json"]))
    table = break_even.break_even_table(view, break_even.pinning_break_even(view))
    assert table is not None and table["summary"] == ("Break-even of pinning: 1 MiB on cuda:0 from copy 6; "
                                                      "1 MiB on cuda:1 from copy 6; 64 MiB on cuda:0 from copy 7; 64 MiB "
                                                      "on cuda:1 from copy 7")


def test_the_device_matrix_takes_no_rate_the_bytes_do_not_set(monkeypatch):
    """The simulated run's host copy_ took 6.09 ms at 64 MiB and 12 ms at 1 MiB: its growth was judged (a wait, ‡) by
    the cost model's drift, which no longer judges real rows, so the cpu → cpu cell gives its 11 GB/s. Where a rate is
    a wait (here said so of copy_), the cell is the best bandwidth left, clone's 1.63 GB/s, not the "no bandwidth" 11."""
    view = RunView.of(load([Path(__file__).parent / "data" / "sim-2gpu.json"]))
    assert "cpu → cpu: best 11.02 GB/s at 64 MiB" in plots.to_svg(plots.device_matrix(view))
    monkeypatch.setattr(RunView, "waiting", lambda self, rows: rows["op"].eq("host") & rows["method"].eq("copy_"))
    svg = plots.to_svg(plots.device_matrix(view))
    assert "cpu → cpu: best 1.632 GB/s at 64 MiB" in svg and "best 11.02" not in svg


def test_tied_betas_that_round_alike_are_one_figure():
    """The simulated run's 16 pinned host-side paths fit β within 55 GB/s: "lie 55-55 GB/s" read as a typo, "lie 55" too."""
    said = findings.latency_bound(RunView.of(load([Path(__file__).parent / "data" / "sim-2gpu.json"])))
    assert said is not None and "16 paths' β are all 55 GB/s and their times at 64 MiB are the same" in said.evidence


def test_the_break_even_never_divides_a_pin_by_a_copy_of_another_boot(h200):
    """The merged H200 sample reads every pin_cold row and the copies from the full run (more rounds than
    quick-scenarios'): 64 MiB pays off from copy 6, as the full run alone says. A pin whose copy was measured in
    another boot only is "can't tell" (hand-fed: the 64 MiB pin moved to the other run)."""
    view = RunView.of(h200)
    rows = {row["size"]: row for row in break_even.pinning_break_even(view)}
    assert rows[64 * 2**20]["verdict"] == "from copy 6 (copies 5-8 by its interval; pinning = 5.56× one copy's saving)"
    assert {row["run"] for row in rows.values()} == {"full.json"}
    frame = h200.frame
    pin = (frame["op"] == "pin_memory") & (frame["variant"] == "pin_cold") & (frame["nbytes"] == 64 * 2**20)
    quick = frame[pin].assign(run="quick-scenarios")
    other = RunView(replace(h200, frame=pd.concat([frame[~pin], quick], ignore_index=True)))
    found = {row["size"]: row for row in break_even.pinning_break_even(other)}[64 * 2**20]
    assert found["copies"] is None and found["verdict"] == (
        "can't tell: the pageable copy at 64 MiB was measured in another machine instance (another boot) than the pin's, "
        "instance 2 (quick-scenarios; no boot id recorded)")  # the pin's own instance, named


def test_a_view_of_rows_alone_has_one_instance_per_run():
    frame = pd.DataFrame({"run": ["x", "x", "y"]})
    assert [i.runs for i in view_of_rows(frame).instances] == [("x",), ("y",)]


def test_a_scenario_section_reads_one_instance_and_says_which(h200):
    """cuda_vs_to was measured in both H200 files (two boots); every case reads the full run's instance (more rounds),
    so the section reads that run alone. Hand-fed a family read from two runs, it reads the run that measured most of
    it and says which."""
    view = RunView.of(h200)
    said = findings.scenario_findings(view, "cuda_vs_to")
    assert not any(s.startswith("These sentences read") for s in said)
    frame = h200.frame
    moved = frame["op"].eq("cuda_vs_to") & frame["nbytes"].eq(2**20) & frame["variant"].eq("cuda")
    split = RunView(replace(h200, frame=frame.assign(run=frame["run"].where(~moved, "quick-scenarios"))))
    said = findings.scenario_findings(split, "cuda_vs_to")
    assert said[-1].startswith("These sentences read instance 1 (full.json; no boot id recorded); 1 case of "
                               "this family measured in another machine instance")


def test_the_page_names_each_instance_and_the_instance_of_every_row(h200_written, tmp_path):
    html = h200_written[0].read_text()
    assert '<p class="small" id="instances">Machine instances: full.json (2026-11-30T17:18, 512 benchmarks)' in html
    table = html.split('id="results-table"')[1].split("</table>")[0]
    assert table.count("<th>instance</th>") == 1 and table.count("<tr><td class=\"n\">2</td>") == 8
    single = write_report(load([SAMPLE]), tmp_path / "index.html").read_text()
    assert 'id="instances"' not in single and "<th>instance</th>" not in single
