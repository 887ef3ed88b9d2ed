"""What the model decides (analyze/model.py), in words: how a path's β was obtained, and why pageable moves have no
host roof. No torch here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...units import format_bytes, format_seconds
from ..model import NoHostRoof

__all__ = ["BASES", "basis", "no_host_roof"]


def no_host_roof(why: NoHostRoof | None) -> str | None:
    """Why the run gives pageable moves no host roof (a clause), or None when it has one (``model.host_ceiling``)."""
    if why is None:
        return None
    if not why.measured:
        return "this run measured no single-thread host memcpy (host copy_ single_thread)"
    took = f"{format_bytes(why.nbytes)} in {format_seconds(why.seconds)}"
    if why.bound is None:
        return (f"the single-thread host memcpy was measured at one size only ({took}), which cannot tell its fixed cost "
                "from its bandwidth, so it bounds nothing")
    return (f"the single-thread host memcpy's sizes are latency-bound (its largest, {took}, is set by the fixed cost, "
            "not the bytes), so it states no bandwidth bound")


#: Each of the model's bases of β (``model.BASES``) in words.
BASES = {"fit": "fit over all sizes",
         "fit beyond memory": "β fit without the sizes that ran faster than memory (α over all)",
         "measured beyond the cache": "measured at the largest size beyond the cache (too few sizes there to fit)",
         "all in cache": "every size fits in cache", "too few sizes": "too few sizes",
         "latency-bound": "no β: every size measured is below α·β, where the fixed cost sets the time"}


def basis(fit: Mapping[str, Any]) -> str:
    """How a path's stated β was obtained (``model.fit_path``'s ``beta_basis``), in words; a capped one says what
    the model's β (``beta_gbps``) was."""
    key = str(fit["beta_basis"])
    said = BASES[key.removeprefix("capped ")]
    if isinstance(left := fit.get("left_out"), tuple) and left:  # model.fit_paths leaves out sizes whose blocks mixed loops
        sizes = ", ".join(map(format_bytes, left))
        said = said.replace("all sizes", f"all sizes but {sizes}") if "all sizes" in said else f"{said}, {sizes} left out"
        said += ", whose blocks timed calls a round 2× or more apart"
    if key.startswith("capped "):
        return f"capped at the largest size measured ({said} gave {fit['beta_gbps']:.3g} GB/s)"
    return said
