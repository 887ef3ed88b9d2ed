"""A priced trace in words (analyze/trace/pricing.py's ``Priced``): the console's text and the ``--json`` of
``xferbench price``, and the page's section (``report --trace``): a stacked bar per step, each group's price and fixes.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ...units import format_bytes, format_seconds
from ..trace.pricing import Priced
from .svg import WIDTH, as_plot, legend_outside, subplots, tip

__all__ = ["WHAT", "fix_said", "labels", "section", "to_json", "to_text"]

#: The parts of a step's bar, in order, with their colours: the GPU's two, then the host's two.
PARTS = (("compute_s", "compute (GPU kernels)", "tab:gray"), ("copy_s", "GPU copy", "tab:blue"),
         ("blocked_s", "host blocked on a copy", "tab:orange"), ("wait_s", "host waiting for the queue", "tab:red"))


#: What each fix is, as the console, the JSON and the page say it.
WHAT = {"pin": "pin the host buffer",
        "pin_non_blocking": "pin it and copy with non_blocking=True (the host pays the pipelined α)",
        "batch": "batch each step's copies into one (latency-bound: below α·β)",
        "remove_sync": "remove this synchronize, or move it off the step (it also saves the wait measured on the trace)"}


def labels(priced: Priced) -> list[str]:
    """Where the figures come from: the trace's GPU, the run's, whether they differ, the steps read."""
    recorded = priced.recorded or ["a GPU the trace does not name"]
    said = [f"trace recorded on {', '.join(recorded)}"
            + (f" (SIMULATED: {priced.simulated_trace})" if priced.simulated_trace else "")]
    if priced.run is None:
        said.append("no run given: the trace's own times and shares, nothing priced")
    else:
        gpus = priced.run_gpus or ["an unnamed GPU"]
        said.append(f"priced with run {', '.join(priced.run) or '(rows)'} on {', '.join(gpus)}" + (
            ", a SIMULATED run (--xfer-simulate): its prices read back a machine spec" if priced.run_simulated else ""))
        if set(gpus) != set(recorded):
            said.append("warning: the run's GPU is not the trace's: prices are the run's machine's, waits the trace's")
    numbers = [s.number for s in priced.steps if s.number is not None]
    said.append(f"steps read: ProfilerStep#{', #'.join(map(str, numbers))}" if numbers else
                "no ProfilerStep recorded: the trace's whole window is read as one step")
    return said


def fix_said(fix: dict[str, Any]) -> str:
    """A fix's saving with its interval (from the run's ``Ratio`` of the two paths, or the path's own rounds), "can't
    tell" where the interval holds zero, or why it is not priced."""
    if fix["saved_s"] is None:
        return "not priced: the run did not measure the path it needs"
    ratio = f"; the two paths: {fix['ratio'].text()}" if fix["ratio"] is not None else ""
    after = f", costing {format_seconds(fix['after_s'])} after" if fix["after_s"] is not None else ""
    if not fix["resolved"]:
        return f"can't tell (from {format_seconds(fix['low_s'])} to {format_seconds(fix['high_s'])}{ratio})"
    return f"saves {format_seconds(fix['saved_s'])} ({format_seconds(fix['low_s'])}-{format_seconds(fix['high_s'])}){after}" \
        + ratio


def _finite(value: Any) -> Any:
    return value if not isinstance(value, float) or math.isfinite(value) else None


def _fix_json(fix: dict[str, Any]) -> dict[str, Any]:
    """A fix as JSON: its words, an unbounded end of its interval null, its ratio's figures."""
    ratio = fix["ratio"]
    figures = None if ratio is None else {"value": ratio.value, "low": ratio.low, "high": _finite(ratio.high),
                                          "basis": ratio.basis}
    return {key: _finite(value) for key, value in fix.items()} | {"ratio": figures, "what": WHAT[fix["fix"]],
                                                                  "said": fix_said(fix)}


def _note(row: dict[str, Any]) -> str | None:
    if row["priced_s"] is None and row["memory"] != "unknown":
        return f"not priced: the run measured no {row['kind']} path from {row['memory']} memory"
    return "not priced: the trace does not say which host memory" if row["memory"] == "unknown" else None


