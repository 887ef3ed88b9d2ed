"""Outputs never replace a file xferbench did not write (SECURITY.md): ``report -o``, ``history -o``, ``store push``
onto a folder's index.html, ``calibrate -o``. A file it wrote (its mark) is replaced, so a command run again works;
another is refused in one line naming ``--force``, and replaced with it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xferbench.output import GENERATOR, OutputError, never_foreign

from hostile_inputs import FAST, assert_refused, put, run_cli, small

pytestmark = pytest.mark.hostile

#: Files of the user's or another tool's with an output's name.
FOREIGN_PAGE = "<!DOCTYPE html><html><head><title>My project</title></head><body>docs</body></html>\n"
FOREIGN_JSON = '{"tool": "other", "floors": {}}\n'


def _aa(tmp_path: Path) -> Path:
    folder = tmp_path / "aa"
    folder.mkdir()
    for i in range(6):
        run = small(4)
        run["datetime"] = f"2026-11-{10 + i:02d}T08:00:00+00:00"
        for bench in run["benchmarks"]:
            scale = 1 + i / 100  # each its own times: copies of one run count once
            bench["stats"] = {key: [v * scale for v in value] if key == "data" else value * scale
                              if key in ("min", "max", "mean", "median", "q1", "q3") else value
                              for key, value in bench["stats"].items()}
        put(folder / f"aa-{i:03d}.json", run)
    return folder


def _commands(tmp_path: Path) -> dict[str, tuple[list[object], Path, str]]:
    """Each command, the output it writes and what another's file there holds."""
    run = put(tmp_path / "run.json", small(4))
    storage = tmp_path / "storage"
    (storage / "Linux-CPython-3.11-64bit").mkdir(parents=True)
    put(storage / "Linux-CPython-3.11-64bit" / "0001_a.json", small(4))
    docs = tmp_path / "docs"
    docs.mkdir()
    return {
        "report": (["report", run, "-o", tmp_path / "page.html"], tmp_path / "page.html", FOREIGN_PAGE),
        "history": (["history", storage, "-o", tmp_path / "site" / "index.html"], tmp_path / "site" / "index.html",
                    FOREIGN_PAGE),
        "store push": (["store", "push", docs, run], docs / "index.html", FOREIGN_PAGE),
        "calibrate": (["calibrate", _aa(tmp_path), "-o", tmp_path / "noise.json"], tmp_path / "noise.json",
                      FOREIGN_JSON),
    }


@pytest.mark.parametrize("command", ["report", "history", "store push", "calibrate"])
def test_an_output_never_replaces_a_file_xferbench_did_not_write(tmp_path, capsys, command):
    args, target, foreign = _commands(tmp_path)[command]
    target.parent.mkdir(exist_ok=True)
    target.write_text(foreign)
    code, _, err = run_cli(capsys, *args)
    assert_refused(code, err, str(target), "--force")
    assert target.read_text() == foreign
    code, _, err = run_cli(capsys, *args, "--force")
    assert code == 0, err
    assert target.read_text() != foreign


@pytest.mark.parametrize("command", ["report", "history", "store push", "calibrate"])
def test_an_output_xferbench_wrote_is_replaced_when_run_again(tmp_path, capsys, command):
    args, target, _ = _commands(tmp_path)[command]
    for _ in range(2):
        code, _, err = run_cli(capsys, *args)
        assert code == 0, err
    assert target.exists()


def test_the_dashboard_carries_the_generator_mark(tmp_path, capsys):
    args, target, _ = _commands(tmp_path)["store push"]
    assert run_cli(capsys, *args)[0] == 0
    assert GENERATOR in target.read_text()


def test_store_dashboard_over_a_foreign_index_is_refused(tmp_path, capsys):
    args, target, _ = _commands(tmp_path)["store push"]
    assert run_cli(capsys, *args)[0] == 0
    target.write_text(FOREIGN_PAGE)
    code, _, err = run_cli(capsys, "store", "dashboard", target.parent)
    assert_refused(code, err, "--force")
    assert target.read_text() == FOREIGN_PAGE


def test_a_refused_store_push_adds_no_run(tmp_path, capsys):
    args, target, _ = _commands(tmp_path)["store push"]
    target.write_text(FOREIGN_PAGE)
    assert run_cli(capsys, *args)[0] == 2
    assert not (target.parent / "machines").exists()


@pytest.mark.parametrize("kind", ["page", "noise", ".md", ".csv"])
@FAST
@given(content=st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_any_content_is_told_apart_in_one_line(tmp_path, kind, content):
    """Whatever the file holds (binary, broken UTF-8, JSON of any shape), the check says yes or refuses in one
    line: never another exception."""
    target = tmp_path / "out"
    target.write_bytes(content)
    try:
        never_foreign(target, kind, "-o out")
    except OutputError as error:
        assert "\n" not in str(error) and "--force" in str(error)
    never_foreign(target, kind, "-o out", force=True)


@FAST
@given(value=st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                        max_size=3)))
def test_only_a_noise_file_passes_as_one(tmp_path, value):
    import json

    target = tmp_path / "noise.json"
    target.write_text(json.dumps(value))
    try:
        never_foreign(target, "noise", "-o noise.json")
        ours = True
    except OutputError:
        ours = False
    assert ours == (isinstance(value, dict) and "xferbench_noise" in value)


def test_a_fifo_is_not_read(tmp_path):
    import os

    fifo = tmp_path / "page.html"
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match="cannot read"):
        never_foreign(fifo, "page", "-o page.html")
