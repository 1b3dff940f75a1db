"""Errors a user can act on, with their exit codes (ARCHITECTURE.md, command line).

* `InputError` (exit 2): the input cannot be read: syntax, unknown name, bad XML, unsupported
  construct. Its text starts with ``file:line:col:`` and, when the source line is known, shows
  that line with a caret under the column.
* `ModelRejected` (exit 1): the model was read but the analysis rejects it (structurally
  singular mode, missing restart equation...). Its text names the mode or mode change, the
  equations with their source lines, and the variables involved.
"""

from __future__ import annotations

from dataclasses import dataclass

EXIT_OK = 0
EXIT_REJECTED = 1
EXIT_INPUT = 2


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
        head = f"{self.loc}: {self.message}" if self.loc else self.message
        if self.source_line is None or self.loc is None:
            return head
        line = self.source_line.rstrip("\n").expandtabs(1)
        if len(line) > 200:
            line = line[:200] + "..."
        caret = " " * max(self.loc.col - 1, 0) + "^"
        return f"{head}\n  {line}\n  {caret}"


class ModelRejected(MdaeError):
    """The analysis rejects the model (exit code 1)."""
    exit_code = EXIT_REJECTED

    def __init__(self, message: str, details: dict | None = None):
        self.message = message
        self.details = details or {}
        super().__init__(message)
