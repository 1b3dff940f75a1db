"""Print a `Model` (or one expression) as flat Modelica that re-parses to an equal model.

`print_model` writes the class form read by `mdae_fmu.importers.flat_modelica`: declarations in
model order, then the equations in id order, grouped into nested if-equations by their guards
(a literal ``(c, False)`` prints as ``if not c then``), then the when-clauses, the assertions and
the initial equations. A residual ``a - b`` prints as ``a = b``, any other residual ``r`` as
``0 = r`` (`mdae_fmu.expr.split_residual`), so parse -> print -> parse is a fixed point.

`print_expr` uses the operator precedence of Modelica 3.6 §B.2.7 with the fewest parentheses
that keep the tree: binary operators are left-associative, relations and ``^`` are not
associative, unary minus applies to a whole term (``-a*b`` is ``-(a*b)``), and an if-expression
is parenthesized unless it stands alone. Floats are printed with ``repr`` so they re-read
exactly; names that are not plain dotted identifiers (with integer subscripts) are quoted
``'...'`` with Modelica escapes.
"""

from __future__ import annotations

import math
import re

from . import expr as E
from . import functions as F
from .ir import Assertion, Assign, Model, Reinit, Terminate, Variable

# Precedence levels (higher binds tighter).
_IF, _OR, _AND, _NOT, _REL, _ADD, _MUL, _POW, _PRIMARY = range(9)
_BINARY_PREC = {"or": _OR, "and": _AND, "+": _ADD, "-": _ADD, ".+": _ADD, ".-": _ADD,
                "*": _MUL, "/": _MUL, ".*": _MUL, "./": _MUL, "^": _POW, ".^": _POW}
for _op in E.REL_OPS:
    _BINARY_PREC[_op] = _REL

