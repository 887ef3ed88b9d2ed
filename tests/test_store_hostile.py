"""A hostile store (analyze/store.py): a branch or folder others write never makes ``store`` write or delete outside
it or outside ``-o``, run a command, crash, or lose a run; ``store comment`` never replaces what is not its own."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from test_store import _git, _run, make_repo, push_to_branch
from xferbench.analyze import store

from hang import no_hang
from hostile_inputs import FAST, assert_refused, run_cli

pytestmark = pytest.mark.hostile


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path)


def _tip(origin: Path) -> list[str]:
    return _git(origin.parent, "--git-dir", str(origin), "ls-tree", "-r", "--name-only", "xferbench-data").split()


def _commit_tree(work: Path, entries: list[str], message: str = "hostile") -> None:
    """Push a commit whose tree is ``entries`` (``git mktree`` lines) to the store branch, as a hostile job could."""
    tree = subprocess.run(["git", "-C", str(work), "mktree", "--missing"], input="".join(e + "\n" for e in entries),
                          capture_output=True, text=True, check=True).stdout.strip()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    commit = subprocess.run(["git", "-C", str(work), "commit-tree", tree, "-m", message], capture_output=True,
                            text=True, check=True, env=env).stdout.strip()
    _git(work, "push", "-q", "origin", f"{commit}:refs/heads/xferbench-data")


def _blob(work: Path, content: bytes) -> str:
    return subprocess.run(["git", "-C", str(work), "hash-object", "-w", "--stdin"], input=content, capture_output=True,
                          check=True).stdout.decode().strip()


def _nested(work: Path, entries: list[str]) -> str:
    return subprocess.run(["git", "-C", str(work), "mktree", "--missing"], input="".join(e + "\n" for e in entries),
                          capture_output=True, text=True, check=True).stdout.strip()


def test_pull_never_writes_outside_its_output(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Tree entries ``machines/../evil.json``, a symlink and a submodule named ``*.json``: none is written, no crash."""
    monkeypatch.chdir(repo)
    run = _blob(repo, _run(tmp_path, 1).read_bytes())
    machine = _nested(repo, [f"100644 blob {run}\tgood.json", f"120000 blob {_blob(repo, b'/etc/passwd')}\tlink.json",
                                  f"160000 commit {'1' * 40}\tsub.json"])
    escape_dir = _nested(repo, [f"100644 blob {run}\tevil.json"])
    machines = _nested(repo, [f"040000 tree {machine}\tmachine-1", f"040000 tree {escape_dir}\t.."])
    _commit_tree(repo, [f"040000 tree {machines}\tmachines"])
    out = tmp_path / "out" / "baseline"
    code, stdout, err = run_cli(capsys, "store", "pull", "git:xferbench-data", "-o", out)
    assert code == 0, err
    assert not (tmp_path / "out" / "evil.json").exists() and not (out.parent / "evil.json").exists()
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert written == ["machine-1/good.json"] and not any(p.is_symlink() for p in out.rglob("*"))
    assert "1 run(s)" in stdout


@pytest.mark.parametrize("remote", ["--upload-pack=touch PWNED;", "-oProxyCommand=touch PWNED", "--exec=touch PWNED"])
def test_a_remote_that_looks_like_an_option_is_refused(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str], remote: str) -> None:
    monkeypatch.chdir(repo)
    code, _, err = run_cli(capsys, "store", "pull", "git:xferbench-data", "-o", tmp_path / "o", f"--remote={remote}")
    assert_refused(code, err, "--remote")
    assert not (repo / "PWNED").exists() and not Path("PWNED").exists()


