"""What a GPU performance engineer reading the H200 sample's report (and a busy CPU run's) checks against the JSON:
no β below what a path measured stated as its ceiling, no ranking inside the run's drift floor, the machine named on
the first screen, the cliff held against glibc's mmap threshold, both directions at once given as a figure, the two
directions' staging told apart only as far as the data go, hovers that say what the caption says, and a busy CPU
run's thread finding, noise verdict and load warning. Each sentence is read back from the page the report writes.

``tests/data/cpu-threads-sample.json`` is a real run of the host family on a 2-core VM shared with other jobs
(tests/data/README.md).
"""

import gzip
import json
import re
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from xferbench.analyze.load.results import load
from xferbench.analyze.report.cliff import mmap_clause
from xferbench.analyze.report.findings import findings, scenario_findings, why_measured
from xferbench.analyze.report.page import write_report
from xferbench.analyze.report.plots import cost_at_size
from xferbench.analyze.view import RunView

ROOT = Path(__file__).resolve().parents[1]
H200 = [ROOT / "reports" / "samples" / "h200" / "full.json.gz", ROOT / "reports" / "samples" / "h200" / "quick-scenarios.json"]
THREADS = ROOT / "tests" / "data" / "cpu-threads-sample.json"
MiB = 2**20


def _median(nbytes: int, **match: object) -> float:
    """One case's median per call, read straight from the H200 JSON (full run)."""
    data = json.loads(gzip.decompress(H200[0].read_bytes()))
    found = [b["stats"]["median"] for b in data["benchmarks"] if b["extra_info"].get("nbytes") == nbytes
             and all(b["extra_info"].get(k) == v for k, v in match.items())]
    assert len(found) == 1, match
    return found[0]


@pytest.fixture(scope="module")
def h200():
    return RunView.of(load(H200))


@pytest.fixture(scope="module")
def page(h200, tmp_path_factory):
    out = write_report(h200, tmp_path_factory.mktemp("h200") / "index.html")
    return out.read_text(), out.with_suffix(".md").read_text()


@pytest.fixture(scope="module")
def busy(tmp_path_factory):
    view = RunView.of(load([THREADS]))
    out = write_report(view, tmp_path_factory.mktemp("cpu") / "index.html")
    return view, out.read_text(), out.with_suffix(".md").read_text()


def test_a_beta_below_what_the_mid_sizes_ran_is_no_ceiling(page):
    """Pageable non-blocking copy_ h2d: β 8.02 GB/s (1 GiB) where 16 MiB ran at 14.3 GB/s: no ceiling, no half of β."""
    assert round(16 * MiB / _median(16 * MiB, op="h2d", method="copy_", host_memory="pageable", non_blocking=True)
                 / 1e9, 1) == 14.3
    (row,) = [line for line in page[1].splitlines() if line.startswith("| h2d pageable non-blocking copy_ cpu->cuda:0 |")]
    assert "the large sizes fall below the mid sizes: 16 MiB reached 14.3 GB/s, so β is no ceiling and no half of β" in row
    html_row = re.search(r"<tr><td>h2d pageable non-blocking copy_ cpu-&gt;cuda:0</td>(.*?)</tr>", page[0]).group(1)
    assert re.findall(r'<td class="n">(.*?)</td>', html_row)[3] == "–"  # half of β at (sync loop)
    pinned = re.search(r"<tr><td>h2d pinned copy_ cpu-&gt;cuda:0</td>(.*?)</tr>", page[0]).group(1)
    assert re.findall(r'<td class="n">(.*?)</td>', pinned)[3] == "608 KiB"  # a fit that holds keeps its half


