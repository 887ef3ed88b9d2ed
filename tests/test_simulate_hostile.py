"""Hostile machine specs (measure/simulate.py): nesting past the parser's stack, a number that overflows mid-run,
a FIFO. Each is one SpecError line, before any case runs, never a hang."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from xferbench.measure.simulate import SpecError, load_spec

from hang import no_hang

pytestmark = pytest.mark.hostile

EXAMPLE = Path(__file__).parents[1] / "examples" / "sim-2gpu-pcie5-nvlink.toml"


@pytest.mark.parametrize("text", ["a = " + "[" * 100_000 + "]" * 100_000, "a = " + "{b = " * 5_000 + "1" + "}" * 5_000])
def test_a_deeply_nested_spec_is_one_line(tmp_path: Path, text: str) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(text)
    with pytest.raises(SpecError) as error:
        load_spec(spec)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(("key", "value"), [("memory_gib", "1e308"), ("memory_gib", "1e7"), ("pin_GBps", "1e300")])
def test_a_number_that_would_overflow_is_refused(tmp_path: Path, key: str, value: str) -> None:
    lines = [line for line in EXAMPLE.read_text().splitlines() if not line.startswith(f"{key} ")]
    first_table = next(i for i, line in enumerate(lines) if line.startswith("["))
    spec = tmp_path / "spec.toml"
    spec.write_text("\n".join([*lines[:first_table], f"{key} = {value}", *lines[first_table:]]))
    with pytest.raises(SpecError, match=f"{key} must be at most"):
        load_spec(spec)


def test_a_fifo_spec_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "spec.toml"
    os.mkfifo(fifo)
    with no_hang(30), pytest.raises(SpecError, match="not a regular file"):
        load_spec(fifo)
