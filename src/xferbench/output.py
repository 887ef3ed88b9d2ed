"""Writing outputs without ever losing an input: checked first, atomic, next to the target, links followed.

Both sides write files (the torchrun entry point its JSON, the CLI its reports, the
pytest plugin its journal), so this sits above them and imports neither.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import stat
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from .bounded_read import read_bounded

__all__ = ["GENERATOR", "RUN_OUTPUT", "OutputError", "check_output", "in_storage", "never_foreign", "write_atomic",
           "write_together"]

#: The environment variable in which ``xferbench run`` tells its pytest the -o it will move the run to (pytest writes a
#: private file first), so that the run's summary names the file the user gets.
RUN_OUTPUT = "XFERBENCH_RUN_OUTPUT"

#: The temporary file beside the target: short, so a legal long target name still leaves room for it.
_TMP_PREFIX, _TMP_SUFFIX = ".xfb.", ".tmp"
#: A run pytest-benchmark saved (``--benchmark-save`` / ``--benchmark-autosave``): ``0001_name.json``.
#: pytest-benchmark's machine folder: ``{system}-{implementation}-{version}-{bits}bit``.
_MACHINE_FOLDER = re.compile(r"[^/]+-[^/]+-\d+\.\d+-\d+bit")
_STORED_RUN = re.compile(r"\d{4}_.*\.json(\.gz)?")


class OutputError(ValueError):
    """An output path that cannot or must not be written; the message is one line naming it."""


#: The mark of a page xferbench wrote (the store's dashboard).
GENERATOR = '<meta name="generator" content="xferbench">'
#: What an HTML page xferbench wrote holds in its first ``_HEAD`` bytes: one of these.
_PAGE_MARKS = (GENERATOR.encode(), b"<title>xferbench dashboard</title>")
_HEAD = 4096
#: A noise file larger than this is no calibrate output (thousands of cases take a few MB).
_MOST_NOISE = 64 * 2**20
#: How a report's page and Markdown end (``write_together``): xferbench wrote them, from which run, and the SHA-256 of
#: each file written with them (their own text before the mark; the CSV, which cannot carry a comment, whole). Only a
#: file whose hash such a mark lists is taken for xferbench's: a title says nothing (anyone's README may begin
#: "# xferbench"), and a file edited since it was written is the user's.
_MARK = re.compile(rb"<!-- written by xferbench from run [^\n>]*; sha256 ((?:[0-9a-f]{64} )+)-->\n\Z")
_MARKED = (".html", ".md")  # the files that can end in an HTML comment
_MOST_REPORT = 256 * 2**20


def _page(path: Path) -> bool:
    head = read_bounded(path, _HEAD, whole=False).lower()
    return any(mark.lower() in head for mark in _PAGE_MARKS)


def _noise(path: Path) -> bool:
    raw = read_bounded(path, _MOST_NOISE)  # past it, TooLarge: refused as a file that cannot be told apart
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and "xferbench_noise" in data


def _sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).hexdigest().encode()


def _marked(path: Path) -> tuple[bytes, list[bytes]]:
    """``path``'s content before its mark, and the hashes its mark lists (none without one)."""
    raw = read_bounded(path, _MOST_REPORT)
    found = _MARK.search(raw)
    return (raw[:found.start()], found.group(1).split()) if found else (raw, [])


def _written(path: Path) -> bool:
    """Did xferbench write ``path`` as it is: is its hash listed by its own mark, or by the mark of the page or Markdown
    beside it (a CSV's)? A neighbour that cannot be read lists nothing."""
    content, listed = _marked(path)
    for other in {path.with_suffix(suffix) for suffix in _MARKED} - {path}:
        with contextlib.suppress(OSError, ValueError):
            listed += _marked(other)[1]
    return _sha256(content) in listed


#: How a file xferbench wrote is told from another's of the same name, by kind: the store's dashboard page, a noise
#: file, a report's page and companions (by their marks only). What: how the refusal names it.
_OURS: dict[str, tuple[Callable[[Path], bool], str]] = {
    "page": (_page, "a page"),
    "noise": (_noise, "a noise file"),
    "report": (_written, "a report"),
}


