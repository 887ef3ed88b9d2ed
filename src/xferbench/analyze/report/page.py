"""One self-contained HTML page from a run's view: findings, plots, tables, machine.

Beside ``x.html``, ``write_report`` writes ``x.csv`` and ``x.md`` (export.py). Figures are
inline SVG with a hover title per point; the page loads nothing from anywhere. Everything on
the page reads one ``RunView`` (analyze/view.py), built once per page.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
import markupsafe
import numpy as np

from ... import __version__
from ...escape import no_bidi
from ...families import FAMILIES, order_of
from ...families.core import peer_plan_sentences
from ...machine_facts import machine_table
from ...output import write_atomic, write_together
from ...units import format_bytes, format_seconds
from ..load.results import Results
from ..peer_plan import RecordedPlan
from ..view import RunView
from . import drift_text
from .break_even import break_even_table
from .changes import at_a_glance, changes
from .export import busy_notice, instance_numbers, instances_line, machine_line, to_csv, to_markdown
from .findings import findings, why_measured
from .model_text import fit_table
from .plots import Plot, as_plot, ladder_table, render, scenario_plot

if TYPE_CHECKING:
    from .other_tools import PeerFigure

__all__ = ["STORY", "build_html", "companions", "view_of", "write_atomic",
           "write_report"]

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


def _number(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "–"
    return f"{value:.{digits}g}"


_ENV.filters.update(number=_number, seconds=lambda v: format_seconds(None if v is None else float(v)), size=format_bytes)


#: The figures of this run's GPU-to-CPU story, drawn right after the key findings.
STORY = ("bandwidth-d2h", "ladder")


def _host_placement(view: RunView) -> list[tuple[str, str]]:
    """Where the h2d and d2h cases' host buffers sat (``RunView.host_placement``), where the run says."""
    placement = view.host_placement
    if placement is None:
        return []
    nodes = "; ".join(f"{gpu}: node {', '.join(str(n) for n in found) or '?'}" for gpu, found in placement.nodes.items())
    said = [f"on each GPU's NUMA node, as nvbandwidth places them ({nodes})"] if placement.placed else []
    if placement.unplaced:
        said.append(f"{placement.unplaced} case(s) where the GPU's node was unknown or off limits ran where the "
                    "process did")
    if placement.spilled:
        said.append(f"{placement.spilled} case(s) spilled: a page of the buffer sat off the GPU's node (that node full)")
    return [("h2d / d2h host buffers", "; ".join(said))] if said else []


def _table(view: RunView) -> list[dict[str, Any]]:
    """Every row, in report order, with the number of the machine instance it came from (shown when there are several)."""
    frame = view.rows.assign(instance=view.rows["run"].astype(str).map(instance_numbers(view)))
    ordered = frame.assign(_o=frame["op"].map(order_of)).sort_values(["_o", "path", "nbytes"])
    return ordered.drop(columns=["data", "_o"]).to_dict("records")


def scenario_sections(view: RunView) -> list[dict[str, Any]]:
    """One section per scenario present in the results, with its plot and findings."""
    from .distributed import section as distributed_section
    from .findings import scenario_findings

    frame = view.rows
    sections = []
    for op, family in FAMILIES.items():
        if family.kind not in ("scenario", "concurrent") or not (frame["op"] == op).any():
            continue
        plot = as_plot(op, family.title, scenario_caption(view, op, family.caption), scenario_plot(view, op))
        sections.append({"key": op, "title": family.title, "text": " ".join(scenario_findings(view, op)),
                         "plots": [plot], "table": break_even_table(view) if family.break_even else None})
    return sections + [s for s in [distributed_section(view)] if s]




#: What a scenario's caption says of a variant the run may not have measured, and what it says instead.
_UNMEASURED = {
    ("module_to", "first"): ("The first move copies every parameter; a second", "No first move to a device ran here (it "
                                                                              "needs a GPU). A second"),
    ("pin_memory", "pinned_to"): ("pinned_to: the DMA from a tensor pinned once, what each reuse costs; pin_cold / "
                                  "(to - pinned_to) reuses pay for pinning it.",
                                  "reused_pinned_to: a host copy into a reused pinned buffer, then the DMA. pinned_to "
                                  "(the DMA alone) did not run: the break-even takes the h2d family's copies."),
    ("placement", "move_then_convert"): ("moving the uint8 batch and converting on the device moves a quarter.",
                                         "moving the uint8 batch and converting on the device moves a quarter. Neither "
                                         "move ran here (they need a GPU): only the conversion on the CPU did."),
}


