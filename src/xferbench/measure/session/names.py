"""A shipped benchmark's name in a run's JSON, the same however it ran: ``pytest bench`` from a checkout names it
``bench/test_host.py::test_host[...]``, the package (``xferbench run``, ``pytest --pyargs xferbench.bench``)
``test_host.py::test_host[...]``; history, compare and github-action-benchmark (which names its series by
``fullname``) must see one case. Both become the checkout's form. pytest-benchmark writes a parameter it cannot
put in JSON as ``UNSERIALIZABLE[Case(...)]`` (its ``compare`` prints that in its params column): a case is
written as its test id instead. No torch here."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

__all__ = ["plain_names", "plain_params", "shipped_folder", "stable_fullname"]

#: What JSON holds as it is.
_JSON = (str, int, float, bool, type(None), list, dict)


def shipped_folder() -> Path | None:
    """The folder of the package ``xferbench.bench`` (a checkout's ``bench/`` when installed editable), or None."""
    try:
        spec = importlib.util.find_spec("xferbench.bench")
    except (ImportError, ValueError):
        return None
    return Path(spec.origin).resolve().parent if spec is not None and spec.origin else None


def stable_fullname(fullname: str, rootpath: Path, folder: Path | None) -> str:
    """``bench/<file>::<test>`` for a test in the shipped folder, whatever pytest's root; any other unchanged."""
    file, sep, rest = fullname.partition("::")
    if folder is None or not sep:
        return fullname
    path = rootpath / file
    if not path.exists() and (folder / file).is_file():  # --pyargs elsewhere: named from the package's folder
        path = folder / file
    try:
        inside = path.resolve().relative_to(folder)
    except (ValueError, OSError):
        return fullname
    return f"bench/{inside.as_posix()}::{rest}"


def plain_params(written: dict[str, Any] | None) -> dict[str, Any] | None:
    """A benchmark's params with each case (an object JSON cannot hold, which pytest-benchmark would write as
    ``UNSERIALIZABLE[...]``) replaced by its test id."""
    if not written:
        return written

    def plain(value: Any) -> Any:
        ident = getattr(value, "id", None)
        return ident if not isinstance(value, _JSON) and isinstance(ident, str) else value

    return {name: plain(value) for name, value in written.items()}


def plain_names(rootpath: Path, output_json: dict[str, Any]) -> None:
    """Rewrite a run's JSON (pytest_benchmark_update_json's): stable fullnames, plain params."""
    folder = shipped_folder()
    for row in output_json.get("benchmarks", []):
        row["params"] = plain_params(row.get("params"))
        if isinstance(name := row.get("fullname"), str):
            row["fullname"] = stable_fullname(name, rootpath, folder)
