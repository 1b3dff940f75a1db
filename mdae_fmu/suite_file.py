"""Regression suite files (TOML), read and checked against their schema before anything runs
(docs/regression.md, "Suite files").

A suite file has an optional ``[suite]`` table (its ``name`` and defaults for every entry)
and one ``[[model]]`` table per entry. Every key is checked before any export or simulation:
its type (a number is a TOML integer or float, never a string or a Boolean), its range
(tolerances non-negative, times and timeouts positive, all finite), the names it may take
(``method``, ``fmi_type``), and the files it names (regular files, relative to the suite
file). An unknown key is refused with the closest known one (difflib); every refusal is an
`InputError` (exit code 2) at ``file:line:col`` of the key when the file is written with
``[[model]]`` headers (`Locator`), else naming the table.

``fmi_type = "both"`` makes two entries of one, ``NAME (ModelExchange)`` and
``NAME (CoSimulation)``: the test simulated through each interface against the same
reference.
"""

from __future__ import annotations

import difflib
import importlib
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .diagnostics import InputError, SourceLoc

FMI_TYPES = ("ModelExchange", "CoSimulation")
METHODS = ("tube", "fmpy")
#: Largest suite file read (bytes) and most entries: a suite is a list of models, not data.
MAX_SUITE_BYTES = 4 << 20
MAX_ENTRIES = 10_000


@dataclass(frozen=True)
class Entry:
    """One entry of a suite: its name, its files (role -> (path as the suite writes it,
    path on disk)) and its options (the entry's keys over the suite's defaults, checked)."""
    name: str
    files: dict[str, tuple[str, Path]]
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Suite:
    """A suite file read and checked: its name, file and entries."""
    name: str
    path: Path
    entries: tuple[Entry, ...]


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------

def _what(value: Any) -> str:
    """How a TOML value reads in a message: ``the string "1"``, ``the Boolean true``..."""
    if isinstance(value, bool):
        return f"the Boolean {'true' if value else 'false'}"
    if isinstance(value, str):
        return f'the string "{value[:60]}"'
    if isinstance(value, (int, float)):
        return f"{value!r}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


def _number(minimum: float, strict: bool) -> Callable[[Any], Any]:
    """A check: a finite TOML number at least (``strict``: above) ``minimum``."""
    bound = f"{'positive' if strict else 'non-negative'} number" if minimum == 0 else \
        f"number {'>' if strict else '>='} {minimum:g}"

    def check(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"must be a {bound}, got {_what(value)}")
        if not math.isfinite(value) or value < minimum or (strict and value == minimum):
            raise ValueError(f"must be a finite {bound}, got {value!r}")
        return float(value)
    return check


def _choice(names: tuple[str, ...]) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if not isinstance(value, str) or value not in names:
            hint = ""
            if isinstance(value, str):
                close = difflib.get_close_matches(value, names, n=1, cutoff=0.5)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ValueError(f"must be one of {', '.join(names)}, got {_what(value)}{hint}")
        return value
    return check


def _text(value: Any) -> Any:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"must be a non-empty string, got {_what(value)}")
    return value


def _boolean(value: Any) -> Any:
    if not isinstance(value, bool):
        raise ValueError(f"must be true or false, got {_what(value)}")
    return value


def _names(value: Any) -> Any:
    if not isinstance(value, list) or not value:
        raise ValueError(f"must be a non-empty array of variable names, got {_what(value)}")
    for k, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise ValueError(f"must be an array of variable names; item {k + 1} is "
                             f"{_what(item)}")
    return list(value)


def _start_values(value: Any) -> Any:
    if not isinstance(value, dict):
        raise ValueError(f"must be a table of name = value, got {_what(value)}")
    for name, v in value.items():
        if isinstance(v, bool) or isinstance(v, str):
            continue
        if not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"'{name}' must be a finite number, a Boolean or a string, got "
                             f"{_what(v)}")
    return dict(value)


def _fmi_types(value: Any) -> Any:
    return _choice(FMI_TYPES + ("both",))(value)


