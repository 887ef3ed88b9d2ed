"""Sentences of the rebuilt H200 and CPU reports that their own JSON contradicted, read by a GPU performance engineer
with fresh eyes (H: the H200 sample's page, C: a CPU run's): each corrected sentence is read back on the page built
from the committed sample, and the contradicted wording is looked for and not found."""

import copy
import gzip
import json
import re
from html import unescape
from pathlib import Path

import pytest

from handfed import visible_text
from xferbench.analyze.drift import side
from xferbench.analyze.load.results import load
from xferbench.analyze.report.distributed import distributed_findings
from xferbench.analyze.report.findings import host_copy
from xferbench.analyze.report.page import write_report
from xferbench.analyze.view import RunView
from xferbench.ratios import Drift, unpaired

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "reports" / "samples" / "h200" / "full.json.gz"
CPU = ROOT / "tests" / "data" / "cpu-sample.json"



def _page(paths: list[Path], folder: Path) -> dict[str, str]:
    out = write_report(load(paths), folder / "index.html")
    html = out.read_text()
    return {"html": unescape(html), "text": visible_text(html), "md": out.with_suffix(".md").read_text()}


@pytest.fixture(scope="module")
def h200(tmp_path_factory) -> dict[str, str]:
    """The H200 sample's page, as reports/samples/h200/index.html is built: from full.json.gz alone."""
    return _page([H200], tmp_path_factory.mktemp("h200"))


@pytest.fixture(scope="module")
def cpu(tmp_path_factory) -> dict[str, str]:
    return _page([CPU], tmp_path_factory.mktemp("cpu"))


# -- The H200 sample ---------------------------------------------------------------------------------------------


def test_h1_the_cliff_claim_covers_the_calls_it_lists(h200):
    """h2d .to() allocates a device tensor and grew 1.12x per byte, less than the reused-buffer copies (1.38x): the
    claim was "every call that allocates its destination"; the calls it lists all write fresh pageable host memory."""
    said = ("Across the same sizes every call measured here that writes a fresh pageable host destination (random "
            "creators aside: their generator sets their time) grew dearer per byte than every call into a reused host "
            "buffer, each beyond its interval (torch.ones on the CPU 70.8 µs → 7.92 ms (28× per byte); torch.zeros on "
            "the CPU 72.5 µs → 8.79 ms (30.3× per byte); host clone 132 → 8.27 GB/s (16× per byte); .cpu() 12.9 → "
            "1.32 GB/s (9.81× per byte); .to(device) 13 → 1.4 GB/s (9.32× per byte), against every copy_ into a reused "
            "host buffer")
    assert said in h200["md"] and said in h200["text"]
    assert "every call that allocates its destination" not in h200["text"] + h200["md"]


def test_h2_page_faults_only_where_the_run_counted_them(h200):
    """No row of the sample records minor_faults_per_call: the fresh destination is measured, its page faults not."""
    assert (".cpu() allocates a new pageable tensor on every call and fills it (no fault counts recorded: how much of that is "
            "faults is not measured), "
            "copy_ does not (163 ms of 181 ms, the ladder below)") in h200["md"]
    assert "faults its pages in" not in h200["md"] and "faulting its pages in" not in h200["md"] + h200["text"]
    assert "fresh destination" in h200["text"]
    assert "allocation, page faults" not in h200["text"]
    assert "touching its pages" not in h200["text"] + h200["md"]  # a cause the run has no fault counts for


def test_h3_the_cliff_label_pairs_each_calls_own_figures(h200):
    """13 GB/s was .to('cpu') at 16 MiB, 1.32 .cpu() at 64 MiB: the label paired two calls' figures."""
    assert "cliff: .cpu() 12.9 → 1.32, .to(device) 13 → 1.4 GB/s" in h200["html"]
    assert "cliff: .cpu() / .to(device) 13 → 1.32" not in h200["html"]


def test_h4_a_roof_label_names_the_call_its_share_is_of(h200):
    """The pageable d2h panel's 24% is copy_'s; .cpu() reached 2%."""
    assert "copy_(), the best at its largest size: 24% of 63 GB/s" in h200["html"]
    assert ", largest size 24% of 63 GB/s" not in h200["html"]


def test_h5_a_dash_is_a_device_time_left_out_not_one_missing(h200):
    """271 rows carry a device time; 152 of them are left out as not the copy's own: never a blocking d2d copy's (a
    reading found "blocking ones" beside the d2d rows' pipelined α)."""
    said = ("– where the row's device time is not the copy's own and was left out: pageable copies, staged by the host, "
            "and blocking ones between host and device, paced by it")
    assert said in h200["md"] and said in h200["text"]
    assert "where the rows have no device time" not in h200["md"]
    assert "only where the rows have a device time" not in h200["text"]


