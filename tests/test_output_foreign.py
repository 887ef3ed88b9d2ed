"""Outputs never replace a file xferbench did not write (SECURITY.md): ``report -o``, ``history -o``, ``store push``
onto a folder's index.html, ``calibrate -o``. A file it wrote (its mark) is replaced, so a command run again works;
another is refused in one line naming ``--force``, and replaced with it."""

from __future__ import annotations

import errno
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xferbench import output
from xferbench.output import GENERATOR, OutputError, never_foreign, write_together

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
        "report a folder": (["report", storage, "-o", tmp_path / "site" / "index.html"], tmp_path / "site" / "index.html",
                    FOREIGN_PAGE),
        "store push": (["store", "push", docs, run], docs / "index.html", FOREIGN_PAGE),
        "calibrate": (["calibrate", _aa(tmp_path), "-o", tmp_path / "noise.json"], tmp_path / "noise.json",
                      FOREIGN_JSON),
    }


@pytest.mark.parametrize("command", ["report", "report a folder", "store push", "calibrate"])
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


@pytest.mark.parametrize("command", ["report", "report a folder", "store push", "calibrate"])
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


@pytest.mark.parametrize("kind", ["page", "noise", "report"])
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


@pytest.mark.parametrize(("name", "content"), [
    ("README.md", "# xferbench\n\nOur project's own readme.\n"),
    ("index.md", "# xferbench: tensor creation and transfer costs\n\nnotes kept by hand\n"),
    ("index.csv", "run,instance,read,datetime,name,op\nmine,1,True,,x,h2d\n"),
    ("index.html", "<!DOCTYPE html><title>xferbench report</title>a page of the user's\n"),
])
def test_a_title_never_makes_a_file_the_report_s(tmp_path, capsys, name, content):
    """A README.md titled "# xferbench" beside ``-o README.html``, notes or a page titled as a report, a CSV with the
    report's header: none carries the mark of a report xferbench wrote, so none is replaced without --force."""
    run = put(tmp_path / "run.json", small(4))
    target = tmp_path / name
    target.write_text(content)
    page = target.with_suffix(".html")
    code, _, err = run_cli(capsys, "report", run, "-o", page)
    assert_refused(code, err, f"-o {page}: ", str(target), "exists and is not a report xferbench wrote", "--force")
    assert target.read_text() == content
    code, _, err = run_cli(capsys, "report", run, "-o", page, "--force")
    assert code == 0, err
    assert target.read_text() != content


def test_a_report_is_known_by_its_mark_and_refused_once_edited(tmp_path, capsys):
    """Each file of a report is replaced by the next report while it is as written (its hash in the mark that ends
    the page and the Markdown: the CSV's there too); one edited since is the user's."""
    run = put(tmp_path / "run.json", small(4))
    page = tmp_path / "r.html"
    assert run_cli(capsys, "report", run, "-o", page)[0] == 0
    for written in (page, page.with_suffix(".md")):
        assert written.read_text().endswith(" -->\n")
        assert "<!-- written by xferbench from run run; sha256 " in written.read_text().splitlines()[-1]
    assert run_cli(capsys, "report", run, "-o", page)[0] == 0
    for edited in (page.with_suffix(".csv"), page.with_suffix(".md"), page):
        edited.write_text(edited.read_text().replace("run", "mine", 1))
        code, _, err = run_cli(capsys, "report", run, "-o", page)
        assert_refused(code, err, str(edited), "exists and is not a report xferbench wrote (or was changed since)")
        assert run_cli(capsys, "report", run, "-o", page, "--force")[0] == 0


def test_a_copied_mark_does_not_make_a_file_ours(tmp_path):
    """The mark names hashes, not a title: the last line of a real report pasted under other text is no mark of it."""
    write_together({tmp_path / "a.html": "<p>page</p>", tmp_path / "a.csv": "x\n1\n", tmp_path / "a.md": "# a\n"}, "run")
    mark = (tmp_path / "a.md").read_text().splitlines()[-1]
    (tmp_path / "b.md").write_text(f"# my notes\n{mark}\n")
    never_foreign(tmp_path / "a.csv", "report", "-o a.html")  # the CSV's hash is in the page's and Markdown's marks
    with pytest.raises(OutputError, match="is not a report xferbench wrote"):
        never_foreign(tmp_path / "b.md", "report", "-o b.html")


def _old_report(folder: Path) -> dict[Path, str]:
    files = {folder / "index.html": "<p>old page</p>", folder / "index.csv": "old\n", folder / "index.md": "# old\n"}
    write_together(files, "old")
    return {path: path.read_text() for path in files}


@pytest.mark.parametrize("failing", [1, 2, 3])
def test_a_full_disk_leaves_the_old_report_whole(tmp_path, capsys, monkeypatch, failing):
    """The disk fills while the page, its CSV or its Markdown is written: every file is the old report's, no temporary
    file is left, and the command says which file in one line (exit 2); never a page of 4 benchmarks beside the
    Markdown of another run."""
    before = _old_report(tmp_path)
    run = put(tmp_path.parent / f"run-{failing}.json", small(4))
    written = []

    def fsync(fd):
        written.append(fd)
        if len(written) == failing:
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(output.os, "fsync", fsync)
    code, _, err = run_cli(capsys, "report", run, "-o", tmp_path / "index.html")
    assert_refused(code, err, "No space left on device")
    assert {path: path.read_text() for path in before} == before and sorted(tmp_path.iterdir()) == sorted(before)


def test_sigterm_late_in_a_report_leaves_the_whole_new_report(tmp_path):
    """SIGTERM just after the page is in place (the last moment of a build): it waits until the CSV and the Markdown
    are in place too, then ends the command; no page is left standing without them."""
    script = textwrap.dedent('''
        import os, signal, sys
        from xferbench import output
        from xferbench.cli import main

        real = os.replace
        def replace(source, target):
            real(source, target)
            if str(target).endswith("index.html"):
                os.kill(os.getpid(), signal.SIGTERM)
        output.os.replace = replace
        main(["report", sys.argv[1], "-o", sys.argv[2]])
        print("not reached")
    ''')
    run = put(tmp_path / "run.json", small(4))
    out = tmp_path / "site"
    out.mkdir()
    done = subprocess.run([sys.executable, "-c", script, str(run), str(out / "index.html")], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == -signal.SIGTERM and "not reached" not in done.stdout, done.stderr[-2000:]
    assert sorted(p.name for p in out.iterdir()) == ["index.csv", "index.html", "index.md"]
    assert all(" -->\n" in (out / name).read_text()[-80:] for name in ("index.html", "index.md"))
