"""The ladder of controls (analyze/ladder.py) read back from real runs: every step is the difference of two medians
of the H200 sample's own cases, read here straight from the JSON without xferbench's loader."""

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from handfed import off_ticks
from xferbench.analyze.ladder import Ladder
from xferbench.analyze.load.results import load
from xferbench.analyze.report import ladder_text
from xferbench.analyze.view import RunView

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "reports" / "samples" / "h200"
CPU = ROOT / "tests" / "data" / "cpu-sample.json"
MiB = 2**20


def _raw(path: Path) -> pd.DataFrame:
    data = json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_text())
    return pd.DataFrame([b["extra_info"] | {"median": b["stats"]["median"], "data": b["stats"]["data"]}
                         for b in data["benchmarks"] if "xfer_schema" in b.get("extra_info", {})])


RAW = _raw(H200 / "full.json.gz")


def _one(raw: pd.DataFrame, **match: object) -> pd.Series:
    rows = raw
    for column, value in match.items():
        rows = rows[rows[column].isna()] if value is None else rows[rows[column] == value]
    assert len(rows) == 1, match
    return rows.iloc[0]


def _by_key(paths: list[Path]) -> dict[str, Ladder]:
    return {ladder.key: ladder for ladder in RunView.of(load(paths)).ladders}


@pytest.fixture(scope="module")
def h200() -> dict[str, Ladder]:
    return _by_key([H200 / "full.json.gz"])


def _cpu_rows_at_256_mib():
    """The .cpu() ladder's cases at 256 MiB in the JSON: the call, copy_ into a touched pageable buffer, copy_ into
    pinned memory, and the non-blocking pinned copy_ whose device time is the DMA."""
    size = 256 * MiB
    d2h = RAW[(RAW["op"] == "d2h") & (RAW["nbytes"] == size) & ~RAW["non_blocking"]]
    return (_one(d2h, method="cpu", host_memory="pageable"), _one(d2h, method="copy_", host_memory="pageable"),
            _one(d2h, method="copy_", host_memory="pinned"),
            _one(RAW[(RAW["nbytes"] == size) & RAW["non_blocking"]], op="d2h", method="copy_", host_memory="pinned"))


def test_the_cpu_ladder_reads_every_step_back_from_the_json(h200):
    """.cpu() 181.1 ms against copy_ into a touched pageable buffer 17.75 ms at 256 MiB: 163 ms (90%) is the fresh
    destination; the pinned copy_ 4.97 ms leaves 12.8 ms to the driver's staging; the DMA's device time 4.85 ms."""
    size = 256 * MiB
    call, touched, pinned, twin = _cpu_rows_at_256_mib()
    ladder = h200["d2h-cpu"]
    assert (ladder.size, ladder.run) == (size, "full.json")
    assert [r.median_s for r in ladder.rungs] == [call["median"], touched["median"], pinned["median"],
                                                  twin["device_seconds"]]
    fresh, staging, launch = ladder.steps
    assert fresh.seconds == pytest.approx(call["median"] - touched["median"])
    assert (round(call["median"] * 1e3, 1), round(touched["median"] * 1e3, 2)) == (181.1, 17.75)
    assert (round(fresh.seconds * 1e3), round(ladder.share(fresh), 2)) == (163, 0.90)
    assert round(staging.seconds * 1e3, 1) == 12.8 and round(twin["device_seconds"] * 1e3, 2) == 4.85
    assert launch.seconds == pytest.approx(pinned["median"] - twin["device_seconds"]) and launch.seconds < 0.13e-3
    # the step's interval is its two rungs' ratio's (unpaired: rounds and pageable drift), as a share of the call:
    # 1 - 1/r of the rung above, never past it
    assert fresh.ratio.basis == "rounds" and fresh.ratio.value == pytest.approx(call["median"] / touched["median"])
    assert ladder.share_bounds(fresh) == pytest.approx((1 - 1 / fresh.ratio.low, 1 - 1 / fresh.ratio.high))
    assert ladder.share_bounds(staging) == pytest.approx(tuple(touched["median"] / call["median"] * (1 - 1 / r)
                                                               for r in (staging.ratio.low, staging.ratio.high)))
    assert "163 ms (90%; 87-92%)" in ladder_text.sentence(ladder, fresh)
    assert [step.told for step in ladder.steps] == [True, True, False]  # the launch step: 2.4% apart, can't tell
    assert sum(p[1] for p in ladder.parts()) == pytest.approx(call["median"])


