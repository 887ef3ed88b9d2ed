"""Adding a machine fact is one line of the table (docs/contract.md, "Machine facts"): the toy fact the page shows,
added to a copy of the repository with its recording and a test, touches at most three files and shows in the
report's machine table and in compare's list of what differs between two machines."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from xferbench import machine_facts
from xferbench.contract import hardware_differences, machine_differences
from xferbench.machine_facts import FACTS, Fact, at

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "contract.md"
#: What the issue asks of the shape: the table's line, the fingerprint's line, a test.
MOST_FILES = 3
#: Where the guide's fact goes in the table: before the facts no page row shows (its row comes after the CPU's).
ANCHOR = '    Fact("simulated",'
#: The fingerprint's host block, and the toy's reading added to it.
HOST = '"torch_threads": torch.get_num_threads()}'
RECORDED = HOST[:-1] + ', "numa_nodes": len(list(Path("/sys/devices/system/node").glob("node[0-9]*"))) or None}'
TOY_TEST = '''from xferbench.machine_facts import FACT


def test_numa_nodes_is_hardware():
    assert FACT["NUMA nodes"].change == "hardware"
'''


def guide_fact() -> str:
    """The ``Fact(...)`` line docs/contract.md shows for the toy."""
    section = GUIDE.read_text().split("### Machine facts", 1)[1]
    found = re.search(r"```python\n(Fact\(.*\),)\n```", section)
    assert found, "docs/contract.md no longer shows a machine fact to add"
    return found.group(1)


def toy() -> Fact:
    fact = eval(guide_fact().rstrip(","), {"Fact": Fact, "at": at})  # the guide's own line, not a copy of it
    assert isinstance(fact, Fact)
    return fact


def with_numa(nodes: int) -> dict:
    return {"cpu": {"brand_raw": "EPYC", "count": 2}, "xferbench": {"torch": "2.13.0", "devices": [],
                                                                    "host": {"numa_nodes": nodes}}}


def test_the_toy_fact_is_read_by_every_output(monkeypatch):
    """With the guide's line in the table, the page's machine table has its row (after the CPU's), and compare names
    it among the differences of two machines: hardware, so both lists."""
    facts = list(FACTS)
    facts.insert(next(i for i, f in enumerate(facts) if f.name == "simulated"), toy())
    monkeypatch.setattr(machine_facts, "FACTS", tuple(facts))
    monkeypatch.setattr(machine_facts, "FACT", {f.name: f for f in facts})
    rows = machine_facts.machine_table(with_numa(2))  # the page's machine rows
    assert [label for label, _ in rows] == ["torch", "CUDA / HIP", "driver", "CPU", "Python", "NUMA nodes"]
    assert dict(rows)["NUMA nodes"] == "2"
    assert hardware_differences(with_numa(1), with_numa(2)) == ["NUMA nodes 1 -> 2"]
    assert machine_differences(with_numa(1), with_numa(2)) == ["NUMA nodes 1 -> 2"]
    assert hardware_differences(with_numa(1), {"xferbench": {"devices": []}}) == []  # unrecorded: not compared


def test_a_fact_of_another_type_is_not_recorded():
    """A value not of the fact's JSON type reads as not recorded: no row, not compared."""
    fact = toy()
    assert fact.value(with_numa(2)) == 2 and fact.value(with_numa("2")) is None  # type: ignore[arg-type]
    assert fact.value({"xferbench": {"host": {"numa_nodes": True}}}) is None


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout


def run(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    return subprocess.run([sys.executable, "-m", "xferbench.cli", *args], cwd=repo, capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.mark.slow
def test_a_toy_fact_added_to_a_copy_shows_on_the_page_and_in_compare(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "src", repo / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    (repo / "tests").mkdir()
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "before")

    table = repo / "src" / "xferbench" / "machine_facts.py"
    assert table.read_text().count(ANCHOR) == 1
    table.write_text(table.read_text().replace(ANCHOR, f"    {guide_fact()}\n{ANCHOR}"))
    machine = repo / "src" / "xferbench" / "measure" / "hardware" / "machine.py"
    assert machine.read_text().count(HOST) == 1
    machine.write_text(machine.read_text().replace(HOST, RECORDED))
    (repo / "tests" / "test_numa_nodes.py").write_text(TOY_TEST)
    git(repo, "add", "-A")
    changed = git(repo, "diff", "--cached", "--name-only").split()
    assert len(changed) <= MOST_FILES, git(repo, "diff", "--cached", "--stat")

    info = run(repo, "info")  # the fingerprint, as a run records it: the toy is in its host block
    assert info.returncode == 0, info.stderr[-2000:]
    assert "numa_nodes" in json.loads(info.stdout)["xferbench"]["host"]
    data = json.loads((ROOT / "tests" / "data" / "cpu-host-sweep.json").read_text())
    files = []
    for nodes in (1, 2):
        data["machine_info"]["xferbench"]["host"]["numa_nodes"] = nodes
        files.append(tmp_path / f"numa{nodes}.json")
        files[-1].write_text(json.dumps(data))

    made = run(repo, "report", str(files[0]), "-o", str(tmp_path / "page.html"))
    assert made.returncode == 0, made.stderr[-2000:]
    assert "<tr><th>NUMA nodes</th><td>1</td></tr>" in (tmp_path / "page.html").read_text()
    compared = run(repo, "compare", str(files[0]), str(files[1]))
    assert compared.returncode == 2 and "different machines (NUMA nodes 1 -> 2)" in compared.stderr, compared.stderr
