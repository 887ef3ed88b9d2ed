"""The store: runs kept between CI jobs in a folder or a git branch, one folder per machine, with retention
and a dashboard (analyze/store.py, ``xferbench store``). Git stores are local bare repositories: no network."""

from __future__ import annotations

import copy
import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from xferbench import escape
from xferbench.analyze import store
from xferbench.analyze.load.results import load
from xferbench.cli import main

SAMPLE = Path(__file__).parent / "data" / "cpu-sample.json"


def _run(folder: Path, index: int, torch: str | None = None, gpu: str | None = None) -> Path:
    """The real CPU sample as run ``index`` (its own datetime and commit), optionally of another torch or GPU."""
    data: dict[str, Any] = json.loads(SAMPLE.read_text())
    data["datetime"] = f"2026-11-{10 + index:02d}T08:00:00+00:00"
    data["commit_info"] = {**data.get("commit_info", {}), "id": f"{index:040x}"}
    block = data["machine_info"]["xferbench"]
    if torch:
        block["torch"] = torch
    if gpu:
        block["devices"] = [*copy.deepcopy(block.get("devices") or []), {"name": gpu, "device": "cuda:0"}]
    path = folder / f"run-{index}.json"
    path.write_text(json.dumps(data))
    return path


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path)


def make_repo(tmp_path: Path) -> Path:
    """A checkout whose origin is a local bare repository."""
    _git(tmp_path, "init", "-q", "--bare", "origin.git")
    work = tmp_path / "work"
    _git(tmp_path, "init", "-q", "-b", "main", str(work))
    _git(work, "remote", "add", "origin", str(tmp_path / "origin.git"))
    (work / "README").write_text("project\n")
    _git(work, "add", "README")
    _git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
    return work


def push_to_branch(repo: Path, runs: list[Path], *options: str) -> None:
    """What the example workflow's store job does: the branch's tip checked out into a folder, the runs pushed to
    it, committed and pushed with git."""
    origin = str(repo.parent / "origin.git")
    tree = repo.parent / f"store-{len(list(repo.parent.glob('store-*')))}"
    _git(repo.parent, "init", "-q", str(tree))
    if _git(repo, "ls-remote", "--heads", origin, "xferbench-data").strip():
        _git(tree, "fetch", "-q", origin, "xferbench-data")
        _git(tree, "checkout", "-q", "FETCH_HEAD")
    assert main(["store", "push", str(tree), *map(str, runs), *options]) == 0
    _git(tree, "add", "-A")
    _git(tree, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "runs")
    _git(tree, "push", "-q", origin, "HEAD:refs/heads/xferbench-data")


def test_machine_folder_is_the_hardware_not_the_software(tmp_path: Path) -> None:
    old, new, gpu = _run(tmp_path, 1), _run(tmp_path, 2, torch="9.9.9"), _run(tmp_path, 3, gpu="NVIDIA H200")
    names = [store.machine_folder(json.loads(p.read_text())["machine_info"]) for p in (old, new, gpu)]
    assert names[0] == names[1]  # a torch upgrade on the same box stays in its folder (its trend shows the step)
    assert names[2] != names[0] and names[2].startswith("NVIDIA-H200-x1")


@pytest.mark.slow
def test_folder_store_keeps_the_newest_runs_and_writes_a_dashboard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = [_run(tmp_path, i) for i in range(3)]
    where = tmp_path / "store"
    assert main(["store", "push", str(where), *map(str, runs[:2]), "--keep", "2"]) == 0
    assert "2 run(s) in" in capsys.readouterr().out
    assert main(["store", "push", str(where), str(runs[2]), "--keep", "2"]) == 0
    machine = next((where / "machines").iterdir())
    stored = sorted(p.name for p in machine.glob("*.json"))
    assert len(stored) == 2 and stored[0].startswith("20261111")  # the first received (11-10) went
    assert main(["store", "push", str(where), str(runs[2]), "--no-dashboard"]) == 0  # the same run again: one file
    assert len(list(machine.glob("*.json"))) == 2
    index = (where / "index.html").read_text()
    assert f"machines/{machine.name}/index.html" in index and "<td>2</td>" in index
    page = (machine / "index.html").read_text()
    paths = {b["name"] for b in json.loads(SAMPLE.read_text())["benchmarks"]}
    assert page.count('data-plot="trend-') == len(store.path_trends([load([p]) for p in machine.glob("*.json")]))
    assert page.count('data-plot="trend-') >= 10 and len(paths) > 10
    out = tmp_path / "baseline"
    assert main(["store", "pull", str(where), "-o", str(out), "--machine-of", str(runs[0])]) == 0
    assert len(list(out.glob("*.json"))) == 2 and "2 run(s)" in capsys.readouterr().out


