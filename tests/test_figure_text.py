"""Text a figure draws comes from run files: a control character or ``$...$`` mathtext in a case's path, a run's
name or a software version never crashes a page (matplotlib writes controls into the SVG, which XML refuses; ``$``
starts mathtext) nor reaches the CI log through matplotlib's warnings."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from test_store import _run
from xferbench.units import mathtext_safe

from hostile_inputs import FAST, run_cli

pytestmark = pytest.mark.hostile

HOSTILE = ["\x01", "\x1b]8;;x\x07", "\x7f", "$x$", "$", "$\\frac{1}{0}$", "\x00", "\u202e", "\\", "\n"]


def _hostile_runs(tmp_path: Path, text: str) -> list[Path]:
    """Two runs of one machine: the second's torch differs (a change annotated on the trends) and every case's
    source device carries ``text`` (the legend's paths)."""
    runs = [_run(tmp_path, 1), _run(tmp_path, 2, torch=f"2.{text}")]
    for path in runs:
        data = json.loads(path.read_text())
        for bench in data["benchmarks"]:
            bench["extra_info"]["src"] = f"cpu{text}"
        path.write_text(json.dumps(data))
    return runs


@pytest.mark.parametrize("text", ["\x01\x1b[31m\x7f", "$\\nosuch{$ and $x^$"])
def test_hostile_text_in_figures_is_drawn_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  text: str) -> None:
    runs = _hostile_runs(tmp_path, text)
    history = tmp_path / "history"
    history.mkdir()
    for i, run in enumerate(runs):
        (history / f"000{i}_run{text[:2]}.json").write_bytes(run.read_bytes())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for command in (["store", "push", tmp_path / "store", *runs], ["report", history, "-o", tmp_path / "h.html"],
                        ["report", runs[1], "-o", tmp_path / "r.html"]):
            code, _, err = run_cli(capsys, *command)
            assert code == 0, (command, err)
    assert not [w for w in caught if "matplotlib" in w.filename or "Glyph" in str(w.message)], caught
    svgs = "".join(part.split("</svg>")[0] for part in (tmp_path / "h.html").read_text().split("<svg")[1:])
    assert svgs and "\x01" not in svgs and "\x1b" not in svgs


@FAST
@given(text=st.lists(st.sampled_from(HOSTILE) | st.text(max_size=3), max_size=6).map("".join))
def test_mathtext_safe_is_idempotent_and_leaves_no_math(text: str) -> None:
    """What it returns has no unescaped ``$`` and no control but the newline, and a second pass changes nothing."""
    once = mathtext_safe(text)
    assert mathtext_safe(once) == once
    assert once.count("$") == once.count("\\$")
    assert not any((ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f for c in once)
