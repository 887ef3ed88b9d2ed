"""A page's figures written to SVG in a forked process while the page goes on being built: both cores work.

Writing a figure (``to_svg``: layout, drawing, hover titles) is half of a report's time and reads nothing but the
figure, so a child forked once a figure is built writes it while the parent computes the next findings and figures.
Inside ``Aside``, ``as_plot`` gives each figure a placeholder comment for its SVG; ``fill`` puts the SVGs in the page.
A child's SVG is the one the parent would write (same figure, same ids); a child that fails or dies leaves its
figures to the parent, which writes them itself and so raises any error of its own. Its warnings are raised again in
the parent. A figure is written where it is built when no core is idle (a child would only wait for one), and
without ``os.fork`` or Linux's count of running tasks.
"""

from __future__ import annotations

import itertools
import os
import pickle
import re
import tempfile
import warnings
from types import TracebackType
from typing import IO, Any, NoReturn

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from . import svg

__all__ = ["Aside"]

_PLACEHOLDER = "<!--xferbench-figure-{}-->"
_NUMBERS = itertools.count()
_PLACEHOLDERS = re.compile(r"<!--xferbench-figure-\d+-->")

Job = tuple[str, Figure, str]  # placeholder, figure, key


class Aside:
    """While open, the figures ``as_plot`` gets are written by one forked child at a time (the parent is the other
    core); on leaving, the parent writes what is left and collects the children's SVGs."""

    def __init__(self) -> None:
        self._pending: list[Job] = []
        self._child: tuple[int, IO[bytes], list[Job]] | None = None
        self._svgs: dict[str, str] = {}
        self._outer: Any = None

    def __enter__(self) -> Aside:
        self._outer = svg.set_writer(self._defer if hasattr(os, "fork") else None)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        svg.set_writer(self._outer)
        try:
            while kind is None and self._pending:  # the page is built: share what is left with the child
                self._collect(wait=False)
                if self._child is None and len(self._pending) > 1 and _spare_core():
                    self._fork(len(self._pending) // 2)
                placeholder, fig, key = self._pending.pop()
                self._svgs[placeholder] = svg.to_svg(fig, key)
        finally:
            for _, fig, _ in self._pending:  # left by an error
                plt.close(fig)
            self._collect(wait=True)  # no child outlives the page

    def fill(self, page: str) -> str:
        """``page`` with each of its figures' placeholders replaced by the figure's SVG."""
        return _PLACEHOLDERS.sub(lambda found: self._svgs.get(found.group(0), found.group(0)), page)

    def _defer(self, fig: Figure, key: str) -> str:
        placeholder = _PLACEHOLDER.format(next(_NUMBERS))
        self._pending.append((placeholder, fig, key))
        self._collect(wait=False)
        if self._child is None and _spare_core():
            self._fork(len(self._pending))
        elif self._child is None:  # every core busy: a second process would only wait for one
            self._svgs.update((placeholder, svg.to_svg(fig, key)) for placeholder, fig, key in self._pending)
            self._pending = []
        return placeholder

    def _fork(self, count: int) -> None:
        """A child to write the first ``count`` figures waiting."""
        jobs, self._pending = self._pending[:count], self._pending[count:]
        result = tempfile.TemporaryFile()
        try:
            with warnings.catch_warnings():
                # Python 3.12+ warns of forking with threads (numpy's BLAS pool, idle here): the child only draws.
                warnings.filterwarnings("ignore", message=".*fork.*", category=DeprecationWarning)
                pid = os.fork()
        except OSError:  # no process to spare: written here
            result.close()
            self._svgs.update((placeholder, svg.to_svg(fig, key)) for placeholder, fig, key in jobs)
            return
        if pid == 0:  # the child: never returns, never runs the parent's exit handlers
            _write(jobs, result)
        for _, fig, _ in jobs:
            plt.close(fig)  # kept for a redraw should the child fail, but no longer one of pyplot's open figures
        self._child = (pid, result, jobs)

    def _collect(self, wait: bool) -> None:
        """Take the child's SVGs once it has exited, or write its figures here if it failed."""
        if self._child is None:
            return
        pid, result, jobs = self._child
        try:
            done, status = os.waitpid(pid, 0 if wait else os.WNOHANG)
        except ChildProcessError:  # reaped by someone else (SIGCHLD ignored): its result cannot be trusted
            done, status = pid, 1 << 8
        if done == 0:
            return
        self._child = None
        with result:
            written: tuple[dict[str, str], list[Any]] | None = None
            if os.waitstatus_to_exitcode(status) == 0:
                result.seek(0)
                written = pickle.load(result)
        if written is None or set(written[0]) != {placeholder for placeholder, _, _ in jobs}:
            written = ({placeholder: svg.to_svg(fig, key) for placeholder, fig, key in jobs}, [])
        self._svgs.update(written[0])
        for message, category, filename, lineno in written[1]:
            warnings.warn_explicit(message, category, filename, lineno)


def _spare_core() -> bool:
    """Whether a core is idle now (Linux: fewer tasks ready to run than cores, this one included); elsewhere, no."""
    try:
        with open("/proc/loadavg") as loadavg:
            running = int(loadavg.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return False
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return running < cores


def _write(jobs: list[Job], result: IO[bytes]) -> NoReturn:
    """In the child: write each figure, then the SVGs and the warnings raised on the way, and exit."""
    code = 1
    try:
        with warnings.catch_warnings(record=True) as caught:
            svgs = {placeholder: svg.to_svg(fig, key) for placeholder, fig, key in jobs}
        pickle.dump((svgs, [(w.message, w.category, w.filename, w.lineno) for w in caught]), result)
        result.flush()
        code = 0
    finally:
        os._exit(code)
