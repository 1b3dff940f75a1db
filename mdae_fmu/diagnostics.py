"""Errors a user can act on, with their exit codes (docs/architecture.md, "Data contracts").

* `InputError` (exit 2): the input cannot be read: syntax, unknown name, bad XML, unsupported
  construct. Its text starts with ``file:line:col:`` and, when the source line is known, shows
  that line with a caret under the column.
* `ModelRejected` (exit 1): the model was read but the analysis rejects it (structurally
  singular mode, missing restart equation...). Its text names the mode or mode change, the
  equations with their source lines, and the variables involved.
* `SimulationFailed` (exit 1): an FMU fails, crashes, exits or times out while it is
  simulated; the message names the FMU and quotes its last log messages.
* exit 3: any other exception, reported by the command line as an internal error (a bug of
  mdae-fmu), so that it cannot be mistaken for a rejection; 130 and 143 after SIGINT and
  SIGTERM.
"""

from __future__ import annotations

import threading
from typing import Callable, Hashable, Iterable, TypeVar

EXIT_OK = 0
EXIT_REJECTED = 1
EXIT_INPUT = 2
#: An unexpected exception: a bug of mdae-fmu, not a problem of the model (docs, README).
EXIT_INTERNAL = 3
#: Interrupted by SIGINT (128 + 2) or SIGTERM (128 + 15), the shell's convention.
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


#: Bits of the line and of the column in a packed `SourceLoc` (a file of at most
#: `MAX_FILE_BYTES`, 2^27 bytes, has lines and columns below 2^28).
_BITS = 28
_MASK = (1 << _BITS) - 1
#: The file names of the locations made so far in this process, by number (from 1), and
#: the locations whose line or column does not fit `_BITS` (by -1 - their number).
_FILES: list[str] = []
_FILE_NUMBER: dict[str, int] = {}
_WIDE: list[tuple[str, int, int]] = []
_WIDE_NUMBER: dict[tuple[str, int, int], int] = {}
_TABLES = threading.Lock()


_K = TypeVar("_K", bound=Hashable)


def _number(index: dict[_K, int], items: list[_K], key: _K) -> int:
    """The number (from 1) of ``key`` in the process-wide table ``items`` / ``index``, added
    at its first use (under `_TABLES`, so that threads agree on it)."""
    number = index.get(key)
    if number is None:
        with _TABLES:
            number = index.get(key)
            if number is None:
                items.append(key)
                number = index[key] = len(items)
    return number


def _packed(file: str, line: int, col: int) -> int:
    """The value of `SourceLoc` (file, line, col): the file's number, the line and the column
    in one int of at most 60 bits for the first 15 files; a negative number for the rare
    location beyond the bits (one entry each in `_WIDE`)."""
    line, col = int(line), int(col)
    if 0 <= line <= _MASK and 0 <= col <= _MASK:
        return _number(_FILE_NUMBER, _FILES, file) << (2 * _BITS) | line << _BITS | col
    return -_number(_WIDE_NUMBER, _WIDE, (file, line, col))


class SourceLoc(int):
    """A position in an input file; line and column count from 1.

    One int of its own class, 48 bytes, where a record of three fields took 56 and its line
    number 32 more: a model keeps one per variable and per equation, 2 million at 10^6
    equations (docs/performance.md, "stop 41, memory"). The value packs the file's number in
    a table of this process's file names, the line and the column (`_packed`); ``file``,
    ``line`` and ``col`` read them back. Two locations are equal when their file, line and
    column are (one number per file name), and never equal to a plain int; pickling and
    copying give back the three fields, so no process reads another's file numbers. An
    object of its own (as the record was): a saved analysis shares it by identity."""

    __slots__ = ()

    def __new__(cls, file: str, line: int, col: int) -> SourceLoc:
        return int.__new__(cls, _packed(file, line, col))

    @property
    def file(self) -> str:
        v = int(self)
        return _FILES[(v >> 2 * _BITS) - 1] if v > 0 else _WIDE[-v - 1][0]

    @property
    def line(self) -> int:
        v = int(self)
        return (v >> _BITS) & _MASK if v > 0 else _WIDE[-v - 1][1]

    @property
    def col(self) -> int:
        v = int(self)
        return v & _MASK if v > 0 else _WIDE[-v - 1][2]

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __repr__(self) -> str:
        return f"SourceLoc(file={self.file!r}, line={self.line!r}, col={self.col!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is SourceLoc and int.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not (type(other) is SourceLoc and int.__eq__(self, other))

    __hash__ = int.__hash__

    def __reduce__(self) -> tuple[type[SourceLoc], tuple[str, int, int]]:
        return (SourceLoc, (self.file, self.line, self.col))

    def __copy__(self) -> SourceLoc:
        return self

    def __deepcopy__(self, memo: object) -> SourceLoc:
        return self

    def short(self) -> str:
        """``File.mo:14``, the form used inside rejection messages."""
        return f"{self.file.rsplit('/', 1)[-1]}:{self.line}"


