"""The store's dashboard in words (analyze/store.py draws and writes it): the index of machines, a machine's line
there, and the caption of a path's trend over its stored runs. No torch here."""

from __future__ import annotations

import html

from ...escape import no_bidi
from ...output import GENERATOR
from .history import BAND_CAPTION

__all__ = ["damaged_summary", "index_page", "trend_caption"]


def trend_caption(path: str, runs: int, changes: int) -> str:
    """A path's trend: what each point is, and how many changes of the software environment the dotted lines mark."""
    return (f"{path}: each run's time per size as compare judges it, relative to the first run that measured "
            f"it ({runs} runs); a triangle marks a lasting step" +
            (f"; dotted: environment changed ({changes})" if changes else "") + ". " + BAND_CAPTION)


def damaged_summary(name: str) -> str:
    """The identity cell of a machine whose summary file is not what the store writes."""
    return f"{name} is damaged: push a run of this machine to write it again"


def index_page(machines: str, rows: list[tuple[str, str, str, str]]) -> str:
    """The dashboard's index: a row per machine (its folder name, run count, newest run, identity), each a link to
    its page under ``machines``; every value escaped (another job wrote it), bidi controls written as their codes."""
    cells = []
    for name, runs, newest, who in rows:
        runs, newest, who = map(no_bidi, (runs, newest, who))  # HTML escaping leaves bidi be
        cells.append(f"<tr><td><a href='{machines}/{html.escape(name)}/index.html'>{html.escape(name)}</a>"
                     f"</td><td>{html.escape(runs)}</td><td>{html.escape(newest)}</td><td>{html.escape(who)}</td></tr>")
    return (f"<!doctype html><meta charset='utf-8'>{GENERATOR}<title>xferbench dashboard</title>"
            "<style>body{font-family:sans-serif;margin:2em}td,th{padding:.3em .8em;text-align:left}</style>"
            "<h1>xferbench: runs per machine</h1><p>Each machine's page is the report of its newest run, with a "
            "trend for every path over its stored runs.</p><table><tr><th>machine</th><th>runs</th><th>newest</th>"
            "<th>identity (newest run)</th></tr>" + "".join(cells) + "</table>\n")
