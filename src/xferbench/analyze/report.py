"""One self-contained HTML page from results: findings, plots, tables, machine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
import pandas as pd

from .. import __version__
from ..families import FAMILIES, order_of
from ..output import write_atomic
from ..units import format_bytes, format_seconds
from .findings import findings
from .model import fit_paths, link_peak
from .plots import DISTRIBUTED_TEXT, Plot, as_plot, distributed, render, scenario_plot
from .results import Results

__all__ = ["build_html", "write_atomic", "write_report"]

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("xferbench.analyze", "templates"),
    autoescape=True,  # every string from a JSON file is escaped
    undefined=jinja2.StrictUndefined,
)


def _number(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "–"
    return f"{value:.{digits}g}"


_ENV.filters.update(number=_number, seconds=lambda v: format_seconds(None if v is None else float(v)), size=format_bytes)


def _model_rows(results: Results) -> list[dict[str, Any]]:
    rows = []
    for fit in fit_paths(results.frame).to_dict("records"):
        peak = link_peak(results.machine_info, fit["op"], fit["src"], fit["dst"])
        achieved = fit["beta_gbps"] if np.isfinite(fit["beta_gbps"]) else fit["best_gbps"]
        rows.append(fit | {
            "link": peak[1] if peak else "not known",
            "peak_gbps": peak[0] if peak else None,
            "efficiency": achieved / peak[0] if peak and achieved == achieved else None,
        })
    return rows


def _machine_summary(machine_info: dict[str, Any]) -> list[tuple[str, str]]:
    block = machine_info.get("xferbench") or {}
    cpu = machine_info.get("cpu") or {}
    summary = [
        ("torch", str(block.get("torch", "unknown"))),
        ("CUDA / HIP", f"{block.get('cuda') or '–'} / {block.get('hip') or '–'}"),
        ("driver", str(block.get("driver") or "unknown (no NVML)")),
        ("CPU", f"{cpu.get('brand_raw', machine_info.get('processor') or 'unknown')}, {cpu.get('count', '?')} cores"),
        ("Python", str(machine_info.get("python_version", "unknown"))),
    ]
    for device in block.get("devices", []):
        link = "PCIe unknown"
        if device.get("pcie_max_generation"):
            link = (f"PCIe Gen{device['pcie_max_generation']} x{device.get('pcie_max_width')} "
                    f"(now Gen{device.get('pcie_generation')} x{device.get('pcie_width')})")
        nvlink = f", NVLink {device['nvlink_version']} x{device['nvlink_links']}" if device.get("nvlink_links") else ""
        memory = format_bytes(device["memory_bytes"]) if device.get("memory_bytes") else "memory unknown"
        summary.append((str(device.get("device")), f"{device.get('name')}, {memory}, {link}{nvlink}"))
    if block.get("peer_access"):
        summary.append(("peer access", "; ".join(
            f"{i}->{j}: {'yes' if ok else 'no'}" for i, row in enumerate(block["peer_access"])
            for j, ok in enumerate(row) if i != j) or "one device"))
    return summary


def _table(frame: pd.DataFrame) -> list[dict[str, Any]]:
    ordered = frame.assign(_o=frame["op"].map(order_of)).sort_values(["_o", "path", "nbytes"])
    return ordered.drop(columns=["data", "_o"]).to_dict("records")


def scenario_sections(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """One section per scenario present in the results, with its plot and findings."""
    from .findings import distributed_findings, scenario_findings

    sections = []
    for op, family in FAMILIES.items():
        if family.kind != "scenario" or not (frame["op"] == op).any():
            continue
        plot = as_plot(op, family.title, family.caption, scenario_plot(frame, op))
        sections.append({"key": op, "title": family.title, "text": " ".join(scenario_findings(frame, op)),
                         "plots": [plot]})
    if frame["world_size"].notna().any():
        title, caption = DISTRIBUTED_TEXT
        plot = as_plot("distributed", title, caption, distributed(frame))
        sections.append({"key": "distributed", "title": title, "text": " ".join(distributed_findings(frame)),
                         "plots": [plot]})
    return sections


def build_html(results: Results, history: list[Plot] | None = None, extra_sections: list[dict[str, Any]] | None = None) -> str:
    frame = results.frame
    plots = render(frame)
    extra_sections = scenario_sections(frame) + (extra_sections or [])
    return _ENV.get_template("report.html.j2").render(
        version=__version__,
        results=results,
        has_accelerator=results.has_accelerator,
        findings=findings(frame),
        plots=plots,
        history=history or [],
        sections=extra_sections or [],
        model=_model_rows(results),
        table=_table(frame),
        machine=_machine_summary(results.machine_info),
        machine_json=json.dumps(results.machine_info, indent=1, sort_keys=True, default=str),
        commit=results.commit_info,
        sizes=sorted(frame["nbytes"].unique()),
    )


def write_report(results: Results, output: Path, history: list[Plot] | None = None,
                 extra_sections: list[dict[str, Any]] | None = None) -> Path:
    write_atomic(output, build_html(results, history, extra_sections))
    return output
