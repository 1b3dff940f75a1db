"""Parse traces of the hand-written parser (`importers.parse_traces`): a line of a known shape
parsed by replaying the callbacks recorded on an earlier line gives what the LALR grammar (the
reference) gives, model and errors, and really is replayed; records that a replay could not
reproduce are refused."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mdae_fmu.importers import flat_modelica as F
from mdae_fmu.importers.fast_parser import FastParser, Unsupported
from mdae_fmu import expr as E
from mdae_fmu.importers.parse_traces import Recorder, children, compile_trace

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from gen_chain import loop_chain_model  # noqa: E402
from gen_scalable import heat_conduction  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_fast_parser import parse_outcome as _outcome  # noqa: E402


def _replayed(text: str) -> int:
    """Lines the hand-written parser read by a trace in ``text`` (a fresh lexer: no shape or
    trace learned from another test)."""
    parser = F._parser()
    lexer = type(parser.lexer)(parser.driver)
    ctx = F.ParseContext("m.mo", text)
    parser.callbacks.ctx = ctx
    try:
        fast = FastParser(lexer, parser.callbacks, text, ctx.term_ends, ctx.tokens_left)
        fast.parse_start()
        return fast.replayed
    finally:
        parser.callbacks.ctx = None


def _same(text: str, monkeypatch) -> object:
    fast = _outcome(text, "fast", monkeypatch)
    assert fast == _outcome(text, "lalr", monkeypatch)
    return fast


@pytest.mark.parametrize("make", [lambda: loop_chain_model(60), lambda: heat_conduction(60)],
                         ids=["loop_chain", "heat"])
def test_generated_models_replayed_and_equal(make, monkeypatch):
    text = make()
    lines = text.count(";")
    replayed = _replayed(text)
    # all but the first three lines of each shape (two to learn it, one to record)
    assert replayed > 0.8 * lines
    model = _same(text, monkeypatch)
    assert not isinstance(model, tuple)
    assert len(model.equations) > 100


def _lines(template: str, n: int) -> str:
    return "".join(template.format(i=i, j=i + 1) for i in range(1, n + 1))


def test_repeated_names_and_constants_either_way(monkeypatch):
    """The same name (one shared reference node) or the same literal twice in a line, on the
    recorded line or on a replayed one, in both orders: lines of one shape (their texts differ
    only in digits)."""
    decls = _lines("  Real x{i};\n", 20)
    distinct = "".join(f"  x{i} = x{i + 1} * 2.0 + x{i + 2} * 3.0;\n" for i in range(1, 9))
    shared = "".join(f"  x{i} = x{i + 1} * 2.0 + x{i + 1} * 2.0;\n" for i in range(9, 12))
    for body, least in ((distinct + shared, 17 + 5 + 3), (shared + distinct, 17 + 7)):
        text = f"class M\n{decls}equation\n{body}  x12 = 1;\nend M;\n"
        assert _replayed(text) == least
        model = _same(text, monkeypatch)
        assert not isinstance(model, tuple)


@pytest.mark.parametrize("bad, message", [
    ("  der(x7) = x99 + 1.0;\n", "x99"),                    # undeclared name
    ("  Real x3(start = 1.0, fixed = true);\n", "duplicate declaration"),
])
def test_errors_on_replayed_lines_are_the_grammars(bad, message, monkeypatch):
    """An error in a line parsed by a trace (its shape is the shape of the lines before it):
    the same file:line:col, message and source line as the LALR grammar gives."""
    decls = _lines("  Real x{i}(start = 1.0, fixed = true);\n", 10)
    eqs = _lines("  der(x{i}) = x{i} + 1.0;\n", 10)
    if bad.startswith("  Real"):
        text = f"class M\n{decls}{bad}equation\n{eqs}end M;\n"
    else:
        text = f"class M\n{decls}equation\n{eqs}{bad}end M;\n"
    assert _replayed(text) >= 7
    fast = _same(text, monkeypatch)
    assert isinstance(fast, tuple) and message in fast[2]
    assert fast[1] == ("m.mo:12:8" if bad.startswith("  Real") else "m.mo:23:13")


class _Callbacks:
    """Callbacks that hand a child on, share a constant or return None."""
    ONE = ("one",)

    def wrap(self, c):
        return ("wrap", c[0][1])

    def hand_on(self, c):
        return c[1]

    def constant(self, c):
        return self.ONE

    def pair(self, c):
        return ("pair", c[0], c[1])


def test_recorder_hand_on_is_replayed():
    tokens = [("NAME", "a", 0), ("NAME", "b", 2)]
    rec = Recorder(_Callbacks(), tokens)
    w = rec.wrap([tokens[0]])
    v = rec.hand_on([tokens[1], [w]])
    value = rec.pair([v, tokens[1]])
    run = compile_trace(rec, value)
    assert run is not None
    other = [("X", "z", 0), ("NAME", "c", 5), ("NAME", "d", 7)]
    assert run(other, 1, _Callbacks()) == ("pair", [("wrap", "c")], ("NAME", "d", 7))


def test_recorder_refuses_an_ambiguous_value():
    tokens = [("NAME", "a", 0), ("NAME", "b", 2)]
    rec = Recorder(_Callbacks(), tokens)
    one = rec.constant([tokens[0]])
    two = rec.constant([tokens[1]])
    assert compile_trace(rec, rec.pair([one, two])) is None
    rec = Recorder(_Callbacks(), tokens)            # unused twice: fine
    rec.constant([tokens[0]])
    rec.constant([tokens[1]])
    assert compile_trace(rec, rec.wrap([tokens[0]])) is not None


def test_recorder_refuses_foreign_children():
    tokens = [("NAME", "a", 0)]
    rec = Recorder(_Callbacks(), tokens)
    copy = tuple(list(tokens[0]))
    assert copy == tokens[0] and copy is not tokens[0]
    assert compile_trace(rec, rec.pair([copy, tokens[0]])) is None           # a copy
    rec = Recorder(_Callbacks(), tokens)
    shared: list = [tokens[0]]
    rec.wrap(shared)
    assert compile_trace(rec, rec.pair([shared, tokens[0]])) is None           # twice


def test_children_splits_a_source_at_its_top_level():
    assert children("[t0, x1, [x2, [x3, t4]], []]") == ["t0", "x1", "[x2, [x3, t4]]", "[]"]
    assert children("[]") == []
    assert children("[[x2, x5]]") == ["[x2, x5]"]


def _inline_cases():
    """(rule, children) of every callback with an inline form: each shape of children the
    hand-written parser passes (tokens, values, lists written out)."""
    eq, lpar, name = ("EQ", "=", 4), ("LPAR", "(", 1), ("NAME", "x", 0)
    one, args = E.Const(1.0), [("NAME", "start", 2)]
    return [("class_modification", [lpar]), ("class_modification", [lpar, [one, one]]),
            ("modification", [eq, one]), ("modification", [args]),
            ("modification", [args, eq, one]), ("modification", [[], eq, one]),
            ("modification", [("ASSIGN", ":=", 3), one]),
            ("call_args", [one]), ("call_args", [one, name, [one]]),
            ("paren", [lpar, one])]


@pytest.mark.parametrize("as_values", [False, True])
@pytest.mark.parametrize("rule,c", _inline_cases())
def test_inline_forms_give_the_callbacks_values(rule, c, as_values):
    """The expression an inline form writes (`parse_traces.compile_trace`) evaluates to what
    the callback returns, equal and with the same objects inside; children named as values
    (``x<k>``, type known only when replayed) as well as written out."""
    callbacks = F._Callbacks()
    form = F._Callbacks.inline_rules[rule]
    env: dict = {}
    sources = []
    for k, child in enumerate(c):
        if type(child) is tuple:
            env[f"t{k}"] = child
            sources.append(f"t{k}")
        elif type(child) is list and not as_values:
            for m, item in enumerate(child):
                env[f"x{k}_{m}"] = item
            sources.append("[" + ", ".join(f"x{k}_{m}" for m in range(len(child))) + "]")
        else:
            env[f"x{k}"] = child
            sources.append(f"x{k}")
    expression = form(sources)
    assert expression is not None
    got = eval(expression, env)         # noqa: S307 - the test's own sources
    want = getattr(F._Callbacks, rule)(callbacks, c)
    assert _same_value(got, want)


def _binop_cases():
    """(children, text) of `binop`: a right operand that is a name's reference or a
    derivative (the form builds the node), a constant, a folded sum, a constant divisor 0 (the
    form calls `binop`: evaluated, or an error recorded)."""
    a, b, one, zero = E.Ref("a"), E.Ref("b"), E.Const(1.0), E.Const(0)
    return [([a, ("ADD_OP", "+", 2), b], "a + b"),
            ([one, ("MUL_OP", "*", 4), E.Der(a)], "1.0 * der(a)"),
            ([E.Der(a), ("ADD_OP", "-", 7), b], "der(a) - b"),
            ([a, ("MUL_OP", "*", 2), one], "a * 1.0"),
            ([one, ("ADD_OP", "+", 4), one], "1.0 + 1.0"),
            ([a, ("MUL_OP", "/", 2), zero], "a / 0"),
            ([a, ("POW_OP", "^", 2), E.UnOp("-", b)], "a ^ (-b)"),
            ([a, ("MUL_OP", "*", 2), E.BinOp("-", a, b)], "a * (a - b)"),
            ([a, ("MUL_OP", "*", 2), E.Call("sin", (b,))], "a * sin(b)"),
            ([a, ("MUL_OP", "/", 2), _SUM], "a / (1.0 - 1.0)"),
            ([one, ("ADD_OP", "+", 4), _SUM], "1.0 + (1.0 - 1.0)")]


#: a constant operation whose value (0.0) the parse context knows (`binop` of constants)
_SUM = E.BinOp("-", E.Const(1.0), E.Const(1.0))


@pytest.mark.parametrize("c,text", _binop_cases())
def test_binop_form_gives_the_callbacks_node(c, text):
    """`binop`'s inline form evaluates, in a trace's namespace (the callbacks' ``inline_names``
    and ``f_binop``), to a node equal to the callback's, over the same operand objects, and
    leaves the same errors and folded values in the parse context."""
    from mdae_fmu.importers.parse_context import ParseContext
    form = F._Callbacks.inline_rules["binop"]
    expression = form(["x0", "t1", "x2"])
    assert expression is not None and form(["x0", "t1", "[x2]"]) is None
    contexts = []
    results = []
    for inline in (True, False):
        callbacks = F._Callbacks()
        callbacks.ctx = ctx = ParseContext(filename="m.mo", text=text)
        ctx.folded[id(_SUM)] = (_SUM, 0.0)
        if inline:
            env = {**F._Callbacks.inline_names, "f_binop": F._Callbacks.binop,
                   "cb": callbacks, "x0": c[0], "t1": c[1], "x2": c[2]}
            results.append(eval(expression, env))   # noqa: S307 - the test's own source
        else:
            results.append(F._Callbacks.binop(callbacks, list(c)))
        contexts.append(ctx)
    got, want = results
    assert type(got) is type(want) and got == want
    assert got.left is want.left and got.right is want.right
    assert contexts[0].errors == contexts[1].errors
    assert [v for _, v in contexts[0].folded.values()] == \
        [v for _, v in contexts[1].folded.values()]
    if text in ("a / 0", "a / (1.0 - 1.0)"):
        assert "division by zero" in contexts[0].errors[0][3]
    else:
        assert not contexts[0].errors


def _same_value(a, b) -> bool:
    """Equal, of the same type, and the same objects except lists (a list written out in a
    trace is built where the parser built its own)."""
    if type(a) is not type(b) or a != b:
        return False
    if type(a) is tuple:
        return all(_same_value(x, y) for x, y in zip(a, b))
    return type(a) is list or a is b


def test_inlined_replay_equals_the_grammar(monkeypatch):
    """A model whose lines go through inlined forms (modifications, call arguments,
    parentheses) replays them and reads as the LALR grammar reads it."""
    lines = [f"  Real x{i}(start = {i}.0, min = -1) = ({i} + y{i});" for i in range(8)]
    lines += [f"  Real y{i}(start = ({i}.5));" for i in range(8)]
    lines += [f"  Real z{i};" for i in range(8)]
    eqs = [f"  der(y{i}) = sin((x{i})) * max(z{i}, 2.0);" for i in range(8)]
    text = "model M\n" + "\n".join(lines) + "\nequation\n" + "\n".join(eqs) + "\nend M;\n"
    assert _replayed(text) >= 15
    model = _outcome(text, "fast", monkeypatch)
    assert len(model.equations) == 16           # (a model, not an error)
    assert model == _outcome(text, "lalr", monkeypatch)


def _fresh_parse(text: str) -> tuple[object, int, int]:
    """The model (or error) of ``text`` with the hand-written parser and a fresh lexer (no
    shape or trace from another test), the lines replayed from their match (`Line` tokens)
    and the `Line` tokens put back into tokens (`FastParser._expand`)."""
    counts = {"lines": 0, "expanded": 0}
    replay_lines, expand = FastParser._replay_lines, FastParser._expand

    def counted_replay(self, rule, ends):
        out = replay_lines(self, rule, ends)
        counts["lines"] += len(out)
        return out

    def counted_expand(self):
        counts["expanded"] += 1
        return expand(self)

    parser = F._parser()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(FastParser, "_replay_lines", counted_replay)
        patch.setattr(FastParser, "_expand", counted_expand)
        patch.setattr(parser, "lexer", type(parser.lexer)(parser.driver))
        return _outcome(text, "fast", patch), counts["lines"], counts["expanded"]


def _located(model) -> list:
    """The locations of the variables and equations (not part of `Model` equality)."""
    return [(v.name, v.loc) for v in model.variables] + \
        [(e.id, e.loc) for e in model.equations + model.initial_equations]


@pytest.mark.parametrize("batch", [40, 64, 200])
def test_line_tokens_across_token_batches(batch, monkeypatch):
    """Lines replayed from their match one after the other (`FastParser._replay_lines`) up to
    and across the end of the lexer's batch of tokens (a few lines here; a line is recorded
    only when the token after it is in the batch, so smaller batches replay fewer lines): the
    grammar's model and locations."""
    text = loop_chain_model(40)
    monkeypatch.setattr(FastParser, "BATCH", batch)
    model, lines, _ = _fresh_parse(text)
    assert lines > 0.8 * text.count(";")
    want = _outcome(text, "lalr", monkeypatch)
    assert model == want and _located(model) == _located(want)