def test_h6_the_sync_loops_alpha_is_not_the_synchronize(h200):
    """An idle synchronize took 1.71 µs of the same-device copy's 11.9 µs α."""
    assert ("α of the synchronizing loop is mostly the host's cost per call (dispatch, launch, waiting for "
            "completion), not the device's") in h200["text"]
    assert "is mostly the synchronize" not in h200["text"]


def test_h7_device_time_is_what_the_device_spends_not_what_a_loop_pays(h200):
    assert ("Issued back to back without a synchronize, the device spends per copy (from device time) α = 2.28-2.3 µs "
            "host to device (half of β at 122-123 KiB) and 1.62 µs device to host (half of β at 87.4 KiB); a loop pays "
            "that or the host's cost to issue a copy if larger (not timed)") in h200["md"]
    assert "copies pay only the device's fixed cost" not in h200["md"] + h200["text"]
    assert "what copies issued back to back pay" not in h200["md"] + h200["text"]


def test_h8_the_highest_beta_is_not_the_fastest_path(h200):
    """h2d pinned non-blocking copy_ was faster at 4 B (8.79 against 11.78 µs): d2h's is the highest β."""
    assert ("In a loop that synchronizes after every call, which host-side path has the highest β can't be told "
            "(8 paths' β lie 52.7-54.9 GB/s and their times at 256 MiB can't be told apart); one of them (d2h pinned "
            "non-blocking copy_ cuda:0->cpu) has a fixed cost α = 11.6 µs") in h200["md"]
    assert "the fastest path (" not in h200["md"]


def test_h9_the_no_half_rule_is_stated_as_applied(h200):
    """The rule reads every size the fit kept, not only those past half of β (the quick run's isend_irecv: α 167 µs,
    704 µs at 4 B), and the header says so."""
    assert ("misses a size it fitted by over 2× (a cliff, or a fixed cost the small sizes do not show), or where"
            in h200["text"])
    assert "at or beyond that half" not in h200["text"]


def test_h10_a_collectives_table_figures_say_they_are_algbw(h200):
    """The CPU sample's all_gather: 1.31 GB/s in the table is algbw, the figure draws busbw: the same case, two
    figures, so the row says which. The H200's all_gather at 16 KiB (0.0813 GB/s algbw) took under twice its 1 KiB
    time: no GB/s in its row, so no note; point to point has none either (busbw = algbw)."""
    cpu = (ROOT / "tests" / "data" / "golden" / "cpu-sample.md").read_text()
    (row,) = [line for line in cpu.splitlines() if line.startswith("| all_gather gloo x2 |")]
    assert "GB/s here are algbw (bytes / time): the page's distributed figure draws busbw" in row and "| 1.31 |" in row
    (gather,) = [line for line in h200["md"].splitlines() if line.startswith("| all_gather gloo x2 |")]
    assert "algbw" not in gather and "16 KiB: – |" in gather
    (send,) = [line for line in h200["md"].splitlines() if line.startswith("| send_recv gloo x2 |")]
    assert "algbw" not in send


def test_h11_the_overhead_caption_reads_its_share_from_the_run(h200):
    assert "At 16 KiB and below it is 72-89%: small moves are mostly fixed cost." in h200["text"]
    assert "Near 100% at small sizes" not in h200["text"]


def test_h12_h21_the_no_op_forms_are_the_ones_measured(h200):
    """No string form ran: the caption spoke of parsing it, the finding of "the form written"."""
    assert ("No-op moves next to a synchronize and the cheapest real copy .cuda(i), .to(torch.device) and .cpu() on a "
            "tensor already there return the very same object; what they cost is PyTorch's dispatch, shown next to an "
            "idle synchronize and the cheapest real copy measured (no string form, .to('device'), ran).") in h200["text"]
    assert "parsing a string is part of it" not in h200["text"]
    assert ("A no-op on a tensor already on cuda:0 costs per call: .to(torch.device('cuda:0')) 364-367 ns, .cuda(0) "
            "378-379 ns (the lowest and the highest median over the sizes measured, 4 B and 1 GiB; the string form, "
            ".to('cuda:0'), was not measured)") in h200["md"]
    assert "by the form written" not in h200["md"]


def test_h13_the_launch_rung_says_it_swaps_the_call_too(h200):
    assert ("The call beyond its DMA sets the blocking copy against its non-blocking twin's device time, the DMA alone: "
            "it holds launch and synchronization (at most the fit's α, in the α/β table) and any other wall time a call "
            "spends beyond its DMA's device time." in h200["text"])


