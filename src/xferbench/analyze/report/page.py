"""One self-contained HTML page from a run's view: findings, plots, tables, machine.

Beside ``x.html``, ``write_report`` writes ``x.csv`` and ``x.md`` (export.py). Figures are
inline SVG with a hover title per point; the page loads nothing from anywhere. The page's
words are the run's story (story.py), its figures and tables read the run's view
(analyze/view.py); both are built once per page.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
import markupsafe

from ... import __version__
from ...escape import no_bidi
from ...families import FAMILIES, moving_ops, order_of
from ...output import write_atomic, write_together
from ...units import format_bytes, format_number, format_seconds
from ..load.results import Results
from ..view import RunView
from .export import to_csv, to_markdown
from .plots import Plot, as_plot, render, scenario_plot
from .story import Story
from .svg import rounds_text

if TYPE_CHECKING:
    from .other_tools import PeerFigure

__all__ = ["LEAD", "companions", "scenario_sections", "write_atomic", "write_report"]

def _inert(value: Any) -> Any:
    """Every value the page shows, bidi controls written as their codes: HTML escaping leaves them be, and one in a
    case name would show it reversed. Safe markup (an inline figure) stays markup: the codes are plain text."""
    if isinstance(value, markupsafe.Markup):
        return markupsafe.Markup(no_bidi(str(value)))
    return no_bidi(value) if isinstance(value, str) else value


_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("xferbench.analyze.report", "templates"),
    autoescape=True,  # every string from a JSON file is escaped
    undefined=jinja2.StrictUndefined,
    finalize=_inert,
)


_ENV.filters.update(number=format_number, seconds=lambda v: format_seconds(None if v is None else float(v)), size=format_bytes)


#: The figures of this run's GPU-to-CPU story, drawn right after the key findings.
LEAD = ("bandwidth-d2h", "ladder")


def _table(view: RunView) -> list[dict[str, Any]]:
    """Every row, in report order, with the number of the machine instance it came from (shown when there are several),
    its rounds and calls a round (``rounds_text``), and whether the bytes set its time (``RunView.waits``: where not,
    its GB/s is no bandwidth); a size whose one-call rounds waited for the CPU states none, as the first screen."""
    frame = view.numbered(view.rows)
    frame = frame.assign(_o=frame["op"].map(order_of), waited=view.waiting(frame) & frame["bandwidth_gbps"].notna(),
                         _w=view.waits_off_ticks).sort_values(["_o", "path", "nbytes"])
    rows = frame.to_dict("records")  # a dict a row, made once: no Series
    for row in rows:
        row["calls"] = rounds_text(row) + (", its rounds waited for the CPU" if row.pop("_w") else "")
        del row["data"], row["_o"]
    return rows


#: A simulated page's tags: of a figure or scenario whose rows all ran for real, and of one that holds both kinds.
MEASURED = "Measured for real on this CPU."
MIXED = "Simulated machine: its CPU-only cases measured; a case that touches a GPU is the cost model's, its CPU steps too."


def _clocks(view: RunView) -> dict[str, str]:
    """On a simulated page, the tag of each figure and scenario holding real rows (the host's copies, gloo's collectives;
    the CPU side of a module's moves and of the image batch's placement, and of the figures of several moving families):
    every other keeps "not a measurement"."""
    if not view.simulated or not (simulated := view.priced(view.rows)).any():
        return {}
    real, modelled = set(view.rows.loc[~simulated, "op"]), set(view.rows.loc[simulated, "op"])
    ranks = view.rows.get("world_size")  # a distributed row's; none where the run ran no collective
    together = ranks is not None and bool((simulated & ranks.notna()).any())
    tags = {key: MEASURED for op in real - modelled for key in (op, f"bandwidth-{op}")} | dict.fromkeys(real & modelled, MIXED)
    # the figures of several moving families (the ladder, the route, the matrix) hold the host's real copies too
    several = dict.fromkeys(("ladder", "cost", "matrix"), MIXED) if real & set(moving_ops()) else {}
    return tags | several | ({} if together else {"distributed": MEASURED})


def scenario_sections(story: Story) -> list[dict[str, Any]]:
    """One section per scenario present in the results, with its plot and words."""
    from .distributed import section as distributed_section

    view, sections = story.view, []
    for op, (text, caption) in story.scenarios.items():
        family = FAMILIES[op]
        sections.append({"key": op, "title": family.title, "text": text, "plots": [as_plot(op, family.title, caption,
                         scenario_plot(view, op))], "table": story.break_even if family.break_even else None})
    return sections + [s for s in [distributed_section(view)] if s]


def _svg(plots: list[Plot]) -> list[Plot]:
    """Mark each figure's SVG safe for the template: it is matplotlib's, with titles escaped by ElementTree."""
    return [plot if plot.svg is None else dataclasses.replace(plot, svg=markupsafe.Markup(plot.svg)) for plot in plots]


def _render(view: RunView, history: list[Plot] | None, extra_sections: list[dict[str, Any]] | None,
            peers: list[PeerFigure] | None) -> tuple[str, str]:
    """The HTML page and its Markdown summary: the run's words told once (story.py), its figures drawn from the view."""
    table, clocks = _table(view), _clocks(view)
    story = Story.of(view, peers)
    sections = scenario_sections(story) + (extra_sections or [])
    for section in sections:
        section["plots"] = _svg(section["plots"])
    drawn = _svg(render(view, story.figures, story.cliff))
    html = _ENV.get_template("report.html.j2").render(
        story=story,  # every sentence and table of words
        version=__version__,
        results=view.results,
        simulated=view.simulated,
        has_accelerator=view.has_accelerator,
        plots=[plot for plot in drawn if plot.key not in LEAD],
        lead=[plot for plot in drawn if plot.key in LEAD],
        history=_svg(history or []),
        sections=sections,
        table=table,
        machine_json=json.dumps(view.machine_info, indent=1, sort_keys=True, default=str),
        clocks=clocks,  # a simulated page's figures and scenarios of real rows: no "not a measurement" tag
        commit=view.results.commit_info,
    )
    return html, to_markdown(story)


def companions(output: Path) -> tuple[Path, Path]:
    """The CSV and Markdown files written beside a report: same name, ``.csv`` and ``.md``."""
    return output.with_suffix(".csv"), output.with_suffix(".md")


def write_report(run: Results | RunView, output: Path, history: list[Plot] | None = None,
                 extra_sections: list[dict[str, Any]] | None = None,
                 peers: list[PeerFigure] | None = None) -> Path:
    """Write ``output`` (HTML) and its ``companions`` (CSV, Markdown) from one view of the run, all or none
    (``output.write_together``). Returns ``output``."""
    if output.suffix in (".csv", ".md"):
        raise ValueError(f"{output}: the report is HTML; its CSV and Markdown are written beside it")
    view = RunView.of(run)
    html, markdown = _render(view, history, extra_sections, peers)
    (csv_path, markdown_path), csv = companions(output), to_csv(view)
    write_together({output: html, csv_path: csv, markdown_path: markdown}, run=",".join(view.results.boot_ids))
    return output
