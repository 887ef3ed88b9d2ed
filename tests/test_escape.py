"""Text from a run file never leaves its cell or line (escape.py): in compare's and ab's PR comment, the report's
Markdown and CSV, the terminal and CI log, and the store's dashboard. Hypothesis draws the fields from the payloads
that broke them (newlines, pipes, HTML, @mentions, images, links, ANSI/OSC escapes, workflow commands, formulas)."""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import json
import re
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from xferbench import escape
from xferbench.analyze import store
from xferbench.analyze.gate import ab, compare
from xferbench.analyze.load.results import Results, load
from xferbench.analyze.report import export
from xferbench.analyze.report.findings import Said
from xferbench.analyze.report.story import Story
from xferbench.analyze.view import RunView

from hostile_inputs import FAST, put

pytestmark = pytest.mark.hostile

SAMPLE = Path(__file__).parent / "data" / "cpu-sample.json"
PAYLOADS = ["\n", "\r\n", "|", "\\", "<script>alert(1)</script>", "@octocat", "![x](https://evil.example/x.png)",
            "<img src=https://evil.example/x>", "<details><summary>x</summary>", "[click](https://evil.example)",
            "https://evil.example/a", "www.evil.example", "#1", "&#64;octocat", "\x1b[31m", "\x1b]8;;https://evil\x07",
            "\n::error::All clear", "::add-mask::secret", "##[error]x", "=HYPERLINK(\"https://evil\")", "+1", "-2",
            "@SUM(A1)", "\t", "\u2028", "\x00", "\x9b", "# All clear: 0 regressions", "| --- |", "`", "*", "\u202e",
            "\u2066", "'", "=", "_ _ _"]
#: A field's content: payloads and arbitrary text, glued together.
payload = st.lists(st.sampled_from(PAYLOADS) | st.text(max_size=4), min_size=1, max_size=5).map("".join)
GFM = MarkdownIt("commonmark").enable("table")
LINKED = re.compile(r"@[A-Za-z0-9]|://|www\.|#\d", re.IGNORECASE)


@functools.cache
def _sample() -> Results:
    """The sample loaded once: each example changes a copy (``dataclasses.replace``), never this one."""
    return load([SAMPLE])


@functools.cache
def _sample_view() -> RunView:
    """A view of the sample of its own, its facts (ladders, fits, drift) derived once for every example."""
    return RunView.of(load([SAMPLE]))


def rendered_text(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


def assert_inert_markdown(markdown: str, rows: int, headings: int) -> None:
    """Rendered as GitHub would: the table keeps its rows, nothing links, loads or notifies, no heading is added."""
    html = GFM.render(markdown)
    assert html.count("<tr>") == rows + 1, html
    assert len(re.findall(r"<h[1-6]>", html)) == headings, html
    assert not re.search(r"<(a|img|script|details|summary|iframe)\b", html, re.IGNORECASE), html
    assert not LINKED.search(rendered_text(html)), html


def made(path: str, environment: str = "torch 2.13.0") -> compare.Comparison:
    return compare.Comparison(path, 16 * 2**20, "bandwidth", 1e-3, 2e-3, 2.0, 1.5, 2.6, 5.2, 0.25, 0.05, "history",
                              "regression", key=path, environment=(environment,))


@FAST
@given(path=payload, version=payload, note=payload)
@example(path="\n", version="\n", note="```")  # a fence in a note swallowed the table
@example(path="p", version="v", note="---")  # a heading's underline under the summary
@example(path="\n", version="\n", note="=")  # one "=" is an underline too (tox -e fuzz found it)
def test_compare_markdown_keeps_every_field_in_its_cell(path: str, version: str, note: str) -> None:
    rows = [made(path, version), made("host pageable copy_ cpu")]
    markdown = compare.to_markdown(rows, 3, 3, differences=[note], notes=[note])
    assert_inert_markdown(markdown, rows=2, headings=1)


@FAST
@given(path=payload, difference=payload)
def test_ab_markdown_keeps_every_field_in_its_cell(path: str, difference: str) -> None:
    case = ab.AbCase(path, 4, "latency", 8, 1.5, 1.2, 1.8, 0.01, 0.02, "regression")
    assert_inert_markdown(ab.to_markdown(ab.AbRun([case, case], [difference])), rows=2, headings=1)


@FAST
@given(path=payload, version=payload, note=payload)
def test_terminal_lines_stay_lines(path: str, version: str, note: str) -> None:
    """compare's and ab's text: as many lines as with a plain name, no control character, no workflow command."""
    plain = compare.to_text([made("p")], 3, 3, notes=["n"])
    text = compare.to_text([made(path, version)], 3, 3, notes=[note])
    ab_text = ab.to_text([ab.AbCase(path, 4, "latency", 8, 1.5, 1.2, 1.8, 0.01, None, "unchanged")], differences=[note])
    for output, lines in ((text, len(plain.splitlines())), (ab_text, 5)):
        assert len(output.split("\n")) == lines
        assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]", output)
        assert "::" not in output and "##[" not in output


@FAST
@given(value=payload)
@example(value="'")  # a cell that begins with an apostrophe: one stripped is the value
def test_csv_cells_are_text_on_their_row(value: str) -> None:
    """The report's CSV: every text field of the run, hostile, stays in its cell and never starts a formula; a cell
    that begins with an apostrophe carries the escape, so stripping one gives the value back."""
    results = dataclasses.replace(_sample(), frame=_sample().frame.head(3).copy())
    for column in ("name", "op", "src", "dst", "dtype", "path", "run", "datetime"):
        results.frame[column] = value
    rows = list(csv.reader(io.StringIO(export.to_csv(RunView.of(results)))))
    assert len(rows) == 4 and all(len(row) == len(export.CSV_COLUMNS) for row in rows)
    for row in rows[1:]:
        cell = row[export.CSV_COLUMNS.index("name")]
        assert cell.removeprefix("'") == escape.one_line(value)
        # every text column escaped, whatever its dtype: none starts a formula
        assert not any(row[export.CSV_COLUMNS.index(c)].startswith(("=", "+", "-", "@")) for c in ("name", "op", "src", "path"))