def test_h14_the_host_copys_threads_and_the_drivers_staging_are_not_measured_facts(h200):
    assert ("Host memory copies (torch's copy_, thread count not recorded) reached 35.1 GB/s at 1 GiB, past the caches "
            "(its copy reads and writes 2 GiB, more than the 300 MiB host CPU cache; 47.2 GB/s at 256 MiB (its copy "
            "reads and writes 512 MiB, more than the 300 MiB host CPU cache too): 1.35× (1.04-1.73) as fast per byte; "
            "why, this run cannot tell); the CUDA "
            "driver stages a pageable transfer with one thread's memcpy (not timed here)") in h200["md"]
    assert "several threads" not in h200["md"]


def test_h15_a_median_is_not_a_best(h200):
    """8.79 µs is the lowest median of a 4 B copy; its fastest round was 7.99 µs. Its path is named, never called the
    fastest: .cuda()'s 10.3 µs can't be told from it."""
    assert ("Measured here: the lowest median of a 4 B copy between host and device was 8.79 µs (h2d pinned non-blocking "
            "copy_ cpu->cuda:0)."
            in h200["text"])
    assert "8.79 µs at best" not in h200["text"]


def test_h16_the_same_device_figure_has_its_size(h200):
    assert ("A same-device copy on cuda:0 reached 1,926 GB/s at 256 MiB (2,067 GB/s at 1 GiB), 34.9× (33.2-36.7) the "
            "best host-to-device copy at that size") in h200["md"]


def test_h17_the_pinning_caption_says_pinned_to_did_not_run(h200):
    assert ("reused_pinned_to: a host copy into a reused pinned buffer, then the DMA. pinned_to (the DMA alone) did not "
            "run") in h200["text"]
    assert "pinned_to: the DMA from a tensor pinned once" not in h200["text"]


def test_h18_no_hollow_markers_are_promised_where_none_are_drawn(h200):
    """The d2h and h2d figures have no cache-resident point; the host figure, which has, keeps its sentence."""
    assert "Hollow markers ran faster than memory allows" not in h200["text"]
    assert "Hollow markers are sizes that ran faster than memory allows" in h200["text"]  # the host figure's


def test_h19_the_beta_basis_says_which_sizes_it_left_out(h200):
    """The host fits keep 2x3 B .. 16 KiB, which fit in the L3: only the sizes faster than memory are left out; 256 MiB
    ran 47.2 GB/s, told apart from 1 GiB's 35.1 per byte, so β (37.2) is no ceiling."""
    assert ("| host pageable copy_ cpu | 2.64 µs | – | 37.2 | – | β fit without the sizes that ran faster than memory "
            "(α over all); the large sizes fall below the mid sizes: 256 MiB reached 47.2 GB/s, so β is no ceiling and "
            "no half of β is given |") in h200["md"]
    assert "fit beyond the cache" not in h200["md"] + h200["text"]


def test_h20_a_dirty_commit_is_said(h200):
    assert "commit 9e4e6e29dc8b (dirty) · run" in h200["text"]


# -- A CPU run ---------------------------------------------------------------------------------------------------


def test_c1_the_cpu_path_is_the_one_of_the_highest_fitted_beta(cpu):
    # a run without drift evidence ranks no path: the sentence names one of them, never "the highest"
    assert "which host-side path has the highest β can't be told" in cpu["md"]
    assert "one of them (host pageable copy_ cpu) has a fixed cost" in cpu["md"]
    assert "the fastest path" not in cpu["md"]


def test_c4_a_cpu_only_page_says_nothing_of_a_gpu_in_its_captions(cpu, h200):
    """The host ladder's pointer to a GPU's .cpu() ladder, the single-thread copy as the driver's reference and creation
    "across a link" are a GPU reader's: a run without one is told none of them; the H200's creation caption keeps its."""
    assert "clone() on the host read against copy_ into a buffer that was already touched" in cpu["text"]
    for said in ("With a GPU", "GPU driver's staging", "moves nothing across a link"):
        assert said not in cpu["text"]
    assert "Creating directly on the device (device=...) moves nothing across a link." in h200["text"]
    assert "most of a GPU's .cpu()" not in cpu["text"]


def test_c5_the_route_chart_points_to_no_ladder_the_run_lacks(cpu, h200):
    assert "device to host into pageable memory's slowest" not in cpu["text"] and "near the bottom" not in h200["text"]
    assert ("How much more device to host into pageable memory's slowest calls, .cpu() and .to(device), cost than its "
            "copy_, step by step, is read from the ladder above.") in h200["text"]