def never_foreign(path: Path, kind: str, said: str, force: bool = False) -> None:
    """Refuse to replace ``path`` when it exists and xferbench did not write it (no mark of ``kind`` in it): a page,
    JSON or notes of the user's or another tool's with the output's name would be lost. ``said`` begins the one line
    (the option and its value); ``force`` (the user's ``--force``) replaces it anyway. An earlier output of xferbench
    is replaced, so a command run again keeps working."""
    if force or not (path.exists() or path.is_symlink()):
        return
    ours, what = _OURS[kind]
    try:
        mine = ours(path)
    except (OSError, ValueError) as error:  # ValueError: the bounded reader's refusals (a FIFO, a file too large)
        raise OutputError(f"{said}: cannot read {path} to tell whether xferbench wrote it "
                          f"({getattr(error, 'strerror', None) or type(error).__name__}); refusing to replace it") from None
    if not mine:
        which = "" if said.endswith(str(path)) else f"{path} "
        raise OutputError(f"{said}: {which}exists and is not {what} xferbench wrote (or was changed since); it would be "
                          "replaced. Choose another name, or give --force to replace it")


def _same(a: Path, b: Path) -> bool:
    with contextlib.suppress(OSError, ValueError):  # either missing, unreadable or unnameable: not the same file
        return os.path.samefile(a, b)
    return False


def _read_only(target: Path) -> bool:
    """A file nobody may write (``chmod 444``): refused even where its folder would let a rename
    replace it, and even for root, whom ``os.access`` always allows."""
    return not os.stat(target).st_mode & 0o222 or not os.access(target, os.W_OK)


def in_storage(path: Path) -> Path | None:
    """The pytest-benchmark storage folder ``path`` lies in, or None: its folder holds ``NNNN_*.json`` runs
    (a machine folder, or a flat storage), or is a storage root whose machine folders (``Linux-CPython-3.11-64bit``)
    hold them. Every JSON there is read as a run by ``history``. Only the file's own folder is looked at: a
    ``reports/compare.json`` beside ``reports/history/`` is not inside a storage, nor is a test's folder beside
    another test's runs."""
    folder = Path(os.path.realpath(path)).parent
    with contextlib.suppress(OSError):  # a folder we cannot list holds nothing we would read
        children = list(folder.iterdir())
        if any(_STORED_RUN.fullmatch(c.name) for c in children) or any(
                _MACHINE_FOLDER.fullmatch(c.name) and any(_STORED_RUN.fullmatch(g.name) for g in c.iterdir())
                for c in children if c.is_dir() and not c.is_symlink()):
            return folder
    return None


def _check_name_length(path: Path, target: Path) -> None:
    """A name the file system cannot hold fails only when written, after the whole run: refused up front."""
    existing = next((p for p in target.parents if p.exists()), Path("/"))
    try:
        most = os.pathconf(existing, "PC_NAME_MAX")
    except (OSError, ValueError):
        most = 255
    size = len(os.fsencode(target.name))
    if size > most:
        raise OutputError(f"{str(path)[:80]}...: the name is longer than this file system allows ({size} bytes, at most {most})")


def check_output(path: Path, inputs: Iterable[Path] = (), create_folder: bool = False, run: bool = False) -> Path:
    """Refuse, before any work starts, an output that would destroy an input or cannot be written.

    ``path`` is refused when it resolves (symlinks followed) to an input file, when it
    is a ``*.json`` or ``*.json.gz`` inside an input folder or, unless it is a ``run`` itself, inside a
    pytest-benchmark storage folder (the next load would read it as a run), when
    it is a folder, a device, a FIFO or read-only, when its name is longer than the file system allows,
    or when its folder is missing (unless ``create_folder``: the default output's folder is created) or not writable.
    Returns the resolved target, which ``write_atomic`` replaces.
    """
    target = Path(os.path.realpath(path))
    _check_name_length(path, target)
    for given in inputs:
        source = Path(os.path.realpath(given))
        if target == source or _same(target, source):
            raise OutputError(f"{path}: this is an input ({given}); writing it would destroy it; choose another output")
        if source.is_dir() and source in target.parents and target.name.endswith((".json", ".json.gz")):
            raise OutputError(f"{path}: a JSON inside the input folder {given} would be read as a run; choose another output")
    if target.exists() or target.is_symlink():
        mode = os.stat(target).st_mode if target.exists() else 0
        if stat.S_ISDIR(mode):
            raise OutputError(f"{path}: is a folder; give a file name")
        if not stat.S_ISREG(mode):
            raise OutputError(f"{path}: not a regular file (a device, FIFO or socket); refusing to replace it")
        if _read_only(target):
            raise OutputError(f"{path}: is read-only; refusing to replace it (make it writable, or choose another name)")
    if not run and target.name.endswith((".json", ".json.gz")) and (storage := in_storage(target)) is not None:
        raise OutputError(f"{path}: inside the pytest-benchmark storage folder {storage}, where it would be read as a "
                          "run; choose another folder")
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


