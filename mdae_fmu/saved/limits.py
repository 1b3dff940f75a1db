"""The bounds a saved analysis is read within (docs/decisions.md §11, "Limits"), and the error
that names the place of a problem.

Every bound keeps the work of reading a file, and of exporting from what was read, linear in
the file's size: the numbers are those a double holds (the generated C code computes in
doubles), powers are small, nesting is that of the expressions the importers accept, and
nothing is shared in a way that multiplies the work.
"""

from __future__ import annotations

from ..diagnostics import InputError

#: Largest file read (bytes); a saved analysis of a 10^5-equation model is about 270 MB.
MAX_FILE_BYTES = 1 << 32
#: Deepest nesting of JSON arrays and objects: an expression (`MAX_EXPR_DEPTH`) within the
#: few levels of the object graph.
MAX_DEPTH = 1000
#: Deepest expression (an expression tree, a sympy expression): the importers rebalance the
#: long chains of deeper trees to 256 levels (`mdae_fmu.importers.depth.MAX_DEPTH`), and code
#: generation walks expressions recursively.
MAX_EXPR_DEPTH = 300
#: Longest string (characters).
MAX_STRING = 1 << 20
#: Most items in one list, tuple, set or dictionary.
MAX_ITEMS = 10_000_000
#: Most objects (`"#"` entries) in one file.
MAX_OBJECTS = 50_000_000
#: Integers (JSON numbers, sympy Integer and Rational parts) below 2^1024 in magnitude: the
#: range of a double (1.8e308); an integer outside the fields' own ranges is refused there.
MAX_INTEGER_BITS = 1024
#: The integer fields of the package's objects (line numbers, counts, indices) hold 64 bits.
MAX_FIELD_INTEGER_BITS = 63
#: |exponent| of a sympy power (and |p|, q of a rational exponent p/q).
MAX_EXPONENT = 10_000
#: A power of a number must stay a number of at most MAX_INTEGER_BITS bits; under a
#: fractional exponent the number has at most this many bits (sympy looks for its factors).
MAX_ROOT_BASE_BITS = 128
#: Precision of a sympy Float (bits; a double has 53).
MAX_PRECISION = 1000
#: Derivative orders (instances ``der(x, k)``, latent equations, sympy Derivative counts).
MAX_ORDER = 100
#: Length of a name (variable, symbol, equation id).
MAX_NAME = 10_000


class SavedAnalysisError(InputError):
    """A saved analysis that cannot be read (exit code 2): the file, where in it (a path of
    fields and indices from the payload, ``payload.analysis.modes.modes[2].equations[0]``)
    and what is wrong."""


def too_big_int(v: int) -> str | None:
    """Why the integer ``v`` is refused (a double cannot hold it), else None."""
    if v.bit_length() > MAX_INTEGER_BITS:
        return (f"integer of {v.bit_length()} bits exceeds the limit of {MAX_INTEGER_BITS} "
                "bits (the range of a double)")
    return None


class Refused:
    """A JSON number the parser refused to convert (too many digits, not finite): it stays
    in the parsed value, and the reader reports ``reason`` at its path."""

    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason


def parse_int(text: str) -> int | Refused:
    """``json.loads``'s ``parse_int``: a JSON integer, or `Refused` beyond `MAX_INTEGER_BITS`
    (checked on the digits first: converting 10^6 digits would take seconds)."""
    digits = len(text.lstrip("-"))
    if digits > 310:
        return Refused(f"integer of {digits} digits exceeds the limit of {MAX_INTEGER_BITS} "
                       "bits (the range of a double)")
    v = int(text)
    why = too_big_int(v)
    return Refused(why) if why else v


def parse_float(text: str) -> float | Refused:
    """``json.loads``'s ``parse_float``: a finite double, or `Refused` (``1e400``)."""
    if len(text) > 1000:
        return Refused(f"number of {len(text)} characters")
    v = float(text)
    if v != v or v in (float("inf"), float("-inf")):
        return Refused(f"number {text} outside the range of a double")
    return v


def parse_constant(text: str) -> Refused:
    """``json.loads``'s ``parse_constant``: ``NaN`` and ``Infinity`` are not JSON."""
    return Refused(f"{text} is not a JSON number")
