"""The committed sample pages (reports/samples/) are what the code writes now from their runs, compared on the
text a reader sees (figure titles, hover titles and tick labels included), never on SVG bytes."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("golden", ROOT / "tools" / "golden.py")
golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden)


@pytest.fixture(scope="module", params=sorted(golden.SAMPLES))
def written(request, tmp_path_factory):
    """A sample page written again from its run, with the committed one."""
    out = golden.write_sample(request.param, tmp_path_factory.mktemp("sample") / "index.html")
    return ROOT / request.param, out


def test_a_committed_sample_page_shows_what_the_code_writes(written):
    committed, fresh = written
    assert golden.visible_text(committed.read_text()) == golden.visible_text(fresh.read_text()), (
        f"{committed.relative_to(ROOT)} is stale: run {golden.COMMAND}")


def test_a_committed_sample_summary_is_what_the_code_writes(written):
    committed, fresh = written
    assert committed.with_suffix(".md").read_text() == fresh.with_suffix(".md").read_text(), (
        f"{committed.with_suffix('.md').relative_to(ROOT)} is stale: run {golden.COMMAND}")


def test_the_visible_text_leaves_out_svg_paths_ids_and_styles():
    page = ('<style>p {}</style><p>Key <b>findings</b></p><svg><path d="M 0 0" id="p1a"/><g id="x">'
            '<title>d2h 1 GiB: 19.4 ms</title><text>32 B</text></g></svg>')
    assert golden.visible_text(page) == ["Key", "findings", "d2h 1 GiB: 19.4 ms", "32 B"]


def test_a_changed_figure_title_makes_a_sample_stale():
    assert golden.visible_text("<svg><title>55.2 GB/s</title></svg>") != golden.visible_text(
        "<svg><title>55.3 GB/s</title></svg>")


@pytest.fixture(scope="module")
def readme_block():
    """The README block as the code writes it now from run 1."""
    return golden.readme_block()


def test_the_sample_readme_quotes_what_the_report_says_now(readme_block):
    readme = golden.README.read_text()
    assert golden.with_block(readme, readme_block) == readme, (
        f"{golden.README.relative_to(ROOT)}'s generated block is stale: run {golden.COMMAND}")


def test_a_stale_figure_in_the_readme_block_is_rewritten(readme_block):
    readme = golden.README.read_text()
    inside = readme.index(golden.BEGIN), readme.index(golden.END)
    stale = readme[:inside[0]] + readme[inside[0]:inside[1]].replace("364-379 ns", "366-378 ns") + readme[inside[1]:]
    assert stale != readme and golden.with_block(stale, readme_block) == readme


def test_the_readme_block_is_rewritten_between_its_marks_only():
    text = f"# README\n\nbefore\n{golden.BEGIN}\nold\nlines\n{golden.END}\nafter\n"
    assert golden.with_block(text, "new") == f"# README\n\nbefore\n{golden.BEGIN}\nnew\n{golden.END}\nafter\n"


@pytest.mark.parametrize("text", ["no marks\n", f"{golden.END}\n{golden.BEGIN}\n", f"{golden.BEGIN}\nno end\n"])
def test_a_readme_without_its_marks_in_order_is_an_error(text):
    with pytest.raises(ValueError, match="lacks its marks"):
        golden.with_block(text, "new")