def file_locations(file: str) -> Callable[[int, int], SourceLoc]:
    """``at(line, col)``, `SourceLoc` (``file``, line, col) without looking the file up at
    each call: the importers make one per variable and per equation."""
    base = _number(_FILE_NUMBER, _FILES, file) << 2 * _BITS
    new = int.__new__

    def at(line: int, col: int) -> SourceLoc:
        if line <= _MASK and col <= _MASK and line >= 0 and col >= 0:
            return new(SourceLoc, base | line << _BITS | col)
        return SourceLoc(file, line, col)
    return at


class MdaeError(Exception):
    """Base class of the errors reported to users without a traceback."""
    exit_code = EXIT_INPUT


class InputError(MdaeError):
    """The input cannot be read (exit code 2)."""
    exit_code = EXIT_INPUT

    def __init__(self, message: str, loc: SourceLoc | None = None, source_line: str | None = None):
        self.message = message
        self.loc = loc
        self.source_line = source_line
        super().__init__(self.render())

    def render(self) -> str:
        """``file:line:col: message``, then the source line and a caret under the column. A
        line longer than `EXCERPT` characters is cut to a window around the column."""
        head = f"{self.loc}: {self.message}" if self.loc else self.message
        if self.source_line is None or self.loc is None:
            return head
        line, col = excerpt(self.source_line.rstrip("\n").expandtabs(1), self.loc.col - 1)
        return f"{head}\n  {line}\n  {' ' * col}^"


#: Longest part of a source line shown under a message (characters).
EXCERPT = 200


def excerpt(line: str, index: int) -> tuple[str, int]:
    """The part of ``line`` to show for a problem at character ``index`` (from 0), and the
    index of that character in it: the whole line if it is short, else `EXCERPT` characters
    around the index, with ``...`` where the line was cut."""
    index = min(max(index, 0), len(line))
    if len(line) <= EXCERPT:
        return line, index
    start = max(0, min(index - EXCERPT // 2, len(line) - EXCERPT))
    end = start + EXCERPT
    prefix = "..." if start > 0 else ""
    suffix = "..." if end < len(line) else ""
    return prefix + line[start:end] + suffix, index - start + len(prefix)


class ModelRejected(MdaeError):
    """The analysis rejects the model (exit code 1)."""
    exit_code = EXIT_REJECTED

    def __init__(self, message: str, details: dict | None = None):
        self.message = message
        self.details = details or {}
        super().__init__(message)


class SimulationFailed(MdaeError):
    """An FMU could not be simulated (exit code 1): FMPy or the FMU reported an error, the FMU
    crashed or ended the simulation process, or the run exceeded its timeout
    (`mdae_fmu.fmu_runner`). ``fmu`` names the FMU, ``reason`` says what happened, ``log``
    holds the FMU's last messages (the message quotes the last ``quoted``)."""
    exit_code = EXIT_REJECTED

    def __init__(self, fmu: str, reason: str, log: Iterable[str] = (), quoted: int = 5):
        self.fmu = fmu
        self.reason = reason
        self.log = tuple(log)
        detail = "".join(f"\n  {m}" for m in self.log[-quoted:]) if quoted > 0 else ""
        super().__init__(f"{fmu}: simulation failed: {reason}{detail}")