def to_json(priced: Priced) -> str:
    """The ``--json`` document: labels, steps, ``copies`` (docs/contract.md), each fix with its words."""
    rows = [row | {"note": _note(row), "fixes": [_fix_json(f) for f in row["fixes"]]} for row in priced.rows]
    return json.dumps({"labels": labels(priced), "steps": [
        {"step": s.number, "seconds": s.span[1] - s.span[0], "compute_s": s.compute_s, "copy_s": s.copy_s,
         "blocked_s": s.blocked_s, "wait_s": s.wait_s} for s in priced.steps], "copies": rows}, indent=1)


def _group(row: dict[str, Any]) -> str:
    return f"{row['kind']} {row['memory']} {'blocking' if row['blocking'] else 'non-blocking'} copies in {row['op']}"


def _host(row: dict[str, Any]) -> str:
    return (f"{format_seconds(row['host_s'])} = waiting for the queue {format_seconds(row['wait_s'])} + blocked on the "
            f"copy {format_seconds(row['blocked_s'])} + tail {format_seconds(row['tail_s'])}")


def to_text(priced: Priced) -> str:
    """The console's table: a paragraph per group, the host's time split, the price and each fix."""
    lines = labels(priced)
    for row in priced.rows:
        share = f" ({row['share']:.1%} of the steps)" if row["share"] is not None else ""
        lines += ["", f"{row['count']} {_group(row)}: {format_bytes(row['bytes'])}, GPU {format_seconds(row['gpu_s'])}; "
                      f"host {_host(row)}{share}; e.g. correlation {', '.join(map(str, row['examples']))}"]
        if not row["blocking"]:
            lines.append("  the host never waits for these: off the critical path")
        if row["priced_s"] is not None:
            lines.append(f"  costs {format_seconds(row['priced_s'])} here ({row['path']})")
        lines += [f"  {WHAT[fix['fix']]}: {fix_said(fix)}" for fix in row["fixes"]]
        lines += [f"  {note}" for note in [_note(row)] if note]
    return "\n".join(lines if priced.rows else [*lines, "", "no copy between host and device in the steps read"])


def _figure(priced: Priced) -> Any:
    steps = priced.steps
    fig, ax = subplots(figsize=(WIDTH, 0.6 + 0.45 * len(steps)))
    names = [f"step {s.number}" if s.number is not None else "whole trace" for s in steps]
    for index, step in enumerate(steps):
        left = 0.0
        for key, label, colour in PARTS:
            value = getattr(step, key)
            bar = ax.barh(index, value * 1e3, left=left * 1e3, color=colour, label=label if index == 0 else None)
            tip(bar.patches[0], [f"{names[index]}: {label} {format_seconds(value)} of a "
                                 f"{format_seconds(step.span[1] - step.span[0])} step"])
            left += value
        ax.plot([(step.span[1] - step.span[0]) * 1e3], [index], "k|", markersize=14)
    ax.set_yticks(range(len(steps)), names)
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds (| the step's wall time)")
    legend_outside(fig, *ax.get_legend_handles_labels())
    return fig


def _fixes(row: dict[str, Any]) -> str:
    return "; ".join(f"{WHAT[fix['fix']]}: {fix_said(fix)}" for fix in row["fixes"]) or _note(row) or "–"


def section(priced: Priced) -> dict[str, Any]:
    """The section's title, text (where each figure comes from), figure and table of groups."""
    caption = ("Per step: what the GPU ran (compute, copies) and what the host spent on copies: blocked while they "
               "ran or after (their call's tail and the synchronize), and waiting for earlier GPU work before they "
               "began. The host's parts are its own time, not the GPU's, so a bar may outrun its step's wall time.")
    rows = [[_group(r), r["count"], format_bytes(r["bytes"]), format_seconds(r["gpu_s"]), _host(r),
             f"{r['share']:.1%}" if r["share"] is not None else "–",
             format_seconds(r["priced_s"]) if r["priced_s"] is not None else "not priced", _fixes(r),
             ", ".join(map(str, r["examples"]))] for r in priced.rows]
    table = {"id": "trace-copies", "caption": "Each group of the trace's copies: host time split (wait: for the queue; "
             "blocked: while the copy ran; tail: after it), cost on the run's machine, and each fix's saving with its "
             "interval: from the run's ratio of the two paths at the copies' size, or the path's own rounds.", "rows": rows,
             "columns": ["copies", "count", "bytes", "GPU time", "host time", "share of the steps", "cost here",
                         "fixes", "e.g. correlation"]}
    return {"key": "trace", "title": "Your trace's copies, priced", "text": "; ".join(labels(priced)) + ".",
            "plots": [as_plot("trace-steps", "Where each step's time went", caption, _figure(priced))],
            "table": table}
