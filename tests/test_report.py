import json
import re
from pathlib import Path

import pytest

from xferbench import output
from xferbench.analyze.load.results import load
from xferbench.analyze.report.findings import findings
from xferbench.analyze.report.page import write_report
from xferbench.analyze.view import RunView

from fakes import build_html, view_of_rows

SAMPLE = Path(__file__).parent / "data" / "cpu-sample.json"


@pytest.fixture(scope="module")
def results():
    return load([SAMPLE])


@pytest.fixture(scope="module")
def html(results):
    return build_html(results)


class TestGoldenCpuSample:
    def test_findings_sentences(self, results):
        """Findings are sentences computed from the sample's own numbers."""
        said = findings(RunView.of(results))
        assert said == [  # a run without a GPU leads with its host side; it has no drift evidence, so ranks no path
            "Host memory copies (torch's copy_, thread count not recorded) reached 26.4 GB/s at 16 MiB; xferbench recorded "
            "no cache size, so whether 16 MiB ran from a cache is not known.",
            "Called back to back, which host-side path has the highest β can't be told "
            "(2 paths' β lie 14.8-25.6 GB/s and the run cannot judge their times at 16 MiB; every round of host pageable "
            "clone cpu took longer than every round of host pageable copy_ cpu (quickest 896 µs against slowest 804 µs), "
            "one case measured after the other: an order the run's drift could give too); one of them (host pageable "
            "copy_ cpu) has a fixed cost α = 1.03 µs and a bandwidth β = 25.6 GB/s; where moves reach half of β, this "
            "run cannot place: the fit puts half of β at 25.7 KiB, between 1 KiB and 1 MiB, the nearest sizes it kept, "
            "1,024× apart (xferbench recorded no cache size: whether 16 MiB ran from a cache is not known).",
            "A no-op on a tensor already on cpu costs per call: .cpu() 246-261 ns, .to(torch.device('cpu')) 358-743 ns "
            "(the lowest and the highest median over the sizes measured, 4 B and 16 MiB; whether .to(torch.device('cpu')) "
            "at 4 B against 16 MiB (rounds of 1,443 calls against 10,000) costs more, can't tell (the run repeated no "
            "case to measure its drift); noop .cpu() on cpu at 4 B, which ran between them, stepped 2.15× as it ran: the "
            "machine alone could part them; the string form, .to('cpu'), was not measured); the cheapest real copy measured "
            "(host pageable copy_ cpu, 4 B) took 1,042 ns. A no-op returns the same object and copies nothing.",
        ]
        assert [f.headline for f in said] == [
            "Host memory copies reach 26.4 GB/s at 16 MiB (xferbench recorded no cache size).",
            # the sentence says its β ties with clone's at 16 MiB: the headline does not crown it
            "Called back to back, the 2 host-side paths whose β the run cannot rank have fixed costs α = 1.03-1.28 µs "
            "and β = 14.8-25.6 GB/s (xferbench recorded no cache size: whether 16 MiB ran from a cache is not known).",
            # the span holds one the run cannot judge, and a case that ran between its ends stepped in time as far: the
            # headline says so, not only its evidence
            "A no-op move of a tensor already on cpu costs 246-743 ns a call (a spread the machine's step in time could "
            "give): it returns the same object."]

    def test_model_table_rows(self, html):
        """The model table has one row per moving path (2 host, 6 distributed) with its fitted α and β."""
        table = html.split('id="model-table"')[1].split("</table>")[0]
        assert ('<td>host pageable copy_ cpu</td><td class="n">4</td><td class="n">1.03 µs</td><td class="n">25.6</td>'
                in table)
        assert table.count("<tr>") == 9  # header + 8 paths
        assert '<td>send_recv gloo x2</td><td class="n">4</td><td class="n">87.9 µs</td><td class="n">2.79</td>' in table

    def test_results_table_has_every_benchmark(self, html):
        assert html.split('id="results-table"')[1].split("</table>")[0].count("<tr>") == 59

    def test_cpu_only_notice_and_no_gpu_only_figure_or_column(self, html):
        """A CPU-only page says no GPU was measured once, and shows no GPU-only figure (the source-destination matrix,
        wall against device time) nor column (device time; a roof, which no CPU run knows), not even as a gap."""
        assert 'id="no-gpu"' in html
        assert re.findall(r'data-missing="(\w+)"', html) == []
        assert "device time" not in html.split('id="results"')[1] and "share of roof" not in html
        assert "(family), shortest first" in html
        assert set(re.findall(r'data-plot="([\w-]+)"', html)) == {"bandwidth-host", "ladder", "cost", "create", "noop",
                                                               "module_to", "forward", "placement", "distributed"}

    def test_scenario_sections(self, html):
        """Each scenario run on the CPU has its section, caption and computed sentence."""
        assert re.findall(r'id="section-(\w+)"', html) == ["module_to", "forward", "placement", "distributed"]
        assert ("With 2 ranks on gloo, a 4 B message took 85.4 µs to 87.6 µs one way across its 2 point-to-point cases "
                "(medians of 20+ rounds each). all_reduce of 16 MiB reached 1.04 GB/s") in html
        assert "A second .to(&#39;cpu&#39;) of a module already there took" in html  # the page escapes a quote
        assert "Converting 64 images to normalized float32 on the CPU took" in html

    def test_self_contained(self, html):
        """No external scripts, styles, fonts or images: everything is inline."""
        assert "<script" not in html
        assert not re.search(r'(src|href)="(?!data:|#)', html)  # in-page references (SVG markers) only
        assert "@import" not in html and not re.search(r"url\((?!#)", html)