@pytest.mark.slow
def test_every_path_gets_a_trend_with_the_environment_change_marked(tmp_path: Path) -> None:
    runs = [load([_run(tmp_path, i, torch="2.12.0" if i < 1 else "2.13.0")]) for i in range(3)]
    plots = store.path_trends(runs)
    assert len(plots) == runs[0].frame["path"].nunique()  # every path, not 12 key cases
    assert all("environment changed (1)" in p.caption for p in plots)
    assert "torch 2.12.0 -&gt; 2.13.0" in (plots[0].svg or "") or "torch 2.12.0 -> 2.13.0" in (plots[0].svg or "")


@pytest.mark.slow
def test_git_branch_store_round_trip(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo)
    out = tmp_path / "empty"
    assert main(["store", "pull", "git:xferbench-data", "-o", str(out)]) == 0  # no branch yet: no baseline, no error
    assert list(out.iterdir()) == []
    runs = [_run(tmp_path, i) for i in range(3)]
    push_to_branch(repo, runs[:2], "--keep", "2", "--no-dashboard")
    push_to_branch(repo, runs[2:], "--keep", "2")
    tip = _git(tmp_path, "--git-dir", "origin.git", "ls-tree", "-r", "--name-only", "xferbench-data").split()
    assert "index.html" in tip
    stored = [name for name in tip if name.endswith(".json")]
    assert len(stored) == 2 and all(name.startswith("machines/") for name in stored)
    assert not _git(repo, "status", "--porcelain").strip()  # pull leaves the user's checkout as it was
    pulled = tmp_path / "pulled"
    assert main(["store", "pull", "git:xferbench-data", "-o", str(pulled), "--machine-of", str(runs[0])]) == 0
    assert sorted(p.name for p in pulled.iterdir()) == sorted(Path(n).name for n in stored)
    assert main(["compare", str(pulled), str(runs[2])]) in (0, 1)  # compare reads the pulled folder as a baseline


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], repo: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["store", "push", str(tmp_path / "s"), str(bad)]) == 2
    assert not (tmp_path / "s").exists()  # nothing written
    assert main(["store", "push", str(tmp_path / "s"), str(_run(tmp_path, 1)), "--keep", "0"]) == 2
    monkeypatch.chdir(repo)
    assert main(["store", "pull", "git:no..good", "-o", str(tmp_path / "o")]) == 2
    assert main(["store", "pull", "git:b", "-o", str(tmp_path / "o"), "--remote", "nowhere"]) == 2
    assert main(["store", "push", "git:b", str(_run(tmp_path, 1))]) == 2  # git commits and pushes a store folder
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 5 and all(line.startswith("xferbench store: ") for line in err)


def test_comment_fits_githubs_limit_summary_first(tmp_path: Path) -> None:
    table = ["### xferbench comparison", "", "summary: 1 regression", "", "| case | verdict |", "|---|---|"]
    table += [f"| case {i} {'x' * 200} | unchanged |" for i in range(600)]  # ~130 KB: two comments' worth
    source = tmp_path / "compare.md"
    source.write_text("\n".join(table) + "\n")
    assert main(["store", "comment", str(source), "-o", str(tmp_path / "c.md"), "--more", "Full table: artifact."]) == 0
    text = (tmp_path / "c.md").read_text()
    assert len(text) < 65_536 and text.startswith("<!-- xferbench-compare -->\n### xferbench comparison")
    assert "summary: 1 regression" in text and "| case 0 " in text and "Full table: artifact." in text
    left = int(text.rsplit("… ", 1)[1].split()[0])
    assert left + text.count("| unchanged |") == 600
    small = store.comment("\n".join(table[:8]))
    assert "left out" not in small and small.count("| unchanged |") == 2


