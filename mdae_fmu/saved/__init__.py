"""A saved analysis: the `Analysis` object and its `Model` as JSON data, so that
``mdae-fmu export --from-json`` builds the FMU without running any analysis again
(docs/decisions.md §11, docs/analyze-json.md "saved_analysis").

A saved analysis is a file people mail each other and keep in caches, so reading it trusts
nothing in it (issue 25). It is data, never code: the object graph is JSON read against the
types of the package's own classes, named through one table (`objects.CLASSES`), and sympy
expressions are JSON trees of nodes from another (`sympy_json.CLASSES`); nothing is evaluated,
imported or unpickled, and no text reaches `sympy.sympify`. Every size is bounded
(`limits`), and once read the objects are checked against each other (`consistency`: names
declared in the model, equation ids, indices and orders in range) so that a file that reads
but does not hold together is refused here, not met later in code generation. Every refusal
is a `SavedAnalysisError` (exit code 2) naming the file, the place in it as a path of fields
and indices, and the reason. The SHA-256 digest of the payload only detects a truncated or
accidentally edited file: anyone can compute it again.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from contextlib import contextmanager

from ..version import VERSION
from .limits import (MAX_DEPTH, MAX_FILE_BYTES, SavedAnalysisError, parse_constant,
                     parse_float, parse_int, shown_path)

FORMAT = "mdae_fmu.saved-analysis/3"

__all__ = ["FORMAT", "SavedAnalysisError", "save", "load", "load_file", "digest"]


def save(model, analysis) -> dict:
    """The JSON value of ``analysis`` (an `mdae_fmu.analysis.Analysis`) and its ``model``."""
    from .objects import Writer
    w = Writer()
    payload = {"model": w.value(model), "analysis": w.value(analysis)}
    return {"format": FORMAT, "version": VERSION, "sha256": digest(payload),
            "payload": payload}


def load(data, where: str = "saved analysis"):
    """``(model, analysis)`` from the value `save` made (parsed with the hooks of
    `load_file`); `SavedAnalysisError` naming ``where`` and the place for anything else."""
    from .consistency import check
    from .objects import FormatError, Reader, Type
    from ..analysis import Analysis
    from ..ir import Model
    _envelope(data, where)
    payload = data["payload"]
    types = {"model": Type("object", (Model,), "a Model"),
             "analysis": Type("object", (Analysis,), "an Analysis")}
    reader = Reader()
    out = {}
    try:
        with _deep_recursion():
            for k, v in payload.items():
                out[k] = reader.value(v, types[k], f"payload.{k}")
            # after reading (which refuses what no digest can be computed of), before the
            # consistency checks: an edited file is named as such
            if data["sha256"] != digest(payload):
                raise SavedAnalysisError(f"{where}: the saved analysis was altered or "
                                         f"truncated (its digest does not match)")
            check(out["model"], out["analysis"])
    except FormatError as err:
        raise SavedAnalysisError(f"{where}: {shown_path(err.path)}: {err}") from None
    except RecursionError:
        raise SavedAnalysisError(f"{where}: nested too deeply to be read") from None
    return out["model"], out["analysis"]


def load_file(path) -> tuple:
    """``(model, analysis)`` from the output of ``mdae-fmu analyze --json`` saved in
    ``path``; `SavedAnalysisError` (exit 2) for a file that cannot be read, is not JSON,
    holds no saved analysis or a bad one."""
    where = str(path)
    raw = _read(path, where)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise SavedAnalysisError(f"{where}: cannot read: not UTF-8 text (byte {err.start}: "
                                 f"{err.reason}); expected the output of `mdae-fmu analyze "
                                 "--json`") from None
    try:
        # the parser's recursion stops at the recursion limit (RecursionError, not a crash):
        # the reader then names the place of any nesting deeper than MAX_DEPTH
        with _deep_recursion():
            doc = json.loads(text, parse_int=parse_int, parse_float=parse_float,
                             parse_constant=parse_constant)
    except ValueError as err:
        raise SavedAnalysisError(f"{where}: not JSON ({err}); expected the output of "
                                 f"`mdae-fmu analyze --json`") from None
    except RecursionError:
        deep = too_deep(raw) or 0
        line = raw.count(b"\n", 0, deep) + 1
        col = deep - (raw.rfind(b"\n", 0, deep) + 1) + 1
        raise SavedAnalysisError(f"{where}:{line}:{col}: JSON nested deeper than {MAX_DEPTH} "
                                 "levels (the limit of a saved analysis)") from None
    del raw
    if not isinstance(doc, dict) or "saved_analysis" not in doc:
        raise SavedAnalysisError(f"{where}: no \"saved_analysis\" in it; expected the output of "
                                 f"`mdae-fmu analyze --json`")
    return load(doc["saved_analysis"], where)


def digest(payload) -> str:
    """SHA-256 of the payload's JSON text (JSON keeps the order of keys, so the text is the
    same after a round trip)."""
    text = json.dumps(payload, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _envelope(data, where: str) -> None:
    """The object around the payload: its keys, format, version and digest."""
    if not isinstance(data, dict) or "format" not in data:
        raise SavedAnalysisError(
            f"{where}: not a saved analysis (expected a \"saved_analysis\" object of format "
            f"{FORMAT}, as `mdae-fmu analyze --json` writes)")
    if data["format"] != FORMAT:
        old = isinstance(data["format"], str) and data["format"].startswith(
            "mdae_fmu.saved-analysis/")
        raise SavedAnalysisError(
            f"{where}: saved_analysis.format: " + (
                f"{data['format']} is an older format, not read any more; run `mdae-fmu "
                f"analyze --json` again with this version" if old else
                f"not a saved analysis (expected the format {FORMAT}, as `mdae-fmu analyze "
                f"--json` writes)"))
    keys = ("format", "version", "sha256", "payload")
    extra = [k for k in data if k not in keys]
    if extra:
        raise SavedAnalysisError(f"{where}: saved_analysis: unknown key {extra[0]!r} "
                                 f"(expected {', '.join(keys)})")
    missing = [k for k in keys if k not in data]
    if missing:
        raise SavedAnalysisError(f"{where}: saved_analysis: key {missing[0]!r} missing")
    if data["version"] != VERSION:
        raise SavedAnalysisError(
            f"{where}: saved by mdae-fmu {str(data['version'])[:40]}, this is {VERSION}; "
            "run `mdae-fmu analyze --json` again with this version")
    payload = data["payload"]
    if not isinstance(payload, dict) or sorted(payload) != ["analysis", "model"]:
        raise SavedAnalysisError(f"{where}: payload: expected an object with the keys model "
                                 "and analysis")


def _read(path, where: str) -> bytes:
    from ..output import os_reason
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_FILE_BYTES:
                raise SavedAnalysisError(f"{where}: {size} bytes exceed the limit of "
                                         f"{MAX_FILE_BYTES} bytes of a saved analysis")
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise SavedAnalysisError(f"{where}: cannot read: {os_reason(err)}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise SavedAnalysisError(f"{where}: more than {MAX_FILE_BYTES} bytes (the limit of a "
                                 "saved analysis)")
    return raw


_CHUNK = 1 << 22


def too_deep(raw: bytes) -> int | None:
    """The offset of the first ``[`` or ``{`` of ``raw`` (JSON text) nested deeper than
    `MAX_DEPTH`, else None: where a file the parser could not read for its nesting is too
    deep. Linear and vectorized (numpy)."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return None
    import numpy as np
    # escaped backslashes, then escaped quotes, become plain bytes (same length): what is
    # left of '"' opens or closes a string
    b = raw.replace(b"\\\\", b"__").replace(b'\\"', b"__")
    a = np.frombuffer(b, dtype=np.uint8)
    depth, quotes = 0, 0
    for start in range(0, len(a), _CHUNK):
        c = a[start:start + _CHUNK]
        outside = ((np.cumsum(c == 34) + quotes) & 1) == 0
        step = ((c == 91) | (c == 123)).astype(np.int64) - ((c == 93) | (c == 125))
        level = np.cumsum(np.where(outside, step, 0)) + depth
        over = np.flatnonzero(level > MAX_DEPTH)
        if over.size:
            return start + int(over[0])
        depth, quotes = int(level[-1]), quotes + int(np.count_nonzero(c == 34))
    return None


@contextmanager
def _deep_recursion():
    """Room for `MAX_DEPTH` levels of nesting in the JSON parser and the readers (a few
    Python frames per level)."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 8 * MAX_DEPTH + 2000))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)
