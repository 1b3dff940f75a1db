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

from dataclasses import dataclass
from typing import Iterable

from .records import quick_init

EXIT_OK = 0
EXIT_REJECTED = 1
EXIT_INPUT = 2
#: An unexpected exception: a bug of mdae-fmu, not a problem of the model (docs, README).
EXIT_INTERNAL = 3
#: Interrupted by SIGINT (128 + 2) or SIGTERM (128 + 15), the shell's convention.
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


@quick_init
@dataclass(frozen=True, slots=True)
class SourceLoc:
    """A position in an input file; line and column count from 1."""
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def short(self) -> str:
        """``File.mo:14``, the form used inside rejection messages."""
        return f"{self.file.rsplit('/', 1)[-1]}:{self.line}"


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
