"""The package holds no code that only its tests use: no environment hook only tests set, no branch said to be for
tests, no function or class that nothing but a test calls. Test-only code lives in tests/ (faults injected into
ranks: tests/faulty_rank.py; hand-fed views: tests/fakes.py)."""

import ast
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = sorted((ROOT / "src" / "xferbench").rglob("*.py"))
#: Used by tests alone, in modules this check does not yet reach (each to move to tests/ by whoever holds it).
NOT_YET: set[str] = set()


def _code_words(text: str) -> list[str]:
    """The words a module's code uses, leaving out its imports and its ``__all__`` (a re-export is no use)."""
    skipped: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        exported = isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets)
        if isinstance(node, ast.Import | ast.ImportFrom) or exported:
            skipped.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return [word for number, line in enumerate(text.splitlines(), 1) if number not in skipped
            for word in re.findall(r"\w+", line)]


def test_every_environment_hook_of_the_tests_kind_is_one_users_are_told_of():
    """``XFERBENCH_TEST_*`` is the tests' prefix: src names only those docs/options.md gives users (the slowdown
    that checks a gate has teeth)."""
    named = {name for path in SRC for name in re.findall(r"XFERBENCH_TEST_\w+", path.read_text())}
    documented = set(re.findall(r"XFERBENCH_TEST_\w+", (ROOT / "docs" / "options.md").read_text()))
    assert named <= documented, sorted(named - documented)


def test_no_branch_is_said_to_be_for_tests_only():
    said = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}" for path in SRC
            for number, line in enumerate(path.read_text().splitlines(), 1)
            if re.search(r"\btests? only\b|\btest-only\b|\bonly (the |for )?tests\b", line, re.IGNORECASE)]
    assert not said, said


def test_every_function_and_class_is_used_outside_the_tests():
    """Each is named by the package, the benchmarks, the tools or the templates besides its own definition."""
    others = [*(ROOT / "bench").rglob("*.py"), *(ROOT / "tools").rglob("*.py"), ROOT / "run.py"]
    words = Counter(word for path in [*SRC, *others] for word in _code_words(path.read_text()))
    words.update(word for path in (ROOT / "src" / "xferbench").rglob("*.j2") for word in re.findall(r"\w+", path.read_text()))
    unused = [f"{path.relative_to(ROOT)}:{node.lineno} {node.name}" for path in SRC
              for node in ast.walk(ast.parse(path.read_text()))
              if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
              and not node.name.startswith(("__", "pytest_")) and words[node.name] <= 1 and node.name not in NOT_YET]
    assert not unused, unused


def test_the_check_finds_what_only_a_test_calls(tmp_path):
    """The words of a definition, an import and ``__all__`` are no use; a call is."""
    assert _code_words('from x import f\n__all__ = ["f"]\ndef f():\n    pass\n').count("f") == 1
    assert _code_words("def f():\n    pass\nf()\n").count("f") == 2
