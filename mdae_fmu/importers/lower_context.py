"""The state of one lowering (`lowering`) and the small helpers its parts share.

The lowering is split by construct into modules of plain functions that take a `LowerContext`
as first argument: types (`lower_types`), declarations (`lower_declarations`), parameter
values (`lower_constants`), names and their elements and fields (`lower_names`,
`lower_subscripts`), records (`lower_records`), array built-ins and for-ranges
(`lower_array_calls`), expressions (`lower_expressions`), equations (`lower_equations`);
functions with array arguments and algorithm sections are `array_functions` and
`algorithm_lowering`. A part calls the parts below it directly. The few entry points that
a lower part reaches up to (the value of an expression, a statement, an algorithm section:
the constructs nest inside each other) go through `LowerContext.parts`, a table of those
functions filled by `lowering`, so that no module imports one above it (no import circle).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from .. import expr as E
from ..diagnostics import SourceLoc
from . import arrays as A
from .lowered import LowerError
from .syntax import ENUM_PREFIXES

MAX_ELEMENTS = 1_000_000      # scalars one array declaration or range may produce

#: ``x[2,1]``: the name ``x`` and the subscripts of a scalarized element
LAST_SUBS = re.compile(r"^(.*)\[([0-9, \t]+)\]$")

#: the predefined enumerations and their literals (Modelica 3.6 §4.9.5.4, §8.3.7)
BUILTIN_ENUMS = {"StateSelect": ("never", "avoid", "default", "prefer", "always"),
                 "AssertionLevel": ("error", "warning")}


@dataclass(frozen=True, kw_only=True)
class LowerParts:
    """The entry points of the lowering that a lower part calls up to (module docstring),
    each a function taking the `LowerContext` first."""
    value: Callable[..., Any]           # `lower_expressions.value`
    value_of: Callable[..., Any]        # `lower_expressions.value_of`
    scalar: Callable[..., Any]          # `lower_expressions.scalar`
    const: Callable[..., Any]           # `lower_constants.const`
    equate: Callable[..., Any]          # `lower_equations.equate`
    stmt: Callable[..., Any]            # `lower_equations.stmt`
    shape: Callable[..., Any]           # `lower_declarations.shape`
    iterate: Callable[..., Any]         # `lower_array_calls.iterate`
    lower_statements: Callable[..., Any]    # `algorithm_lowering.lower_statements`
    tuple_values: Callable[..., Any]    # `array_functions.tuple_values`


@dataclass(kw_only=True, eq=False)
class LowerContext:
    """What the parts of one lowering share: the parse context ``ctx`` (where errors go, the
    functions of the file) and what the declarations told so far."""
    ctx: Any
    parts: LowerParts
    types: dict = field(default_factory=dict)       # type name -> EnumDef | AliasDef | RecordDef
    enums: list = field(default_factory=list)
    params: dict = field(default_factory=dict)      # scalar parameter/constant -> binding
    shapes: dict = field(default_factory=dict)      # array name -> shape
    records: dict = field(default_factory=dict)     # record instance name -> RecordDef
    scalars: set = field(default_factory=set)       # declared scalar names
    strings: dict = field(default_factory=dict)     # String variable -> E.Str or StringVar
    enum_vars: dict = field(default_factory=dict)   # variable -> EnumDef
    base_types: dict = field(default_factory=dict)  # scalar -> Real, Integer or Boolean
    evaluating: set = field(default_factory=set)    # parameters being evaluated (`const`)
    expanding: set = field(default_factory=set)     # records being expanded (one holding itself)
    prefix_types: dict = field(default_factory=dict)  # undeclared type path -> EnumDef
    resolved: set = field(default_factory=set)      # names used as arrays, records, literals...
    unresolved: set = field(default_factory=set)    # names left as references, not declared
    # range checks of variable subscripts (`lower_subscripts.variable_subscript`) of the
    # equation or statement being lowered; None where a variable subscript is not allowed
    range_checks: list | None = None
    check_ids: set = field(default_factory=set)     # id() of the range checks' assert Stmts
    # (len(scalars), base -> shape) of `lower_names.element_arrays`
    element_arrays_cache: tuple | None = None
    # `array_functions`: the file's functions with arrays or records (found once), and the
    # specialization, output shapes and flat outputs of the last call lowered
    array_fn_defs: dict | None = None
    last_array_call: tuple | None = None

    def fresh(self) -> LowerContext:
        """A new lowering of the same file, with nothing declared yet (the scope of a
        function body or of a function's dimensions, `array_functions`)."""
        return LowerContext(ctx=self.ctx, parts=self.parts)

    def fail(self, message: str, where: object = None) -> NoReturn:
        raise LowerError(message, where)

    def report(self, err: LowerError, where: object) -> None:
        self.ctx.error(self.ctx.where_loc(err.where if err.where is not None else where),
                       err.message)

    def use_where(self, name: str) -> object:
        """Where ``name`` is first used: an offset, or (XML attributes) a SourceLoc."""
        use = self.ctx.first_use.get(name)
        if type(use) is tuple:
            return SourceLoc(self.ctx.filename, use[0], use[1])
        return use

    # ---- the entry points of `parts` (called by the lower parts and by `array_functions`,
    # `algorithm_lowering`) ----
    def value(self, e: Any, env: dict, where: object) -> Any:
        return self.parts.value(self, e, env, where)

    def value_of(self, e: Any, env: dict) -> Any:
        return self.parts.value_of(self, e, env)

    def scalar(self, e: Any, env: dict, where: object, what: str = "expression") -> Any:
        return self.parts.scalar(self, e, env, where, what)

    def const(self, e: Any, env: dict) -> Any:
        return self.parts.const(self, e, env)

    def equate(self, a: Any, b: Any, where: object, out: list) -> None:
        self.parts.equate(self, a, b, where, out)

    def stmt(self, s: Any, env: dict, out: list) -> None:
        self.parts.stmt(self, s, env, out)

    def shape(self, dims: Any, where: object, binding: Any = None) -> tuple:
        return self.parts.shape(self, dims, where, binding)

    def iterate(self, indices: Any, env: dict) -> list:
        return self.parts.iterate(self, indices, env)

    def lower_statements(self, items: Any, env: dict) -> list:
        return self.parts.lower_statements(self, items, env)

    def tuple_values(self, rhs: Any, env: dict, n_targets: int) -> Any:
        return self.parts.tuple_values(self, rhs, env, n_targets)


class StringVar:
    """A String variable that is not a constant: equations on it are dropped (issue 13 item 6:
    Strings are kept only as constants of assert messages)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


def no_string_var(v):
    """Refuse a String variable as an operand."""
    if type(v) is StringVar:
        raise LowerError(f"the String variable '{v.name}' can only be used in an equation "
                         "between Strings (Strings are kept only as constants of assert "
                         "messages)")


def is_builtin_literal(e) -> bool:
    """``StateSelect.prefer``, ``AssertionLevel.warning``: kept as references where the model
    builder reads them (the stateSelect modifier, the level of assert)."""
    return type(e) is E.Ref and e.name.startswith(ENUM_PREFIXES)


def refs_in(e):
    """The references in a (maybe unlowered) expression."""
    if type(e) is E.Ref:
        yield e
    elif type(e) in (A.Subscripted,):
        yield E.Ref(e.name)
    elif hasattr(e, "__slots__") and not isinstance(e, A._Marker):
        for k in e.__slots__:
            v = getattr(e, k, None)
            for x in (v if type(v) is tuple else (v,)):
                if x is not None and not isinstance(x, (str, int, float, bool)):
                    yield from refs_in(x)


__all__ = ["LowerContext", "LowerParts", "StringVar", "MAX_ELEMENTS", "LAST_SUBS",
           "BUILTIN_ENUMS", "no_string_var", "is_builtin_literal", "refs_in"]
