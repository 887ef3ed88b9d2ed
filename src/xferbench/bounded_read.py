"""Reading a file a user named without ever blocking or taking the machine's memory: the one bounded reader.

Both sides read files they are handed (the analysis side its runs and outputs, the
measuring side a simulated machine's spec), so this sits above them and imports neither.
A FIFO, a device or a socket is refused once opened, without waiting for a writer; a
file past its limit is refused (or cut, when only its first bytes are wanted); a number
past what a float computes with is found once, where it was read. Each caller words the
refusal for its own user.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

__all__ = ["MOST", "NotRegular", "Refused", "TooLarge", "out_of_range", "read_bounded"]

#: The largest size of a number read from a file: past 2**63 a whole number fits no int64 column (numpy, pandas) and
#: floats overflow when summed (two clocks of 1e308 average to infinity); no count, clock, byte or time comes near it.
MOST = 2**63


class Refused(ValueError):
    """A file opened but not read; the subclass says why, the caller words it."""


class NotRegular(Refused):
    """A FIFO, a device or a socket: reading it could block or never end."""


class TooLarge(Refused):
    """More than the limit, when the whole file was asked for."""


def read_bounded(path: Path, limit: int, *, whole: bool = True) -> bytes:
    """At most ``limit`` bytes of the regular file ``path``, read without blocking. OSError when it cannot be opened;
    NotRegular for a special file; TooLarge past ``limit`` when ``whole`` (else its first ``limit`` bytes)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    with os.fdopen(fd, "rb") as handle:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise NotRegular(str(path))
        if whole and status.st_size > limit:  # refused unread: reading a huge file only to refuse it costs its size
            raise TooLarge(str(path))
        raw = handle.read(limit + 1)
    if whole and len(raw) > limit:  # grew since fstat, or a size the file system does not report
        raise TooLarge(str(path))
    return raw[:limit]


def out_of_range(document: dict[str, Any] | list[Any]) -> tuple[str, Any] | None:
    """The place (``benchmarks[3].stats.rounds``) and value of a number in ``document`` (parsed JSON) beyond ±``MOST``
    (an infinity too), or None: refused once where the file is read, no reader after it converts one (NaN is left to
    each field's own check, which names what the field must be). Not recursive: any nesting the parser took is walked."""
    stack: list[tuple[str, Any]] = [("", document)]
    while stack:
        where, value = stack.pop()
        for key, item in value.items() if isinstance(value, dict) else enumerate(value):
            kind = type(item)
            if kind is dict or kind is list:
                stack.append((_place(where, key), item))
            elif (kind is int or kind is float) and (item > MOST or item < -MOST):
                return _place(where, key), item
    return None


def _place(where: str, key: str | int) -> str:
    return f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}" if where else key
