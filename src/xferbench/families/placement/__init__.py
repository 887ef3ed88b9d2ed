"""placement: an image batch converted on the CPU then moved, or moved as uint8 then converted on the GPU.

Its record and what the report says about it (torch-free); what it runs is ``run.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...units import format_seconds
from ..base import ChangeSpec, Family, of_variant, ratios

if TYPE_CHECKING:
    import pandas as pd


def finding(rows: pd.DataFrame) -> list[str]:
    cpu = of_variant(rows, "convert_on_cpu")
    out = [f"Converting {int(r['nbytes'] // (3 * 224 * 224))} images to normalized float32 on the CPU took "
           f"{format_seconds(r['median_s'])}." for _, r in cpu.iterrows()][-1:]
    return out + ratios(rows, "convert_then_move", "move_then_convert", "Placement")


RECORD = Family("placement", "Scenario: where to convert an image batch", "convert on the CPU then move, or move then convert",
                "scenario", "tab:cyan", finding=finding,
                changes=(ChangeSpec("convert-on-gpu", "Convert an image batch on the GPU",
                                    "y = normalize(x).to(device)", "y = normalize(x.to(device))",
                                    {"op": "placement", "variant": "convert_then_move"},
                                    {"op": "placement", "variant": "move_then_convert"},
                                    "x uint8: a quarter of the bytes cross"),),
                caption="An image batch arrives as uint8 and must become normalized float32 on the GPU. Converting on the CPU "
                        "first moves 4x the bytes; moving the uint8 batch and converting on the device moves a quarter. "
                        "The two differ in where the conversion runs as well as in the bytes moved: convert_on_cpu times "
                        "the conversion on the CPU alone.")