#: The options an entry may have, and the ones ``[suite]`` may give every entry.
OPTIONS: dict[str, Callable[[Any], Any]] = {
    "rtol": _number(0, False), "atol": _number(0, False),
    "time_tolerance": _number(0, False), "method": _choice(METHODS),
    "relative_tolerance": _number(0, True), "solver_tolerance": _number(0, True),
    "timeout": _number(0, True), "fmi_type": _fmi_types, "validate": _boolean,
    "stop_time": _number(0, True),
}
ENTRY_KEYS: dict[str, Callable[[Any], Any]] = {
    "name": _text, "test": _text, "reference": _text, "input": _text,
    "variables": _names, "start_values": _start_values, **OPTIONS,
}
SUITE_KEYS: dict[str, Callable[[Any], Any]] = {"name": _text, **OPTIONS}
FILE_KEYS = ("test", "reference", "input")


# ---------------------------------------------------------------------------------------------
# Where a key is written
# ---------------------------------------------------------------------------------------------

_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_\-\"'. ]+?)\s*\]\]?\s*(?:#.*)?$")


class Locator:
    """Lines of a suite file's tables and keys, found in its text: the ``[suite]`` table and
    the k-th ``[[model]]`` table, and a key's ``key =`` line inside one (TOML parsers do not
    keep positions). None where the file is written otherwise (inline tables)."""

    def __init__(self, text: str):
        self.lines = text.splitlines()
        self.sections: list[tuple[str, int, int]] = []      # (header, first line, end line)
        headers = []
        for k, line in enumerate(self.lines):
            m = _HEADER.match(line)
            if m:
                headers.append((m.group(1) + m.group(2), k))
        for i, (head, k) in enumerate(headers):
            end = headers[i + 1][1] if i + 1 < len(headers) else len(self.lines)
            self.sections.append((head.replace(" ", ""), k, end))

    def table(self, header: str, occurrence: int = 1) -> tuple[int, int] | None:
        """(first, end) line indexes of the ``occurrence``-th table with this header."""
        seen = 0
        for head, first, end in self.sections:
            if head == header:
                seen += 1
                if seen == occurrence:
                    return first, end
        return None

    def key(self, header: str, occurrence: int, key: str | None) -> tuple[int, int, str] | None:
        """(line, column, text) of ``key = ...`` in that table, or of its header when
        ``key`` is None or not found there; None without such a table."""
        span = self.table(header, occurrence)
        if span is None:
            return None
        first, end = span
        if key is not None:
            pattern = re.compile(rf"^(\s*)(?:{re.escape(key)}|\"{re.escape(key)}\"|"
                                 rf"'{re.escape(key)}')\s*=")
            for k in range(first + 1, end):
                m = pattern.match(self.lines[k])
                if m:
                    return k + 1, len(m.group(1)) + 1, self.lines[k]
        return first + 1, 1, self.lines[first]


# ---------------------------------------------------------------------------------------------
# Reading a suite
# ---------------------------------------------------------------------------------------------

def _toml() -> Any:
    """The TOML reader: ``tomllib`` from Python 3.11 on, its backport ``tomli`` before
    (a dependency there: pyproject.toml)."""
    name = "tomllib" if sys.version_info >= (3, 11) else "tomli"
    return importlib.import_module(name)


def _parse(path: Path) -> tuple[dict, str]:
    """The TOML document and its text; `InputError` with file:line:col for a syntax error."""
    try:
        if path.is_file() and path.stat().st_size > MAX_SUITE_BYTES:
            raise InputError(f"{path}: a suite file of {path.stat().st_size} bytes; suite "
                             f"files are at most {MAX_SUITE_BYTES >> 20} MiB")
        raw = path.read_bytes()
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        col = err.start - raw.rfind(b"\n", 0, err.start)
        raise InputError("not a UTF-8 text file (a suite file is TOML)",
                         SourceLoc(str(path), line, col)) from None
    toml = _toml()
    try:
        return toml.loads(text), text
    except toml.TOMLDecodeError as err:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(err))
        msg = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", str(err))
        if m:
            line, col = int(m.group(1)), int(m.group(2))
            src = text.splitlines()
            raise InputError(msg, SourceLoc(str(path), line, col),
                             src[line - 1] if line <= len(src) else None) from None
        raise InputError(f"{path}: {msg}") from None