def scenario_caption(view: RunView, op: str, caption: str) -> str:
    """A scenario's caption, what it says of a variant the run did not measure replaced by saying so."""
    variants = view.variants(op)
    for (family_op, variant), (said, instead) in _UNMEASURED.items():
        if family_op == op and variant not in variants:
            caption = caption.replace(said, instead)
    return caption


def _svg(plots: list[Plot]) -> list[Plot]:
    """Mark each figure's SVG safe for the template: it is matplotlib's, with titles escaped by ElementTree."""
    return [plot if plot.svg is None else Plot(plot.key, plot.title, plot.caption, markupsafe.Markup(plot.svg),
                                               plot.missing) for plot in plots]


def view_of(run: Results | RunView) -> RunView:
    """The run's view: the one given, or one built here from a loaded run."""
    return run if isinstance(run, RunView) else RunView.of(run)


def _run_time(view: RunView) -> str | None:
    """``run 2026-11-30T17:18:02``; each run's time where the rows come from several (the newest is not all of them)."""
    times = view.run_times
    if times.empty:
        return None
    return f"run {times.max()}" if len(times) == 1 else "runs " + ", ".join(f"{run} {when}" for run, when in times.items())


def build_html(run: Results | RunView, history: list[Plot] | None = None,
               extra_sections: list[dict[str, Any]] | None = None, peers: list[PeerFigure] | None = None) -> str:
    return _render(view_of(run), history, extra_sections, peers)[0]


def _render(view: RunView, history: list[Plot] | None, extra_sections: list[dict[str, Any]] | None,
            peers: list[PeerFigure] | None) -> tuple[str, str]:
    """The HTML page and its Markdown summary, from one view of the run."""
    sections = scenario_sections(view) + (extra_sections or [])
    for section in sections:
        section["plots"] = _svg(section["plots"])
    key_findings, what_to_change = findings(view), changes(view)
    model = fit_table(view)
    peer_rows: list[dict[str, Any]] = []
    peer_lines: list[str] = []
    if peers:  # nvbandwidth's or nccl-tests' figures: their module is loaded only where such files were given
        from .other_tools import peer_table

        peer_rows, peer_lines = peer_table(view, peers)
    plan = RecordedPlan.of_fingerprint(view.fingerprint)
    peer_plan = peer_plan_sentences(plan, view.rows) if plan else []
    drawn = _svg(render(view))
    story = [plot for plot in drawn if plot.key in STORY]
    html = _ENV.get_template("report.html.j2").render(
        version=__version__,
        results=view.results,
        instances=instances_line(view) if view.several_instances else None,
        drift=drift_text.statement(view),
        busy=busy_notice(view),
        run_time=_run_time(view),
        machine_line=machine_line(view),
        simulated=view.simulated,
        has_accelerator=view.has_accelerator,
        findings=key_findings,
        changes=what_to_change,
        plots=[plot for plot in drawn if plot.key not in STORY],
        story=story,
        ladder=ladder_table(view),
        glance=at_a_glance(view),
        why=why_measured(view),
        history=_svg(history or []),
        sections=sections,
        model=model,
        peers=peer_rows,
        peer_lines=peer_lines,
        peer_plan=peer_plan,
        table=_table(view),
        machine=machine_table(view.machine_info) + _host_placement(view),  # machine_facts.py: the page's rows
        machine_json=json.dumps(view.machine_info, indent=1, sort_keys=True, default=str),
        commit=view.results.commit_info,
        sizes=view.sizes,
    )
    even = next((section["table"] for section in sections if section.get("table")), None)  # the pin_memory scenario's
    markdown = to_markdown(view, key_findings, model, peer_lines, peer_plan, what_to_change, even)
    return html, markdown


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
    view = view_of(run)
    html, markdown = _render(view, history, extra_sections, peers)
    csv_path, markdown_path = companions(output)
    write_together({output: html, csv_path: to_csv(view), markdown_path: markdown}, run=",".join(view.results.boot_ids))
    return output