def test_c6_the_host_caption_states_no_driver_behaviour_as_measured(cpu):
    assert "as the driver stages a pageable transfer" not in cpu["text"]
    assert "copy_ single-thread runs on one thread" not in cpu["text"]  # the run has no such case: no such line


def test_c7_the_no_op_figure_names_what_it_draws(cpu):
    assert ("No-op moves next to the cheapest real copy .to(torch.device) and .cpu() on a tensor already there return "
            "the very same object") in cpu["text"]
    assert "next to a synchronize" not in cpu["text"] and ".cuda(i)" not in cpu["text"]


def test_c8_c17_scenario_captions_say_only_what_ran_and_a_cpu_page_names_no_gpu_but_once(cpu, h200):
    """A third reading: "Neither move ran here (they need a GPU)", "(it needs a GPU)" and the image batch that "must
    become normalized float32 on the GPU" are a GPU reader's, on a page that already said it measured no GPU."""
    assert "An image batch arrives as uint8 and becomes normalized float32: here on the CPU alone" in cpu["text"]
    assert "Each dataset sample is decoded" not in cpu["text"]  # cpu-sample ran no DataLoader
    assert "A second .to() to the same device copies nothing" in cpu["text"] and "No first move" not in cpu["text"]
    assert "The first move copies every parameter" not in cpu["text"] and "Creating tensors on the CPU" in cpu["text"]
    # the machine line and the notice, and no other sentence
    assert len(re.findall(r"\bGPUs?\b", cpu["text"])) == 2 and "Machine: no GPU" in cpu["text"]
    assert "No GPU was measured" in cpu["text"]
    assert "The first move copies every parameter" in h200["text"] and "must become normalized float32 on the GPU" in h200["text"]


def test_c9_no_same_device_sentence_on_a_page_without_a_device(cpu):
    assert "A same-device copy shows why both matter" not in cpu["text"]


def test_c10_the_smallest_message_is_every_point_to_point_case(cpu):
    """send_recv and isend_irecv each timed the 4 B message: one of them alone may be the noisiest."""
    assert ("With 2 ranks on gloo, a 4 B message took 85.4 µs to 87.6 µs one way across its 2 point-to-point cases "
            "(medians of 20+ rounds each).") in cpu["text"]


def _distributed_run(tmp_path: Path, widen: dict[str, float]) -> RunView:
    """The H200 sample's distributed benchmarks, the rounds of those named in ``widen`` (all_reduce, in_flight) spread
    over their median x 0.9 .. x the factor, the median kept: a bimodal or noisy case of a busy machine."""
    data = json.loads(gzip.decompress(H200.read_bytes()))
    kept = [b for b in data["benchmarks"] if b["extra_info"].get("op") in ("send_recv", "all_reduce", "overlap")]
    largest = {op: max(b["extra_info"]["nbytes"] for b in kept if b["extra_info"]["op"] == op)
               for op in ("all_reduce", "overlap")}
    for bench in kept:
        info, stats = bench["extra_info"], bench["stats"]
        name = info["variant"] if info["op"] == "overlap" else info["op"]
        if name in widen and info["nbytes"] == largest[info["op"]]:
            m = stats["median"]
            stats.update(data=[m * 0.9, m * 0.95, m, m * widen[name], m * widen[name] * 1.5], rounds=5, iterations=1,
                         min=m * 0.9, max=m * widen[name] * 1.5)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(copy.deepcopy(data) | {"benchmarks": kept}))
    return RunView.of(load([path]))


def test_c11_c12_noisy_collectives_say_so(tmp_path):
    """5 rounds of in_flight spread over 0.9-7.5x their median: its interval holds one_by_one's, so whether overlap
    pays can't be told (the sentence said "overlap buys 1.32x"); all_reduce's rounds over 0.9-4.5x give its bus
    bandwidth's interval."""
    def rounds_only(a, b):  # a run that drifts not at all: the rounds alone decide
        return unpaired(side(a), side(b), Drift(0.0, 1))
    said = " ".join(distributed_findings(_distributed_run(tmp_path, {"in_flight": 5.0, "all_reduce": 3.0}).rows,
                                         rounds_only))
    assert ("Four all_reduces of 256 B in flight at once (async_op=True) took 753 µs, one by one 993 µs: whether "
            "overlap pays, can't tell (could see ≥ 2.89×).") in said
    assert ("all_reduce of 16 KiB reached 0.0714 GB/s bus bandwidth by the slowest rank's time (its median's interval "
            "over 5 rounds: 0.0159 to 0.0794 GB/s), 0.0714 GB/s by the ranks' mean (nccl-tests' default).") in said