class _Checker:
    """Checks of one suite file, each failure an `InputError` at the key's line."""

    def __init__(self, path: Path, text: str):
        self.path = path
        self.where = Locator(text)

    def fail(self, table: str, header: str, occurrence: int, key: str | None,
             message: str) -> InputError:
        at = self.where.key(header, occurrence, key)
        if at is None:
            return InputError(f"{self.path}: {table}: {message}")
        line, col, text = at
        return InputError(f"{table}: {message}", SourceLoc(str(self.path), line, col), text)

    def table(self, data: Any, keys: dict[str, Callable[[Any], Any]], table: str,
              header: str, occurrence: int) -> dict[str, Any]:
        """``data`` (a TOML table) with every key known and every value checked."""
        if not isinstance(data, dict):
            raise self.fail(table, header, occurrence, None,
                            f"must be a table, got {_what(data)}")
        out = {}
        for key, value in data.items():
            if key not in keys:
                close = difflib.get_close_matches(key, sorted(keys), n=1, cutoff=0.6)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                raise self.fail(table, header, occurrence, key,
                                f"unknown key '{key}'{hint}; known keys: "
                                f"{', '.join(sorted(keys))}")
            try:
                out[key] = keys[key](value)
            except ValueError as err:
                raise self.fail(table, header, occurrence, key, f"{key} {err}") from None
        if "relative_tolerance" in out and "solver_tolerance" in out:
            raise self.fail(table, header, occurrence, "solver_tolerance",
                            "give relative_tolerance only (solver_tolerance is its former "
                            "name)")
        return out


def load_suite(path: str | Path) -> Suite:
    """Read a suite file and check it whole (module docstring) before anything runs; every
    problem is an `InputError` (exit code 2) naming the file, and the line of the key where
    the file has one."""
    path = Path(path)
    data, text = _parse(path)
    check = _Checker(path, text)
    unknown = [k for k in data if k not in ("suite", "model")]
    if unknown:
        close = difflib.get_close_matches(unknown[0], ["suite", "model"], n=1, cutoff=0.6)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise InputError(f"{path}: unknown table '{unknown[0]}'{hint} (expected [suite] and "
                         "[[model]])")
    suite = check.table(data.get("suite", {}), SUITE_KEYS, "[suite]", "[suite", 1)
    models = data.get("model", [])
    if not isinstance(models, list) or not models:
        raise InputError(f"{path}: no [[model]] entries")
    if len(models) > MAX_ENTRIES:
        raise InputError(f"{path}: {len(models)} [[model]] entries; at most {MAX_ENTRIES}")
    defaults = {k: v for k, v in suite.items() if k != "name"}
    entries: list[Entry] = []
    names: set[str] = set()
    for k, raw in enumerate(models, start=1):
        table = f"[[model]] #{k}"
        m = check.table(raw, ENTRY_KEYS, table, "[[model", k)
        for required in ("test", "reference"):
            if required not in m:
                raise check.fail(table, "[[model", k, None, f"missing '{required}'")
        name = m.get("name") or Path(m["test"]).stem
        files = {}
        for role in FILE_KEYS:
            if role in m:
                files[role] = (m[role], _file(check, table, k, role, path.parent / m[role]))
        options = {**defaults, **{key: v for key, v in m.items()
                                  if key not in FILE_KEYS and key != "name"}}
        if "solver_tolerance" in options:
            options.setdefault("relative_tolerance", options.pop("solver_tolerance"))
            options.pop("solver_tolerance", None)
        kinds = FMI_TYPES if options.get("fmi_type") == "both" else (options.get("fmi_type"),)
        for kind in kinds:
            label = f"{name} ({kind})" if len(kinds) > 1 else name
            if label in names:
                raise check.fail(table, "[[model", k, "name" if "name" in m else None,
                                 f"name '{label}' is used twice")
            names.add(label)
            entries.append(Entry(name=label, files=files,
                                 options={**options, "fmi_type": kind}
                                 if kind else options))
    return Suite(name=str(suite.get("name") or path.stem), path=path, entries=tuple(entries))


def _file(check: _Checker, table: str, k: int, role: str, target: Path) -> Path:
    """``target`` when it is a regular file, else the refusal at the key's line."""
    try:
        if target.is_file():
            return target
        reason = "no such file" if not target.exists() else "not a regular file"
    except OSError as err:
        reason = err.strerror or str(err)
    raise check.fail(table, "[[model", k, role, f"{role} {target}: {reason}")


__all__ = ["Suite", "Entry", "load_suite", "Locator", "ENTRY_KEYS", "SUITE_KEYS", "OPTIONS",
           "FILE_KEYS", "MAX_SUITE_BYTES", "MAX_ENTRIES"]
