"""Reading JSON as JavaScript's JSON.parse does: Infinity, -Infinity and NaN are refused."""

from __future__ import annotations

import json
from typing import Any


def strict_loads(text: str) -> Any:
    def refuse(name: str) -> None:
        raise ValueError(f"not strict JSON: {name}")

    return json.loads(text, parse_constant=refuse)
