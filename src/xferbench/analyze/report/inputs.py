"""What each file given to ``xferbench report`` is, by content, never by name: the suite's results (a
pytest-benchmark JSON, a journal, a storage folder, a gzipped run), nvbandwidth's ``-j`` JSON, or
nccl-tests' text output (their figures: other_tools.py, loaded only where such a file is given).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..load.results import Document, ResultsError, find_json, is_journal, read_text

__all__ = ["classify", "kind_of"]


def kind_of(path: Path) -> str:
    """``suite``, ``nvbandwidth`` or ``nccl-tests``, by content; ResultsError (one line) for anything else."""
    return classify(path)[0]


def classify(path: Path) -> tuple[str, Document | None]:
    """``kind_of``, and the suite's JSON document when telling it apart took parsing it (handed to the loader,
    which then does not read and parse the file again)."""
    if path.is_dir() or path.suffix == ".gz":  # a folder of runs, or a run kept gzipped
        return "suite", None
    find_json(path)  # missing, a loop of links, or not a regular file (a FIFO would block the read below)
    text = read_text(path)
    head = text.lstrip()[:1]
    if head in ("{", "["):
        try:
            data = json.loads(text)
        except (RecursionError, ValueError):  # nested too deep, a number too long, not JSON
            return "suite", None  # the suite's loader names the JSON error
        if isinstance(data, dict) and "nvbandwidth" in data:
            return "nvbandwidth", None
        if isinstance(data, dict) and ("benchmarks" in data or "machine_info" in data):
            return "suite", None if is_journal(path, text) else Document(path, data)
        raise ResultsError(f"{path}: a JSON file that is neither pytest-benchmark's, nor nvbandwidth's (-j) output")
    if re.search(r"^#.*\balgbw\b.*\bbusbw\b", text, re.MULTILINE) or "nccl-tests version" in text:
        return "nccl-tests", None
    if not text.strip():
        raise ResultsError(f"{path}: the file is empty")
    raise ResultsError(f"{path}: not a result file xferbench reads (pytest-benchmark JSON, nvbandwidth -j JSON, "
                       "or nccl-tests text output)")
