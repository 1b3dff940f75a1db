"""Function definitions of flat Modelica / Base Modelica input.

The grammar block ``functions and algorithm sections`` of ``modelica.lark`` is read by the
callbacks of `function_callbacks` and `statement_callbacks`; `FunctionResolver` then, while
the model is built, turns the definitions into `mdae_fmu.functions.Function`s and checks every
call (docs/importers.md, "Functions"):

* a declaration of a built-in math function (``function Modelica.Math.sin ... external "C"
  y = sin(u); end Modelica.Math.sin;``, any ``Modelica.Math.*`` or ``Modelica.Math.Special.*``
  function whose last name is a built-in, or any function whose external call is a built-in
  with the inputs in order) is an alias: its calls become the built-in;
* any other external function is refused at its first call (the FMU cannot link a user's C
  library); recursion (a call cycle) is refused;
* a function whose body is a straight line of assignments to one output, without a
  ``derivative`` annotation and not marked ``Inline = false``, is inlined at its calls (the
  analysis then sees a plain expression); the others stay calls (`mdae_fmu.functions`);
* algorithm sections of the model: `importers.algorithms`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .. import expr as E
from .. import functions as F
from ..diagnostics import SourceLoc
from ..assert_messages import message_parts
from .syntax import fold_strings, normalize_name

#: Modelica.Constants (MSL 4.0) referenced without a declaration.
CONSTANTS = {
    "pi": 3.141592653589793, "e": 2.718281828459045, "g_n": 9.80665,
    "eps": 2.220446049250313e-16, "small": 1e-60, "inf": 1e60, "R": 8.31446261815324,
    "sigma": 5.670374419e-08, "k": 1.380649e-23, "N_A": 6.02214076e23, "c": 299792458.0,
    "h": 6.62607015e-34, "q": 1.602176634e-19, "mu_0": 1.25663706212e-06,
    "epsilon_0": 8.8541878128e-12, "F": 96485.33212331001, "T_zero": -273.15,
    "D2R": 0.017453292519943295, "R2D": 57.29577951308232, "gamma": 0.5772156649015329,
}
_SPECIAL = {"erf": "erf", "erfc": "erfc"}
#: OpenModelica's internal operators of stream connectors in its flat output (argument count):
#: ``$OMC$PositiveMax(x, eps)`` is max(x, eps); ``$OMC$inStreamDiv(a, b)`` is a (the mixing
#: ratio, whose denominator PositiveMax keeps positive; b is the fallback for a zero one).
OMC_OPERATORS = {"$OMC$PositiveMax": 2, "$OMC$inStreamDiv": 2}


#: Built-in operators of synchronous Modelica (Modelica 3.6 chapter 16), refused by name.
CLOCKED_OPERATORS = frozenset((
    "Clock", "previous", "hold", "subSample", "superSample", "shiftSample", "backSample",
    "noClock", "firstTick", "interval"))


@dataclass(slots=True)
class FunctionDef:
    """A parsed function definition before resolution."""
    name: str
    loc: SourceLoc | None
    end_name: str
    end_loc: SourceLoc | None
    contents: list
    annotations: list        # annotation texts
    errors: list             # errors inside the definition: reported only if it is called
    calls: list              # calls inside the definition (name, where, nargs)
    uses: dict               # first use of each name inside the definition (offset)
    partial: bool = False    # `partial function`: the type of functional input arguments


@dataclass(slots=True)
class Range:
    """``start:stop`` or ``start:step:stop`` (step None); refused (error recorded) outside a
    for-range."""
    start: object
    step: object
    stop: object
    error: tuple


@dataclass(slots=True)
class Tuple:
    """``(a, b, ...)``; refused (error recorded) except left of ``=`` / ``:=``."""
    items: list
    error: tuple


def is_range(x) -> bool:
    """A range node (``start``, ``step`` or None, ``stop``), whichever callback made it."""
    return all(hasattr(x, a) for a in ("start", "step", "stop"))


def annotation_text(text: str, pos: int) -> str:
    """The text of the annotation starting at offset ``pos`` (``annotation(...)``), up to its
    matching parenthesis (strings skipped)."""
    i = text.find("(", pos)
    depth = 0
    n = len(text)
    j = i
    while 0 <= j < n:
        ch = text[j]
        if ch == '"':
            j += 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return text[i + 1:j]
        j += 1
    return ""


_NAME = (r"(?:[A-Za-z_$][A-Za-z0-9_$]*|'(?:[^'\\]|\\.)*')"
         r"(?:\.(?:[A-Za-z_$][A-Za-z0-9_$]*|'(?:[^'\\]|\\.)*'))*")
_DERIVATIVE_RE = re.compile(r"\bderivative\s*(?:\(([^()]*)\))?\s*=\s*(" + _NAME + ")")
_SMOOTH_RE = re.compile(r"\bsmoothOrder\s*=\s*(\d+)")
_INLINE_RE = re.compile(r"\b(?:Inline|LateInline)\s*=\s*(true|false)")
_ORDER_RE = re.compile(r"\border\s*=\s*(\d+)")
_WITHOUT_RE = re.compile(r"\b(?:zeroDerivative|noDerivative)\s*=\s*(" + _NAME + ")")


# --- resolution --------------------------------------------------------------------------------

class FunctionResolver:
    """Builds the `Function`s of a file and rewrites calls (module docstring)."""

    def __init__(self, defs: list, ctx, err):
        self.ctx = ctx
        self.err = err                       # err(where, message)
        self.defs: dict[str, FunctionDef] = {}
        self.aliases: dict[str, str] = {}    # function name -> built-in
        self.external: dict[str, str] = {}   # function name -> reason
        self.functions: dict[str, F.Function] = {}
        self._inline_flag: dict[str, bool | None] = {}
        self.inlined: dict = {}
        for d in defs:
            if d.end_name != d.name:
                err(d.end_loc, f"'end {d.end_name};' does not match 'function {d.name}'")
                continue
            if d.name in self.defs:
                err(d.loc, f"duplicate definition of function '{d.name}'")
                continue
            self.defs[d.name] = d
        self.broken: dict[str, list] = {}    # function -> its errors (reported if called)
        for d in self.defs.values():
            errors: list = list(d.errors)
            keep, self.err = self.err, lambda where, msg, errors=errors: errors.append((where, msg))
            try:
                self._define(d)
            finally:
                self.err = keep
            if errors:
                self.broken[d.name] = errors
                self.functions.pop(d.name, None)

    # ---- definitions ----
    def _define(self, d: FunctionDef):
        inputs: list[F.Param] = []
        outputs: list[F.Param] = []
        locals_: list[F.Param] = []
        body = None
        ext = None
        for sec in d.contents:
            tag = sec[0]
            if tag == "decls":
                for decl in sec[1]:
                    p = self._param(decl, d.name)
                    if p is None:
                        continue
                    kind = {k for k, _ in decl.prefixes}
                    (inputs if "input" in kind else outputs if "output" in kind
                     else locals_).append(p)
            elif tag == "algorithm":
                if body is not None:
                    self.err(sec[2], f"function '{d.name}' has more than one algorithm section")
                body = sec[1]
            elif tag == "external":
                ext = sec
            elif tag in ("equations", "initial", "initial_algorithm"):
                self.err(d.loc, f"function '{d.name}': only declarations, one algorithm "
                                "section and an external clause are allowed in a function")
        short = d.name.rsplit(".", 1)[-1]
        builtin = None
        if d.name.startswith("Modelica.Math.Special.") and short in _SPECIAL:
            builtin = _SPECIAL[short]
        elif d.name.startswith("Modelica.Math.") and short in E.MATH_FUNCTIONS \
                and len(inputs) in E.MATH_FUNCTIONS[short]:
            builtin = short
        elif ext is not None:
            builtin = self._external_builtin(ext, inputs, outputs)
        if builtin is not None:
            self.aliases[d.name] = builtin
            return
        if ext is not None:
            call = ext[2]
            cname = call[2] if call is not None else d.name.rsplit(".", 1)[-1]
            lang = ext[1] or "C"
            self.external[d.name] = (f"external function '{d.name}' calls the {lang} function "
                                     f"'{cname}' of a library the FMU cannot link (give the "
                                     "function an algorithm body)")
            return
        if not outputs:
            self.err(d.loc, f"function '{d.name}' has no output")
            return
        names = [p.name for p in inputs + outputs + locals_]
        seen = set()
        for p in inputs + outputs + locals_:
            if p.name in seen:
                self.err(p.loc, f"duplicate declaration of '{p.name}' in function '{d.name}'")
            seen.add(p.name)
        deriv, smooth, inline = None, None, None
        for text in d.annotations:
            m = _DERIVATIVE_RE.search(text)
            order = _ORDER_RE.search(m.group(1) or "") if m else None
            if m and order is not None and int(order.group(1)) != 1:
                # derivative(order = 2) = f_der2 takes (x, dx, ddx): not the directional
                # derivative of f_der this table uses; the forward mode of f_der's body is
                m = None
            if m:
                without = tuple(normalize_name(w) for w in _WITHOUT_RE.findall(m.group(1) or ""))
                deriv = F.DerivativeAnnotation(normalize_name(m.group(2)), without)
            m = _SMOOTH_RE.search(text)
            if m:
                smooth = int(m.group(1))
            m = _INLINE_RE.search(text)
            if m:
                inline = m.group(1) == "true"
        scope = set(names)
        stmts = self._statements(body or [], d.name, scope, frozenset())
        assigned: list = []
        assigned_names(stmts, assigned)
        for p in inputs:
            if p.name in assigned:
                self.err(first_assign_loc(stmts, p.name) or d.loc,
                         f"cannot assign the input '{p.name}' of function '{d.name}'")
        fn = F.Function(d.name, tuple(inputs), tuple(outputs), tuple(locals_), tuple(stmts),
                        deriv, smooth, bool(inline), d.loc)
        self.functions[d.name] = fn
        self._inline_flag[d.name] = inline

    def _external_builtin(self, ext, inputs, outputs) -> str | None:
        call = ext[2]
        if call is None:
            return None
        _, lhs, cname, args = call
        if cname not in E.MATH_FUNCTIONS and cname not in _SPECIAL:
            return None
        if len(outputs) != 1 or (lhs is not None and lhs != outputs[0].name):
            return None
        if [a.name if type(a) is E.Ref else None for a in args] != [p.name for p in inputs]:
            return None
        return _SPECIAL.get(cname, cname)

    def _param(self, decl, fname):
        if decl.type_name not in ("Real", "Integer", "Boolean"):
            self.err(decl.type_loc, f"unsupported type '{decl.type_name}' of '{decl.name}' in "
                                    f"function '{fname}' (Real, Integer and Boolean only)")
            return None
        for p, ploc in decl.prefixes:
            if p not in ("input", "output", "final", "constant", "parameter"):
                self.err(ploc, f"prefix '{p}' is not allowed in function '{fname}'")
        return F.Param(decl.name, decl.type_name, decl.binding, self.ctx.where_loc(decl.loc))

    def _statements(self, items, fname, scope, loops) -> list:
        out = []
        for x in items:
            s = self._statement(x, fname, scope, loops)
            if s is not None:
                out.append(s)
        return out

    def _statement(self, x, fname, scope, loops):
        tag = x[0]
        ctx = self.ctx
        if tag == "assign":
            _, lhs, rhs, where = x
            loc = ctx.where_loc(where)
            if type(lhs) is Tuple:
                if type(rhs) is not E.Call or rhs.func in E.BUILTIN_FUNCTIONS:
                    self.err(loc, "the right side of '(a, b) := ...' must be a call of a "
                                  "function with several outputs")
                    return None
                targets = []
                for item in lhs.items:
                    if item is None:                # an empty slot: not assigned
                        targets.append(None)
                        continue
                    if type(item) is not E.Ref or item.name not in scope:
                        self.err(loc, "'(a, b) := f(...)' assigns variables of the function")
                        return None
                    targets.append(item.name)
                return F.TupleAssign(tuple(targets), rhs, loc)
            if type(lhs) is not E.Ref or lhs is E.TIME or lhs.name not in scope:
                name = lhs.name if type(lhs) is E.Ref else None
                self.err(loc, f"cannot assign '{name}' in function '{fname}' (not one of its "
                              "outputs or protected variables)" if name else
                              "the left side of ':=' must be a variable")
                return None
            return F.Assign(lhs.name, rhs, loc)
        if tag == "stmt":
            s = x[1]
            if s is None:
                return None
            if s.func == "print":
                self.err(s.loc, "print(...) (an OpenModelica extension) is supported only "
                                "inside a when-clause or a when-statement, where the FMU logs "
                                "its message")
                return None
            if s.func != "assert":
                self.err(s.loc, f"{s.func}(...) is not allowed in a function")
                return None
            args = list(s.args)
            level = "error"
            if "level" in s.named:
                args.append(s.named["level"].value)
            if len(args) == 3 and type(args[2]) is E.Ref and \
                    args[2].name == "AssertionLevel.warning":
                level = "warning"
                ctx.enum_consumed[args[2].name] = ctx.enum_consumed.get(args[2].name, 0) + 1
            elif len(args) == 3 and type(args[2]) is E.Ref and \
                    args[2].name == "AssertionLevel.error":
                ctx.enum_consumed[args[2].name] = ctx.enum_consumed.get(args[2].name, 0) + 1
            msg = fold_strings(args[1]) if len(args) >= 2 else None
            if msg is not None and type(msg) is not E.Str and len(args) in (2, 3) \
                    and message_parts(msg) is not None:
                return F.AssertStmt(args[0], msg, level, s.loc)     # with String(...) values
            if len(args) not in (2, 3) or type(msg) is not E.Str:
                self.err(s.loc, "assert in a function takes a condition and a string message")
                return None
            return F.AssertStmt(args[0], msg.value, level, s.loc)
        if tag == "if":
            _, branches, orelse, loc = x
            return F.IfStmt(tuple((c, tuple(self._statements(b, fname, scope, loops)))
                                  for c, _l, b in branches),
                            tuple(self._statements(orelse or [], fname, scope, loops)), loc)
        if tag == "for":
            _, indices, body, loc = x
            inner_scope = set(scope)
            for name, _rng, _l in indices:
                inner_scope.add(name)
            stmts = tuple(self._statements(body, fname, inner_scope, loops | {"for"}))
            for name, rng, iloc in reversed(indices):
                if not is_range(rng):
                    self.err(iloc, f"the range of for-index '{name}' must be a range 'a:b', "
                                   "'a:step:b' or a vector")
                    return None
                step = rng.step if rng.step is not None else E.Const(1)
                stmts = (F.ForStmt(name, rng.start, step, rng.stop, stmts, iloc),)
            return stmts[0]
        if tag == "while":
            _, cond, body, loc = x
            return F.WhileStmt(cond, tuple(self._statements(body, fname, scope,
                                                            loops | {"while"})), loc)
        if tag == "return":
            return F.Return(x[1])
        if tag == "break":
            if not loops:
                self.err(x[1], "break outside a loop")
                return None
            return F.Break(x[1])
        if tag == "when":
            self.err(x[2], f"when-statements are not allowed in function '{fname}'")
            return None
        return None

    # ---- checks and call rewriting ----
    def finish(self, calls: list):
        """Check every call of the model (``(name, where, nargs)`` recorded while parsing) and,
        transitively, those of the functions it calls; refuse recursion and the external
        functions that are used; decide which functions are inlined. A function that is never
        called is not checked (flat files declare library functions they do not use)."""
        used: list[str] = []
        queue = list(calls)
        while queue:
            name, where, nargs = queue.pop(0)
            base = name
            if base in OMC_OPERATORS and base not in self.defs:
                if nargs != OMC_OPERATORS[base]:
                    self.err(where, f"'{name}' expects 2 arguments, got {nargs}")
                continue
            if base in self.aliases:
                want = E.MATH_FUNCTIONS.get(self.aliases[base], (1,))
                if nargs not in want:
                    self.err(where, f"'{name}' expects {want[0]} argument"
                                    f"{'' if want[0] == 1 else 's'}, got {nargs}")
                continue
            if base in self.external:
                self.err(where, self.external[base])
                continue
            if base in self.defs and self.defs[base].partial:
                self.err(where, f"'{name}' is a partial function (the type of a functional "
                                "input argument): it cannot be called")
                continue
            if base in self.broken:
                self._report_broken(base)
                continue
            fn = self.functions.get(base)
            if fn is None and base in CLOCKED_OPERATORS:
                self.err(where, f"'{name}' is an operator of synchronous (clocked) Modelica, "
                                "which is not supported: write the sampled part with "
                                "when sample(start, interval) clauses")
                continue
            if fn is None:
                self.err(where, f"unknown function '{name}' (neither a Modelica built-in nor a "
                                "function defined in the file)")
                continue
            required = sum(1 for p in fn.inputs if p.default is None)
            if nargs > len(fn.inputs) or nargs < required:
                wanted = (str(len(fn.inputs)) if required == len(fn.inputs)
                          else f"{required} to {len(fn.inputs)}")
                self.err(where, f"'{name}' expects {wanted} argument"
                                f"{'' if wanted == '1' else 's'}, got {nargs}")
            if base not in used:
                used.append(base)
                d = self.defs.get(base)
                if d is not None:
                    queue.extend(d.calls)
                if fn.derivative is not None:
                    dname = fn.derivative.function
                    if dname not in self.functions and dname not in self.broken:
                        self.err(fn.loc, f"the derivative function '{dname}' of '{fn.name}' "
                                         "is not defined in the file")
                    else:
                        n_t = sum(1 for n in fn.real_inputs() if n not in fn.derivative.without)
                        queue.append((dname, fn.loc, len(fn.inputs) + n_t))
        for name in used:
            if name in self.functions:
                self._check_names(self.functions[name])
        cycle = F.find_cycle([self.functions[n] for n in used if n in self.functions])
        if cycle is not None:
            fn = self.functions[cycle[0]]
            self.err(fn.loc, f"recursive function '{fn.name}' (call cycle "
                             f"{' -> '.join(cycle)}): recursion is not supported (write it "
                             "with a loop)")
        self.inlined = {}
        for fn in self.functions.values():
            expr = self._straight_line(fn)
            if expr is not None:
                self.inlined[fn.name] = (fn, expr)

    def _report_broken(self, name: str):
        """The errors of a called function's definition (recorded, not reported, while it was
        read)."""
        errors = self.broken.pop(name, None)
        for e in errors or ():
            if type(e[0]) is int and len(e) == 5:        # a parse-time record
                self.ctx.errors.append(e)
            else:
                self.err(*e)

    def _check_names(self, fn: F.Function):
        scope = {p.name for p in fn.inputs + fn.outputs + fn.locals}
        loop_vars = set()
        stack = list(fn.body)
        while stack:
            s = stack.pop()
            if isinstance(s, F.ForStmt):
                loop_vars.add(s.var)
            for attr in ("body", "orelse"):
                stack.extend(getattr(s, attr, ()))
            if isinstance(s, F.IfStmt):
                for _c, b in s.branches:
                    stack.extend(b)
        allowed = scope | loop_vars
        exprs = F.statement_exprs(fn.body) + [p.default for p in fn.inputs + fn.outputs +
                                              fn.locals if p.default is not None]
        for e in exprs:
            for n in E.walk(e):
                if type(n) is E.Ref and n.name not in allowed and \
                        not n.name.startswith("AssertionLevel."):
                    if n.name.startswith("Modelica.Constants.") and \
                            n.name[19:] in CONSTANTS:
                        continue
                    d = self.defs.get(fn.name)
                    where = d.uses.get(n.name, fn.loc) if d is not None else fn.loc
                    self.err(where, f"undefined name '{n.name}' in function '{fn.name}'")
                    return
                if type(n) in (E.Der,) or (type(n) is E.Call and n.func in
                                           ("pre", "edge", "change", "initial", "sample")):
                    self.err(fn.loc, f"'{n.func if type(n) is E.Call else 'der'}' is not "
                                     f"allowed in function '{fn.name}'")
                    return
                if type(n) is E.Time:
                    self.err(fn.loc, f"'time' is not allowed in function '{fn.name}'")
                    return

    def _straight_line(self, fn: F.Function):
        """The output of ``fn`` as one expression of its inputs when the body is a straight
        line of assignments and the function may be inlined (module docstring), else None."""
        if self._inline_flag.get(fn.name) is False or fn.derivative is not None:
            return None
        if len(fn.outputs) != 1 or not fn.body:
            return None
        env: dict[E.Expr, E.Expr] = {}
        for p in fn.outputs + fn.locals:
            if p.default is not None:
                env[E.Ref(p.name)] = p.default
        for s in fn.body:
            if type(s) is not F.Assign:
                return None
            env[E.Ref(s.target)] = E.substitute(s.value, env) if env else s.value
        out = env.get(E.Ref(fn.outputs[0].name))
        if out is None:
            return None
        return out

    def rewrite(self, e: E.Expr) -> E.Expr:
        """``e`` with aliases replaced by their built-in, default arguments filled in, inlined
        functions expanded and Modelica.Constants replaced by their values."""
        t = type(e)
        if t is E.Ref:
            assert isinstance(e, E.Ref)
            if e.name.startswith("Modelica.Constants.") and e.name[19:] in CONSTANTS:
                return E.Const(CONSTANTS[e.name[19:]])
            return e
        if t is E.Call:
            assert isinstance(e, E.Call)
            args = tuple(self.rewrite(a) for a in e.args)
            name = e.func
            if name in self.aliases:
                return E.Call(self.aliases[name], args)
            if name in OMC_OPERATORS and name not in self.functions:
                return E.Call("max", args) if name == "$OMC$PositiveMax" else args[0]
            base, k = F.split_call_name(name)
            fn = self.functions.get(base)
            if fn is None:
                return E.Call(name, args)
            if len(args) < len(fn.inputs):
                env: dict[E.Expr, E.Expr] = {E.Ref(p.name): a for p, a in zip(fn.inputs, args)}
                extra = []
                for p in fn.inputs[len(args):]:
                    v = self.rewrite(E.substitute(p.default, env))
                    extra.append(v)
                    env[E.Ref(p.name)] = v
                args = args + tuple(extra)
            if base in self.inlined and k == 0:
                body = self.rewrite(self.inlined[base][1])
                return E.substitute(body, {E.Ref(p.name): a for p, a in zip(fn.inputs, args)})
            return E.Call(name, args)
        if t is E.BinOp:
            assert isinstance(e, E.BinOp)
            return E.BinOp(e.op, self.rewrite(e.left), self.rewrite(e.right))
        if t is E.UnOp:
            assert isinstance(e, E.UnOp)
            return E.UnOp(e.op, self.rewrite(e.arg))
        if t is E.If:
            assert isinstance(e, E.If)
            return E.If(self.rewrite(e.cond), self.rewrite(e.then), self.rewrite(e.orelse))
        if t is E.Der:
            assert isinstance(e, E.Der)
            return E.Der(self.rewrite(e.arg))
        return e

    def rewrite_function(self, fn: F.Function) -> F.Function:
        from dataclasses import replace
        rw = self.rewrite

        def params(ps):
            return tuple(replace(p, default=None if p.default is None else rw(p.default))
                         for p in ps)

        return replace(fn, inputs=params(fn.inputs), outputs=params(fn.outputs),
                       locals=params(fn.locals), body=map_body(fn.body, rw))

    def used_functions(self, exprs) -> tuple:
        """The (rewritten) functions reachable from ``exprs``, in definition order."""
        live = set()
        stack = []
        for e in exprs:
            for n in E.walk(e):
                if type(n) is E.Call:
                    base = F.split_call_name(n.func)[0]
                    if base in self.functions and base not in live:
                        live.add(base)
                        stack.append(base)
        while stack:
            fn = self.functions[stack.pop()]
            for g in F.called_functions(fn, self.functions):
                if g not in live:
                    live.add(g)
                    stack.append(g)
            if fn.derivative is not None and fn.derivative.function in self.functions and \
                    fn.derivative.function not in live:
                live.add(fn.derivative.function)
                stack.append(fn.derivative.function)
        return tuple(self.rewrite_function(f) for n, f in self.functions.items() if n in live)


def map_body(body, rw) -> tuple:
    out: list[F.Statement] = []
    for s in body:
        t = type(s)
        if t is F.Assign:
            out.append(F.Assign(s.target, rw(s.value), s.loc))
        elif t is F.TupleAssign:
            out.append(F.TupleAssign(s.targets, rw(s.call), s.loc))
        elif t is F.IfStmt:
            out.append(F.IfStmt(tuple((rw(c), map_body(b, rw)) for c, b in s.branches),
                                map_body(s.orelse, rw), s.loc))
        elif t is F.ForStmt:
            out.append(F.ForStmt(s.var, rw(s.start), rw(s.step), rw(s.stop),
                                 map_body(s.body, rw), s.loc))
        elif t is F.WhileStmt:
            out.append(F.WhileStmt(rw(s.cond), map_body(s.body, rw), s.loc))
        elif t is F.AssertStmt:
            message = s.message if isinstance(s.message, str) else rw(s.message)
            out.append(F.AssertStmt(rw(s.cond), message, s.level, s.loc))
        else:
            out.append(s)
    return tuple(out)


def assigned_names(stmts, out: list):
    """Append to ``out`` the variables ``stmts`` assign, in order of first assignment."""
    for s in stmts:
        if isinstance(s, F.Assign):
            if s.target not in out:
                out.append(s.target)
        elif isinstance(s, F.TupleAssign):
            for t in s.targets:
                if t is not None and t not in out:
                    out.append(t)
        elif isinstance(s, F.IfStmt):
            for _c, b in s.branches:
                assigned_names(b, out)
            assigned_names(s.orelse, out)
        elif isinstance(s, (F.ForStmt, F.WhileStmt)):
            assigned_names(s.body, out)


def first_assign_loc(stmts, name):
    """Location of the first assignment of ``name`` in ``stmts`` (None if none)."""
    for s in stmts:
        if isinstance(s, F.Assign) and s.target == name:
            return s.loc
        if isinstance(s, F.TupleAssign) and name in s.targets:
            return s.loc
        for b in ([b for _c, b in s.branches] + [s.orelse] if isinstance(s, F.IfStmt)
                  else [s.body] if isinstance(s, (F.ForStmt, F.WhileStmt)) else []):
            loc = first_assign_loc(b, name)
            if loc is not None:
                return loc
    return None