def test_line_tokens_read_token_by_token(monkeypatch):
    """A line of a shape with a trace read where no trace runs: inside the recorded parse of an
    if-equation (whose branches hold lines of the shape of the equations before it), and in
    an algorithm section (the statement rule has no trace; `=` there is a syntax error): its
    tokens are put back (`FastParser._expand`), and model, locations and error are the
    grammar's. (Batches of a few lines, so that lines are lexed after their shape's trace is
    recorded.)"""
    monkeypatch.setattr(FastParser, "BATCH", 40)
    decls = _lines("  Real x{i};\n  Real y{i};\n  parameter Boolean b{i} = true;\n", 24)
    eqs = "".join(f"    y{i} = x{i} + 1.0;\n    x{i} = {i}.5;\n" for i in range(13, 25))
    body = _lines("  if b{i} then\n    y{i} = x{i} + 1.0;\n  else\n    y{i} = x{i} - 1.0;\n"
                  "  end if;\n    x{i} = {i}.5;\n", 12)
    text = f"model M\n{decls}equation\n{eqs}{body}end M;\n"
    model, lines, expanded = _fresh_parse(text)
    assert lines > 0 and expanded > 0
    want = _outcome(text, "lalr", monkeypatch)
    assert not isinstance(want, tuple)
    assert model == want and _located(model) == _located(want)
    bad = f"model M\n{decls}equation\n{eqs}algorithm\n    x3 = 4.5;\nend M;\n"
    error, lines, expanded = _fresh_parse(bad)
    assert lines > 0 and expanded > 0
    assert isinstance(error, tuple) and error == _outcome(bad, "lalr", monkeypatch)
    assert error[1] == "m.mo:100:8"          # the `=` of `x3 = 4.5;`


