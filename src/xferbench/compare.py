"""Regression comparison of two runs, with a significance test and machine checks."""

from __future__ import annotations

from typing import Any

__all__ = ["machine_differences", "machine_identity"]


def machine_identity(machine_info: dict[str, Any]) -> dict[str, Any]:
    """What must match for two runs to be comparable: GPUs, driver, torch, CUDA/HIP, CPU."""
    block = machine_info.get("xferbench")
    cpu = machine_info.get("cpu") or {}
    return {
        "GPUs": None if block is None else [d.get("name") for d in block.get("devices", [])],
        "driver": (block or {}).get("driver"),
        "torch": (block or {}).get("torch"),
        "CUDA": (block or {}).get("cuda"),
        "HIP": (block or {}).get("hip"),
        "CPU": cpu.get("brand_raw") if isinstance(cpu, dict) else None,
    }


def machine_differences(base: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Human-readable list of identity fields that differ, e.g. ``torch 2.4.0 -> 2.5.1``.

    A field one run does not record (None) is not compared: an older or foreign
    JSON should not be refused for what it cannot tell.
    """
    a, b = machine_identity(base), machine_identity(new)
    return [
        f"{key} {_show(a[key])} -> {_show(b[key])}"
        for key in a
        if a[key] is not None and b[key] is not None and a[key] != b[key]
    ]


def _show(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]" if value else "no GPU"
    return "unknown" if value is None else str(value)
