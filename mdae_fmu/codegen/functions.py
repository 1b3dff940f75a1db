"""C code of the user functions of a model (`mdae_fmu.functions`), file ``mdae_functions.c``.

Function k of the model's `FunctionTable` (derivative functions made during the analysis
included) becomes

* ``int mdae_fn<k>(const ModelData *d, double in..., double *out...)``: the body, statement
  by statement (if/for/while/return/break/assert); returns 0, or 1 after a failed assert or
  when the call ran out of its work budget (``d->fn_error`` then names the message in
  ``mdae_fn_messages``; the runtime logs it and the FMI call returns fmi2Error);
* ``double mdae_fn<k>_o<j>(const ModelData *d, double in...)``: output j, NaN after a failure,
  the form the equations' C expressions call (the sympy function of the call has that name,
  `FunctionTable.sympy_name`).

The work budget (`mdae_fmu.work_budget`, its value at export compiled in as ``MDAE_FN_BUDGET``):
a call from the model (``d->fn_depth`` 0 on entry of ``mdae_fn<k>_o<j>``) sets
``d->fn_work`` to the budget, every loop iteration of it and of the calls it makes takes one
unit, and at 0 the call fails with a message naming the function; a for-loop whose range
alone exceeds the budget does not start.

Every value is a ``double`` (Integer and Boolean values are exact in a double). Names from the
model never reach C: inputs are ``a<j>``, other variables ``v<j>``, and the function's name
appears only in comments (`cprinter.c_comment`) and in the messages (`cprinter.c_string`).
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import expr as E
from .. import functions as F
from ..symbolic import SymbolTable
from ..work_budget import function_budget
from .cprinter import SlotPrinter, c_comment, c_string

def function_sources(table: F.FunctionTable | None) -> tuple[str, str]:
    """The texts of ``mdae_functions.c`` and ``mdae_functions.h`` for ``table`` (module
    docstring); with no table, only the (empty) message table."""
    messages: list[str] = []
    decls, bodies = [], []
    done = 0
    if table is not None:
        # printing a body may create derivative functions (chain rule): until none is new
        while done < len(table.all()):
            fns = table.all()
            for fn in fns[done:]:
                k = table.index(fn.name)
                decls.append(_prototypes(fn, k))
                bodies.append(_function(fn, k, table, messages))
            done = len(fns)
    msg = ",\n".join(f"    {c_string(m)}" for m in messages + [""])
    source = ("/* mdae_fmu: user functions of the model (generated). */\n"
              "#include <math.h>\n#include \"mdae_model.h\"\n\n"
              "/* loop iterations of one call from the model (mdae_fmu.work_budget) */\n"
              f"#define MDAE_FN_BUDGET {function_budget()}LL\n\n"
              f"const char *const mdae_fn_messages[] = {{\n{msg}}};\n"
              f"const int mdae_fn_nmessages = {len(messages)};\n\n"
              + "\n".join(bodies))
    header = ("/* mdae_fmu: prototypes of the user functions (generated). */\n"
              "#ifndef MDAE_FUNCTIONS_H\n#define MDAE_FUNCTIONS_H\n"
              "extern const char *const mdae_fn_messages[];\n"
              "extern const int mdae_fn_nmessages;\n"
              + "".join(decls) + "#endif\n")
    return source, header


def _prototypes(fn: F.Function, k: int) -> str:
    ins = "".join(f", double a{j}" for j in range(len(fn.inputs)))
    outs = "".join(f", double *r{j}" for j in range(len(fn.outputs)))
    out = [f"int mdae_fn{k}(const ModelData *d{ins}{outs});\n"]
    for j in range(len(fn.outputs)):
        out.append(f"double mdae_fn{k}_o{j}(const ModelData *d{ins});\n")
    return "".join(out)


class _Ctx:
    def __init__(self, fn: F.Function, k: int, table: F.FunctionTable,
                 messages: list[str]) -> None:
        self.fn, self.k, self.table, self.messages = fn, k, table, messages
        names: dict[str, str] = {}
        for j, p in enumerate(fn.inputs):
            names[p.name] = f"a{j}"
        nv = 0
        for p in fn.outputs + fn.locals:
            names[p.name] = f"v{nv}"
            nv += 1
        for var in _loop_vars(fn.body):
            if var not in names:
                names[var] = f"v{nv}"
                nv += 1
        self.names = names
        self.nvars = nv
        self.sym = SymbolTable(constants=frozenset(names), functions=table)
        self.printer = SlotPrinter({self.sym.sym(n): c for n, c in names.items()}, {}, {})
        self.has_return = False
        self.booleans: dict[E.Expr, E.Expr] = {
            E.Ref(p.name): E.BinOp("<>", E.Ref(p.name), E.Const(0))
            for p in fn.inputs + fn.outputs + fn.locals if p.type == "Boolean"}

    def expr(self, e: E.Expr) -> str:
        if self.booleans:   # a Boolean held in a double is the relation (b <> 0) for sympy
            e = E.substitute(e, self.booleans)
        return self.printer.doprint(self.sym.to_sympy(e))

    def fail(self, message: str) -> str:
        self.messages.append(message)
        return f"{{ ((ModelData *)d)->fn_error = {len(self.messages)}; return 1; }}"


def _formatted_failure(s: F.AssertStmt, cx: _Ctx, ind: str) -> list[str]:
    """A failed assert whose message holds ``String(...)`` values: the message is printed
    into ``d->fn_text`` when the assertion fails (`mdae_fmu.codegen.messages`, the same
    formatting as the model's assertions), the static text with ``<value>`` placeholders
    is the fallback of ``mdae_fn_messages``."""
    from .messages import message_format, message_text, plan_message
    assert not isinstance(s.message, str)
    types = {p.name: p.type for p in cx.fn.inputs + cx.fn.outputs + cx.fn.locals}
    msg = plan_message(cx.sym.to_sympy, s.message, types)
    prefix = f"assertion failed in function {cx.fn.name}: "
    fmt, args, bufs = message_format(cx.printer, (prefix,) + msg)
    text = "((ModelData *)d)->fn_text"
    out = [f"{ind}if (!({cx.expr(s.cond)})) {{"]
    if bufs:
        out.append(f"{ind}    char {', '.join(bufs)};")
    # the length is read (a message longer than fn_text is cut), which tells gcc so
    out.append(f"{ind}    if (snprintf({text}, sizeof {text},{fmt}{args}) < 0) "
               f"{text}[0] = 0;")
    out.append(f"{ind}    " + cx.fail(prefix + message_text(msg)))
    out.append(f"{ind}}}")
    return out


def _loop_vars(body: Sequence[F.Statement]) -> list[str]:
    out = []
    for s in body:
        if isinstance(s, F.ForStmt):
            out.append(s.var)
            out.extend(_loop_vars(s.body))
        elif isinstance(s, F.WhileStmt):
            out.extend(_loop_vars(s.body))
        elif isinstance(s, F.IfStmt):
            for _c, b in s.branches:
                out.extend(_loop_vars(b))
            out.extend(_loop_vars(s.orelse))
    return out


def _function(fn: F.Function, k: int, table: F.FunctionTable, messages: list[str]) -> str:
    cx = _Ctx(fn, k, table, messages)
    ins = "".join(f", double a{j}" for j in range(len(fn.inputs)))
    outs = "".join(f", double *r{j}" for j in range(len(fn.outputs)))
    lines = [f"/* {c_comment(fn.name, 70)} */",
             f"int mdae_fn{k}(const ModelData *d{ins}{outs})", "{"]
    if cx.nvars:
        lines.append("    double " + ", ".join(f"v{j} = 0.0" for j in range(cx.nvars)) + ";")
    lines.append("    (void)d;" + "".join(f" (void)a{j};" for j in range(len(fn.inputs))))
    for p in fn.outputs + fn.locals:
        if p.default is not None:
            lines.append(f"    {cx.names[p.name]} = {cx.expr(p.default)};")
    lines.extend(_body(fn.body, cx, 1))
    if cx.has_return:
        lines.append("mdae_return:")
    for j, p in enumerate(fn.outputs):
        lines.append(f"    *r{j} = {cx.names[p.name]};")
    for j in range(cx.nvars):
        lines.append(f"    (void)v{j};")
    lines.append("    return 0;\n}")
    args = "".join(f", a{j}" for j in range(len(fn.inputs)))
    n = len(fn.outputs)
    refs = "".join(f", &r[{j}]" for j in range(n))
    for j in range(n):      # a call from the model gets a budget; nested calls share it
        lines.append(f"double mdae_fn{k}_o{j}(const ModelData *d{ins})\n{{\n"
                     f"    ModelData *m = (ModelData *)d;\n"
                     f"    double r[{n}] = {{0.0}};\n"
                     f"    int failed;\n"
                     f"    if (m->fn_depth++ == 0) m->fn_work = MDAE_FN_BUDGET;\n"
                     f"    failed = mdae_fn{k}(d{args}{refs});\n"
                     f"    m->fn_depth--;\n"
                     f"    return failed ? (0.0/0.0) : r[{j}];\n}}")
    return "\n".join(lines) + "\n"


def _spend(cx: _Ctx) -> str:
    """The C statement of one loop iteration: one unit of the call's work budget (module
    docstring), and the failure that names the function when none is left."""
    return ("if (--((ModelData *)d)->fn_work < 0) "
            + cx.fail(f"function {cx.fn.name} was stopped after {function_budget()} loop "
                      "iterations in one call from the model, its work budget: a loop that "
                      "does not end? (MDAE_FUNCTION_BUDGET at export sets the budget)"))


def _body(body: Sequence[F.Statement], cx: _Ctx, depth: int) -> list[str]:
    """C lines of a statement list (module docstring), indented ``depth`` levels."""
    ind = "    " * depth
    out = []
    for s in body:
        if isinstance(s, F.Assign):
            out.append(f"{ind}{cx.names[s.target]} = {cx.expr(s.value)};")
        elif isinstance(s, F.TupleAssign):
            base = F.split_call_name(s.call.func)[0]
            g = cx.table.get(base)
            j = cx.table.index(base)
            n = len(g.outputs)
            args = "".join(", " + cx.expr(a) for a in s.call.args)
            refs = "".join(f", &t[{i}]" for i in range(n))
            out.append(f"{ind}{{")
            out.append(f"{ind}    double t[{n}];")
            out.append(f"{ind}    if (mdae_fn{j}(d{args}{refs})) return 1;")
            for i, name in enumerate(s.targets):
                if name is not None and i < n:
                    out.append(f"{ind}    {cx.names[name]} = t[{i}];")
            out.append(f"{ind}}}")
        elif isinstance(s, F.IfStmt):
            kw = "if"
            for cond, b in s.branches:
                out.append(f"{ind}{kw} ({cx.expr(cond)}) {{")
                out.extend(_body(b, cx, depth + 1))
                out.append(f"{ind}}}")
                kw = "else if"
            if s.orelse:
                out[-1] = f"{ind}}} else {{"
                out.extend(_body(s.orelse, cx, depth + 1))
                out.append(f"{ind}}}")
        elif isinstance(s, F.ForStmt):
            v = cx.names[s.var]
            out.append(f"{ind}{{")
            out.append(f"{ind}    double lo = {cx.expr(s.start)}, st = {cx.expr(s.step)}, "
                       f"hi = {cx.expr(s.stop)};")
            out.append(f"{ind}    if (st == 0.0) "
                       + cx.fail(f"for-loop with step 0 in function {cx.fn.name}"))
            out.append(f"{ind}    if ((hi - lo) / st > (double)MDAE_FN_BUDGET) "
                       + cx.fail(f"for-loop of function {cx.fn.name} has more than "
                                 f"{function_budget()} iterations, the work budget of a call"))
            out.append(f"{ind}    for ({v} = lo; st > 0.0 ? {v} <= hi : {v} >= hi; {v} += st) {{")
            out.append(f"{ind}        " + _spend(cx))
            out.extend(_body(s.body, cx, depth + 2))
            out.append(f"{ind}    }}")
            out.append(f"{ind}}}")
        elif isinstance(s, F.WhileStmt):
            out.append(f"{ind}while ({cx.expr(s.cond)}) {{")
            out.append(f"{ind}    " + _spend(cx))
            out.extend(_body(s.body, cx, depth + 1))
            out.append(f"{ind}}}")
        elif isinstance(s, F.Return):
            cx.has_return = True
            out.append(f"{ind}goto mdae_return;")
        elif isinstance(s, F.Break):
            out.append(f"{ind}break;")
        elif isinstance(s, F.AssertStmt):
            if s.level == "error" and isinstance(s.message, str):
                out.append(f"{ind}if (!({cx.expr(s.cond)})) "
                           + cx.fail(f"assertion failed in function {cx.fn.name}: "
                                     f"{s.message}"))
            elif s.level == "error":
                out.extend(_formatted_failure(s, cx, ind))
    return out