def test_the_dashboard_parses_each_stored_run_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's page, its trends and its line in the index come from one reading of each run."""
    from xferbench.analyze.load import results
    from xferbench.analyze.report import page as report

    runs = [_run(tmp_path, i) for i in range(3)]
    where = tmp_path / "store"
    assert main(["store", "push", str(where), *map(str, runs), "--no-dashboard"]) == 0
    parsed: list[str] = []
    real = results._read
    monkeypatch.setattr(results, "_read", lambda path: parsed.append(path.name) or real(path))
    monkeypatch.setattr(report, "write_report", lambda results, output, **_: output)  # the page is not the point
    monkeypatch.setattr(store, "path_trends", lambda runs: [])
    store.dashboard(where)
    machine = next((where / "machines").iterdir())
    assert sorted(parsed) == sorted(p.name for p in machine.glob("*.json")) and len(parsed) == 3
    assert json.loads((machine / "machine.txt").read_text())["newest"] == "2026-11-12T08:00:00+00:00"


def _moved(folder: Path, index: int, factor: float, names: set[str] | None = None) -> Path:
    """Run ``index`` with every case moved by 3% between-run noise, and ``factor`` on ``names`` (all when None)."""
    path = _run(folder, index)
    data = json.loads(path.read_text())
    rng = random.Random(index)
    for bench in data["benchmarks"]:
        move = rng.lognormvariate(0, 0.03) * (factor if names is None or bench["name"] in names else 1.0)
        stats = bench["stats"]
        stats["data"] = [t * move for t in stats["data"]]
        for key in ("min", "max", "mean", "median", "q1", "q3", "iqr", "stddev"):
            stats[key] *= move
    path.write_text(json.dumps(data))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("poison", [10.0, 0.1])
def test_runs_pushed_to_poison_the_store_are_set_aside_and_named_in_the_comment(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        poison: float) -> None:
    """Two runs 10x slower (or faster) pushed among six honest ones no longer raise every floor past a real 2x
    slowdown: they are set aside, the slowdown fails the comparison, and the PR comment names them."""
    monkeypatch.chdir(repo)
    honest = [_moved(tmp_path, i, 1.0) for i in range(6)]
    def tip() -> set[str]:
        return set(_git(tmp_path, "--git-dir", "origin.git", "ls-tree", "-r", "--name-only", "xferbench-data").split())

    push_to_branch(repo, honest[:3], "--no-dashboard")
    before = tip()
    push_to_branch(repo, [_moved(tmp_path, 10 + i, poison) for i in range(2)], "--no-dashboard")
    poisoned = tip() - before - {name for name in tip() if name.endswith("received.txt")}
    push_to_branch(repo, honest[3:], "--no-dashboard")
    slowed = {"test_host[pageable-clone-16MiB-float32-cpu->cpu]", "test_host[pageable-copy_-16MiB-float32-cpu->cpu]"}
    (tmp_path / "candidate").mkdir()
    candidate = _moved(tmp_path / "candidate", 20, 2.0, slowed)
    assert main(["store", "pull", "git:xferbench-data", "-o", "baseline", "--machine-of", str(candidate)]) == 0
    capsys.readouterr()
    assert main(["compare", "baseline", str(candidate), "--markdown", str(tmp_path / "compare.md")]) == 1
    out = capsys.readouterr().out
    flagged = {line.split("  ")[0] for line in out.splitlines() if line.endswith("regression")}
    assert flagged == {"host pageable clone cpu", "host pageable copy_ cpu"}
    assert main(["store", "comment", str(tmp_path / "compare.md"), "-o", str(tmp_path / "comment.md")]) == 0
    comment = (tmp_path / "comment.md").read_text()
    names = sorted(Path(name).name for name in poisoned)
    line = next(line for line in comment.splitlines() if line.startswith("Set aside"))
    assert line.startswith("Set aside, 2 base run(s) that disagree with the others by more than the case")
    assert all(escape.markdown(name) in line for name in names)
