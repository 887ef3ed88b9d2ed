"""Child processes of the test session: which are alive, and ending a whole tree of them (Linux /proc)."""

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def live_children(pid: int | None = None) -> dict[int, str]:
    """Live child processes of ``pid`` (default: this one), by pid: their command lines. Zombies (exited,
    not yet reaped) hold nothing and are left out. Linux only; elsewhere no child is seen."""
    pid = os.getpid() if pid is None else pid
    found: dict[int, str] = {}
    for listing in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            pids = [int(child) for child in listing.read_text().split()]
        except OSError:  # the thread ended meanwhile
            continue
        for child in pids:
            try:
                state = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0]
                command = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except (OSError, IndexError):  # it ended meanwhile
                continue
            if state != "Z":
                found[child] = command.strip()[:300]
    return found


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid``, children before their own children."""
    found, queue = [], list(live_children(pid))
    while queue:
        child = queue.pop(0)
        found.append(child)
        queue.extend(live_children(child))
    return found


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and everything below it, as a lost node or a job's time limit would. Killing a
    process group is not enough: torchrun starts each rank in a session of its own."""
    for process in [pid, *descendants(pid)]:
        try:
            os.kill(process, signal.SIGKILL)
        except ProcessLookupError:
            pass


def become_subreaper() -> bool:
    """Make this process the one that orphans below it are handed to (PR_SET_CHILD_SUBREAPER), so a
    grandchild whose parent was killed stays visible as a child instead of running on unseen."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # 36: PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):  # not Linux
        return False


def until(condition: Callable[[], T], timeout_s: float = 30.0) -> T:
    """``condition()`` once it is truthy, asked again every few milliseconds for up to ``timeout_s``; its last answer
    otherwise. What the OS shows of another process (its /proc entries, its parent) lags behind what this process
    did, the more so under load: a test reads it when it holds, never after a fixed sleep."""
    deadline = time.monotonic() + timeout_s
    while not (found := condition()) and time.monotonic() < deadline:
        time.sleep(0.005)
    return found
