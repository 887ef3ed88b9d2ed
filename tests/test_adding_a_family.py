"""Adding a family is written down and cannot drift: docs/contributing.md's toy family, added to a copy of the
repository exactly as that page says, is planned, priced on the simulated machine and reported, with at most
four files written by hand."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "contributing.md"
#: What the issue asks of the shape: a folder of two files, its registry line, its bench test.
MOST_FILES = 4


def guide_steps() -> tuple[str, list[tuple[str, str]]]:
    """The toy's op and each (path, code) block of the guide's "Adding a scenario", in the order it gives them."""
    section = GUIDE.read_text().split("### Adding a scenario", 1)[1].split("\n### ", 1)[0]
    # Each code block goes to the first file the paragraph before it names.
    blocks = [(re.search(r"`((?:src|bench)/[\w/.]+)`", before.rsplit("\n\n", 1)[-1]).group(1), code)  # type: ignore[union-attr]
              for before, code in re.findall(r"((?:[^`]|`(?!``))*?)\n```python\n(.*?)```", section, flags=re.S)]
    line = re.search(r"Its name in `FOLDERS` of `src/xferbench/families/__init__.py`.*?`\"(\w+)\"`", section, re.S)
    assert blocks and line, "docs/contributing.md no longer shows a whole family to add"
    return line.group(1), blocks


def test_the_guide_shows_a_whole_family():
    op, blocks = guide_steps()
    assert [path for path, _ in blocks] == [f"src/xferbench/families/{op}/__init__.py",
                                            f"src/xferbench/families/{op}/run.py",
                                            f"bench/test_{op}.py"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout


def add_to_the_list(listing: str, op: str) -> str:
    """The family's name where the guide says: last in ``FOLDERS`` (before the distributed families: report
    order)."""
    folders = re.search(r"^FOLDERS = \(.*?\)", listing, re.S | re.M)
    assert folders, "families/__init__.py no longer lists its folders in FOLDERS"
    return listing.replace(folders[0], f'{folders[0][:-1]}, "{op}")', 1)


@pytest.mark.slow
def test_a_toy_family_added_as_the_guide_says_runs_and_touches_four_files(tmp_path):
    repo = tmp_path / "repo"
    for part in ("src", "bench", "examples"):
        shutil.copytree(ROOT / part, repo / part, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "setup.py"):
        shutil.copy(ROOT / name, repo / name)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "before")

    op, blocks = guide_steps()
    for path, code in blocks:
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        assert not target.exists(), f"the guide's {path} is a new file"
        target.write_text(code)
    listing = repo / "src" / "xferbench" / "families" / "__init__.py"
    listing.write_text(add_to_the_list(listing.read_text(), op))

    git(repo, "add", "-A")
    changed = git(repo, "diff", "--cached", "--name-only").split()
    assert len(changed) <= MOST_FILES, git(repo, "diff", "--cached", "--stat")

    out = tmp_path / "toy.json"
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    ran = subprocess.run([sys.executable, "-m", "pytest", "bench", "--benchmark-only", "-p", "no:cacheprovider",
                          "-k", op, "--xfer-simulate=examples/sim-2gpu-pcie5-nvlink.toml", f"--benchmark-json={out}"],
                         cwd=repo, capture_output=True, text=True, timeout=600, env=env)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    rows = [b for b in json.loads(out.read_text())["benchmarks"] if b["extra_info"]["op"] == op]
    assert sorted(b["extra_info"]["nbytes"] for b in rows) == [2**20, 2**20, 2**22, 2**22]  # quick sizes, 2 GPUs
    assert {b["extra_info"]["clock"] for b in rows} == {"simulated"}

    report = tmp_path / "report.html"
    made = subprocess.run([sys.executable, "-m", "xferbench.cli", "report", str(out), "-o", str(report)],
                          cwd=repo, capture_output=True, text=True, timeout=300, env=env)
    assert made.returncode == 0, made.stderr[-2000:]
    html = report.read_text()
    assert "Scenario: a toy copy" in html and "A pinned copy took" in html
