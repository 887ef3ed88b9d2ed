"""The first screen's budget, read off the committed H200 page and a real CPU run's: what a reader meets before the
first figure is short, and each key finding's headline is a line with a few figures, its evidence folded beneath."""

import html
import re
from pathlib import Path

import pytest

from xferbench.analyze.load.results import load
from xferbench.analyze.report.findings import findings
from xferbench.analyze.report.page import build_html
from xferbench.analyze.view import RunView

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
        ("host clone (new tensor every call)", "203 ms", "0.331"),
        ("host copy_ into an existing buffer", "39.9 ms", "1.68")]


def test_change_2_cites_no_break_even_table_the_page_does_not_hold(tmp_path):
    """The H200 run without its pin_memory scenario still lists pinning (from the h2d family's copies) but has no
    break-even table: the Markdown and the console give no break-even line, whatever other section carries a table (a
    priced trace's; the page had taken the first section's table for the break-even's and failed on it)."""
    import dataclasses

    from xferbench.analyze.report.page import write_report
    from xferbench.analyze.report.story import Story

    results = load([ROOT / "reports" / "samples" / "h200" / "full.json.gz"])
    view = RunView.of(dataclasses.replace(results, frame=results.frame[results.frame["op"] != "pin_memory"]))
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
    said = ("None this run resolves: Copy into a buffer you keep (1.08 ms → 636 µs at 16 MiB): can't tell (the run gives "
            "no evidence of its drift).")
    assert f'<p id="changes-none">{said}</p>'.replace("'", "&#39;") in out.read_text()
    assert f"## What to change here\n\n{said}\n" in out.with_suffix(".md").read_text()
