"""Rewrite every file the code generates and the tests compare against: ``python3 run.py golden``.

One command, so that a change which alters what the code writes on purpose updates all of it at once:

- ``tests/data/sim-2gpu-quick-ids.txt``: the cases the quick profile plans on the 2-GPU simulated spec
  (tests/test_families.py);
- the committed sample pages ``reports/samples/h200/index.{html,md}`` and ``rerun/index.{html,md}``
  (tests/test_samples.py compares their visible text, not their SVG bytes), and the block of that sample's README
  that quotes the report's first screen and key findings (between ``BEGIN`` and ``END``);
- ``tests/data/golden/``: the report's Markdown and CSV for the CPU and H200 samples, without the machine-instance
  labelling they predate (tests/test_view.py);
- ``docs/layout.md`` (from the module docstrings) and ``docs/commands.md``'s reference (from the parser)
  (tests/test_docs.py).

``python tools/golden.py ids samples ...`` rewrites only the parts named; ``--check`` writes nothing and exits 1
when a part is stale. Run from the checkout (its ``src`` is put first on the path).
"""

from __future__ import annotations

import argparse
import ast
import csv
import importlib.util
import io
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "python3 run.py golden"
SIM_SPEC = "examples/sim-2gpu-pcie5-nvlink.toml"
IDS = ROOT / "tests" / "data" / "sim-2gpu-quick-ids.txt"
GOLDEN = ROOT / "tests" / "data" / "golden"
LAYOUT = ROOT / "docs" / "layout.md"
#: Each committed sample page and the run it is the report of (paths from the checkout, as the page names them).
SAMPLES = {"reports/samples/h200/index.html": ["reports/samples/h200/full.json.gz"],
           "reports/samples/h200/rerun/index.html": ["reports/samples/h200/rerun/full.json.gz"]}
#: The H200 sample's README and the run whose report its generated block quotes (run 1, as index.md).
README = ROOT / "reports" / "samples" / "h200" / "README.md"
README_RUN = ROOT / SAMPLES["reports/samples/h200/index.html"][0]
BEGIN = f"<!-- written by {COMMAND} from {README_RUN.name}: the report's words, edit the code that says them -->"
END = "<!-- end of what the golden command writes -->"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}


# -- the planned cases ---------------------------------------------------------------------------------------------

def planned_ids() -> str:
    """Every case id ``pytest bench --collect-only`` plans on the 2-GPU simulated spec, in run order, one a line."""
    listed = subprocess.run([sys.executable, "-m", "pytest", "bench", "--collect-only", "-q", "-p", "no:cacheprovider",
                             f"--xfer-simulate={SIM_SPEC}"], cwd=ROOT, capture_output=True, text=True, timeout=600,
                            env=_env())
    if listed.returncode != 0:
        raise RuntimeError(f"pytest --collect-only failed ({listed.returncode}): {listed.stdout[-2000:]}{listed.stderr[-2000:]}")
    return "".join(f"{line}\n" for line in listed.stdout.splitlines() if "::" in line)


# -- the sample pages ----------------------------------------------------------------------------------------------

def write_sample(page: str, output: Path) -> Path:
    """``xferbench report`` of the sample ``page`` into ``output`` (its .md beside it), run from the checkout so the
    Markdown names the inputs as the committed page does."""
    done = subprocess.run([sys.executable, "-m", "xferbench.cli", "report", *SAMPLES[page], "-o", str(output)],
                          cwd=ROOT, capture_output=True, text=True, env=_env())
    if done.returncode != 0:
        raise RuntimeError(f"xferbench report for {page} failed: {done.stderr[-2000:]}")
    return output