def test_the_to_cpu_ladder_shares_the_lower_rungs(h200):
    to, cpu = h200["d2h-to"], h200["d2h-cpu"]
    assert [(r.label, r.median_s) for r in to.rungs[1:]] == [(r.label, r.median_s) for r in cpu.rungs[1:]]
    assert round(to.top.median_s * 1e3) == 217 and round(to.steps[0].seconds * 1e3) == 199


def test_a_step_whose_interval_holds_zero_is_cant_tell(h200):
    """Pageable .to(device) against pageable copy_ at 1 GiB: 1.56 ms apart with 5 rounds each, spread over 10 ms."""
    h2d = h200["h2d-to"]
    device = h2d.steps[0]
    low, high = h2d.share_bounds(device)
    assert low < 0 < high and not device.told
    assert h2d.share(device) is None
    assert "can't tell" in ladder_text.sentence(h2d, device) and "%" not in ladder_text.sentence(h2d, device)
    assert h2d.steps[1].told and round(h2d.steps[1].seconds * 1e3) == 114


def test_the_host_ladder_holds_on_the_gpu_run_and_on_a_cpu_run(h200, tmp_path):
    """clone() allocates a fresh host destination, copy_ into a touched buffer does not: told on the H200 (unpaired,
    its drift by regime) and on a busy CPU run (paired blocks), once its copy_ is off the scheduler's ticks."""
    quick = off_ticks(tmp_path, ROOT / "tests" / "data" / "cpu-quick-sample.json", steady=True)  # paired at 64 MiB
    for ladder, raw, size in ((h200["host-clone"], RAW, 2**30), (_by_key([quick])["host-clone"], _raw(quick), 64 * MiB)):
        host = raw[(raw["op"] == "host") & (raw["nbytes"] == size)]
        # a case in blocks: its rounds pooled over the blocks (every block kept them), as the loader merges them
        clone, copy = (float(np.median(np.concatenate(list(rows["data"])))) for rows in (
            host[host["method"] == "clone"], host[(host["method"] == "copy_") & host["variant"].isna()]))
        assert ladder.size == size
        assert ladder.steps[0].seconds == pytest.approx(clone - copy)
        assert ladder.steps[0].told
    assert not {"d2h-cpu", "h2d-to"} & set(_by_key([CPU]))


def test_rows_of_two_runs_are_never_mixed(h200):
    """The quick-scenarios file came from another boot: the ladders read full.json only, the same as alone."""
    merged = _by_key([H200 / "full.json.gz", H200 / "quick-scenarios.json"])
    assert {key: ladder.run for key, ladder in merged.items()} == {key: "full.json" for key in h200}
    assert {k: [r.median_s for r in v.rungs] for k, v in merged.items()} == {
        k: [r.median_s for r in v.rungs] for k, v in h200.items()}


def test_the_registered_control_splits_staging_from_the_fresh_destination(tmp_path):
    """d2h_registered's four calls at one size: .cpu() 40 ms, copy_ into a touched pageable buffer 10 ms, into that
    buffer page-locked in place 5 ms: 30 ms fresh destination, 5 ms the driver's staging, 5 ms the copy itself."""
    from handfed import bench, gpu_machine, steady, write

    rows = [bench("d2h_registered", method, "cuda:0", "cpu", 64 * MiB, seconds, host_memory=memory, variant=variant)
            for method, memory, variant, seconds in (("cpu", "pageable", "cpu", 0.040),
                                                     ("copy_", "pageable", "pageable", 0.010),
                                                     ("copy_", "registered", "registered", 0.005),
                                                     ("copy_", "pinned", "pinned", 0.0045))]
    found = _by_key([write(tmp_path / "run.json", rows + steady(), gpu_machine())])["d2h-registered"]
    assert found.size == 64 * MiB and found.top.median_s == pytest.approx(0.040)
    assert [(step.factor.split(":")[0], round(step.seconds, 6), step.told) for step in found.steps] == [
        ("the fresh destination", 0.030, True), ("the driver's staging copy through its pinned bounce buffer", 0.005, True)]
    assert found.base.median_s == pytest.approx(0.005)


# -- The ladders in the Markdown export (the PR comment, index.md), read back on the sample -----------------------


def _markdown_table(markdown: str, title: str) -> list[list[str]]:
    """The cells of the ladder table under the bold line that starts with ``title``."""
    lines = markdown.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"**{title}"))
    assert lines[at + 2] == "| step | case | factor removed | median difference | share (interval) |"
    rows = []
    for line in lines[at + 4:]:
        if not line.startswith("| "):
            break
        rows.append(line[2:-2].split(" | "))
    return rows


