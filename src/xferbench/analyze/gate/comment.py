"""``store comment``: compare's (or ab's) Markdown made into one PR comment, its text inert whoever wrote it.

In the example workflow the Markdown comes from the job that ran the pull request's code, so it is read as
xferbench's structure (the heading, lines of text, a table) and every line and cell is escaped again
(``escape.markdown``): rendered as GitHub renders it, only that structure survives; raw HTML, links, images,
``@mentions`` and ``#references`` in it are text. Then it is cut to fit GitHub's comment limit.
"""

from __future__ import annotations

import re

from ...escape import markdown as inert

__all__ = ["HEADINGS", "MIN_COMMENT", "comment", "structure"]

#: The smallest ``comment`` limit: the marker, the summary and the note on the rows left out need about 300.
MIN_COMMENT = 1000
#: The headings compare's and ab's Markdown begin with: the only heading a comment keeps.
HEADINGS = ("### xferbench comparison", "### xferbench A/B")
#: A table's delimiter row (``|---|:--:|``): what makes the line above it a table's header.
_DELIMITER = re.compile(r"\|?(?:\s*:?-+:?\s*\|)*\s*:?-+:?\s*\|?")
#: A backslash escape as CommonMark reads it: a backslash before ASCII punctuation is that character.
_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")
#: The word joiner escape.markdown puts after ``@``, ``#`` and into URLs; it puts them back where they are needed.
_JOINER = "\u2060"


def _text(escaped: str) -> str:
    """The text a line or cell of Markdown shows, as far as escape.markdown wrote it: its escapes undone."""
    return _ESCAPED.sub(r"\1", escaped.replace(_JOINER, ""))


def _cells(row: str) -> list[str]:
    """A table row's cells, split at its pipes that are not escaped, the outer ones dropped."""
    cells, cell, chars = [], "", iter(row.strip())
    for char in chars:
        if char == "\\":
            cell += char + next(chars, "")
        elif char == "|":
            cells.append(cell)
            cell = ""
        else:
            cell += char
    cells.append(cell)  # after a closing pipe: empty, and dropped
    if row.strip().startswith("|"):
        cells = cells[1:]
    if len(cells) > 1 and not cells[-1].strip():
        cells = cells[:-1]
    return [cell.strip() for cell in cells]


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(inert(_text(cell)) for cell in cells) + " |"


def structure(markdown: str) -> list[str]:
    """The lines of ``markdown`` as xferbench's structure, each line of text and each cell escaped again: its first
    line kept when it is compare's or ab's heading, blank lines, tables (a header row, its delimiter row, then rows
    of as many cells), and any other line as one line of inert text."""
    lines = markdown.replace("\r\n", "\n").rstrip("\n").split("\n")
    out: list[str] = []
    width, header = 0, False  # the cells of the table being read (0 outside a table); its delimiter row is next
    for index, (line, following) in enumerate(zip(lines, [*lines[1:], ""], strict=True)):
        if index == 0 and line.strip() in HEADINGS:
            out.append(line.strip())
        elif not line.strip():
            out.append("")
            width = 0
        elif header:  # the header's delimiter row, written below it already
            header = False
        elif width and line.lstrip().startswith("|"):
            out.append(_row((_cells(line) + [""] * width)[:width]))
        elif line.lstrip().startswith("|") and _DELIMITER.fullmatch(following.strip()):
            cells = _cells(line)
            width, header = len(cells), True
            out += [""] if out and out[-1] else []  # a table of its own, not the end of the paragraph above it
            out += [_row(cells), "|" + "---|" * width]
        else:
            if width:  # a line right below a table would be read as one more row of it
                out.append("")
            width = 0
            out.append(inert(_text(line)))
    return out


def comment(markdown: str, limit: int = 60_000, marker: str = "<!-- xferbench-compare -->", more: str = "") -> str:
    """A PR comment under ``limit`` characters (GitHub refuses 65,536): the marker that finds it again, the
    summary, then table rows until the budget; a last line says how many rows are left for the full table.
    ``markdown`` is read as xferbench's ``structure``: its text is inert, whoever wrote it."""
    # Every line counts against the budget, the summary's too: a summary of 100,000 characters (or no table at all)
    # made a comment of 100,000 at --limit 1000. The note's own room is kept (``more`` cut to fit it).
    body, dropped = [marker], 0
    size = len(marker) + 1
    for line in structure(markdown):
        if dropped or size + len(line) + 1 > limit - 300:
            dropped += 1
            continue
        body.append(line)
        size += len(line) + 1
    if dropped:
        body += ["", f"… {dropped} more line(s) left out to stay under GitHub's comment limit. {more}"[:limit - size - 2].strip()]
    return "\n".join(body) + "\n"