class _Text(HTMLParser):
    """The text a reader sees: text nodes (SVG <text> and hover <title> included), never scripts or styles."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        text = " ".join(data.split())
        if text and not self._skip:
            self.parts.append(text)


def visible_text(html: str) -> list[str]:
    """A page's visible text, its figures' titles and hover titles, one string per text node: what a sample is
    compared on (SVG paths and ids vary with matplotlib and its fonts)."""
    parser = _Text()
    parser.feed(html)
    return parser.parts


def readme_block() -> str:
    """The report's first screen and its key findings' headlines on run 1, worded as index.md words them."""
    # Imported here: run as a script, main() puts the checkout's src first on the path only once this module is loaded.
    from xferbench.analyze.load.results import load
    from xferbench.analyze.report.export import to_markdown
    from xferbench.analyze.report.story import Story
    from xferbench.analyze.view import RunView

    # the Markdown's own lines, so that the README words a change as the report does (one writer of the change line)
    sections = dict(part.split("\n", 1) for part in to_markdown(Story.of(RunView.of(load([README_RUN])))).split("\n## ")[1:])
    changes = [line for line in sections.get("What to change here", "").splitlines() if line[:1].isdigit()]
    headlines = [line for line in sections.get("Key findings", "").splitlines() if line.startswith("- ")]
    return "\n".join(["What to change here:", "", *changes, "", "Key findings:", "", *headlines])


def with_block(text: str, block: str) -> str:
    """``text`` with what lies between its ``BEGIN`` and ``END`` lines replaced by ``block``."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{README.relative_to(ROOT)} lacks its marks {BEGIN!r} and {END!r}")
    return f"{text[:start + len(BEGIN)]}\n{block}\n{text[end:]}"


# -- the golden Markdown and CSV of tests/test_view.py -------------------------------------------------------------

def _report_files(inputs: list[str]) -> tuple[str, str]:
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run([sys.executable, "-m", "xferbench.cli", "report", *inputs, "-o", f"{folder}/index.html"],
                              cwd=ROOT, capture_output=True, text=True, env=_env())
        if done.returncode != 0:
            raise RuntimeError(f"xferbench report {' '.join(inputs)} failed: {done.stderr[-2000:]}")
        return Path(folder, "index.md").read_text(), Path(folder, "index.csv").read_text()


def view_goldens() -> dict[Path, str]:
    """tests/data/golden/: the report's Markdown and CSV as the code writes them, less the instance labelling
    (the CSV's ``instance`` column, the Markdown's "Machine instances" line)."""
    cpu_md, cpu_csv = _report_files(["tests/data/cpu-sample.json"])
    rows = list(csv.reader(io.StringIO(cpu_csv)))
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(row[:1] + row[2:] for row in rows)
    h200_md, _ = _report_files(["reports/samples/h200/full.json.gz", "reports/samples/h200/quick-scenarios.json"])
    lines = h200_md.split("\n")
    kept = [line for line in lines if not line.startswith("- Machine instances:")]
    return {GOLDEN / "cpu-sample.md": cpu_md, GOLDEN / "cpu-sample.csv": out.getvalue(), GOLDEN / "h200.md": "\n".join(kept)}


# -- docs/layout.md ------------------------------------------------------------------------------------------------

#: A summary longer than this is cut at its last clause before it (the docstring says the rest).
LONGEST = 60


def summary(path: Path) -> str:
    """A module's summary: the first sentence of its docstring, cut after its last clause within ``LONGEST``."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    paragraph = " ".join(doc.split("\n\n")[0].split()).replace("``", "`")
    found = re.match(r"(.+?[^.][.?!])(?:\s|$)", paragraph)
    sentence = found.group(1) if found else paragraph
    if len(sentence) <= LONGEST:
        return sentence
    cut = max(sentence.rfind(mark, 0, LONGEST) for mark in (": ", "; ", ", ", " ("))
    return sentence[:cut if cut > 20 else sentence.rfind(" ", 0, LONGEST)] + "…"


def _tree(folder: Path, depth: int, lines: list[str], above: str = "") -> None:
    """``folder``'s modules, then its packages; a module that starts as its package does shows its name only."""
    indent = "  " * depth
    for path in sorted(folder.iterdir(), key=lambda p: (p.is_dir(), p.name != "__init__.py", p.name)):
        if path.name == "__pycache__" or (path.is_file() and path.suffix != ".py"):
            continue
        if path.is_dir():
            init = path / "__init__.py"
            if init.exists():
                _entry(f"{indent}{path.name}/", summary(init), lines)
                _tree(path, depth + 1, lines, summary(init))
        elif path.name != "__init__.py" or depth == 1:
            text = summary(path)
            said = text == above or (above.endswith("…") and text.startswith(above[:-1]))
            _entry(f"{indent}{path.name}", "" if said else text, lines)