@pytest.fixture(scope="module")
def markdown() -> str:
    from xferbench.analyze.report.export import to_markdown
    from xferbench.analyze.report.story import Story
    from xferbench.analyze.view import RunView

    return to_markdown(Story.of(RunView.of(load([H200 / "full.json.gz"]))))


def test_the_markdown_reads_every_cpu_step_back_from_the_json(markdown):
    """.cpu() at 256 MiB, 181.1 ms = fresh destination 163 ms + staging 12.8 ms + launch ~119 µs + DMA 4.85 ms, each
    step's share with its interval: 1 - 1/r of the rung above over its ratio's interval (RunView.ratio), in shares of
    the call."""
    from xferbench.units import format_seconds as s

    call, _, _, dma = _cpu_rows_at_256_mib()
    dma_s = dma["device_seconds"]
    ladder = RunView.of(load([H200 / "full.json.gz"])).ladders[0]

    def share(step) -> str:
        above = step.above.median_s / call["median"]
        ends = [f"{above * (1 - 1 / r):.0%}" for r in (step.ratio.low, step.ratio.high)]
        return f"{step.seconds / call['median']:.0%} ({ends[0][:-1]}-{ends[1]})"

    fresh, staging, launch = (s(step.seconds) for step in ladder.steps)
    assert _markdown_table(markdown, ".cpu() of 256 MiB: 181 ms") == [
        ["the call", ".cpu(): d2h pageable cpu cuda:0->cpu", "–", f"median {s(call['median'])}", "100%"],
        ["1", "copy_ into a touched pageable buffer: d2h pageable copy_ cuda:0->cpu",
         "the fresh destination: what the call pays beyond a copy into a buffer already touched", fresh,
         share(ladder.steps[0])],
        ["2", "copy_ into a pinned buffer: d2h pinned copy_ cuda:0->cpu",
         "the driver's staging copy through its pinned bounce buffer", staging, share(ladder.steps[1])],
        # 119 µs between rungs 2.4% apart: their ratio's interval holds 1, so no share
        ["3", "the DMA: d2h pinned non-blocking copy_ cuda:0->cpu (device time)",
         "the call beyond its DMA: launch and synchronization, and "
         "what else the blocking call adds over its non-blocking twin's device time", launch,
         f"can't tell (the two rungs could see ≥ {ladder.steps[2].ratio.could_see:.2f}×)"],
        ["left", "d2h pinned non-blocking copy_ cuda:0->cpu (device time)",
         "what is left: the DMA (the copy's own device time)", f"median {s(dma_s)}", "3%"]]
    assert (fresh, staging, launch, s(dma_s)) == ("163 ms", "12.8 ms", "119 µs", "4.85 ms")
    assert (share(ladder.steps[0]), share(ladder.steps[1])) == ("90% (87-92%)", "7% (6-8%)")


def test_the_markdown_says_cant_tell_and_gives_no_share(markdown):
    """Pageable .to(device) against pageable copy_ at 1 GiB: the interval holds zero, so no share is printed."""
    rows = _markdown_table(markdown, ".to(device) from pageable memory of 1 GiB")
    assert rows[1][:3] == ["1", "copy_ from pageable memory into a device buffer: h2d pageable copy_ cpu->cuda:0",
                           "the fresh device destination (the caching allocator)"]
    assert rows[1][3] == "1.56 ms" and rows[1][4].startswith("can't tell (the two rungs could see ≥")
    assert [row[0] for row in rows] == ["the call", "1", "2", "3", "left"]
    assert [title for title in ("**.cpu() of", "**.to(device) of", "**.to(device) from", "**clone() of")
            if title in markdown] == ["**.cpu() of", "**.to(device) of", "**.to(device) from", "**clone() of"]


def test_the_markdown_ladder_escapes_what_comes_from_the_file(tmp_path):
    """A run's file name is data: a | or [ in it must not break the table or make a link (xferbench.escape)."""
    from xferbench.analyze.report.export import to_markdown
    from xferbench.analyze.report.story import Story
    from xferbench.analyze.view import RunView

    other = tmp_path / "a|b[1].json"
    other.write_text(CPU.read_text())
    text = to_markdown(Story.of(RunView.of(load([CPU, other]))))
    (line,) = [line for line in text.splitlines() if line.startswith("**clone() of")]
    assert line.endswith(r"(host pageable clone cpu, a\|b\[1\])")


