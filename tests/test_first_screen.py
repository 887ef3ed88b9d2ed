"""The first screen's budget, read off the committed H200 page and a real CPU run's: what a reader meets before the
first figure is short, and each key finding's headline is a line with a few figures, its evidence folded beneath."""

import html
import math
import re
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from xferbench.analyze.load.results import load
from xferbench.analyze.report.findings import findings
from xferbench.analyze.view import RunView

from fakes import build_html

ROOT = Path(__file__).resolve().parents[1]
H200_PAGE = ROOT / "reports" / "samples" / "h200" / "index.html"
CPU_RUN = ROOT / "tests" / "data" / "cpu-quick-sample.json"

#: A figure as a reader counts it: a number or a span of two (181-217 ms, 36.7-44×), its interval in brackets after
#: it (or its share, 163 ms (80%)) part of it; the digits of a name (d2h, cuda:0) are none.
_FIGURE = re.compile(r"(?<![\w:.])\d[\d,.]*(?:-\d[\d,.]*)?(?:\s*[^\s(]*\s*\([\d.,%\s-]+\))?")


def _text(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<(style|script)\b.*?</\1>", " ", markup, flags=re.S)))


def words_before_first_figure(page: str) -> int:
    body = page[page.index("<body"):]
    return len(_text(body[:body.index("<figure")]).split())


def figures_in(sentence: str) -> list[str]:
    return _FIGURE.findall(sentence)


@pytest.fixture(scope="module")
def cpu_view() -> RunView:
    return RunView.of(load([CPU_RUN]))


def test_figures_are_counted_with_their_intervals():
    assert figures_in("took 181-217 ms: 36.7-44× (28.1-57.1) as long") == ["181-217", "36.7-44× (28.1-57.1)"]
    assert figures_in("d2h copy_ cuda:0->cpu: 163 ms (80%) of it") == ["163 ms (80%)"]


def test_the_h200_page_says_at_most_300_words_before_its_first_figure():
    page = H200_PAGE.read_text(encoding="utf-8")
    assert 100 < words_before_first_figure(page) <= 300
    # ... and what it says there is what to change, then the table of moves, before any method note.
    before = _text(page[:page.index("<figure")])
    assert before.index("What to change here") < before.index("How this run was judged") if \
        "How this run was judged" in before else "What to change here" in before


def test_the_cpu_page_says_at_most_300_words_before_its_first_figure(cpu_view):
    assert words_before_first_figure(build_html(cpu_view)) <= 300


@pytest.mark.parametrize("which", ["h200", "cpu"])
def test_each_headline_is_short_with_its_evidence_folded(which, cpu_view):
    view = cpu_view if which == "cpu" else RunView.of(load([ROOT / "reports" / "samples" / "h200" / "full.json.gz"]))
    said = findings(view)
    assert said
    for finding in said:
        assert len(finding.headline.split()) <= 50, finding.headline
        assert len(figures_in(finding.headline)) <= 4, finding.headline
        assert len(str(finding)) >= len(finding.headline)  # the evidence is the whole sentence, folded


def test_a_cpu_runs_table_of_moves_is_its_host_moves(cpu_view):
    """No GPU, so no transfer lines: the box gives the host's moves at the largest size, a fresh destination (clone,
    203 ms at 64 MiB) against copy_ into a buffer it keeps, on torch's default threads (one thread's copy_ is the roof
    the α/β finding leaves out, not a move)."""
    from xferbench.analyze.report.changes import at_a_glance

    assert [(line["what"], line["time"], line["gbps"]) for line in at_a_glance(cpu_view)] == [
        ("host clone (new tensor every call)", "203 ms (its rounds waited for the CPU)", "–"),  # 133 ms at fastest
        ("host copy_ into an existing buffer", "39.9 ms (its rounds waited for the CPU)", "–")]  # no bandwidth


def test_change_2_cites_no_break_even_table_the_page_does_not_hold(tmp_path):
    """The H200 run without its pin_memory scenario still lists pinning (from the h2d family's copies) but has no
    break-even table: the Markdown and the console give no break-even line, whatever other section carries a table (a
    priced trace's; the page had taken the first section's table for the break-even's and failed on it)."""
    import dataclasses

    from xferbench.analyze.report.page import write_report
    from xferbench.analyze.report.story import Story

    results = load([ROOT / "reports" / "samples" / "h200" / "full.json.gz"])
    # without the two scenarios that save more than pinning a source (placement, copy_kind) too
    view = RunView.of(dataclasses.replace(results, frame=results.frame[~results.frame["op"].isin(
        ["pin_memory", "placement", "copy_kind"])]))
    story = Story.of(view)
    assert "pinned-source" in [change.spec.key for change in story.changes]
    assert story.break_even is None and story.break_even_line is None
    other = {"key": "trace", "title": "A priced trace", "text": "", "plots": [],
             "table": {"id": "trace", "caption": "", "columns": ["a"], "rows": [["1"]]}}
    markdown = write_report(view, tmp_path / "index.html", extra_sections=[other]).with_suffix(".md").read_text()
    assert "## What to change here" in markdown and "Break-even of pinning" not in markdown


def test_a_run_that_resolves_no_change_says_so_with_each_verdict(tmp_path):
    """The CPU sample prices one change (clone → copy_, 1.08 ms against 636 µs) but has no drift evidence to judge it:
    the page and the Markdown say that none is resolved and why, rather than leaving the section out."""
    from xferbench.analyze.report.page import write_report

    out = write_report(load([ROOT / "tests" / "data" / "cpu-sample.json"]), tmp_path / "r.html")
    said = ("No change listed (none with a saving this run can size): Copy a CPU tensor into a buffer you keep (1.08 ms → "
            "636 µs at 16 MiB): can't tell (the run repeated no case to measure its drift); every round of the code before "
            "took longer than every round of the code after (quickest 896 µs against slowest 804 µs), one case measured "
            "after the other: an order the run's drift could give too.")
    assert f'<p id="changes-none">{said}</p>'.replace("'", "&#39;") in out.read_text()
    assert f"## What to change here\n\n{said}\n" in out.with_suffix(".md").read_text()


def test_the_one_line_fix_says_what_keeping_its_results_costs(tmp_path):
    """Hand-fed, 64 MiB: .cpu() 20 ms, .to(non_blocking=True) 5 ms, and the d2h_kept family's first pass, 12 ms a call
    kept against 6 ms dropped. The fix is listed with its gain, and its condition gives who pays what; without the
    d2h_kept rows it says that a caller who keeps every result pays, with no figure it did not measure."""
    from handfed import bench, gpu_machine, steady, write
    from xferbench.analyze.report.changes import first_screen

    n = 64 * 2**20
    moves = [bench("d2h", "cpu", "cuda:0", "cpu", n, 0.020, host_memory="pageable"),
             bench("d2h", "to", "cuda:0", "cpu", n, 0.005, host_memory="pinned", non_blocking=True), *steady()]
    kept = [bench("d2h_kept", "to", "cuda:0", "cpu", n, seconds, host_memory="pinned", non_blocking=True, variant=variant)
            for variant, seconds in (("kept", 0.012), ("freed", 0.006))]

    def fix(rows: list[dict], name: str):
        view = RunView.of(load([write(tmp_path / name, rows, gpu_machine())]))
        (change,) = first_screen(view, [])[0]
        return change

    change = fix(moves + kept, "kept.json")
    assert change.spec.key == "non-blocking-to" and change.text().startswith("saves 15 ms a call (20 ms → 5 ms at 64 MiB: 4×")
    assert change.condition == (
        "PyTorch returns pinned memory for it; read y only after the synchronize; a caller who keeps every result pays "
        "a fresh pinned allocation each call: 12 ms a call kept against 6 ms dropped at 64 MiB (d2h_kept, first pass)")
    alone = ("PyTorch returns pinned memory for it; read y only after the synchronize; a caller who keeps every result "
             "pays a fresh pinned allocation each call")
    assert fix(moves, "alone.json").condition == fix(moves + kept[:1], "kept-only.json").condition == alone
    # the box: the fix's own line, and its pinned copy the one fastest call
    from xferbench.analyze.report.changes import at_a_glance

    view = RunView.of(load([tmp_path / "kept.json"]))
    assert [(line["what"], line["time"], line["gbps"]) for line in at_a_glance(view)] == [
        ("device to host, pinned (fastest call)", "5 ms", "13.4"),
        (".cpu() / .to(device) (new tensor each call)", "20 ms", "3.36"),
        (".to(torch.device('cpu'), non_blocking=True) (the one-line fix)", "5 ms", "13.4")]


def test_the_simulated_changes_cite_a_break_even_alone_and_a_resolved_loss_as_one():
    """The simulated run's 64 MiB break-even is copy 7 at either end of its interval: the condition cites it alone; its
    kept results cost more than the call before, beyond the interval: said so, never "cannot say"."""
    from xferbench.analyze.report.break_even import pinning_break_even
    from xferbench.analyze.report.changes import first_screen

    view = RunView.of(load([ROOT / "tests" / "data" / "sim-2gpu.json"]))
    assert [c.condition for c in first_screen(view, pinning_break_even(view))[0] if c.spec.key == "pinned-source"] == [
        "x pinned once, moved often: pinning costs 12.9 ms at 64 MiB and pays from copy 7 (break-even "
        "table)"]
    # its kept results: 6.73 ms against a cold pin (12.9 ms) and the copy (1.23 ms), resolved: no longer a saving
    assert next(c.condition for c in first_screen(view, pinning_break_even(view))[0] if c.spec.key == "pinned-buffer") \
        .endswith("(12.9 ms at 64 MiB): with the copy, no longer a saving (the call before: 0.477× as long)")


def test_the_glance_box_gives_each_kind_of_move_at_the_largest_size():
    """The box at the top, line by line: the H200's six kinds at 256 MiB (each tied kind spans its calls), the
    simulated run's (its four pinned device-to-host calls tie, two summed in another order), and the loaded CPU run's host moves,
    whose copy_ the bytes do not set (20 ms at 1 and 64 MiB): "–", no GB/s."""
    from xferbench.analyze.report.changes import at_a_glance

    def box(*path: str) -> list[tuple[str, str, str, str]]:
        view = RunView.of(load([ROOT.joinpath(*path)]))
        return [(line["what"], line["time"], line["gbps"], line["size"]) for line in at_a_glance(view)]

    tie = "fastest: can't tell"
    assert box("reports", "samples", "h200", "full.json.gz") == [
        (f"device to host, pinned (2 calls; {tie})", "4.94-4.97 ms", "54-54.4", "256 MiB"),
        ("device to host, copy_ into an existing pageable buffer", "17.8 ms", "15.1", "256 MiB"),
        (".cpu() / .to(device) (new tensor each call)", "181-217 ms", "1.24-1.48", "256 MiB"),
        (f"host to device, pinned (6 calls; {tie})", "4.87-4.93 ms", "54.5-55.1", "256 MiB"),
        (f"host to device, pageable (6 calls; {tie})", "30.6-35.9 ms", "7.47-8.78", "256 MiB"),
        (f"same-device copy (2 calls; {tie})", "139-140 µs", "1,918-1,926", "256 MiB")]
    assert box("tests", "data", "sim-2gpu.json")[0] == (
        "device to host, pinned (4 calls: the same time)", "1.23 ms", "54.5", "64 MiB")  # 2 of them 3.6e-13 slower
    assert box("tests", "data", "cpu-loaded-host.json") == [
        ("host clone (new tensor every call)", "119 ms (its rounds waited for the CPU)", "–", "64 MiB"),
        ("host copy_ into an existing buffer", "20 ms (its rounds waited for the CPU)", "–", "64 MiB")]


def test_a_fix_the_run_finds_slower_is_said_so_and_a_small_gain_is_listed(tmp_path):
    """Hand-fed, 64 MiB. Where .to(non_blocking=True) and a pinned source both took 4× as long as the call they would
    replace, neither is listed and the line says each is slower here; where the fix gains 1.6×, it is listed and no
    such line is written."""
    from handfed import bench, gpu_machine, steady, write
    from xferbench.analyze.report.changes import first_screen

    n = 64 * 2**20

    def screen(fix_s: float, name: str) -> tuple[list, str | None]:
        rows = [bench("d2h", "cpu", "cuda:0", "cpu", n, 0.020, host_memory="pageable"),
                bench("d2h", "to", "cuda:0", "cpu", n, fix_s, host_memory="pinned", non_blocking=True),
                bench("h2d", "to", "cpu", "cuda:0", n, 0.005, host_memory="pageable"),
                bench("h2d", "to", "cpu", "cuda:0", n, 0.020, host_memory="pinned", non_blocking=True), *steady()]
        listed, unresolved, _ = first_screen(RunView.of(load([write(tmp_path / name, rows, gpu_machine())])), [])
        return [change.spec.key for change in listed], unresolved

    assert screen(0.080, "slower.json") == ([], (
        "No change listed (none with a saving this run can size): The one-line fix (20 ms → 80 ms at 64 MiB): slower "
        "here, 4× as long; Pin a tensor you "
        "move more than once (5 ms → 20 ms at 64 MiB): slower here, 4× as long."))
    assert screen(0.0125, "faster.json") == (["non-blocking-to"], None)


def test_a_change_whose_rounds_order_it_is_listed_with_that_order_not_a_size():
    """The loaded run's copy_ took 20 ms at 64 MiB, most rounds on the scheduler's 4 ms ticks (a sixth reading), and the
    quick run's 39.9 ms (ten ticks) alike. A wait only adds to the faster call, but clone's own rounds spread too
    (median 70 ms above its fastest on the quick run, an eighth reading): no interval sizes the saving. Yet every clone
    round lay above every copy_ round in each of 6 interleaved blocks (a wait only adds, and the blocks shared their
    slots): the change saves time, and is listed so, with the page faults each side counted (a sixth reading found
    "No change listed" beside "saves time"). The H200's changes carry no such clause."""
    from xferbench.analyze.report.changes import first_screen

    for path, said in (
            (ROOT / "tests" / "data" / "cpu-loaded-host.json", "saves time (119 ms → 20 ms at 64 MiB, 16,385 page faults a "
             "call against 0): every round of the code before took longer than every round of the code after, in 6 "
             "interleaved blocks (quickest 83 ms against slowest 35.2 ms); how much, can't tell (the faster side's rounds waited "
             "for the CPU, and the slower side's too)"),
            (CPU_RUN, "saves time (203 ms → 39.9 ms at 64 MiB, 16,385 page faults a call against 0): every round of "
             "the code before took longer than every round of the code after, in 6 interleaved blocks (quickest 133 ms "
             "against slowest 84 ms); how much, can't tell (the faster side's rounds waited for the CPU, and the slower "
             "side's too)")):
        (change,), unresolved, _ = first_screen(RunView.of(load([path])), [])
        assert unresolved is None and change.spec.key == "reused-host-buffer" and change.text() == said
    listed, _, _ = first_screen(RunView.of(load([ROOT / "reports" / "samples" / "h200" / "full.json.gz"])), [])
    assert len(listed) == 3 and not any("scheduler" in change.text() for change in listed)


def test_no_figure_in_the_markdown_is_written_with_an_exponent(tmp_path, cpu_view):
    """A fresh-eyes reading found "1.72e+03 µs" (an α of 1.72 ms), "fit over all sizes gave 1.27e+04 GB/s" and the H200's
    "2.12e+03" GB/s in the α/β table: every figure is written out (2,123, 1.72 ms) as the page's HTML tables write it."""
    from xferbench.analyze.report.export import to_markdown
    from xferbench.analyze.report.story import Story

    quick = to_markdown(Story.of(cpu_view))
    assert "| overlap in_flight gloo x2 | 1.36 ms | 1.16 |" in quick and not re.search(r"\de[+-]\d", quick)
    h200 = (ROOT / "reports" / "samples" / "h200" / "index.md").read_text()
    assert "| d2d clone cuda:0 | 13.6 µs | 1.51 µs | 2,123 | 2,210 |" in h200
    for text in (quick, h200):
        assert not re.findall(r"\d(?:\.\d+)?e[+-]\d", text)
    # nor in a hover: a gloo collective's 4 B busbw read "9.787e-05 GB/s"
    titles = " ".join(re.findall(r"<title>([^<]*)</title>", (ROOT / "reports" / "samples" / "h200" / "index.html").read_text()))
    assert "(the formula gives 0.00009787 GB/s)" in titles and not re.findall(r"\d(?:\.\d+)?e[+-]\d", titles)


def test_the_simulated_peer_finding_names_its_pairs_and_claims_no_measurement():
    """The simulated run's peer copies, both ways at 338 GB/s at 64 MiB (52.9 GB/s at 1 MiB): the sentence gives the
    size, names the directions copied, once each (the run holds two rows a direction), and never says "measured"
    under the simulated heading."""
    from xferbench.analyze.report.findings import peer

    said = peer(RunView.of(load([ROOT / "tests" / "data" / "sim-2gpu.json"])))
    assert said is not None and said.headline == (
        "At 64 MiB, peer copies ran at 338 GB/s in every direction copied (cuda:0->cuda:1, cuda:1->cuda:0).")


def test_a_simulated_no_op_is_set_beside_a_simulated_copy():
    """The simulated run's no-ops (the cost model's 400 ns) were set beside its one measured host copy (760 ns on this
    CPU): a cost model's figure against a measurement. The yardstick is now the cheapest copy the model priced."""
    from xferbench.analyze.report.findings import noop_cost

    said = noop_cost(RunView.of(load([ROOT / "tests" / "data" / "sim-2gpu.json"])))
    assert said is not None and "the cheapest copy the cost model priced (d2d clone cuda:0, 4 B) took 11,000 ns" in said
    assert "host pageable" not in said


def test_the_no_op_figure_sets_each_clock_s_no_ops_beside_that_clock_s_copy():
    """The simulated run's no-op figure holds the CPU's measured no-ops and the cost model's GPU ones; it gave one
    yardstick, a measured host copy (760 ns), where the finding gives the cost model's d2d clone (11,000 ns). It now
    draws both, each named for its clock; a measured run's figure keeps its one."""
    from xferbench.analyze.report.noop_plot import noop_vs_copy

    def yardsticks(path: Path) -> list[str]:
        figure = noop_vs_copy(RunView.of(load([path])))
        labels = [label.get_text() for label in figure.axes[0].get_yticklabels() if "cheapest" in label.get_text()]
        plt.close(figure)
        return labels

    assert yardsticks(ROOT / "tests" / "data" / "sim-2gpu.json") == [
        "cheapest real copy: host pageable copy_ cpu (1 KiB)",
        "cheapest copy the cost model priced: d2d clone cuda:0 (4 B)"]
    assert yardsticks(ROOT / "tests" / "data" / "cpu-sample.json") == ["cheapest real copy: host pageable copy_ cpu (4 B)"]


@pytest.mark.parametrize(("now", "then", "said"), [
    (16385.0, 0.0, ", 16,385 page faults a call against 0"),
    (4097.0, 4097.0, ""),  # alike: no fact that tells the two calls apart
    (16385.0, float("nan"), ""),  # one side counted none
    (None, 0.0, ""),  # a run that records no counts (the H200's)
])
def test_an_unresolved_change_names_its_page_faults_only_where_both_counted_and_differ(now, then, said):
    import pandas as pd

    from xferbench.analyze.report.changes import _faults

    def row(faults):
        return pd.Series({"median_s": 1.0} | ({} if faults is None else {"minor_faults_per_call": faults}))

    assert _faults(row(now), row(then)) == said


@pytest.mark.parametrize(("value", "said"), [
    (1.5, "saves time: every round of the code before took longer than every round of the code after, in 2 "
          "interleaved blocks (quickest 5 s against slowest 2 s); how much, can't tell (one side's rounds waited for the CPU)"),
    (1 / 3, "costs time: every round of the code after took longer than every round of the code before, in 2 "
            "interleaved blocks (quickest 5 s against slowest 2 s); how much, can't tell (one side's rounds waited for the CPU)"),
])
def test_an_unlisted_change_says_which_way_its_ordered_rounds_go(value, said):
    import pandas as pd

    from xferbench.analyze.report.changes import _unlisted
    from xferbench.ratios import Ratio

    untimed = pd.Series(dtype=object)  # rows that kept no rounds: no order of their own to say
    assert _unlisted(Ratio(value, 0.0, math.inf, "ticks", 5, (2, 5.0, 2.0)), untimed, untimed) == said
    assert _unlisted(Ratio(value, 0.0, math.inf, "ticks", 5), untimed, untimed) == (
        "can't tell (one side's rounds waited for the CPU)")
    # rounds measured one after the other, not interleaved: their order, either way, and that a drift could give it
    slow, fast = pd.Series({"data": [5.0, 6.0]}), pd.Series({"data": [1.0, 2.0]})
    now, then = (slow, fast) if value > 1 else (fast, slow)
    assert _unlisted(Ratio(value, 0.0, math.inf, "ticks", 5), now, then) == (
        "can't tell (one side's rounds waited for the CPU); every round "
        + ("of the code before took longer than every round of the code after" if value > 1 else
           "of the code after took longer than every round of the code before")
        + " (quickest 5 s against slowest 2 s), one case measured after the other: an order the run's drift could give too")
    assert Ratio(value, 0.0, math.inf, "ticks", 5, (2, 5.0, 2.0)).faster().apart == (2, 5.0, 2.0)


def test_the_box_names_the_fastest_calls_of_a_kind_where_the_run_tells_the_others_apart(tmp_path):
    """The H200's six pinned host-to-device calls at 256 MiB tie; one of them made 3x slower (every figure of its
    rounds) is told apart, and the box says which share of the kind its line spans."""
    import gzip
    import json

    from xferbench.analyze.report.changes import at_a_glance

    run = json.loads(gzip.open(ROOT / "reports" / "samples" / "h200" / "full.json.gz").read())
    slow = next(b for b in run["benchmarks"] if b["name"] == "test_h2d[pinned-blocking-to-256MiB-float32-cpu->cuda:0]")
    stats = slow["stats"]
    stats |= {k: v * 3 for k, v in stats.items() if k in ("min", "max", "mean", "median", "q1", "q3", "iqr", "stddev",
                                                           "ld15iqr", "hd15iqr", "total")}
    stats["data"] = [x * 3 for x in stats["data"]]
    slow["extra_info"].pop("device_seconds", None)
    (tmp_path / "run.json").write_text(json.dumps(run))
    lines = {line["what"]: line["time"] for line in at_a_glance(RunView.of(load([tmp_path / "run.json"])))}
    assert lines["host to device, pinned (5 of 6 calls; fastest: can't tell)"] == "4.87-4.93 ms"


def test_a_change_its_rounds_only_order_ranks_below_every_sized_one():
    """Sized changes first, most saved first; one whose interleaved rounds order it but no interval sizes it last, even
    where its medians differ most (the busy run's clone against copy_: 54.5 ms apart, unsized)."""
    import pandas as pd

    from xferbench.analyze.report.changes import Change, ranked
    from xferbench.families.core import CHANGES
    from xferbench.ratios import Ratio

    def change(before: float, resolved: bool) -> Change:
        ratio = Ratio(before / 0.001, 2.0, 9.0, "paired", 6) if resolved else Ratio(9.0, 0.0, math.inf, "ticks", 6, (6, 2.0, 1.0))
        return Change(CHANGES[0], pd.Series({"median_s": before}), pd.Series({"median_s": 0.001}), ratio, "")

    ordered, small, large = change(0.5, False), change(0.01, True), change(0.1, True)
    assert ranked([ordered, small, large]) == [large, small, ordered]


@pytest.mark.parametrize(("sample", "said"), [
    ("cpu-sample.json", "Copy a CPU tensor into a buffer you keep (1.08 ms → 636 µs at 16 MiB): can't tell (the run repeated "
     "no case to measure its drift); every round of the code before took longer than every round of the code after "
     "(quickest 896 µs against slowest 804 µs), one case measured after the other: an order the run's drift could give too."),
    ("cpu-host-sweep.json", "(213 ms → 19.2 ms at 256 MiB): can't tell (the run repeated no case to measure its drift); every "
     "round of the code before took longer than every round of the code after (quickest 205 ms against slowest 21.6 ms)"),
])
def test_an_unlisted_change_says_the_order_of_rounds_measured_one_after_the_other(sample, said):
    """Runs with no evidence of their drift size no saving, so no change is listed; two readings found every clone round
    slower than every copy_ round there, which the page did not say. It says so, and that a drift could order rounds
    measured one case after the other (interleaved blocks rule that out: the loaded run's order lists the change)."""
    from xferbench.analyze.report.changes import first_screen

    listed, unresolved, _ = first_screen(RunView.of(load([ROOT / "tests" / "data" / sample])), [])
    assert not listed and unresolved is not None and said in unresolved
    listed, unresolved, _ = first_screen(RunView.of(load([ROOT / "tests" / "data" / "cpu-loaded-host.json"])), [])
    assert listed and unresolved is None and "one case measured after the other" not in listed[0].text()
