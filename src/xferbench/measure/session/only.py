"""``--xfer-only=FILE``: run just the tests a file names, one test name a line (``test_host[<case>]``), each with all
its blocks; ``xferbench ab --only`` writes that file from a comparison's cases.

Why a file and not ``-k``: a ``-k`` of names splits an id into words at characters it cannot read (``cpu->cuda:0``
becomes ``cpu- and cuda:0``, which selects no block of a case measured in blocks), and a thousand names exceed what
pytest parses or the shell passes. A name that matches no collected test is refused (exit 4: ``xferbench run``'s 2),
so a case asked for is never left out in silence.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ...escape import terminal
from .blocks import block_of

__all__ = ["case_name"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("xferbench").addoption(
        "--xfer-only", default=None, metavar="FILE",
        help="run just the tests FILE names, one a line (a test's name, e.g. test_host[pageable-clone-64MiB-"
             "float32-cpu->cpu], a case measured in blocks with every block); a name no test has is refused")


def case_name(item: pytest.Item) -> str:
    """The item's test name as its case measured whole has it: a block's ``-blockKofN`` left out."""
    if (block := block_of(item)) is None:
        return item.name
    return item.name.removesuffix(block.param_id[len(block.case_id):] + "]") + "]"


def _names(path: str) -> set[str]:
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # a byte order mark is no part of the first name
    except (OSError, UnicodeDecodeError) as error:
        raise pytest.UsageError(f"argument --xfer-only: {path}: cannot read it ({error})") from None
    names = {line.strip() for line in text.splitlines() if line.strip()}
    if not names:
        raise pytest.UsageError(f"argument --xfer-only: {path} names no test (one test name a line)")
    return names


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if (path := config.getoption("xfer_only", None)) is None:
        return
    wanted = _names(str(path))
    kept = [item for item in items if case_name(item) in wanted]
    if missing := sorted(wanted - {case_name(item) for item in kept}):
        raise pytest.UsageError(f"argument --xfer-only: {len(missing)} test(s) in {path} were not collected: "
                                + terminal(", ".join(missing[:5])) + (", ..." if len(missing) > 5 else ""))
    config.hook.pytest_deselected(items=[item for item in items if case_name(item) not in wanted])
    items[:] = kept