def test_a_symlinked_machine_folder_is_refused_not_followed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``machines/<machine>`` linked to a folder elsewhere: push deletes and writes nothing there."""
    run = _run(tmp_path, 1)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    precious = [_run(elsewhere, i) for i in (2, 3)]
    root = tmp_path / "store"
    (root / "machines").mkdir(parents=True)
    (root / "machines" / store.machine_folder(json.loads(run.read_text())["machine_info"])).symlink_to(elsewhere)
    code, _, err = run_cli(capsys, "store", "push", root, run, "--keep", "1")
    assert_refused(code, err, "symbolic link")
    assert sorted(elsewhere.iterdir()) == sorted(precious)


def test_a_symlinked_page_is_refused_not_written_through(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    root = tmp_path / "store"
    (root / "machines").mkdir(parents=True)
    (root / "index.html").symlink_to(victim)
    code, _, err = run_cli(capsys, "store", "dashboard", root)
    assert_refused(code, err, "symbolic link")
    assert victim.read_text() == "mine"


@pytest.mark.parametrize("content", [b"not json", b"{}", b"[]", b'{"runs": "x", "newest": 1, "identity": 2}',
                                     b"\xff\xfe\x00binary"])
def test_a_damaged_summary_of_another_machine_does_not_stop_a_push(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                   content: bytes) -> None:
    root = tmp_path / "store"
    other = root / "machines" / "other-1a2b3c4d"
    other.mkdir(parents=True)
    (other / "machine.txt").write_bytes(content)
    code, _, err = run_cli(capsys, "store", "push", root, _run(tmp_path, 1), "--no-dashboard")
    assert code == 0, err
    assert store.dashboard(root, machines=[]).read_text().count("machine.txt is damaged") == 1


def test_comment_never_replaces_what_is_not_its_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "c.md"
    table.write_text("### xferbench comparison\n\nsummary\n\n| case | verdict |\n|---|---|\n"
                     + "".join(f"| case {i} | unchanged |\n" for i in range(400)))
    run = _run(tmp_path, 1)
    storage = tmp_path / "storage"
    storage.mkdir()
    (storage / "0001_run.json").write_bytes(run.read_bytes())
    notes = tmp_path / "notes.md"
    notes.write_text("my notes\n")
    cases = [(["-o", table, "--limit", "2000"], "input"), (["-o", run], "run"),
             (["-o", storage / "comment.md"], "storage folder"), (["-o", notes], "not an earlier output"),
             (["-o", tmp_path / "ok.md", "--limit", "0"], "--limit 0"), (["-o", tmp_path / "ok.md", "--limit", "-5"], "")]
    before = {p: p.read_bytes() for p in (table, run, notes)}
    for args, fragment in cases:
        code, _, err = run_cli(capsys, "store", "comment", table, *args)
        assert_refused(code, err, fragment)
    assert {p: p.read_bytes() for p in before} == before and not (storage / "comment.md").exists()
    code, _, err = run_cli(capsys, "store", "comment", table, "-o", tmp_path / "ok.md", "--limit", "2000")
    assert code == 0, err
    assert run_cli(capsys, "store", "comment", table, "-o", tmp_path / "ok.md")[0] == 0  # its own earlier output


def test_comment_of_a_fifo_does_not_hang(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "table.md"
    os.mkfifo(fifo)
    with no_hang(30):
        code, _, err = run_cli(capsys, "store", "comment", fifo, "-o", tmp_path / "c.md")
    assert_refused(code, err, "not a regular file")


def test_dashboard_of_a_missing_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "store", "dashboard", tmp_path / "missing")
    assert_refused(code, err, "not a store")
    assert not (tmp_path / "missing").exists()


def _dated(folder: Path, index: int, when: str) -> Path:
    """Run ``index`` claiming its own date ``when`` (a run's date is whatever its file says)."""
    path = _run(folder, index)
    path.write_text(json.dumps({**json.loads(path.read_text()), "datetime": when}))
    return path


def test_retention_keeps_what_the_store_received_last_not_what_claims_to_be_newest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two runs dated 2999 already stored, then today's run with ``--keep 2``: today's run stays (it is the one being
    pushed) and the first run the store received goes."""
    root = tmp_path / "store"
    first, second = _dated(tmp_path, 1, "2999-01-01T00:00:00"), _dated(tmp_path, 2, "2999-01-02T00:00:00")
    for run in (first, second):
        assert run_cli(capsys, "store", "push", root, run, "--keep", "2", "--no-dashboard")[0] == 0
    today = _dated(tmp_path, 3, "2026-11-20T08:00:00")
    code, _, err = run_cli(capsys, "store", "push", root, today, "--keep", "2", "--no-dashboard")
    assert code == 0, err
    kept = sorted(p.read_bytes() for p in root.rglob("*.json"))
    assert kept == sorted([second.read_bytes(), today.read_bytes()])


def test_retention_never_deletes_a_run_being_pushed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "store"
    runs = [_dated(tmp_path, i, f"20{10 + i}-01-01T00:00:00") for i in (1, 2, 3)]
    code, _, err = run_cli(capsys, "store", "push", root, *runs, "--keep", "1", "--no-dashboard")
    assert code == 0, err
    assert sorted(p.read_bytes() for p in root.rglob("*.json")) == sorted(p.read_bytes() for p in runs)


@pytest.mark.parametrize("depth", [["sub"], ["sub", "deeper"]])
def test_a_link_deep_in_a_machine_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   depth: list[str]) -> None:
    """The dashboard reads ``machines/<m>/sub/x.json`` too: a link there would publish any file of the machine."""
    run = _run(tmp_path, 1)
    (tmp_path / "elsewhere").mkdir()
    secret = _run(tmp_path / "elsewhere", 2)
    root = tmp_path / "store"
    below = root / "machines" / store.machine_folder(json.loads(run.read_text())["machine_info"]) / Path(*depth)
    below.mkdir(parents=True)
    (below / "x.json").symlink_to(secret)
    for action in (["push", root, run], ["dashboard", root], ["pull", root, "-o", tmp_path / "out"]):
        code, _, err = run_cli(capsys, "store", *action)
        assert_refused(code, err, "symbolic link")
    assert not (root / "index.html").exists()


@pytest.mark.parametrize("given", ["git:HEAD", "git:refs/heads/main", "git:main.lock", "git:a//b", "git:x/"])
def test_a_store_branch_that_is_no_plain_branch_name_is_refused(given: str) -> None:
    with pytest.raises(store.StoreError, match="not a branch name"):
        store.parse_store(given)


@pytest.mark.parametrize("remote", ["fd::17", "ext::sh -c touch% PWNED", "FD::0"])
def test_a_transport_helper_remote_is_refused(remote: str) -> None:
    """``fd::17`` made pull wait for ever on a descriptor; ``ext::`` runs a command: neither is a store's remote."""
    with no_hang(10), pytest.raises(store.StoreError, match="--remote"):
        store.parse_store("git:xferbench-data", remote)


def test_git_gets_a_time_limit(repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A remote that never answers: git stands in as one that sleeps. (A real git on a tiny time limit races the OS:
    on a loaded machine it can finish before the parent looks, and no limit is seen to pass.)"""
    monkeypatch.chdir(repo)
    hanging = tmp_path / "bin"
    hanging.mkdir()
    (hanging / "git").write_text("#!/bin/sh\nexec sleep 60\n")
    (hanging / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{hanging}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(store, "GIT_TIMEOUT_S", 0.5)
    with no_hang(30), pytest.raises(store.StoreError, match="took longer than"):
        store.pull(store.parse_store("git:xferbench-data"), tmp_path / "out")


#: Short text, or a run of thousands of characters (Hypothesis's text alone rarely draws a long line).
_LONG = st.text(max_size=8) | st.integers(0, 5000).map("s".__mul__)


@FAST
@given(head=st.lists(_LONG, max_size=40), rows=st.integers(0, 200), more=_LONG,
       limit=st.integers(store.MIN_COMMENT, 20_000))
def test_comment_limit_is_a_limit(head: list[str], rows: int, more: str, limit: int) -> None:
    """Whatever comes before the table (a long summary, no table at all) and however long ``--more``, the comment
    is at most ``limit`` characters and starts with its marker."""
    table = ["| case | change |", "|---|---|", *(f"| case {i} | {'x' * 90} |" for i in range(rows))]
    text = store.comment("\n".join([*head, *table]), limit, more=more)
    assert len(text) <= limit and text.startswith("<!-- xferbench-compare -->\n")


def test_an_empty_machine_folder_does_not_fail_the_dashboard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "store"
    assert run_cli(capsys, "store", "push", root, _run(tmp_path, 1), "--no-dashboard")[0] == 0
    (root / "machines" / "empty-0000").mkdir()
    code, _, err = run_cli(capsys, "store", "dashboard", root)
    assert code == 0, err
    assert err.splitlines() == ["xferbench store: machines/empty-0000: no readable run in it; its page is not written"]
    index = (root / "index.html").read_text()
    assert "empty-0000" not in index and index.count("<tr><td><a href=") == 1


def test_a_damaged_run_in_a_machine_folder_is_skipped_in_one_line(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "store"
    assert run_cli(capsys, "store", "push", root, _run(tmp_path, 1), "--no-dashboard")[0] == 0
    folder = next((root / "machines").iterdir())
    (folder / "20991231T000000-damaged-00000000.json").write_text('{"benchmarks": [')
    for index in (2, 3):  # every later push, not only the next
        code, _, err = run_cli(capsys, "store", "push", root, _run(tmp_path, index))
        assert code == 0, err
        assert [line for line in err.splitlines() if "damaged" in line] == [
            f"xferbench store: machines/{folder.name}/20991231T000000-damaged-00000000.json: not JSON, or cut short "
            "(line 1, column 17: Expecting value); skipped"], err


@FAST
@given(lines=st.lists(st.sampled_from(["remote: pushes are closed", "remote:", " ! [remote rejected] a -> b (declined)",
                                       "error: failed to push some refs to 'x'", "", "\r"]) | st.text(max_size=30),
                      max_size=8))
def test_git_s_reason_is_one_line(lines: list[str]) -> None:
    """Whatever git (or a remote's hook) writes on stderr, the reason said is one line."""
    said = store._reason("\n".join(lines))
    assert "\n" not in said and "\r\n" not in said


def test_git_s_reason_is_its_first_fatal_line_else_its_last() -> None:
    assert store._reason("remote: pushes are closed\nerror: failed to fetch 'x'\n\n") == "error: failed to fetch 'x'"
    assert store._reason("remote: hook says no\nremote: try later\n") == "remote: try later"
    assert store._reason("") == "(no message)"


def test_a_store_through_a_relative_origin_pulls_from_any_subfolder(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """``git clone ../remote.git`` leaves a relative ``origin``: valid for git from anywhere in the checkout, so for
    the store too; a checkout without that remote is told git's cause, not the tail of its advice."""
    repo = make_repo(tmp_path)
    _git(repo, "remote", "set-url", "origin", "../origin.git")
    push_to_branch(repo, [_run(tmp_path, 1)], "--no-dashboard")
    (repo / "deep" / "er").mkdir(parents=True)
    monkeypatch.chdir(repo / "deep" / "er")
    assert run_cli(capsys, "store", "pull", "git:xferbench-data", "-o", tmp_path / "pulled")[0] == 0
    assert len(list((tmp_path / "pulled").rglob("*.json"))) == 1
    _git(repo, "remote", "remove", "origin")
    code, _, err = run_cli(capsys, "store", "pull", "git:xferbench-data", "-o", tmp_path / "again")
    assert code == 2
    assert err.strip() == ("xferbench store: git ls-remote failed: fatal: 'origin' does not appear to be a git "
                           "repository")