def test_a_no_op_is_given_per_size_never_a_mean_no_case_measured(results):
    """.to(torch.device('cpu')) on a CPU tensor took 742.8 ns at 4 B and 357.9 ns at 16 MiB, 2.1x apart: the finding
    gives both ends, not their mean (550 ns, which no case measured)."""
    raw = json.loads(SAMPLE.read_text())["benchmarks"]
    medians = sorted(b["stats"]["median"] * 1e9 for b in raw
                     if b["extra_info"].get("op") == "noop" and b["extra_info"].get("method") == "to")
    assert [f"{m:.0f}" for m in medians] == ["358", "743"]
    sentence = next(s for s in findings(RunView.of(results)) if s.startswith("A no-op"))
    assert f".to(torch.device('cpu')) {medians[0]:.0f}-{medians[-1]:.0f} ns" in sentence
    assert "550 ns" not in sentence


def test_machine_strings_are_escaped(tmp_path):
    """A <script> in a machine name from a JSON file is shown as text, never run."""
    data = json.loads(SAMPLE.read_text())
    data["machine_info"]["cpu"]["brand_raw"] = "<script>alert(1)</script>"
    data["benchmarks"][0]["extra_info"]["src"] = "<img src=x onerror=alert(2)>"
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(data))
    html = build_html(load([path]))
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img src=x" not in html


class TestAtomicWrite:
    def test_writes_and_replaces(self, tmp_path, results):
        out = tmp_path / "sub" / "index.html"
        write_report(results, out)
        assert out.read_text().startswith("<!DOCTYPE html>")
        assert sorted(p.name for p in out.parent.iterdir()) == ["index.csv", "index.html", "index.md"]

    def test_failed_build_keeps_the_old_report(self, tmp_path, results, monkeypatch):
        """If writing fails part-way, the previous report is untouched and no temp file is left."""
        out = tmp_path / "index.html"
        out.write_text("old report")

        class Boom:
            def write(self, text):
                raise OSError("disk full")

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

        monkeypatch.setattr(output.os, "fdopen", lambda fd, *a, **k: (output.os.close(fd), Boom())[1])
        with pytest.raises(OSError, match="disk full"):
            write_report(results, out)
        assert out.read_text() == "old report"
        assert [p.name for p in tmp_path.iterdir()] == ["index.html"]


def test_analysis_side_needs_no_torch():
    """report, compare, history and the CLI load without importing torch (DESIGN: any laptop)."""
    import subprocess
    import sys

    code = ("import sys, xferbench.analyze.report.page, xferbench.analyze.gate.compare, xferbench.analyze.load.history, "
            "xferbench.cli, xferbench.measure.session.plugin; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_the_machine_section_says_where_the_host_buffers_sat(html):
    """h2d / d2h rows that recorded their placement get one line in the machine table; a run without it none."""
    import pandas as pd

    from xferbench.analyze.report.story import _host_placement

    rows = pd.DataFrame({"op": ["h2d", "d2h", "d2h", "h2d", "h2d", "host"],
                         "src": ["cpu", "cuda:0", "cuda:4", "cpu", "cpu", "cpu"],
                         "dst": ["cuda:0", "cpu", "cpu", "cuda:1", "cuda:0", "cpu"],
                         "host_placement": ["gpu_node", "gpu_node", "gpu_node", "unbound", "spilled", None],
                         "host_numa_node": [0, None, 1, None, 0, None]})
    assert _host_placement(view_of_rows(rows)) == [(
        "h2d / d2h host buffers", "on each GPU's NUMA node, as nvbandwidth places them (cuda:0: node 0; cuda:4: node 1); "
        "1 case where the GPU's node was unknown or off limits ran where the process did; 1 case spilled: a page "
        "of the buffer sat off the GPU's node (that node full)")]
    assert _host_placement(view_of_rows(rows.drop(columns="host_placement"))) == []
    assert "h2d / d2h host buffers" not in html  # the CPU sample recorded none
