"""The docs pages that list what the code holds stay equal to it: the contract's fields, every module, every
command and option (docs/commands.md's reference is generated from the parser, as asv builds its own)."""

import argparse
import importlib.util
import re
from pathlib import Path

from xferbench import cli
from xferbench.contract import BLOCK, IDENTITY, MEASURED
from xferbench.measure.cases import PROFILES
from xferbench.measure.record import journal
from xferbench.measure.session import blocks, only, order, plugin

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def test_the_contract_page_lists_exactly_the_contracts_fields():
    table = re.findall(r"^\| `(\w+)` \| (identity|measured|block) \|", (DOCS / "contract.md").read_text(), flags=re.M)
    assert [name for name, kind in table if kind == "identity"] == ["xfer_schema", *IDENTITY]
    assert [name for name, kind in table if kind == "measured"] == list(MEASURED)
    assert [name for name, kind in table if kind == "block"] == list(BLOCK)


def test_the_layout_page_names_every_module():
    page = (DOCS / "layout.md").read_text()
    modules = sorted(p.relative_to(ROOT / "src" / "xferbench") for p in (ROOT / "src" / "xferbench").rglob("*.py"))
    named = set(re.findall(r"^\s+([\w.]+\.py)\b", page, flags=re.M))
    missing = [str(m) for m in modules if m.name not in named]
    assert not missing, f"docs/layout.md does not name {missing}"


def test_the_layout_page_is_generated_from_the_module_docstrings():
    assert (DOCS / "layout.md").read_text() == _tool("golden").layout(), "docs/layout.md is stale: run python3 run.py golden"


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


def _tool(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_command_reference_is_what_the_parser_says():
    """docs/commands.md's reference is generated from the argparse parser (python tools/reference_docs.py)."""
    page = (DOCS / "commands.md").read_text()
    assert page == _tool("reference_docs").current(page), "docs/commands.md is stale: run python tools/reference_docs.py"


def test_a_marker_quoted_in_prose_bounds_no_generated_block():
    """The page may name its markers in prose (as this paragraph would): python3 run.py golden, run three times,
    leaves one generated block where it stood, and the prose as written."""
    tool = _tool("reference_docs")
    prose = f"The block between `{tool.BEGIN}` and `{tool.END}` is generated.\n\n"
    page = prose + tool.BEGIN + "\nold\n" + tool.END + "\n\n## After\n"
    for _ in range(3):
        page = tool.current(page)
    assert page.count(tool.BEGIN) == page.count(tool.END) == 2 and page.startswith(prose)
    assert page == prose + tool.commands_reference() + "## After\n"


def test_the_cli_docstring_names_every_command():
    from xferbench.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert cli.__doc__.splitlines()[0] == f"``xferbench {' | '.join(sub.choices)}``."


class _Group:
    """What pytest_addoption calls on pytest's parser and option group, recorded."""

    def __init__(self):
        self.flags = []

    def getgroup(self, *args):
        return self

    def addoption(self, flag, **kwargs):
        self.flags.append(flag)


def test_the_options_page_lists_exactly_the_plugins_options():
    group = _Group()
    plugin.pytest_addoption(group)
    journal.pytest_addoption(group)
    order.pytest_addoption(group)
    blocks.pytest_addoption(group)
    only.pytest_addoption(group)
    page = (DOCS / "options.md").read_text()
    assert re.findall(r"^\| `(--xfer-[\w-]+)` \|", page, flags=re.M) == group.flags


def test_the_options_page_gives_each_profiles_sizes():
    row = next(line for line in (DOCS / "options.md").read_text().splitlines() if line.startswith("| `--xfer-profile`"))
    assert re.findall(r"`(quick|full)`: `([^`]+)`", row) == list(PROFILES.items())