def test_what_is_left_has_a_share_only_where_the_run_tells_the_call_from_it(h200):
    """The CPU sample's clone at 16 MiB: its one step can't tell (no evidence of the run's drift), so its copy_ is no
    59% of the call (a fresh-eyes reading found the shares not adding up); the H200's .cpu() at 256 MiB is told from
    its DMA beyond doubt, so the DMA keeps its 3% though a step between them can't tell."""
    (clone,) = [ladder for ladder in RunView.of(load([CPU])).ladders if ladder.key == "host-clone"]
    assert clone.left_share is None and clone.whole is not None and not clone.whole.judged
    assert ladder_text.rows(clone)[-1][-1] == "can't tell (the run repeated no case to measure its drift)"
    cpu = h200["d2h-cpu"]
    assert not all(step.told for step in cpu.steps) and cpu.whole is not None and cpu.whole.resolved
    assert ladder_text.rows(cpu)[-1][-1] == "3%"
    table = ladder_text.ladder_table(RunView.of(load([CPU])))
    assert table is not None and table["rows"][0]["cells"][-1] == {"text": "636 µs", "title": "host pageable copy_ cpu"}
    # hovers: an unbounded interval is none (not "-636 µs to –"), and what is left one median (not "636 µs to 636 µs")
    assert table["rows"][0]["cells"][0]["title"] == ("the medians 448 µs apart, no size of the step: can't tell (the run "
                                                     "repeated no case to measure its drift); host pageable clone cpu − host "
                                                     "pageable copy_ cpu")


def test_a_step_no_interval_sizes_says_the_order_its_interleaved_rounds_give():
    """The busy run's clone against copy_ at 64 MiB: its ticks leave the step unjudged, yet in each of its 6 blocks
    every clone round (51.3 ms at fastest) lay above every copy_ round (23.9 ms at most): the step is above zero, as
    the first screen's unlisted change says; how much, can't tell (a reading found "can't tell" beside "saves time")."""
    ladder = _by_key([ROOT / "tests" / "data" / "cpu-busy-host.json"])["host-clone"]
    step = ladder.steps[0]
    assert step.ratio.apart == (6, pytest.approx(0.0513, abs=5e-5), pytest.approx(0.0239, abs=5e-5))
    assert ladder_text.rows(ladder)[1][-1] == (
        "above zero: every round of clone() took longer than every round of copy_ into a touched buffer, in 6 "
        "interleaved blocks (quickest 51.3 ms against slowest 23.9 ms); how much, can't tell (the faster side's rounds waited "
        "for the CPU, and the slower side's too)")
    cell = ladder_text.ladder_table(RunView.of(load([ROOT / "tests" / "data" / "cpu-busy-host.json"])))["rows"][0]["cells"][0]
    assert cell["text"] == "above zero" and cell["title"].startswith(
        "the medians 54.5 ms apart, no size of the step: above zero: every round of clone()")
    # the figure says it alike: its legend and the hatched step's hover
    from xferbench.analyze.report.plots import ladder_figure
    from xferbench.analyze.report.svg import to_svg

    svg = to_svg(ladder_figure(RunView.of(load([ROOT / "tests" / "data" / "cpu-busy-host.json"]))))
    assert "above zero, how much can't tell (the faster side's rounds" in svg
    assert "every round of clone() took longer than every round of copy_ into a touched buffer, in 6" in svg
    # the CPU sample's clone step: no blocks, no order; can't tell as before
    quiet = _by_key([CPU])["host-clone"].steps[0]
    assert quiet.ratio.apart is None and ladder_text.untold(quiet).startswith("can't tell (")


def test_the_markdown_says_cpu_and_to_device_ladders_run_one_code():
    """The H200's .cpu() and .to(device) ladders (163 ms, 90%; 199 ms, 92%) run one code path: the page's caption says
    so with whether they differ by their own interval (217 against 181 ms: can't tell), and a reading found the
    Markdown's two tables without it. A run without both ladders says nothing of it."""
    from xferbench.analyze.report.export import to_markdown
    from xferbench.analyze.report.story import Story

    same = (".to(device) to the CPU runs .cpu()'s code on the same lower rungs: its table and .cpu()'s; whether they "
            "differ, the run cannot tell (217 ms against 181 ms); the code being one, a difference would be its drift.")
    h200 = to_markdown(Story.of(RunView.of(load([H200 / "full.json.gz"]))))
    assert h200.count(same) == 1 and h200.index(same) > h200.index("| step | case | factor removed")
    assert "runs .cpu()'s code" not in to_markdown(Story.of(RunView.of(load([CPU]))))
