"""Writing outputs without ever losing an input: checked first, atomic, next to the target, links followed.

Both sides write files (the torchrun entry point its JSON, the CLI its reports, the
pytest plugin its journal), so this sits above them and imports neither.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

__all__ = ["OutputError", "check_output", "write_atomic"]


class OutputError(ValueError):
    """An output path that cannot or must not be written; the message is one line naming it."""


def _same(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _is_below(path: Path, folder: Path) -> bool:
    return folder in path.parents


def check_output(path: Path, inputs: Iterable[Path] = (), create_folder: bool = False) -> Path:
    """Refuse, before any work starts, an output that would destroy an input or cannot be written.

    ``path`` is refused when it resolves (symlinks followed) to an input file, when it
    is a ``*.json`` or ``*.json.gz`` inside an input folder (the next load would read it as a run), when
    it is a folder, a device or a FIFO, or when its folder is missing (unless
    ``create_folder``: the default output's folder is created) or not writable.
    Returns the resolved target, which ``write_atomic`` replaces.
    """
    target = Path(os.path.realpath(path))
    for given in inputs:
        source = Path(os.path.realpath(given))
        if target == source or _same(target, source):
            raise OutputError(f"{path}: this is an input ({given}); writing it would destroy it; choose another output")
        if source.is_dir() and _is_below(target, source) and target.name.endswith((".json", ".json.gz")):
            raise OutputError(f"{path}: a JSON inside the input folder {given} would be read as a run; "
                              "choose another output")
    if target.exists() or target.is_symlink():
        mode = os.stat(target).st_mode if target.exists() else 0
        if stat.S_ISDIR(mode):
            raise OutputError(f"{path}: is a folder; give a file name")
        if not stat.S_ISREG(mode):
            raise OutputError(f"{path}: not a regular file (a device, FIFO or socket); refusing to replace it")
    folder = target.parent
    if not folder.exists():
        if not create_folder:
            raise OutputError(f"{path}: the folder {path.parent} does not exist")
        existing = next(p for p in folder.parents if p.exists())
        if not os.access(existing, os.W_OK | os.X_OK):
            raise OutputError(f"{path}: cannot create the folder {path.parent} ({existing} is not writable)")
    elif not folder.is_dir():
        raise OutputError(f"{path}: {path.parent} is not a folder")
    elif not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{path}: the folder {path.parent} is not writable")
    return target


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write ``text`` (or bytes, such as a gzipped run) so that ``path`` is either the old file or the complete new one.

    A symlink is followed: the file it points to is replaced and the link stays. A
    special file (device, FIFO) is refused rather than replaced by a regular file.
    """
    target = Path(os.path.realpath(path))
    if target.exists() and not target.is_file():
        raise OutputError(f"{path}: not a regular file; refusing to replace it")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8") if isinstance(text, str) else text)
            handle.flush()
            os.fsync(handle.fileno())
        if target.exists():
            mode = stat.S_IMODE(os.stat(target).st_mode)  # keep the permissions the user gave the file
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask  # mkstemp makes it private; a report is for reading
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