def test_no_ranking_inside_the_drift_floor(h200, page):
    """The six pageable h2d calls at 256 MiB span 30.6-35.9 ms (18%, can't be told apart): a span, never "6.3×"."""
    times = [_median(256 * MiB, op="h2d", method=m, host_memory="pageable", non_blocking=nb)
             for m in ("to", "cuda", "copy_") for nb in (False, True)]
    assert round(max(times) / min(times) - 1, 2) == 0.18
    said = " ".join(findings(h200))
    assert ("pinned sources reached 54.5-55.1 GB/s, pageable ones 7.47-8.78 GB/s (pageable took 6.2-7.38× (4.77-9.75) "
            "as long; the run cannot tell each kind's fastest calls apart, so each figure spans them)") in said
    glance = page[0].split('id="glance-table"')[1].split("</table>")[0]
    assert "(fastest call)" not in glance
    assert "host to device, pageable (6 calls; fastest: can&#39;t tell)" in glance
    figure = cost_at_size(h200)
    labels = [label.get_text() for label in figure.axes[0].get_yticklabels()]
    plt.close(figure)
    assert labels[:3] == ["d2d cuda:0  (2 calls; fastest: can't tell)",
                          "h2d pinned cpu->cuda:0  (3 calls; fastest: can't tell)",
                          "≈ h2d pinned non-blocking cpu->cuda:0  (3 calls; fastest: can't tell)"]
    assert "d2h pageable cuda:0->cpu  (copy_)" in labels  # 17.8 ms: told apart from the 5.68 ms above it


def test_the_first_screen_names_the_machine(page):
    html, markdown = page
    line = ("Machine: NVIDIA H200, PCIe Gen5 x16 (cuda:0) · driver 580.159.04, CUDA 13.0 · torch 2.11.0+cu130 · CPU "
            "Intel(R) Xeon(R) Processor, 16 logical CPUs.")
    assert html.index('id="machine-line"') < html.index('id="glance"') and line in html
    assert line in markdown.split("## Key findings")[0]


def test_the_cliff_is_held_against_glibcs_mmap_threshold(h200):
    """The cliff lies between 16 and 64 MiB: 32 MiB is between them, and no size nearer it was measured."""
    cliff = next(s for s in findings(h200) if "fell off a cliff" in s)
    assert ("between 16 MiB and 64 MiB" in cliff and "32 MiB, glibc's largest mmap threshold, lies between these sizes; "
            "this run measured no size nearer it, so it cannot tell whether the cliff sits there") in cliff


def test_a_cliff_between_sizes_next_to_the_threshold_sits_at_it(h200):
    """The branch a full-profile run takes (31 and 33 MiB measured, its fall between them): said to sit at it; sizes
    that do not hold the threshold between them say nothing of it."""
    at = mmap_clause({"before": 31 * MiB, "after": 33 * MiB}, h200)
    assert at == (" The cliff sits at glibc's largest mmap threshold (32 MiB): above it each fresh allocation is a new "
                  "mapping whose pages fault in on first touch.")
    assert mmap_clause({"before": 64 * MiB, "after": 256 * MiB}, h200) == ""


def test_both_directions_at_once_is_a_figure(h200):
    """512 MiB both ways in 5.39 ms is 99.6 GB/s against 54.5 (h2d) and 54.6 GB/s (d2h) alone: 1.82-1.83×, the fastest
    both-ways round slower than every one-way round: about 9% short of fully duplex, with its interval. The shortfall is
    of throughput: a time 1.09x (1.04-1.15) as long moves the bytes at 1/1.09, 9% (4%-13%) short, not 9% (4%-15%)."""
    both = 2 * 256 * MiB / _median(2 * 256 * MiB, op="bidir", variant="h2d+d2h") / 1e9
    one = [256 * MiB / _median(256 * MiB, op="bidir", variant=v) / 1e9 for v in ("h2d", "d2h")]
    assert (round(both, 1), sorted(round(both / o, 2) for o in one)) == (99.6, [1.82, 1.83])
    assert ("Both directions at once at 256 MiB each way on cuda:0: 99.6 GB/s against 54.5 GB/s host to device and "
            "54.6 GB/s device to host alone, 1.82-1.83× one direction's throughput: both ways took 1.09× (1.04-1.15) the "
            "slower direction's time alone, about 9% (4-13%) short of fully duplex.") in scenario_findings(h200, "bidir")[-1]