def test_c14_the_host_copys_threads_are_the_ones_recorded(tmp_path):
    """A run that records torch's intra-op threads names them (2 on the CPU run: "several threads" read as many)."""
    data = json.loads(CPU.read_text())
    data["machine_info"]["xferbench"]["host"] = {"torch_threads": 2}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    assert host_copy(RunView.of(load([path]))).startswith("Host memory copies (torch's copy_, 2 threads) reached 26.4 GB/s")


def test_a_cpu_runs_dataloader_caption_describes_the_loader_alone(tmp_path):
    """The quick CPU run timed the DataLoader to the host only, and no short epoch: its caption says what those cases
    are, not the GPU training step or the epochs none of them ran."""
    quick = _page([ROOT / "tests" / "data" / "cpu-quick-sample.json"], tmp_path)
    assert ("converted to float32 and normalised per channel. The loader alone per step (wN: N workers; 4 only where 4 "
            "CPUs are there); startup-w2: iter() alone; first-wN: a fresh iterator's first batch.") in quick["text"]
    assert "epoch" not in quick["text"]
    assert len(re.findall(r"\bGPUs?\b", quick["text"])) == 2  # the machine line and the notice
    assert "can't be told there." in quick["text"] and "on nccl" not in quick["text"]  # nccl's advice: a GPU run's


def test_c10_a_no_op_span_a_reader_sees_as_two_costs_is_judged(cpu, h200):
    """A fourth reading: the CPU's .to(torch.device('cpu')) spans 358-743 ns, its 4 B case in rounds of 1,443 calls and
    its 16 MiB one of 10,000; a no-op copies no byte, so the span is said with its interval (here, no drift evidence:
    can't tell). The H200's spans (364-367 ns, 378-379 ns) lie under 1.5x and unresolved: nothing more is said."""
    assert ("whether .to(torch.device('cpu')) at 4 B against 16 MiB (rounds of 1,443 calls against 10,000) costs more, "
            "can't tell (the run repeated no case to measure its drift)") in cpu["text"]
    assert ".cpu() at " not in cpu["text"]  # 246-261 ns: no span a reader sees as two
    assert "costs 246-743 ns a call (a spread the machine's step in time could give)" in cpu["text"]
    assert "costs 364-379 ns a call: it returns" in h200["text"]  # nothing to doubt there
    assert not re.search(r"(\.to\(torch\.device\('cuda:0'\)\)|\.cuda\(0\)) at \S+ \S+ against", h200["text"])


def test_c11_a_roof_the_run_did_not_measure_is_not_called_this_runs(h200):
    """A fifth reading: the bandwidth captions named "this run's single-thread host memcpy" as the pageable roof, and
    then said the run measured none; the α/β caption had said "measured in this run" too."""
    assert "this run's single-thread host memcpy" not in h200["text"]
    assert "single-thread host memcpy measured in this run" not in h200["text"]
    assert h200["text"].count("the single-thread host memcpy where the run measured one") == 3  # d2h, h2d, α/β


def test_c12_a_case_that_stepped_in_time_between_two_is_said_where_it_could_part_them():
    """A seventh reading: the CPU's .to(torch.device('cpu')) at 4 B (743 ns, run first) and 16 MiB (358 ns, run after)
    sat either side of the .cpu() at 4 B, whose rounds stepped 2.15x down as it ran: the machine alone could part them.
    A step the other way, a smaller one, or one of another run or outside the pair says nothing."""
    import pandas as pd

    from xferbench.analyze.report.drift_text import stepped_between

    rows = pd.DataFrame({"path": ["a", "step", "b"], "nbytes": [4, 4, 64], "run": "r", "median_s": [2e-6, 1.5e-6, 1e-6],
                         "data": [[2e-6] * 20, [2e-6] * 10 + [1e-6] * 10, [1e-6] * 20]})
    said = "step at 4 B, which ran between them, stepped 2× as it ran: the machine alone could part them"
    assert stepped_between(rows, rows.loc[0], rows.loc[2]) == stepped_between(rows, rows.loc[2], rows.loc[0]) == said
    up = rows.assign(data=[[2e-6] * 20, [1e-6] * 10 + [2e-6] * 10, [1e-6] * 20])
    small = rows.assign(data=[[2e-6] * 20, [1.5e-6] * 10 + [1e-6] * 10, [1e-6] * 20])
    other = rows.assign(run=["r", "s", "r"])
    for unsaid in (up, small, other):
        assert stepped_between(unsaid, unsaid.loc[0], unsaid.loc[2]) == ""
    assert stepped_between(rows, rows.loc[0], rows.loc[1]) == ""  # nothing ran between them