def test_eq_form_gives_the_callbacks_record():
    """`eq`'s form (the call of `eq_at` with the offsets of ``=`` and ``;``, read in a line
    trace from the match) gives `eq`'s record, the equation's start found after the last
    terminator (white space and comments skipped), and leaves no error; with a description
    (five children) there is no form."""
    from mdae_fmu.importers.parse_context import ParseContext
    form = F._Callbacks.inline_rules["eq"]
    assert form(["x0", "t1", "x2", "t3", "t4"]) is None
    expression = form(["x0", "t1", "x2", "t3"])
    text = "  a = 1;\n  b = a;   // note\n  /* c */ c = b;\n"
    records = []
    for inline in (True, False):
        callbacks = F._Callbacks()
        callbacks.ctx = ctx = ParseContext(filename="m.mo", text=text)
        ctx.term_ends = [text.index(";") + 1, text.index("a;") + 2, len(text) - 1]
        out = []
        for name, lhs_at in (("b", text.index("b =")), ("c", text.index("c ="))):
            eq_at, semi_at = text.index("=", lhs_at), text.index(";", lhs_at)
            c = [E.Ref(name), ("EQ", "=", eq_at), E.Ref("a"), ("SEMI", ";", semi_at)]
            if inline:
                env = {**F._Callbacks.inline_names, "cb": callbacks, "x0": c[0], "t1": c[1],
                       "x2": c[2], "t3": c[3]}
                out.append(eval(expression, env))   # noqa: S307 - the test's own source
            else:
                out.append(F._Callbacks.eq(callbacks, c))
        assert not ctx.errors
        records.append(out)
    assert records[0] == records[1]
    assert [r[3] for r in records[0]] == [text.index("b ="), text.index("c =")]


