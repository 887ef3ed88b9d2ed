"""The docs pages that list what the code holds stay equal to it: the contract's fields, every module."""

import re
from pathlib import Path

from xferbench.contract import IDENTITY, MEASURED

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def test_the_contract_page_lists_exactly_the_contracts_fields():
    table = re.findall(r"^\| `(\w+)` \| (identity|measured) \|", (DOCS / "contract.md").read_text(), flags=re.M)
    assert [name for name, kind in table if kind == "identity"] == ["xfer_schema", *IDENTITY]
    assert [name for name, kind in table if kind == "measured"] == list(MEASURED)


def test_the_layout_page_names_every_module():
    page = (DOCS / "layout.md").read_text()
    modules = sorted(p.relative_to(ROOT / "src" / "xferbench") for p in (ROOT / "src" / "xferbench").rglob("*.py"))
    named = set(re.findall(r"^\s+([\w.]+\.py)\b", page, flags=re.M))
    missing = [str(m) for m in modules if m.name not in named]
    assert not missing, f"docs/layout.md does not name {missing}"


def test_every_page_the_readme_maps_exists_and_every_page_is_mapped():
    readme = (ROOT / "README.md").read_text()
    linked = set(re.findall(r"\]\((docs/[\w-]+\.md)\)", readme))
    pages = {f"docs/{p.name}" for p in DOCS.glob("*.md")}
    assert linked == pages


def test_the_readme_quickstart_is_two_commands():
    readme = (ROOT / "README.md").read_text()
    block = readme[readme.index("## Quickstart"):].split("```")[1]
    commands = [line for line in block.splitlines()[1:] if line.strip()]
    assert [c.split("#")[0].strip() for c in commands] == ["python3 run.py bench", "python3 run.py test"]