_KEYWORDS = frozenset("""
algorithm and annotation block break class connect connector constant constrainedby der discrete
each else elseif elsewhen encapsulated end enumeration equation expandable extends external false
final flow for function if import impure in initial inner input loop model not operator or outer
output package parameter partial protected public pure record redeclare replaceable return stream
then true type when while within time""".split())
_PLAIN_PART = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[\d+(?:,\d+)*\])?")
_ESCAPES = {"\\": "\\\\", "'": "\\'", '"': '\\"', "\a": "\\a", "\b": "\\b", "\f": "\\f",
            "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def _plain(name: str) -> bool:
    for part in name.split("."):
        m = _PLAIN_PART.fullmatch(part)
        if m is None or m.group(1) in _KEYWORDS:
            return False
    return True


def print_name(name: str) -> str:
    """``body.h`` as is; anything else quoted, e.g. ``'a b'``, ``'it''s'`` -> ``'it\\'s'``."""
    if _plain(name):
        return name
    return "'" + "".join(_ESCAPES.get(ch, ch) for ch in name) + "'"


def print_string(s: str) -> str:
    """A Modelica string literal."""
    return '"' + "".join(_ESCAPES.get(ch, ch) if ch != "'" else ch for ch in s) + '"'


def _number(v) -> tuple[str, int]:
    if isinstance(v, bool):
        return ("true" if v else "false"), _PRIMARY
    if isinstance(v, int):
        return str(v), (_ADD if v < 0 else _PRIMARY)
    if math.isnan(v):
        raise ValueError("NaN cannot be printed as a Modelica literal")
    if math.isinf(v):
        text = "1e999" if v > 0 else "-1e999"     # re-reads as +-inf
    else:
        text = repr(float(v))
    return text, (_ADD if text.startswith("-") else _PRIMARY)


def _wrap(e, need: int) -> str:
    text, prec = _print(e)
    return text if prec >= need else f"({text})"


def _print(e) -> tuple[str, int]:
    """(text, precedence level) of ``e``."""
    t = type(e)
    if t is E.Ref:
        return print_name(e.name), _PRIMARY
    if t is E.Const:
        return _number(e.value)
    if t is E.BinOp:
        p = _BINARY_PREC[e.op]
        if p == _POW:
            op = "^" if e.op == "^" else " .^ "     # "2.^x" would read as 2.0 ^ x
            return f"{_wrap(e.left, _PRIMARY)}{op}{_wrap(e.right, _PRIMARY)}", p
        if p == _REL:
            return f"{_wrap(e.left, _ADD)} {e.op} {_wrap(e.right, _ADD)}", p
        return f"{_wrap(e.left, p)} {e.op} {_wrap(e.right, p + 1)}", p
    if t is E.UnOp:
        if e.op == "not":
            return f"not {_wrap(e.arg, _REL)}", _NOT
        return f"{e.op}{_wrap(e.arg, _MUL)}", _ADD
    if t is E.Der:
        return f"der({_print(e.arg)[0]})", _PRIMARY
    if t is E.Call:
        if e.func == "String" and len(e.args) == 4:
            return _string_call(e), _PRIMARY
        return f"{print_name(e.func)}({', '.join(_print(a)[0] for a in e.args)})", _PRIMARY
    if t is E.Time:
        return "time", _PRIMARY
    if t is E.Str:
        return print_string(e.value), _PRIMARY
    if t is E.If:
        parts = [f"if {_print(e.cond)[0]} then {_print(e.then)[0]}"]
        rest = e.orelse
        while type(rest) is E.If:
            parts.append(f" elseif {_print(rest.cond)[0]} then {_print(rest.then)[0]}")
            rest = rest.orelse
        parts.append(f" else {_print(rest)[0]}")
        return "".join(parts), _IF
    raise TypeError(f"not an expression: {e!r}")


#: The options of the importer's canonical ``String(x, minimumLength, leftJustified,
#: significantDigits)`` with their defaults (`mdae_fmu.importers.flat_modelica`).
_STRING_DEFAULTS = (("minimumLength", E.Const(0)), ("leftJustified", E.Const(True)),
                    ("significantDigits", E.Const(6)))


def _string_call(e: E.Call) -> str:
    """``String(x, opt = v, ...)`` with the options that are not at their defaults, named:
    valid Modelica for a value of any type (significantDigits only applies to a Real)."""
    parts = [_print(e.args[0])[0]]
    for (name, default), a in zip(_STRING_DEFAULTS, e.args[1:]):
        if a != default or type(a.value) is not type(default.value):
            parts.append(f"{name} = {_print(a)[0]}")
    return f"String({', '.join(parts)})"


def print_expr(e: E.Expr) -> str:
    """Modelica text of ``e`` with minimal parentheses (module docstring)."""
    return _print(e)[0]


def print_simple(e: E.Expr) -> str:
    """``e`` as a simple-expression (an if-expression gets parentheses): left sides."""
    return _wrap(e, _OR)


def _is_zero(e) -> bool:
    return E.is_numeric_zero(e)


def equation_sides(residual: E.Expr) -> tuple[E.Expr, E.Expr]:
    """``(lhs, rhs)`` whose `expr.residual` is ``residual`` again: ``(a, b)`` for ``a - b``
    (`expr.split_residual`), ``(0, r)`` otherwise, and also when a side of ``a - b`` is zero
    (``x - 0`` printed as ``x = 0`` would read back as the residual ``x``)."""
    lhs, rhs = E.split_residual(residual)
    if _is_zero(lhs) or _is_zero(rhs):
        return E.ZERO, residual
    return lhs, rhs


def print_equation_body(residual: E.Expr) -> str:
    """``a = b`` for the residual ``a - b``, else ``0 = r`` (`equation_sides`)."""
    lhs, rhs = equation_sides(residual)
    return f"{print_simple(lhs)} = {print_expr(rhs)}"


def _declaration(v: Variable) -> str:
    words = []
    if v.variability == "constant":
        words.append("constant")
    elif v.variability == "parameter":
        words.append("parameter")
    elif v.variability == "discrete" and v.type == "Real":
        words.append("discrete")
    if v.causality in ("input", "output"):
        words.append(v.causality)
    if v.declared_type is None:
        words.append(v.type)
    elif v.declared_type.startswith("enumeration("):      # OpenModelica's inline form
        words.append(v.declared_type.replace(",", ", "))
    else:
        words.append(print_name(v.declared_type))
    words.append(print_name(v.name))
    mods = []
    for attr, key in (("start", "start"), ("fixed", "fixed"), ("nominal", "nominal"),
                      ("min", "min"), ("max", "max"), ("unit", "unit"),
                      ("display_unit", "displayUnit"), ("state_select", "stateSelect")):
        value = getattr(v, attr)
        if value is None:
            continue
        if attr == "fixed":
            text = "true" if value else "false"
        elif attr in ("unit", "display_unit"):
            text = print_string(value)
        elif attr == "state_select":
            text = f"StateSelect.{value}"
        else:
            text = print_expr(value)
        mods.append(f"{key} = {text}")
    out = " ".join(words)
    if mods:
        out += "(" + ", ".join(mods) + ")"
    if v.binding is not None:
        out += " = " + print_expr(v.binding)
    if v.description is not None:
        out += " " + print_string(v.description)
    return out + ";"


def _guarded(items, guard_of, body_of, indent: str) -> list[str]:
    """Lines for ``items`` in order, consecutive items sharing a guard literal grouped into one
    nested ``if [not] c then ... end if;`` per literal; a literal ``(c, True)`` followed by
    ``(c, False)`` at the same depth becomes ``if c then ... else ... end if;``."""
    lines: list[str] = []
    open_lits: list = []              # literals of the currently open if-blocks
    for item in items:
        guard = guard_of(item)
        k = 0
        while k < len(open_lits) and k < len(guard) and open_lits[k] == guard[k]:
            k += 1
        use_else = (k < len(open_lits) and k < len(guard) and open_lits[k].positive
                    and not guard[k].positive and open_lits[k].cond == guard[k].cond)
        while len(open_lits) > k + (1 if use_else else 0):
            open_lits.pop()
            lines.append(indent + "  " * len(open_lits) + "end if;")
        if use_else:
            lines.append(indent + "  " * k + "else")
            open_lits[k] = guard[k]
            k += 1
        for lit in guard[k:]:
            cond = lit.cond if lit.positive else E.UnOp("not", lit.cond)
            lines.append(indent + "  " * len(open_lits) + f"if {print_expr(cond)} then")
            open_lits.append(lit)
        lines.append(indent + "  " * len(open_lits) + body_of(item))
    while open_lits:
        open_lits.pop()
        lines.append(indent + "  " * len(open_lits) + "end if;")
    return lines


def _action(a) -> str:
    if isinstance(a, Reinit):
        return f"reinit({print_name(a.var)}, {print_expr(a.value)});"
    if isinstance(a, Assign):
        return f"{print_name(a.var)} = {print_expr(a.value)};"
    if isinstance(a, Terminate):
        return f"terminate({print_string(a.message)});"
    return _assertion(a)


def _assertion(a: Assertion) -> str:
    level = "" if a.level == "error" else f", AssertionLevel.{a.level}"
    return f"assert({print_expr(a.cond)}, {print_expr(a.message)}{level});"


def _param(kind: str, p) -> str:
    default = "" if p.default is None else f" = {print_expr(p.default)}"
    return f"  {kind}{p.type} {print_name(p.name)}{default};"


def _range(e) -> str:
    return _wrap(e, _ADD)


def _statements(body, ind: str) -> list[str]:
    """Modelica lines of a function's statements, indented by ``ind``."""
    out = []
    for s in body:
        t = type(s)
        if t is F.Assign:
            out.append(f"{ind}{print_name(s.target)} := {print_expr(s.value)};")
        elif t is F.TupleAssign:
            targets = ", ".join("" if n is None else print_name(n) for n in s.targets)
            out.append(f"{ind}({targets}) := {print_expr(s.call)};")
        elif t is F.IfStmt:
            kw = "if"
            for c, b in s.branches:
                out.append(f"{ind}{kw} {print_expr(c)} then")
                out += _statements(b, ind + "  ")
                kw = "elseif"
            if s.orelse:
                out.append(f"{ind}else")
                out += _statements(s.orelse, ind + "  ")
            out.append(f"{ind}end if;")
        elif t is F.ForStmt:
            step = "" if s.step == E.Const(1) else f"{_range(s.step)}:"
            out.append(f"{ind}for {print_name(s.var)} in {_range(s.start)}:{step}"
                       f"{_range(s.stop)} loop")
            out += _statements(s.body, ind + "  ")
            out.append(f"{ind}end for;")
        elif t is F.WhileStmt:
            out.append(f"{ind}while {print_expr(s.cond)} loop")
            out += _statements(s.body, ind + "  ")
            out.append(f"{ind}end while;")
        elif t is F.AssertStmt:
            level = ", AssertionLevel.warning" if s.level == "warning" else ""
            message = print_string(s.message) if isinstance(s.message, str) \
                else print_expr(s.message)
            out.append(f"{ind}assert({print_expr(s.cond)}, {message}{level});")
        else:
            out.append(f"{ind}{'return' if t is F.Return else 'break'};")
    return out


def print_function(f) -> str:
    """A `functions.Function` as a Modelica function definition."""
    name = print_name(f.name)
    lines = [f"function {name}"]
    lines += [_param("input ", p) for p in f.inputs]
    lines += [_param("output ", p) for p in f.outputs]
    if f.locals:
        lines.append("protected")
        lines += [_param("", p) for p in f.locals]
    lines.append("algorithm")
    lines += _statements(f.body, "  ")
    ann = [f"Inline = {'true' if f.inline else 'false'}"]
    if f.derivative is not None:
        without = ", ".join(f"zeroDerivative = {print_name(n)}" for n in f.derivative.without)
        args = f"({without})" if without else ""
        ann.append(f"derivative{args} = {print_name(f.derivative.function)}")
    if f.smooth_order is not None:
        ann.append(f"smoothOrder = {f.smooth_order}")
    lines.append(f"  annotation({', '.join(ann)});")
    lines.append(f"end {name};")
    return "\n".join(lines) + "\n"


def _output_wrappers(model: Model) -> list[str]:
    """``f#2(x)`` (output 2 of f) prints as a call of the function ``'f#2'``, defined here as
    a wrapper; the importer reads ``'f#2'(x)`` back as output 2 of f (`functions.call_name`)
    and drops the wrapper, so the model re-reads equal."""
    by_name = {f.name: f for f in model.functions}
    seen: dict = {}
    exprs = [e.residual for e in model.equations + model.initial_equations]
    exprs += [x for v in model.variables for x in (v.start, v.binding) if x is not None]
    exprs += [a.value for w in model.whens for b in w.branches for a in b.actions
              if isinstance(a, (Assign, Reinit))]
    for e in exprs:
        for n in E.walk(e):
            if type(n) is E.Call and n.func not in by_name:
                base, k = F.split_call_name(n.func)
                if k and base in by_name:
                    seen.setdefault(n.func, (by_name[base], k))
    out = []
    for cname, (f, k) in seen.items():
        outs = [F.Param(f"o{j}", p.type) for j, p in enumerate(f.outputs)]
        wrapper = F.Function(cname, f.inputs, (F.Param("y", f.outputs[k].type),),
                             tuple(outs), (
            F.TupleAssign(tuple(p.name for p in outs),
                          E.Call(f.name, tuple(E.Ref(p.name) for p in f.inputs))),
            F.Assign("y", E.Ref(f"o{k}"))))
        out.append(print_function(wrapper))
    return out


def _string_declaration(p) -> str:
    """``parameter String s = "..." "description";`` of an `ir.StringParameter`."""
    descr = "" if p.description is None else " " + print_string(p.description)
    kind = "constant" if p.constant else "parameter"
    return f"{kind} String {print_name(p.name)} = {print_string(p.value)}{descr};"


def print_model(model: Model) -> str:
    """Flat Modelica text of ``model`` (module docstring): its functions first, then the
    class."""
    name = print_name(model.name)
    lines = [print_function(f) for f in model.functions] + _output_wrappers(model)
    lines.append(f"class {name}")
    for ename, literals in model.enumerations:
        if not ename.startswith("enumeration("):
            lits = ", ".join(print_name(lit) + ("" if d is None else " " + print_string(d))
                             for lit, d in literals)
            lines.append(f"  type {print_name(ename)} = enumeration({lits});")
    lines += ["  " + _declaration(v) for v in model.variables]
    lines += ["  " + _string_declaration(p) for p in model.strings]
    if model.equations or model.whens or model.assertions:
        lines.append("equation")
        lines += _guarded(model.equations, lambda e: e.guard,
                          lambda e: print_equation_body(e.residual) + ";", "  ")
        for w in model.whens:
            for k, b in enumerate(w.branches):
                kw = "when" if k == 0 else "elsewhen"
                lines.append(f"  {kw} {print_expr(b.condition)} then")
                lines += ["    " + _action(a) for a in b.actions]
            lines.append("  end when;")
        lines += _guarded(model.assertions, lambda a: a.guard, _assertion, "  ")
    if model.initial_equations:
        lines.append("initial equation")
        lines += _guarded(model.initial_equations, lambda e: e.guard,
                          lambda e: print_equation_body(e.residual) + ";", "  ")
    if model.experiment:
        args = ", ".join(f"{k} = {v!r}" for k, v in model.experiment)
        lines.append(f"  annotation(experiment({args}));")
    lines.append(f"end {name};")
    return "\n".join(lines) + "\n"


__all__ = ["print_model", "print_function", "print_expr", "print_name", "print_string",
           "print_equation_body",
           "print_simple", "equation_sides"]