@pytest.mark.parametrize("func,args", [("der", [E.Ref("x")]), ("der", [E.Ref("x"), E.Ref("y")]),
                                       ("der", [E.BinOp("*", E.Ref("x"), E.Ref("y"))]),
                                       ("sin", [E.Ref("x")]), ("der", [])])
@pytest.mark.parametrize("written_out", [False, True])
def test_call_form_gives_the_callbacks_node(func, args, written_out):
    """`call`'s form (`der_of_ref` for ``der`` of a name's reference, else the call of
    `call`) gives `call`'s node, the same state names (``der_names``) and the same errors,
    the arguments' list a value of the trace or written out with one item."""
    from mdae_fmu.importers.parse_context import ParseContext
    form = F._Callbacks.inline_rules["call"]
    source = "[x3]" if written_out else "x2"
    expression = form(["t0", "t1", source])
    if written_out and len(args) != 1:
        return                          # (a list written out has as many items as arguments)
    assert expression is not None
    results = []
    for inline in (True, False):
        callbacks = F._Callbacks()
        callbacks.ctx = ctx = ParseContext(filename="m.mo", text=f"{func}(x)")
        c = [("NAME", func, 0), ("LPAR", "(", len(func)), list(args)]
        if inline:
            env = {**F._Callbacks.inline_names, "f_call": F._Callbacks.call, "cb": callbacks,
                   "t0": c[0], "t1": c[1], "x2": c[2], "x3": c[2][0] if args else None}
            node = eval(expression, env)        # noqa: S307 - the test's own source
        else:
            node = F._Callbacks.call(callbacks, c)
        results.append((node, set(ctx.der_names), list(ctx.errors)))
    assert results[0] == results[1]
    assert type(results[0][0]) is type(results[1][0])
    assert form(["t0", "t1"]) is None and form(["t0", "t1", "[x2, x3]"]) is None


