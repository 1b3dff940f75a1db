"""Output files written whole or not at all (docs/fmi-mapping.md, "Output files").

Every file the tool writes (the .fmu, the CSV and PNG of ``simulate``, the DOT and PNG of
``analyze --dot``) goes through `atomic_output`:

* the destination is checked *before* any work: not a directory, not one of the input files,
  and its directory accepts a new file, which is proven by creating the temporary file there
  (``tempfile.mkstemp`` in the target directory: a unique name per writer);
* the content is written to that temporary file, which then replaces the destination in one
  ``os.replace`` (atomic on POSIX within one file system). Two writers of the same path each
  have their own temporary file, so the destination always holds one complete output: the
  last writer's;
* on any error, and on SIGINT/SIGTERM (the command line turns both into an exception,
  `mdae_fmu.cli`), the temporary file is removed.

Problems with the destination raise `OutputError` (exit code 2), naming the output file and
the operating system's reason, never the input file.
"""

from __future__ import annotations

import os
import signal
import stat
import threading
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

from .diagnostics import EXIT_INPUT, MdaeError

#: Suffix of the temporary files (``.<name>.<random>.tmp`` next to the destination).
TMP_SUFFIX = ".tmp"


class OutputError(MdaeError):
    """An output file cannot be written (exit code 2); the message names that file."""
    exit_code = EXIT_INPUT

    def __init__(self, path: str | Path, reason: str):
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{path}: cannot write: {reason}")


def os_reason(err: OSError) -> str:
    """The operating system's reason of ``err`` without the file name (``Permission denied``)."""
    return err.strerror or str(err)


def check_destination(path: str | Path, inputs: Iterable[str | Path | None] = ()) -> Path:
    """Refuse an output path that is a directory or names one of ``inputs`` (the same file,
    also through links); returns ``path`` as a Path. Raises `OutputError`."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(path, "it is a directory (give a file name)")
    for src in inputs:
        if src is None:
            continue
        src = Path(src)
        try:
            same = path.exists() and src.exists() and os.path.samefile(path, src)
        except OSError:
            same = False
        if same or path.resolve() == src.resolve():
            raise OutputError(path, f"it is the input file {src}; the output would replace it "
                                    "(choose another output name)")
    return path


def check_writable(path: str | Path, inputs: Iterable[str | Path | None] = ()) -> Path:
    """`check_destination`, then prove that the directory accepts a new file by creating and
    removing a temporary file there: for outputs written at the end of a long computation
    (the CSV and plot of ``simulate``, the DOT of ``analyze``). Raises `OutputError`."""
    path = check_destination(path, inputs)
    try:
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
    except OSError as err:
        raise OutputError(path, os_reason(err)) from None
    os.close(fd)
    os.unlink(name)
    return path


def _new_file_mode(dest: Path) -> int:
    """Permissions of the written file: those of the file it replaces, else 0666 minus the
    umask (what ``open()`` would give; ``mkstemp`` creates files 0600)."""
    try:
        return stat.S_IMODE(dest.stat().st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


@contextmanager
def atomic_output(path: str | Path, inputs: Iterable[str | Path | None] = (),
                  make_parents: bool = False) -> Iterator[Path]:
    """Reserve a temporary file next to ``path`` and yield its Path; when the ``with`` body
    ends normally the temporary file replaces ``path``, otherwise (exception, KeyboardInterrupt,
    SystemExit) it is removed (module docstring). ``make_parents``: create missing parent
    directories first. Raises `OutputError` for a destination that cannot be written, before
    the body runs."""
    path = check_destination(path, inputs)
    parent = path.parent
    if make_parents:
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise OutputError(path, f"cannot create its directory {parent}: "
                                    f"{os_reason(err)}") from None
    try:
        fd, name = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
    except OSError as err:
        raise OutputError(path, os_reason(err)) from None
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        try:
            os.chmod(tmp, _new_file_mode(path))
            os.replace(tmp, path)
        except OSError as err:
            raise OutputError(path, os_reason(err)) from None
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise


def write_bytes(path: str | Path, data: bytes, inputs: Iterable[str | Path | None] = ()) -> Path:
    """Write ``data`` to ``path`` atomically (`atomic_output`)."""
    with atomic_output(path, inputs) as tmp:
        writing(tmp, path, lambda: tmp.write_bytes(data))
    return Path(path)


def write_text(path: str | Path, text: str, inputs: Iterable[str | Path | None] = ()) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (`atomic_output`)."""
    return write_bytes(path, text.encode("utf-8"), inputs)


def writing(tmp: Path, dest: str | Path, write) -> None:
    """Run ``write()`` (which fills ``tmp``), reporting an `OSError` (full disk, quota...) as
    an `OutputError` of ``dest``."""
    try:
        write()
    except OSError as err:
        raise OutputError(dest, os_reason(err)) from None


class Interrupted(BaseException):
    """SIGINT or SIGTERM received (raised by `signals_raise`; ``signum`` says which). Like
    KeyboardInterrupt it is not an `Exception`, so only ``finally`` clauses and context
    managers see it on its way out."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(signum)


@contextmanager
def signals_raise() -> Iterator[None]:
    """While the body runs, SIGINT and SIGTERM raise `Interrupted` in the main thread, so that
    temporary files are removed on the way out (the default SIGTERM action kills the process
    at once; KeyboardInterrupt, the default for SIGINT, can make CPython end the process by
    SIGINT even when it was caught). Does nothing outside the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_interrupted(signum, frame):
        raise Interrupted(signum)

    previous = {s: signal.signal(s, raise_interrupted) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


__all__ = ["OutputError", "Interrupted", "signals_raise", "atomic_output", "check_destination",
           "check_writable", "write_bytes", "write_text", "writing",
           "os_reason", "TMP_SUFFIX"]
