"""What the report says lives in four homes: the families' folders (families/), the page's sections
(analyze/report/), the gate (analyze/gate/) and the CLI (cli.py, cli_arguments.py, output.py). The rest of the
analysis side (the loader, the run's view, the model, the ladder, the drift floor, the store) computes facts and
says nothing: a sentence there is one a reader of the page cannot find where the page's other sentences are.

A sentence is a string constant or an f-string whose literal text holds five or more plain words. Not sentences:
docstrings, what a ``raise`` or an exception's constructor says (bad input is refused in one line, not reported),
what goes to stderr (``print(..., file=sys.stderr)`` or a module's helper that does so) and a regular expression
(``re``'s patterns are matched, not said). ``INPUT_NOTES`` names the few places left, each with why.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ANALYZE = Path(__file__).resolve().parents[1] / "src" / "xferbench" / "analyze"
#: The analysis side's homes of prose; every other module under analyze/ is scanned.
HOMES = ("report", "gate")
#: A plain word: letters (an apostrophe or hyphen inside), maybe in brackets, quotes or before punctuation; not code
#: (``.cpu()``, ``copy_``, ``cuda:0->cuda:1``), a unit (``GB/s``) or a figure.
WORD = re.compile(r"[(\"'“]?[A-Za-z][A-Za-z'’-]*[)\"'”,.:;!?]*")
SENTENCE_WORDS = 5

#: (module, function or constant) -> why its words are not the report's: what the loader says of the input it was
#: given (refused, skipped, left out, cut short), the non-fatal siblings of ResultsError. The CLI prints them, compare
#: and the page list them as they come; none states a measurement.
_LOADER = "the loader's notes on its input (skipped, left out, cut short), said alike by the CLI, compare and the page"
INPUT_NOTES = {
    ("load/results.py", "fingerprint_problem"): "the one-line error a damaged machine_info is refused with",
    ("load/results.py", "assemble"): _LOADER,
    ("load/results.py", "repeated_note"): _LOADER,
    ("load/results.py", "incomplete_label"): _LOADER,
    ("load/results.py", "machine_described"): _LOADER,
    ("load/history.py", "_run_files"): _LOADER,
    ("load/rows.py", "UNTRACKED_HINT"): "the hint that ends the error and the note on a benchmark not xferbench's",
}


def _literal(node: ast.AST) -> str | None:
    """A string constant's text, or an f-string's literal parts (its fields are figures, not words)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return " ".join(part.value for part in node.values if isinstance(part, ast.Constant))
    return None


def _words(text: str) -> int:
    return sum(1 for token in text.split() if WORD.fullmatch(token))


def _to_stderr(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Name) and call.func.id == "print" and any(
        k.arg == "file" and ast.unparse(k.value) == "sys.stderr" for k in call.keywords)


def _callee(call: ast.Call) -> str:
    return call.func.id if isinstance(call.func, ast.Name) else call.func.attr if isinstance(call.func, ast.Attribute) else ""


def _quiet(tree: ast.Module) -> set[int]:
    """Nodes whose strings are no sentence of the report: docstrings, whatever a raise, an exception's constructor or
    stderr says (directly, or through a module function that prints there), ``re``'s patterns (given directly or by
    a name assigned them), an f-string's own parts."""
    says_to_stderr = {f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
                      and any(isinstance(c, ast.Call) and _to_stderr(c) for c in ast.walk(f))}
    patterns = {c.args[0] for c in ast.walk(tree) if isinstance(c, ast.Call) and c.args
                and isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name) and c.func.value.id == "re"}
    named = {p.id for p in patterns if isinstance(p, ast.Name)}
    quiet = {id(p) for p in patterns} | {id(a.value) for a in ast.walk(tree) if isinstance(a, ast.Assign)
                                         and any(isinstance(t, ast.Name) and t.id in named for t in a.targets)}
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            quiet.add(id(body[0].value))
        loud_call = isinstance(node, ast.Call) and (
            _to_stderr(node) or _callee(node) in says_to_stderr or _callee(node).endswith(("Error", "Exception", "Warning")))
        if isinstance(node, ast.Raise) or loud_call:
            quiet.update(id(inner) for inner in ast.walk(node))
        elif isinstance(node, ast.JoinedStr):
            quiet.update(id(inner) for inner in ast.walk(node) if inner is not node)
    return quiet


def _scopes(tree: ast.Module) -> dict[int, str]:
    """Each node's top-level function or assigned constant, by name."""
    found = {}
    for top in tree.body:
        names = [top.name] if isinstance(top, (ast.FunctionDef, ast.ClassDef)) else [
            t.id for t in getattr(top, "targets", [getattr(top, "target", None)]) if isinstance(t, ast.Name)]
        for inner in ast.walk(top):
            found[id(inner)] = names[0] if names else ""
    return found


def sentences(source: str) -> list[tuple[int, str, str]]:
    """(line, scope, text) of every sentence in a module's source."""
    tree = ast.parse(source)
    quiet, scopes = _quiet(tree), _scopes(tree)
    return sorted((node.lineno, scopes.get(id(node), ""), text) for node in ast.walk(tree)
                  if id(node) not in quiet and (text := _literal(node)) is not None and _words(text) >= SENTENCE_WORDS)


def prose_outside_homes(root: Path = ANALYZE) -> list[str]:
    """``module:line (scope): text`` for every sentence under ``root`` outside the homes and ``INPUT_NOTES``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        module = path.relative_to(root).as_posix()
        if module.split("/")[0] in HOMES:
            continue
        found += [f"{module}:{line} ({scope}): {text[:80]!r}" for line, scope, text in sentences(path.read_text())
                  if (module, scope) not in INPUT_NOTES]
    return found


def test_the_analysis_side_says_nothing_outside_the_report_and_the_gate():
    assert prose_outside_homes() == []


def test_every_input_note_still_says_something():
    """An entry whose words moved away is stale: the list stays as short as the places it names."""
    said = {(path.relative_to(ANALYZE).as_posix(), scope)
            for path in ANALYZE.rglob("*.py") for _, scope, _ in sentences(path.read_text())}
    assert set(INPUT_NOTES) <= said


def test_a_sentence_is_found_and_what_is_no_sentence_is_not():
    source = '''
"""A module's docstring of many words is no sentence."""
import sys
LABEL = "the driver's staging copy through its pinned bounce buffer"
CODE = ".cuda(i), .to('cuda:i') and .to(torch.device)"
RACED = r"fetch first|stale info|cannot lock|unable to lock|failed to update ref"

def f(x):
    """A function's docstring of many words is no sentence."""
    if x:
        raise ValueError(f"{x}: this input is refused in one line")
    print(f"xferbench: {x} skipped, it is not a file", file=sys.stderr)
    error = KeyError("the key is not one this reads")
    say(f"{x}; its page is not written here")
    if re.search(RACED, x) or re.match("one of these words is it", x):
        return None
    return f"{x} took {x} ({x} of the call; interval {x} holds zero)"

def say(note):
    print(note, file=sys.stderr)
'''
    assert [(line, scope) for line, scope, _ in sentences(source)] == [(4, "LABEL"), (17, "f")]