def _run_from_text(text: str, batch: int, max_tokens: int, monkeypatch) -> tuple:
    """Parse ``text`` with the hand-written parser, a fresh lexer, token batches of ``batch``
    and at most ``max_tokens`` tokens: (the lines run straight from the text after a batch,
    `FastParser._run_lines`, the parser, the outcome: a value or the `Unsupported` raised)."""
    monkeypatch.setattr(FastParser, "BATCH", batch)
    run_lines = FastParser._run_lines
    count = [0]

    def counted(self, rule, ends, append):
        def add(value):
            count[0] += 1
            append(value)
        return run_lines(self, rule, ends, add)

    monkeypatch.setattr(FastParser, "_run_lines", counted)
    parser = F._parser()
    lexer = type(parser.lexer)(parser.driver)
    ctx = F.ParseContext("m.mo", text)
    parser.callbacks.ctx = ctx
    fast = FastParser(lexer, parser.callbacks, text, ctx.term_ends, max_tokens)
    try:
        outcome = fast.parse_start()
    except Unsupported as err:
        outcome = err
    finally:
        parser.callbacks.ctx = None
    return count[0], fast, outcome


def test_lines_after_a_batch_run_from_the_text(monkeypatch):
    """After a batch of tokens, the lines of shapes with a trace of the rule under way are
    matched and run straight from the text (`FastParser._run_lines`, no `Line` tokens) up to
    the first other line (a section keyword, a line of a new shape): most lines of a model,
    with the grammar's model and locations, and a duplicate declaration among those lines is
    the grammar's error at the same place."""
    text = loop_chain_model(40)
    lines = text.count(";")
    run, fast, value = _run_from_text(text, 64, 10 ** 9, monkeypatch)
    assert not isinstance(value, Exception)
    assert run > 0.8 * lines and fast.replayed > run
    model, _, _ = _fresh_parse(text)
    want = _outcome(text, "lalr", monkeypatch)
    assert not isinstance(want, tuple)
    assert model == want and _located(model) == _located(want)
    # a start value too large for a double on a line run from the text (the lines of a
    # shape differ only in their digits): the grammar's error, at the same place
    big = "9" * 400
    wrong = text.replace("Real chain.x[31](start = 3.1,", f"Real chain.x[31](start = {big}.1,")
    assert wrong != text
    run, _, _ = _run_from_text(wrong, 64, 10 ** 9, monkeypatch)
    assert run > 0.8 * lines
    got, _, _ = _fresh_parse(wrong)
    assert isinstance(got, tuple) and "too large for a double" in got[2]
    assert got[1] == f"m.mo:{wrong[:wrong.index(big)].count(chr(10)) + 1}:28"
    assert got == _outcome(wrong, "lalr", monkeypatch)


def test_token_limit_holds_for_lines_run_from_the_text(monkeypatch):
    """The token budget counts the lines run from the text as `_fill` counts them: past it
    the parse stops there (`Unsupported`, which hands the text to the LALR path that reports
    the limit), before the end of the text; with the exact count it reads the whole text."""
    text = loop_chain_model(40)
    _, fast, value = _run_from_text(text, 64, 10 ** 9, monkeypatch)
    assert not isinstance(value, Exception)
    used = fast.tokens_read
    for budget in (used, used + 1):
        _, fast, value = _run_from_text(text, 64, budget, monkeypatch)
        assert not isinstance(value, Exception) and fast.tokens_read == used
    run, fast, value = _run_from_text(text, 64, used // 2, monkeypatch)
    assert isinstance(value, Unsupported) and "too many tokens" in str(value)
    assert run > 0 and fast.lexed < len(text)
