"""What to change and the key findings, printed at the end of ``pytest bench --benchmark-only``, with where the
report is.

Two pytest hooks, registered from plugin.py: pytest-benchmark hands us the JSON it writes
(``--benchmark-json`` or ``--benchmark-autosave``) through ``pytest_benchmark_update_json``;
``pytest_terminal_summary`` runs after it (pytest-benchmark writes in ``pytest_sessionfinish``),
turns that JSON into rows with the analysis side, and prints a few sentences. The summary
never fails a run: a problem reading the results is one line, not a traceback.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

import pytest

from ...output import RUN_OUTPUT
from ..record.pytest_benchmark_adapter import benchmark_session

__all__ = ["pytest_benchmark_update_json", "pytest_terminal_summary", "summary_lines"]

_KEY = pytest.StashKey[dict[str, Any]]()
#: At most this many findings: the page holds the rest.
MAX_FINDINGS = 5


@pytest.hookimpl(optionalhook=True)  # -p no:benchmark gets the plugin's clear message, not "unknown hook"
def pytest_benchmark_update_json(config: pytest.Config, benchmarks: list[Any], output_json: dict[str, Any]) -> None:
    config.stash[_KEY] = output_json


def _where(config: pytest.Config) -> str:
    """The command that writes the report of this run (tox -e bench runs it for reports/index.html)."""
    # Imported here: the journal is a pytest plugin (pytest_plugins), and importing it before pytest
    # registers it stops pytest from rewriting its asserts (PytestAssertRewriteWarning on every run).
    from ..record.journal import benchmark_json_path

    # ``xferbench run`` has pytest write a private file, then moves it to its -o, which it names here.
    if json_path := os.environ.get(RUN_OUTPUT) or benchmark_json_path(config):
        html = Path(json_path).with_suffix(".html")
        return (f"xferbench report {shlex.quote(str(json_path))} -o {shlex.quote(str(html))}   "  # pasted into a shell
                f"(writes {html}, .csv and .md)")
    if config.getoption("benchmark_autosave", False) or config.getoption("benchmark_save", None):
        storage = str(config.getoption("benchmark_storage", ".benchmarks")).removeprefix("file://")
        return f"xferbench report {shlex.quote(storage)} -o reports/index.html   (the newest saved run, with history)"
    return "pass --benchmark-json=FILE (or --benchmark-autosave) to keep these results, then: xferbench report FILE"


def summary_lines(output_json: dict[str, Any]) -> list[str]:
    """The findings of one pytest-benchmark JSON document, as lines."""
    from ...analyze.load.results import Document, ResultsError, load
    from ...analyze.report.story import Story
    from ...analyze.view import RunView

    try:  # the document as it is in memory: nothing written, nothing parsed
        results = load([Document(Path("run.json"), output_json)])
    except ResultsError as error:
        return [f"no xferbench results to summarize ({str(error).split(': ', 1)[-1]})"]
    story = Story.of(RunView.of(results))  # the page's words, told once
    found = story.findings[:MAX_FINDINGS]
    head = ["SIMULATED machine: these figures check the suite, they are not measurements."] if story.view.simulated else []
    head += [story.busy] if story.busy else []
    # what to change first, as the page's first screen: the changes the run resolved, with what each saves
    change = [line for n, c in enumerate(story.changes, 1) for line in (
        f"{n}. {c.spec.title}: {c.text()}", f"   {c.spec.before} → {c.spec.after} ({c.condition})")]
    even = [story.break_even_line] if story.break_even_line else []
    head += ["What to change here:", *change, *even, "Key findings:"] if change else []
    more = [f"({len(story.findings) - len(found)} more in the report)"] if len(story.findings) > len(found) else []
    return head + [f"- {said.headline}" for said in found] + more + ([] if found else ["- not enough data for findings"])


def _unsaved_json(config: pytest.Config) -> dict[str, Any] | None:
    """The run as pytest-benchmark would write it, when it was not asked to write it."""
    session = benchmark_session(config)
    if session is None or not getattr(session, "benchmarks", None):
        return None
    return config.hook.pytest_benchmark_generate_json(
        config=config, benchmarks=session.benchmarks, include_data=False, machine_info=session.get_machine_info(),
        commit_info={})


@pytest.hookimpl(trylast=True)  # after pytest-benchmark's tables: the last thing the reader sees
def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    output_json = config.stash.get(_KEY, None) or _unsaved_json(config)
    if output_json is None or not output_json.get("benchmarks"):
        return
    terminalreporter.section("xferbench: key findings")
    for line in summary_lines(output_json):
        terminalreporter.write_line(line)
    terminalreporter.write_line(f"Report: {_where(config)}")
