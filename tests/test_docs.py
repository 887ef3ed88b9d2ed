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


def test_the_python_version_the_docs_state_is_pyproject_s():
    """README and docs/install.md name the oldest Python pyproject.toml's requires-python allows, and no other."""
    required = re.search(r'^requires-python = ">=(3\.\d+)"', (ROOT / "pyproject.toml").read_text(), flags=re.M).group(1)
    for page in (ROOT / "README.md", DOCS / "install.md"):
        text = page.read_text()
        assert f"Python {required} or newer" in text, page
        stated = set(re.findall(r"Python (3\.\d+)(?:\+| or newer| or later)", text))
        assert stated == {required}, f"{page.name} states Python {stated}; pyproject.toml requires >={required}"
