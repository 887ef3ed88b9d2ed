"""The key findings printed at the end of a benchmark run (measure/session/summary.py), through pytester."""

import json
from pathlib import Path

import pytest
import torch  # noqa: F401  loaded before pytester's in-process runs, which unload what they import

import xferbench.analyze.report.findings  # noqa: F401  (pandas, scipy: the same; they cannot load twice in a process)
from xferbench.measure.session.summary import summary_lines

from fakes import CPU_ONLY_CONFTEST, HOST_BENCH

SAMPLE = Path(__file__).parent / "data" / "cpu-host-sweep.json"



@pytest.fixture
def host_suite(pytester):
    pytester.makeconftest(CPU_ONLY_CONFTEST)
    pytester.makepyfile(test_host=HOST_BENCH)
    return pytester


def _run(suite, *args):
    result = suite.runpytest("--benchmark-only", "--xfer-sizes=4B,1KiB,64KiB", "--benchmark-max-time=0.001",
                             "--benchmark-min-rounds=3", *args)
    assert result.ret == 0
    return result.outlines


#: How a CPU run's headlines begin (report/findings.py: a run without a GPU leads with its host side).
HOST_HEADLINES = ("- A fresh ", "- Host memory copies ", "- A ", "- Called back to back, ", "- No line of ",
                  "- Fastest path ", "- No bandwidth β is stated")


def test_findings_and_the_report_command_come_last(host_suite, tmp_path):
    out = tmp_path / "run.json"
    lines = _run(host_suite, f"--benchmark-json={out}")
    start = next(i for i, line in enumerate(lines) if "xferbench: key findings" in line)
    assert any("benchmark" in line and "tests" in line for line in lines[:start])  # pytest-benchmark's table first
    # the headlines only, the host side first; which comes first depends on what the run could tell
    findings = [line for line in lines[start + 1:] if line.startswith("- ")]
    assert findings and all(line.startswith(HOST_HEADLINES) for line in findings)
    assert all(len(line.split()) <= 51 for line in findings)  # a headline: at most 50 words
    assert f"Report: xferbench report {out} -o {out.with_suffix('.html')}" in "\n".join(lines[start:])


def test_under_xferbench_run_the_report_command_names_its_output(host_suite, tmp_path, monkeypatch):
    """``xferbench run -o runs/a.json`` has pytest write a private file it then moves to -o: the line names -o."""
    monkeypatch.setenv("XFERBENCH_RUN_OUTPUT", str(tmp_path / "runs" / "a.json"))
    lines = _run(host_suite, f"--benchmark-json={tmp_path / 'private.json'}")
    said = [line for line in lines if line.startswith("Report: ")]
    assert said == [f"Report: xferbench report {tmp_path / 'runs' / 'a.json'} -o {tmp_path / 'runs' / 'a.html'}   "
                    f"(writes {tmp_path / 'runs' / 'a.html'}, .csv and .md)"]


def test_without_a_saved_json_it_still_summarizes(host_suite):
    lines = _run(host_suite)
    text = "\n".join(lines)
    assert "xferbench: key findings" in text and "- Host memory copies " in text
    assert "pass --benchmark-json=FILE (or --benchmark-autosave) to keep these results" in text


def test_summary_says_when_the_machine_is_simulated():
    data = json.loads(SAMPLE.read_text())
    assert not summary_lines(data)[0].startswith("SIMULATED")
    data["machine_info"]["xferbench"]["simulated"] = True
    lines = summary_lines(data)
    assert lines[0].startswith("SIMULATED machine") and lines[1].startswith("- Host memory copies reach ")


def test_the_summary_reads_the_document_in_memory(monkeypatch, tmp_path):
    """Nothing written, nothing parsed: no temporary file to fill a full disk, no second parse of the run."""
    import tempfile

    from xferbench.analyze.load import results

    def refuse(*args, **kwargs):
        raise AssertionError("the in-memory document was written or parsed again")

    monkeypatch.setattr(results, "_read", refuse)
    monkeypatch.setattr(tempfile, "TemporaryDirectory", refuse)
    data = json.loads(SAMPLE.read_text())
    lines = summary_lines(data)
    assert lines[0].startswith("- Host memory copies reach ")  # the host side first; no first touch it can tell
    assert data == json.loads(SAMPLE.read_text())  # the caller's document is left as it was


def test_the_summary_leads_with_what_to_change_as_the_page_does():
    """The H200 sample: the three changes the page's first screen lists, each with its gain and its code before and
    after, then the break-even line a listed pinned source cites, then the key findings."""
    import gzip

    data = json.loads(gzip.decompress((Path(__file__).parents[1] / "reports" / "samples" / "h200" / "full.json.gz")
                                      .read_bytes()))
    lines = summary_lines(data)
    assert lines[:2] == ["What to change here:", "1. Copy results into a reused pinned buffer: saves 176 ms a call "
                         "(181 ms → 4.94 ms at 256 MiB: 36.7× (28.1-47.9) faster)"]
    assert lines[2].startswith("   y = x.cpu() → y.copy_(x, non_blocking=True); torch.cuda.synchronize() (")
    assert [line[:3] for line in lines[1:7:2]] == ["1. ", "2. ", "3. "] and lines[7] == "Key findings:"
    assert lines[8].startswith("- .cpu() / .to(device) of 256 MiB took ")
    # without the two scenarios that save more, change 2 pins a source and cites the break-even table: its line, as
    # the page folds it
    data["benchmarks"] = [b for b in data["benchmarks"] if b["extra_info"]["op"] not in ("placement", "copy_kind")]
    lines = summary_lines(data)
    assert lines[3].startswith("2. Pin a tensor you move more than once: ")
    assert lines[7] == ("Break-even of pinning: 64 KiB can't tell; 1 MiB from copy 97 (67-149) where a pin locks "
                        "fresh pages (13 of its 30 rounds did); 16 MiB from copy 7 (5-10); 64 MiB from copy 6 (5-8); 256 MiB "
                        "from copy 5 (4-7).")


def test_the_summary_says_a_busy_machine_first_and_how_many_findings_it_left_to_the_report():
    """The quick CPU sample ran at load 10.79 on 2 CPUs: its summary opens with the page's busy notice. The H200
    sample has 9 findings: 5 are printed, and the summary says 4 more are in the report."""
    import gzip

    busy = summary_lines(json.loads((Path(__file__).parent / "data" / "cpu-quick-sample.json").read_text()))
    assert busy[0].startswith("Busy machine: this run recorded load 10.79 on 2 CPUs")
    h200 = summary_lines(json.loads(gzip.decompress((Path(__file__).parents[1] / "reports" / "samples" / "h200"
                                                     / "full.json.gz").read_bytes())))
    assert not h200[0].startswith("Busy") and h200[-1] == "(4 more in the report)"
    assert sum(line.startswith("- ") for line in h200) == 5