@FAST
@given(path=payload, source=payload, finding=payload)
def test_report_markdown_keeps_every_field_in_its_cell(path: str, source: str, finding: str) -> None:
    view = _sample_view()
    view.results.sources[:] = [source]  # all the Markdown reads of the run that an example changes
    model = [{"path": path, "alpha_us": 1.0, "alpha": "1 µs", "pipelined_alpha": "–", "stated_gbps": 10.0,
              "pipelined_gbps": None, "beta_basis": path, "largest_bytes": 4, "largest_gbps": 1.0, "link": path,
              "peak_gbps": 64.0, "efficiency": 0.5}] * 2  # a roof: its link's cell is hostile text too
    # A finding's headline and its evidence beneath it: both are the hostile text.
    said = Said(finding, f"{finding} (evidence)")
    story = dataclasses.replace(Story.of(view), findings=[said], model=model, peer_lines=[finding],
                                peer_plan=[finding])
    markdown = export.to_markdown(story)  # the story's parts told here are the hostile text
    html = GFM.render(markdown)
    # the α/β table's header and two rows, and each ladder's header, call, steps and what is left
    assert html.count("<tr>") == 3 + sum(len(ladder.steps) + 3 for ladder in view.ladders)
    assert not re.search(r"<(a|img|script|details|summary|iframe)\b", html, re.IGNORECASE)
    assert not LINKED.search(rendered_text(html))
    assert len(re.findall(r"<h1>", html)) == 1


@FAST
@given(runs=payload | st.integers() | st.none() | st.lists(st.integers()), newest=payload, who=payload)
def test_dashboard_escapes_another_machines_summary(tmp_path_factory: pytest.TempPathFactory, runs: object,
                                                    newest: str, who: str) -> None:
    """The index reads every machine's machine.txt (another job's): whatever it holds, no tag of it reaches the page."""
    root = tmp_path_factory.mktemp("store")
    folder = root / "machines" / "other-1a2b3c4d"
    folder.mkdir(parents=True)
    (folder / "machine.txt").write_text(json.dumps({"machine": "x", "runs": runs, "newest": newest,
                                                    "identity": {"GPUs": who}}))
    page = store.dashboard(root, machines=[]).read_text()
    assert page.count("<tr>") == 2 and "<script" not in page.lower() and "<img" not in page.lower()
    assert not re.search("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]", page)


@pytest.mark.parametrize("content", [b"not json", b"{}", b"[1, 2]", b'{"runs": "3", "newest": 5, "identity": []}',
                                     bytes(range(256))])
def test_a_damaged_machine_summary_is_a_row_not_a_crash(tmp_path: Path, content: bytes) -> None:
    folder = tmp_path / "machines" / "other-1a2b3c4d"
    folder.mkdir(parents=True)
    (folder / "machine.txt").write_bytes(content)
    page = store.dashboard(tmp_path, machines=[]).read_text()
    assert "machine.txt is damaged" in page


def test_escapes_are_readable() -> None:
    assert escape.markdown("a|b <i>") == "a\\|b \\<i>"
    assert escape.terminal("x\n::error::y\x1b[31m") == "x\\x0a:\u2060:error:\u2060:y\\x1b[31m"
    assert escape.csv_cell("=1+1") == "'=1+1" and escape.csv_cell("cpu") == "cpu"
    assert escape.csv_cell("'") == "''" and escape.csv_cell("it's") == "it's"


#: Unicode's bidirectional controls: each reorders the text shown after it (a case name read backwards).
BIDI = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f",
        "\u061c"]
BIDI_CHAR = re.compile("[" + "".join(BIDI) + "]")


@FAST
@given(text=st.lists(st.sampled_from(BIDI) | payload, min_size=1, max_size=6).map("".join))
def test_bidi_controls_are_inert_in_every_form(text: str) -> None:
    """No bidi control survives: each is written as its code (``\\u202e``), readable and visible."""
    for form in (escape.one_line, escape.terminal, escape.markdown, escape.csv_cell, escape.no_bidi):
        assert not BIDI_CHAR.search(form(text)), form
    assert escape.terminal("a\u202eb") == "a\\u202eb"


def test_bidi_controls_are_inert_in_the_html_report(tmp_path: Path) -> None:
    from fakes import build_html

    data = json.loads(SAMPLE.read_text())
    data["machine_info"]["cpu"]["brand_raw"], data["benchmarks"][0]["extra_info"]["src"] = "Intel \u202eGPU", "\u2066"
    html = build_html(load([put(tmp_path / "bidi.json", data)]))
    assert not BIDI_CHAR.search(html) and "\\u202e" in html


@pytest.mark.parametrize(("text", "inert"), [
    ("```", "\\`\\`\\`"), ("~~~", "\\~\\~\\~"), ("---", "\\---"), ("===", "\\==="), ("=", "\\="), ("_ _ _", "\\_ _ _"),
    ("- item", "\\- item"),
    ("1. item", "1\\. item"), ("> quote", "\\> quote"), ("    code", "\u00a0" * 4 + "code"),
    ("2.00x slower", "2.00x slower"), ("-5%", "-5%"),
])
def test_a_line_that_would_open_a_block_is_text(text: str, inert: str) -> None:
    """A note is a line of its own: what would open a code block, quote, list or heading there is written as text;
    figures such as 2.00x and -5% stay as they are."""
    assert escape.markdown(text) == inert
