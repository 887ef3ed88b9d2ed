"""``store comment`` (analyze/gate/comment.py): its input comes from the job that ran the pull request's code, so rendered
as GitHub renders it, only xferbench's structure survives (the heading, text, a table); the input's text is inert."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from test_escape import GFM, LINKED, made, payload, rendered_text
from xferbench.analyze.gate import ab, compare
from xferbench.analyze.gate import comment as note

from hostile_inputs import FAST

pytestmark = pytest.mark.hostile

#: What a hostile job could write into compare.md around (or instead of) the table.
HOSTILE = """### xferbench comparison

All clear <img src=https://evil.example/x.png> @octocat fixes #1, see [here](https://evil.example) https://evil.example
<details><summary>0 regressions</summary>

# All clear: 0 regressions
```
| case | verdict |
|---|---|
| <script>alert(1)</script> | [ok](https://evil.example) @team |
| ![x](https://evil.example/x.png) | #2 www.evil.example |
> quoted
    indented code
<!-- xferbench-compare -->
"""


def _inert(markdown: str) -> str:
    html = GFM.render(markdown)
    assert not re.search(r"<(a|img|script|details|summary|iframe|pre|code|blockquote)\b", html, re.IGNORECASE), html
    assert not re.search(r"<!--", html.replace("<!-- xferbench-compare -->", "", 1)), html
    assert not LINKED.search(rendered_text(html)), html
    return html


def test_hostile_markdown_is_posted_as_text() -> None:
    html = _inert(note.comment(HOSTILE))
    assert re.findall(r"<h[1-6]>.*?</h[1-6]>", html) == ["<h3>xferbench comparison</h3>"]
    assert html.count("<tr>") == 3  # the header and the two rows, each cell's text kept
    assert "<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>" in html and "<td>![x](https:" in html


@FAST
@given(path=payload, version=payload, text=payload)
@example(path="p", version="v", text="```")
@example(path="a \\| b", version="\\", text="| x |\n|---|")
@example(path="\n", version="\n", text="_0_")  # escaped at its line's start, not after "across machines: "
def test_compare_s_own_markdown_shows_the_same_after_it(path: str, version: str, text: str) -> None:
    """compare's and ab's Markdown of any case names: the comment renders the same text, the same table."""
    rows = [made(path, version), made("host pageable copy_ cpu")]
    for markdown in (compare.to_markdown(rows, 3, 3, differences=[text], notes=[text]),
                     ab.to_markdown(ab.AbRun([ab.AbCase(path, 4, "latency", 8, 1.5, 1.2, 1.8, 0.01, 0.02,
                                                        "regression")], [text]))):
        original, posted = GFM.render(markdown), _inert(note.comment(markdown))
        shown = [rendered_text(html).replace("\u2060", "").split() for html in (original, posted)]
        assert shown[1] == shown[0]  # the same words (the joiners that break links aside)
        assert posted.count("<tr>") == original.count("<tr>")


@FAST
@given(lines=st.lists(payload | st.sampled_from(["| a | b |", "|---|---|", "|-|", "### xferbench comparison", ""]),
                      max_size=12))
def test_any_input_is_inert(lines: list[str]) -> None:
    """Whatever the input holds, the comment links nothing, loads nothing, notifies no one, and has at most the one
    heading; a table it holds keeps its rows."""
    html = _inert(note.comment("\n".join(lines)))
    assert len(re.findall(r"<h[1-6]>", html)) <= 1