def test_the_two_directions_staging_differ_and_the_run_says_it_cannot_tell_why(h200):
    """At 256 MiB: h2d pageable copy_ 31.7 ms - pinned 4.87 ms = 26.8 ms; d2h 17.8 - 4.97 = 12.8 ms."""
    up = (_median(256 * MiB, op="h2d", method="copy_", host_memory="pageable", non_blocking=False)
          - _median(256 * MiB, op="h2d", method="copy_", host_memory="pinned", non_blocking=False))
    assert round(up * 1e3, 1) == 26.8
    staged = why_measured(h200, set())["staged"]
    # the two pageable copies' ratio carries its interval; the staging costs' own quotient (2.1x) would carry none
    assert ("Staging differs by direction: at 256 MiB it costs 26.8 ms host to device and 12.8 ms device to host (the "
            "pageable copies took 31.7 ms and 17.8 ms, 1.79× (1.39-2.29))") in staged
    assert "2.1×" not in staged
    assert "the two directions part above 16 MiB" in staged  # where, never a cause (a reading took it for one)
    # each size its own figures: 16 MiB's 1.315 ms and 1.236 ms, not 256 MiB's twice
    assert ("pageable copy_ ran 12.8 GB/s to the GPU and 13.6 from it at 16 MiB, which the run cannot tell apart, and "
            "8.47 against 15.1 GB/s at 256 MiB") in staged
    assert staged.endswith("Why, this run cannot tell: it records no single-thread host memcpy and no page-fault counts.")


def test_a_simulated_runs_staging_gap_is_its_specs():
    """The simulated 2-GPU run's 0.501x gap by direction is what its spec sets (pageable 20 GB/s up, 10 down): a reading
    found "why, this run cannot tell" there. A spec without those rates says what the run lacks, as a real run does."""
    sim = load([ROOT / "tests" / "data" / "sim-2gpu.json"])
    staged = why_measured(RunView.of(sim), set())["staged"]
    assert staged.endswith("). Why: the cost model's spec sets pageable copies at 20 GB/s host to device, 10 from it.")
    del sim.machine_info["xferbench"]["simulated"]["paths"]["d2h_pageable"]["GBps"]
    assert why_measured(RunView.of(sim), set())["staged"].endswith("Why, this run cannot tell: it records no "
                                                                 "single-thread host memcpy and no page-fault counts.")


def test_overhead_hovers_say_two_loops_as_the_caption_does(page):
    assert "outside the device" not in page[0]
    assert ("h2d pinned non-blocking to cpu-&gt;cuda:0\n4 B: 1 − device / wall = 79% (device time per copy issued back to "
            "back 2.24 µs, wall time of one synchronized call 10.5 µs: two loops, not a split of one call)") in page[0]


def test_a_busy_cpu_run_says_its_load_and_judges_nothing_it_cannot(busy):
    view, html, markdown = busy
    said = findings(view)
    assert not any("as long as on one thread" in sentence for sentence in said)  # no drift evidence: no thread claim
    beta = next(s for s in said if "highest β" in s)
    assert beta.endswith("which of the two is faster: at 256 MiB can't tell (the run repeated no case to measure its drift).")
    # the miss is said before the line's α and β are quoted: a fifth reading took them for the copy's cost model
    # its copy_'s 256 KiB, 1 MiB and 16 MiB waited (load.blocks.waited_off): the fit leaves them out and no half of β
    # is placed between the sizes it kept, 1 KiB and 256 MiB
    assert ("has a fixed cost α = 0.753 µs and a bandwidth β = 1.87 GB/s (without the 1 size that ran faster than "
            "memory allows: it fits in the host CPU cache; nor 256 KiB, 1 MiB, 16 MiB, whose rounds waited for the "
            "CPU)") in beta
    assert ("where moves reach half of β, this run cannot place: the fit puts half of β at 1.37 KiB, between 1 KiB and "
            "256 MiB, the nearest sizes it kept, 262,144× apart.") in beta
    assert "moves smaller than" not in beta
    assert 'id="busy">Busy machine: this run recorded load 11.62 on 2 CPUs' in html
    assert "> Busy machine: this run recorded load 11.62 on 2 CPUs" in markdown


def test_the_route_hover_names_each_call_apart(busy):
    figure = cost_at_size(busy[0])
    labels = [label.get_text() for label in figure.axes[0].get_yticklabels()]
    plt.close(figure)
    # one thread's copy_ (540 ms) is the host's roof, not a call a move makes: left out, as the first screen does
    assert labels == ["host pageable cpu  (2 calls; fastest: can't tell)"]
    hover = busy[1].split("host pageable cpu, 1 GiB:")[1].split("</title>")[0]
    assert ".copy_: median 608 ms" in hover and "single_thread" not in hover