def write_atomic(path: Path, text: str | bytes, exclusive: bool = False) -> Path:
    """Write ``text`` (or bytes, such as a gzipped run) so that ``path`` is either the old file or the complete new one.

    A symlink is followed: the file it points to is replaced and the link stays. A
    special file (device, FIFO) or a read-only file is refused rather than replaced.
    ``exclusive``: the name is claimed at the moment of writing, so of two runs writing
    one name at once the second never replaces the first: it takes ``name.1.json``.
    Returns the path written.
    """
    tmp, target = _staged(path, text.encode("utf-8") if isinstance(text, str) else text)
    try:
        if exclusive:
            return _claim(tmp, target)
        os.replace(tmp, target)
        return target
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_together(files: dict[Path, str], run: str) -> None:
    """Write ``files`` (a report's page, CSV and Markdown) all or none, each atomically: all are written beside their
    targets first (a page and a Markdown ending in the set's mark, which ``never_foreign`` reads), then renamed into
    place with SIGINT, SIGTERM and SIGHUP held back. A full disk or an interruption leaves the old set or the new one:
    never a page beside another build's Markdown, nor one that looks complete without them."""
    run = re.sub(r"[^\w.,+=@-]|-(?=-)", "_", run)[:200]  # inert inside an HTML comment
    plain = b"".join(_sha256(text.encode()) + b" " for path, text in files.items() if path.suffix not in _MARKED)
    staged: list[tuple[str, Path]] = []
    try:
        for path, text in files.items():
            data = text.encode()
            if path.suffix in _MARKED:
                data += b"<!-- written by xferbench from run %s; sha256 %s %s-->\n" % (run.encode(), _sha256(data), plain)
            staged.append(_staged(path, data))
        with _signals_held():
            for tmp, target in staged:
                os.replace(tmp, target)
    except BaseException:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP caught while the block runs and raised again after it (a handler is the process's,
    so whichever thread receives one, it waits); only the main thread may set handlers: elsewhere nothing is held."""
    caught: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {held: signal.signal(held, lambda number, _: caught.append(number))
              for held in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for held, handler in before.items():
            signal.signal(held, signal.SIG_DFL if handler is None else handler)
        for number in caught:
            signal.raise_signal(number)


def _staged(path: Path, data: bytes) -> tuple[str, Path]:
    """``data`` in a temporary file beside ``path``'s target (links followed), on disk, with the target's permissions;
    and the target: what a rename puts in place."""
    target = Path(os.path.realpath(path))
    if target.exists() and not target.is_file():
        raise OutputError(f"{path}: not a regular file; refusing to replace it")
    if target.exists() and _read_only(target):
        raise OutputError(f"{path}: is read-only; refusing to replace it")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, suffix=_TMP_SUFFIX, dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if target.exists():
            mode = stat.S_IMODE(os.stat(target).st_mode)  # keep the permissions the user gave the file
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask  # mkstemp makes it private; a report is for reading
        os.chmod(tmp, mode)
        return tmp, target
    except BaseException as error:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(error, OSError) and error.filename is None and error.errno is not None:
            raise OSError(error.errno, error.strerror, str(path)) from error  # a full disk names no file: say which
        raise


def _claim(tmp: str, target: Path) -> Path:
    """Link the finished ``tmp`` to ``target``, or where another run took that name meanwhile to the first free
    ``stem.N.suffix``: a hard link fails if the name exists, so the check and the write are one step."""
    name, suffix = (target.name[:-8], ".json.gz") if target.name.endswith(".json.gz") else (target.stem, target.suffix)
    candidate, counter = target, 1
    while True:
        with contextlib.suppress(FileExistsError):
            os.link(tmp, candidate)
            Path(tmp).unlink()
            return candidate
        candidate, counter = target.with_name(f"{name}.{counter}{suffix}"), counter + 1
