"""Text from a run file made inert where it is shown: a Markdown cell, a terminal or CI log line, a CSV cell, HTML.

A run file is input the suite does not trust (a pull request's run feeds the PR comment, the CI log and the
dashboard): its strings (case paths, device names, versions) must stay inside the cell or line they are put in.
Each function keeps the text readable and neutralizes only what the medium would interpret. Imports nothing.
"""

from __future__ import annotations

import re

__all__ = ["csv_cell", "markdown", "no_bidi", "one_line", "terminal"]

#: Unicode's bidirectional controls (embeddings and overrides, isolates, the LRM, RLM and ALM marks): each reorders
#: how the text after it is shown, so a case name could read as another in a terminal, a comment or a page.
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
#: C0 and C1 controls, DEL, the Unicode line and paragraph separators and the bidi controls: each ends a line, drives
#: a terminal (ESC starts ANSI/OSC sequences) or reorders the text, so none reaches an output as itself.
_CONTROLS = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{_BIDI}]")
_BIDI_ONLY = re.compile(f"[{_BIDI}]")
#: A word joiner: breaks what GitHub links in the rendered text (@mentions, #references, bare URLs), unseen.
_JOINER = "\u2060"


def _visible(match: re.Match[str]) -> str:
    char = match.group(0)
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


def no_bidi(text: str) -> str:
    """``text`` with each bidi control written as its code (``\\u202e``): for HTML, whose escaping leaves them be."""
    return _BIDI_ONLY.sub(_visible, text)


def one_line(text: object) -> str:
    """``text`` on one line: every control character (newline, escape, ...) written as ``\\xNN``."""
    return _CONTROLS.sub(_visible, str(text))


#: Markdown that could leave a table cell or reach outside the comment: the cell's pipe, a backslash that would
#: escape it, raw HTML (``<img>``, ``<details>``), entities, links and images (``[``, ``]``), and code spans and
#: fences (a backtick or tilde run opens one, which swallows the lines after it).
_MARKDOWN = re.compile(r"([\\|<&\[\]`~])")
#: What starts a block where it opens a line (a note is a line of its own): a quote, a list item (``- ``, ``1. ``),
#: a heading's underline (``=``: one is enough under a paragraph; ``---``) or a thematic break (``***``, ``_ _ _``).
#: Plain figures (``2.00x``, ``-5%``) are left as they are.
_BLOCK_START = re.compile(r"^(\d{1,9})?(?:[.)](?=\s|$))|^(?:[>=_]|[-+*](?=\s|$)|[-*]{2,})")
#: An ``_`` or ``*`` that could open emphasis: at the start or after a space or punctuation, before a non-space
#: (``copy_`` opens nothing; `` _0_`` would show an italic 0).
_EMPHASIS = re.compile(r"(?<![^\s!-/:-@\[-`{-~])([_*])(?=\S)")
#: What GitHub turns into a link or a notification after rendering: mentions, issue references, bare URLs.
_LINKED = re.compile(r"(@|#|://|www\.)", re.IGNORECASE)


def markdown(text: object) -> str:
    """``text`` as literal inline Markdown (GitHub's): one line, no HTML, link, image, mention nor reference."""
    escaped = _EMPHASIS.sub(r"\\\1", _MARKDOWN.sub(r"\\\1", one_line(text)))
    leading = len(escaped) - len(escaped.lstrip(" "))
    escaped = "\u00a0" * leading + escaped[leading:]  # no-break spaces indent nothing: never a code block
    if found := _BLOCK_START.match(escaped):  # a backslash before its first mark makes it text
        mark = len(found.group(1) or "")
        escaped = escaped[:mark] + "\\" + escaped[mark:]
    return _LINKED.sub(lambda m: m.group(0)[0] + _JOINER + m.group(0)[1:], escaped)


#: GitHub Actions workflow commands: ``::name ...::`` at a line's start, and the older ``##[name]`` anywhere.
_WORKFLOW = re.compile(r"::|##\[")


def terminal(text: object) -> str:
    """``text`` for a terminal or a CI log: one line, no escape sequence, no workflow command."""
    return _WORKFLOW.sub(lambda m: m.group(0)[0] + _JOINER + m.group(0)[1:], one_line(text))


#: What a spreadsheet reads as the start of a formula (OWASP's CSV injection list), and the apostrophe itself: a cell
#: that begins with one always carries the escape, so one apostrophe stripped is the value, whatever it was.
_FORMULA = ("=", "+", "-", "@", "\t", "\r", "\n", "'")


def csv_cell(text: str) -> str:
    """A CSV cell on its row, that a spreadsheet shows as text: on one line (a lone carriage return is no line end to
    Python's csv writer, which leaves it unquoted), and one that would start a formula, or starts with an apostrophe,
    gets a leading apostrophe."""
    flat = one_line(text)
    return "'" + flat if flat.startswith(_FORMULA) else flat