def _entry(name: str, text: str, lines: list[str]) -> None:
    column = max(len(name) + 2, 24)
    wrapped = textwrap.wrap(text, width=max(40, 116 - column)) or [""]
    lines.append(f"{name:<{column}}{wrapped[0]}".rstrip())
    lines += [f"{'':<{column}}{more}" for more in wrapped[1:]]


LAYOUT_HEAD = """# Layout

Generated from each module's docstring by `python3 run.py golden`; a package's line is its `__init__.py`'s. A
family's folder holds its record and findings (`__init__.py`, no torch) and what it runs (`run.py`).

```
"""
LAYOUT_TAIL = """```

Outside the package: `bench/` (the benchmarks, shipped as `xferbench.bench`), `tests/` (CPU only), `tools/`
(check scripts, this page's generator), `examples/` (simulated specs, a CI workflow), `reports/samples/` (real
runs), `run.py` (the Quickstart), `.ci/` (pull-request and nightly checks).

`analyze/` never imports torch nor `measure/`; the families' records, contract, units, output and escape modules
import neither side; `store` sits above `report` and `gate`, above `view`, above `load`. Inside `report` the page sits
over the story (every sentence, told once) and the Markdown writer, those over the sections, the sections over the
sentences (`findings`) and figures (`plots`), which never import each other, and those over their parts and the
drawing (`svg`). import-linter (`pyproject.toml`, `tox -e lint`) keeps it so.
"""


def layout() -> str:
    """docs/layout.md: every module under src/xferbench/ with its docstring's summary."""
    lines = ["src/xferbench/"]
    _tree(ROOT / "src" / "xferbench", 1, lines)
    return LAYOUT_HEAD + "\n".join(lines) + "\n" + LAYOUT_TAIL


def _reference_docs() -> object:
    spec = importlib.util.spec_from_file_location("reference_docs", ROOT / "tools" / "reference_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the command -----------------------------------------------------------------------------------------------

def _texts() -> dict[Path, str]:
    return {IDS: planned_ids()}


def _layout() -> dict[Path, str]:
    commands = ROOT / "docs" / "commands.md"
    return {LAYOUT: layout(), commands: _reference_docs().current(commands.read_text())}  # type: ignore[attr-defined]


def _samples(check: bool) -> list[str]:
    """Rewrite (or, with ``check``, compare) the committed sample pages and the README block; the stale ones."""
    stale = []
    for page in SAMPLES:
        committed = ROOT / page
        with tempfile.TemporaryDirectory() as folder:
            written = write_sample(page, Path(folder) / "index.html")
            html, md = written.read_text(), written.with_suffix(".md").read_text()
        if visible_text(html) != visible_text(committed.read_text()) or md != committed.with_suffix(".md").read_text():
            stale.append(page)
            if not check:
                committed.write_text(html)
                committed.with_suffix(".md").write_text(md)
    readme = README.read_text()
    if (current := with_block(readme, readme_block())) != readme:
        stale.append(str(README.relative_to(ROOT)))
        if not check:
            README.write_text(current)
    return stale


PARTS: dict[str, Callable[[], dict[Path, str]]] = {"ids": _texts, "view": view_goldens, "layout": _layout}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="golden", description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="*", metavar="PART", help=f"among {', '.join([*PARTS, 'samples'])} (all)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a part is stale")
    args = parser.parse_args(argv)
    chosen = args.parts or [*PARTS, "samples"]
    unknown = [part for part in chosen if part not in (*PARTS, "samples")]
    if unknown:
        parser.error(f"no part {', '.join(unknown)}: the parts are {', '.join([*PARTS, 'samples'])}")
    stale = []
    for part in chosen:
        if part == "samples":
            stale += _samples(args.check)
            continue
        for path, text in PARTS[part]().items():
            if not path.exists() or path.read_text() != text:
                stale.append(str(path.relative_to(ROOT)))
                if not args.check:
                    path.write_text(text)
    verb = "stale" if args.check else "rewrote"
    print(f"golden: {verb} {', '.join(stale)}" if stale else "golden: every generated file is current")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    sys.exit(main())
