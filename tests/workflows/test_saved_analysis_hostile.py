"""Hostile saved analyses through ``mdae-fmu export --from-json`` (issue 25, Deliver 1).

Each case takes the saved analysis of a reference model, edits it as an attacker or a careless
user would (the digest computed again, as anyone can), and runs the command line on it: exit
code 2, no traceback, no FMU, a message that starts with the file's name and says where (a
path of fields and indices from ``payload``) and what is wrong, and the same message from
`mdae_fmu.api.load_analysis` in this process. The code-execution payloads of the issue (a
string in a sympy Tuple, an ``ImmutableDenseMatrix``, ``srepr`` text, a foreign class) must
not create their marker file. Every case finishes within 30 s of CPU time (the child's user
and system time: wall time on a shared machine says more about the other jobs than about the
case). The command line's `main` runs every case in one child process (`_BATCH`); the
other tests of this file run ``python -m mdae_fmu.cli`` itself. The inputs are made here; no
stored blob."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mdae_fmu import api
from mdae_fmu.analysis import analyze
from mdae_fmu.diagnostics import EXIT_INPUT, InputError
from mdae_fmu.saved import FORMAT, digest, save

ROOT = Path(__file__).resolve().parents[2]
REF = ROOT / "reference_models"


@pytest.fixture(scope="module")
def clutch() -> dict:
    """The ``analyze --json`` output (its saved analysis only) of the ideal clutch: two modes,
    impulsive restarts, the one analysis with its guarded schedule."""
    model = api.load(REF / "ClutchBasic.mo")
    return {"saved_analysis": save(model, analyze(model))}


@pytest.fixture(scope="module")
def clutch_enumerated() -> dict:
    """The same, enumerated (``implicit=False``, ``analyze --list-modes``): the attacks on its
    automaton's restarts edit the sympy trees stored there."""
    model = api.load(REF / "ClutchBasic.mo")
    return {"saved_analysis": save(model, analyze(model, implicit=False))}


@pytest.fixture(scope="module")
def functions() -> dict:
    """The same for a pendulum whose constraint is a user function with a derivative."""
    sys.path.insert(0, str(ROOT / "tests" / "importers"))
    from test_functions import PENDULUM
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "P.mo"
        src.write_text(PENDULUM)
        model = api.load(src)
        return {"saved_analysis": save(model, analyze(model, implicit=False))}


# --- navigating the JSON ------------------------------------------------------------------------

def _objects(payload) -> dict[int, dict]:
    """Every numbered entry (``{"#": n, ...}``) of the payload, by number."""
    out, stack = {}, [payload]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            if "#" in v:
                out[v["#"]] = v
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return out


def at(doc: dict, *steps):
    """The JSON value at the path ``steps`` (field names and indices, as the messages print
    them) from ``payload``: objects' fields, tuples' and sets' items, references followed."""
    payload = doc["saved_analysis"]["payload"]
    objects = _objects(payload)
    v = payload[steps[0]]
    for s in steps[1:]:
        if isinstance(v, dict) and "@" in v:
            v = objects[v["@"]]
        if isinstance(v, dict) and "f" in v:
            v = v["f"]
        elif isinstance(v, dict):
            v = next(v[k] for k in ("$t", "$fs", "$s", "$d", "$e", "$sp") if k in v)
        v = v[s]
    if isinstance(v, dict) and "@" in v:
        v = objects[v["@"]]
    return v


def fields(doc: dict, *steps) -> dict:
    """The field values of the object at ``steps``."""
    return at(doc, *steps)["f"]


def resign(doc: dict) -> dict:
    sa = doc["saved_analysis"]
    sa["sha256"] = digest(sa["payload"])
    return doc


def first_sympy(doc: dict, *steps) -> dict:
    """The sympy entry (``{"#": n, "$sp": tree}``) at ``steps``."""
    v = at(doc, *steps)
    assert "$sp" in v, v
    return v


# --- the cases ----------------------------------------------------------------------------------

def code(marker: Path) -> str:
    return f"__import__('os').system('touch {marker}')"


def c_srepr_text(doc, marker):           # the attack on format 1: srepr text evaluated
    first_sympy(doc, "analysis", "automaton", "changes", 0, "restart", 1)["$sp"] = \
        f"Tuple({code(marker)!r})"
    return resign(doc)


def c_tuple_string(doc, marker):         # a string inside a sympy Tuple reached sympify
    e = first_sympy(doc, "analysis", "automaton", "changes", 0, "restart", 1)
    e["$sp"] = ["Equality", ["Symbol", "w1+", {"real": True}], ["Tuple", code(marker)]]
    return resign(doc)


def c_matrix(doc, marker):               # ImmutableDenseMatrix([[text]])
    e = first_sympy(doc, "analysis", "automaton", "changes", 0, "restart", 1)
    e["$sp"][2] = ["ImmutableDenseMatrix", [[code(marker)]]]
    return resign(doc)


def c_symbol_code(doc, marker):          # a symbol name is stored, never parsed
    e = first_sympy(doc, "analysis", "automaton", "changes", 0, "restart", 1)
    e["$sp"][2] = ["Symbol", code(marker), {}]
    return resign(doc)


def c_foreign_class(doc, marker):        # a class named by module: importlib is gone
    at(doc, "model", "variables", 0)["$o"] = "os:system"
    return resign(doc)


def c_eval_class(doc, marker):
    at(doc, "model", "variables", 0)["$o"] = "builtins.eval"
    return resign(doc)


def c_call_import(doc, marker):          # an expression tree calling __import__
    fields(doc, "model", "equations", 0)["residual"] = {
        "$e": ["call", "__import__", [["str", "os"]]]}
    return resign(doc)


def c_user_function_name(doc, marker):   # a call node naming a function of no table
    e = first_sympy(doc, "analysis", "automaton", "changes", 0, "restart", 1)
    e["fn"] = [{"@": 0}]
    e["$sp"][2] = ["call", 0, "system", 0, ["Symbol", "w1-", {"real": True}]]
    return resign(doc)


def c_big_power(doc, marker):            # Pow(Integer(3), Integer(3000000000)) hung export
    e = first_sympy(doc, "analysis", "automaton", "changes", 0, "restart", 1)
    e["$sp"][2] = ["Pow", 3, 3000000000]
    return resign(doc)


def c_big_power_symbol(doc, marker):
    e = first_sympy(doc, "analysis", "automaton", "changes", 0, "restart", 1)
    e["$sp"][2] = ["Pow", ["Symbol", "w1-", {"real": True}], 3000000000]
    return resign(doc)


def c_power_of_big_number(doc, marker):  # 10^300 to the 10th: 3000 digits
    e = first_sympy(doc, "analysis", "automaton", "changes", 0, "restart", 1)
    e["$sp"][2] = ["Pow", 10 ** 300, 10]
    return resign(doc)


def c_huge_integer(doc, marker):         # 10^400 does not fit a double
    fields(doc, "model", "variables", 0)["binding"] = {"$e": ["const", 7]}
    resign(doc)
    return json.dumps(doc).replace('["const", 7]', '["const", 1' + "0" * 400 + "]")


def c_infinite_float(doc, marker):
    fields(doc, "model", "variables", 0)["binding"] = {"$e": ["const", 7.5]}
    resign(doc)
    return json.dumps(doc).replace('["const", 7.5]', '["const", 1e400]')


def c_nan(doc, marker):
    fields(doc, "model", "variables", 0)["binding"] = {"$e": ["const", 7.5]}
    resign(doc)
    return json.dumps(doc).replace('["const", 7.5]', '["const", NaN]')


def c_float_precision(doc, marker):      # a Float of 10^9 bits
    e = first_sympy(doc, "analysis", "automaton", "changes", 0, "restart", 1)
    e["$sp"][2] = ["Float", 3, 0, 10 ** 9]
    return resign(doc)


def c_derivative_order(doc, marker):     # Derivative(f(x), (x, 10^6))
    e = first_sympy(doc, "analysis", "automaton", "changes", 0, "restart", 1)
    x = ["Symbol", "w1-", {"real": True}]
    e["$sp"][2] = ["Derivative", ["opaque", "edge", x], ["Tuple", x, 1000000]]
    return resign(doc)


def c_fraction_zero(doc, marker):        # Fraction(1, 0)
    order = fields(doc, "analysis", "automaton", "changes", 0, "instants", 0, "orders", 0, 1)
    order["lo"] = {"$q": [1, 0]}
    return resign(doc)


def c_rational_zero(doc, marker):        # sympy Rational(1, 0)
    e = first_sympy(doc, "analysis", "automaton", "changes", 0, "restart", 1)
    e["$sp"][2] = ["Rational", 1, 0]
    return resign(doc)


def c_not_canonical(doc, marker):        # Add(1, 2): sympy would compute it
    e = first_sympy(doc, "analysis", "automaton", "changes", 0, "restart", 1)
    e["$sp"][2] = ["Add", 1, 2]
    return resign(doc)


def c_unknown_module(doc, marker):
    at(doc, "model", "variables", 0)["$o"] = "mdae_fmu.evil:Payload"
    return resign(doc)


def c_unknown_class_near(doc, marker):
    at(doc, "model", "variables", 0)["$o"] = "ir.Variabel"
    return resign(doc)


def c_renamed_variable(doc, marker):     # the model's variable w1 renamed
    v = next(f for f in (x["f"] for x in at(doc, "model", "variables")["$t"])
             if f["name"] == "w1")
    v["name"] = "w1_renamed"
    return resign(doc)


def c_renamed_symbol(doc, marker):       # a restart formula reading an unknown name
    e = first_sympy(doc, "analysis", "automaton", "changes", 0, "restart", 1)
    e["$sp"][2] = ["Symbol", "nowhere-", {"real": True}]
    return resign(doc)


def c_edge_index(doc, marker):           # an automaton edge to configuration 99
    at(doc, "analysis", "automaton", "edges", 0)["$t"][2] = 99
    return resign(doc)


def c_guard_index(doc, marker):          # an equation guarded by guard 7 of 1
    eq = next(f for f in (x["f"] for x in at(doc, "analysis", "automaton", "system",
                                               "equations")["$t"]) if f["guard"]["$t"])
    eq["guard"]["$t"][0]["$t"][0] = 7
    return resign(doc)


def c_block_order(doc, marker):          # a block solving e5'' in a mode that solves e5'
    b = fields(doc, "analysis", "modes", "modes", 0, "blocks", 1)
    b["equations"]["$t"][0]["$t"][1] = 2
    return resign(doc)


def c_empty_block(doc, marker):          # a block of no equation (IndexError in codegen)
    fields(doc, "analysis", "modes", "modes", 0, "blocks", 0)["equations"]["$t"].clear()
    return resign(doc)


def c_add_of_a_tuple(doc, marker):       # Add(Tuple(1), x): sympy warns, then computes
    e = first_sympy(doc, "analysis", "automaton", "changes", 0, "restart", 1)
    e["$sp"][2] = ["Add", ["Tuple", 1], ["Symbol", "w1-", {"real": True}]]
    return resign(doc)


def c_instance_order(doc, marker):       # der(t, 10^9)
    fields(doc, "analysis", "modes", "modes", 0, "states", 0)["order"] = 10 ** 9
    return resign(doc)


def c_wrong_type(doc, marker):           # a line number "abc"
    fields(doc, "model", "variables", 0, "loc")["line"] = "abc"
    return resign(doc)


def c_wrong_literal(doc, marker):
    fields(doc, "model", "variables", 0)["variability"] = "sometimes"
    return resign(doc)


def c_missing_field(doc, marker):
    del fields(doc, "model", "variables", 0)["name"]
    return resign(doc)


def c_unknown_field(doc, marker):
    fields(doc, "model", "variables", 0)["nmae"] = "x"
    return resign(doc)


def c_cycle(doc, marker):                # the model refers to itself
    fields(doc, "model")["variables"]["$t"][0] = {"@": 0}
    return resign(doc)


def c_forward_reference(doc, marker):
    fields(doc, "model", "variables", 0)["loc"] = {"@": 99999}
    return resign(doc)


def c_deep_nesting(doc, marker):         # 200 000 nested lists: the parser's stack
    resign(doc)
    return json.dumps(doc).replace('"name": "ClutchBasic"',
                                   '"name": ' + "[" * 200_000 + "]" * 200_000, 1)


def c_nesting_in_a_field(doc, marker):   # read by the parser, refused at its first level
    resign(doc)
    return json.dumps(doc).replace('"name": "ClutchBasic"',
                                   '"name": ' + "[" * 1500 + "]" * 1500, 1)


def c_deep_report(doc, marker):          # 1200 lists in the implicit report: a long path
    fields(doc, "analysis")["implicit_json"]["$d"][0][1] = "@@deep@@"
    resign(doc)
    return json.dumps(doc).replace('"@@deep@@"', "[" * 1200 + "1" + "]" * 1200, 1)


def c_deep_expression(doc, marker):      # within the JSON nesting, beyond expressions'
    tree = ["ref", "w1"]
    for _ in range(500):
        tree = ["un", "-", tree]
    fields(doc, "model", "equations", 0)["residual"] = {"$e": tree}
    return resign(doc)


def c_long_string(doc, marker):
    fields(doc, "model", "variables", 0)["description"] = "x" * (2 << 20)
    return resign(doc)


def c_model_name(doc, marker):           # the analysis of another model
    fields(doc, "analysis")["model_name"] = "Other"
    return resign(doc)


def c_duplicate_equation(doc, marker):
    eqs = at(doc, "model", "equations")["$t"]
    eqs[1]["f"]["id"] = eqs[0]["f"]["id"]
    return resign(doc)


def c_call_arity(doc, marker):           # sin(x, y)
    fields(doc, "model", "equations", 0)["residual"] = {
        "$e": ["call", "sin", [["ref", "w1"], ["ref", "w2"]]]}
    return resign(doc)


def c_old_format(doc, marker):           # format 1 could run code: not read any more
    doc["saved_analysis"]["format"] = "mdae_fmu.saved-analysis/1"
    return doc


def c_digest(doc, marker):               # edited and not signed again
    fields(doc, "model", "variables", 0)["description"] = "edited"
    return doc


def c_not_utf8(doc, marker):
    return json.dumps(doc).encode("utf-8").replace(b'"ClutchBasic"', b'"Clutch\xff"', 1)


def c_function_body(doc, marker):        # a statement assigning an input of the function
    stmt = fields(doc, "model", "functions", 0, "body", 0)
    stmt["target"] = "x"
    return resign(doc)


def c_function_shared_statement(doc, marker):   # statements are never shared
    body = fields(doc, "model", "functions", 0)["body"]["$t"]
    body.append({"@": at(doc, "model", "functions", 0, "inputs", 0, "loc")["#"]})
    return resign(doc)


CASES = [
    # code execution
    ("srepr text", c_srepr_text, ["restart[1]", "expected a sympy node", "found the string"],
     "clutch_enumerated"),
    ("Tuple with a string", c_tuple_string, ["restart[1][2][1]", "found the string"],
     "clutch_enumerated"),
    ("ImmutableDenseMatrix", c_matrix, ["restart[1][2][0]",
                                        "unknown sympy node 'ImmutableDenseMatrix'"],
     "clutch_enumerated"),
    ("symbol named with code", c_symbol_code, ["restart[1]", "is not made of the names of "
                                               "the model"], "clutch_enumerated"),
    ("class os:system", c_foreign_class, ["payload.model.variables[0]: unknown class "
                                          "'os:system'"], "clutch"),
    ("class builtins.eval", c_eval_class, ["payload.model.variables[0]: unknown class "
                                           "'builtins.eval'"], "clutch"),
    ("call of __import__", c_call_import, ["payload.model.equations[0].residual: call of "
                                           "'__import__'"], "clutch"),
    ("user function of no table", c_user_function_name, ["restart[1].fn[0]: expected a "
                                                         "FunctionTable, found a reference to "
                                                         "a Model"], "clutch_enumerated"),
    # work
    ("Pow(3, 3000000000)", c_big_power, ["restart[1][2][2]: Pow exponent 3000000000 exceeds "
                                         "the limit 10000"], "clutch_enumerated"),
    ("x**3000000000", c_big_power_symbol, ["Pow exponent 3000000000 exceeds the limit 10000"],
     "clutch_enumerated"),
    ("(10^300)^10", c_power_of_big_number, ["restart[1][2]: Pow: a number of 997 bits to the "
                                            "power 10 exceeds the limit of 1024 bits"],
     "clutch_enumerated"),
    ("Float precision 10^9", c_float_precision, ["restart[1][2][3]: Float precision "
                                                 "1000000000 bits outside 1 .. 1000"],
     "clutch_enumerated"),
    ("Derivative order 10^6", c_derivative_order, ["restart[1][2][2]: Derivative order "
                                                   "1000000 outside 1 .. 100"],
     "clutch_enumerated"),
    ("deep JSON", c_deep_nesting, [":1:", "JSON nested deeper than 1000 levels"], "clutch"),
    ("1500 nested lists", c_nesting_in_a_field, ["payload.model.name: expected a string, "
                                                 "found a list of 1"], "clutch"),
    ("1200 lists in a report", c_deep_report, ["payload.analysis.implicit_json['format'][0]"
                                               "[0]", "...(3360 characters)...", "[0][0]: "
                                               "nested deeper than 1000 levels"], "clutch"),
    ("deep expression", c_deep_expression, ["payload.model.equations[0].residual",
                                            "expression nested deeper than 300 levels"],
     "clutch"),
    ("2 MiB string", c_long_string, ["payload.model.variables[0].description: string of "
                                     "2097152 characters exceeds the limit 1048576"],
     "clutch"),
    # numbers
    ("integer 10^400", c_huge_integer, ["payload.model.variables[0].binding[1]: integer of "
                                        "401 digits exceeds the limit of 1024 bits"], "clutch"),
    ("1e400", c_infinite_float, ["payload.model.variables[0].binding[1]: number 1e400 "
                                 "outside the range of a double"], "clutch"),
    ("NaN", c_nan, ["payload.model.variables[0].binding[1]: NaN is not a JSON number"],
     "clutch"),
    ("Fraction(1, 0)", c_fraction_zero, ["orders[0][1].lo: fraction 1/0: the denominator "
                                         "must be positive"], "clutch_enumerated"),
    ("Rational(1, 0)", c_rational_zero, ["restart[1][2]: Rational 1/0: the denominator must "
                                         "be above 1"], "clutch_enumerated"),
    ("Add(1, 2)", c_not_canonical, ["restart[1][2]: Add with several numbers (not in sympy's "
                                    "canonical form)"], "clutch_enumerated"),
    # classes and fields
    ("unknown module", c_unknown_module, ["unknown class 'mdae_fmu.evil:Payload'"], "clutch"),
    ("misspelt class", c_unknown_class_near, ["unknown class 'ir.Variabel' (did you mean "
                                              "ir.Variable?)"], "clutch"),
    ("line \"abc\"", c_wrong_type, ["payload.model.variables[0].loc.line: expected an "
                                    "integer, found the string 'abc'"], "clutch"),
    ("variability \"sometimes\"", c_wrong_literal, ["payload.model.variables[0].variability: "
                                                    "expected 'constant' or 'parameter'"],
     "clutch"),
    ("missing field", c_missing_field, ["payload.model.variables[0]: Variable: field name "
                                        "missing"], "clutch"),
    ("unknown field", c_unknown_field, ["payload.model.variables[0].nmae: Variable has no "
                                        "field 'nmae' (did you mean name?)"], "clutch"),
    ("reference cycle", c_cycle, ["payload.model.variables[0]: reference to object #0, which "
                                  "contains this reference (a cycle)"], "clutch"),
    ("forward reference", c_forward_reference, ["payload.model.variables[0].loc: reference "
                                                "99999 to an object not written before it"],
     "clutch"),
    # references between the objects
    ("renamed variable", c_renamed_variable, ["payload.model.equations[", "'w1' is not "
                                              "declared"], "clutch"),
    ("unknown symbol", c_renamed_symbol, ["restart[1]: the symbol 'nowhere-' is not made of "
                                          "the names of the model"], "clutch_enumerated"),
    ("edge to configuration 99", c_edge_index, ["payload.analysis.automaton.edges[0][2]: "
                                                "configuration 99 out of range"],
     "clutch_enumerated"),
    ("guard 7 of 1", c_guard_index, ["guard[0][0]: guard 7 out of range (there are 1)"],
     "clutch_enumerated"),
    ("block order", c_block_order, ["payload.analysis.modes.modes[0].blocks[1].equations[0]: "
                                    "('e3', 2) is not among the mode's solved equations"],
     "clutch_enumerated"),
    ("block of no equation", c_empty_block, ["payload.analysis.modes.modes[0].blocks[0]: a "
                                             "block of 0 equations and 1 unknowns"],
     "clutch_enumerated"),
    ("Add of a Tuple", c_add_of_a_tuple, ["restart[1][2][1]: Add of a Tuple (arithmetic takes "
                                          "expressions)"], "clutch_enumerated"),
    ("instance order 10^9", c_instance_order, ["payload.analysis.modes.modes[0].states[0][1]: "
                                               "derivative order 1000000000 outside 0 .. 100"],
     "clutch_enumerated"),
    ("analysis of another model", c_model_name, ["payload.analysis.model_name: the analysis "
                                                 "is of model 'Other'"], "clutch"),
    ("equation id twice", c_duplicate_equation, ["payload.model.equations[1].id: equation id "
                                                 "'e1' used twice"], "clutch"),
    ("sin(x, y)", c_call_arity, ["payload.model.equations[0].residual: sin() with 2 "
                                 "arguments"], "clutch"),
    ("function assigns an input", c_function_body, ["payload.model.functions[0].body[0]."
                                                    "target: assignment to 'x'"], "functions"),
    ("shared statement", c_function_shared_statement, ["payload.model.functions[0].body[1]: "
                                                       "expected an Assign or a TupleAssign",
                                                       "found a reference to a SourceLoc"],
     "functions"),
    # the file
    ("format 1", c_old_format, ["saved_analysis.format: mdae_fmu.saved-analysis/1 is an older "
                                "format"], "clutch"),
    ("digest", c_digest, ["the saved analysis was altered or truncated"], "clutch"),
    ("not UTF-8", c_not_utf8, ["cannot read: not UTF-8 text"], "clutch"),
]


def _cli(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "mdae_fmu.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_cases_are_many_and_distinct():
    assert len(CASES) >= 25
    assert len({c[0] for c in CASES}) == len(CASES)


def _write_case(directory: Path, edit, base_doc: dict) -> tuple[Path, Path]:
    """The hostile file of a case (``edit`` applied to a copy of ``base_doc``) and its marker
    path, in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    marker = directory / "marker"
    out = edit(copy.deepcopy(base_doc), marker)
    bad = directory / "bad.json"
    if isinstance(out, bytes):
        bad.write_bytes(out)
    else:
        bad.write_text(out if isinstance(out, str) else json.dumps(out), encoding="utf-8")
    return bad, marker


# One child process runs the command line's `main` on every case in turn (``export
# --from-json BAD -o OUT``), as ``mdae-fmu`` would, and reports per case the exit code, the
# text written to stderr (a traceback if anything escaped `main`) and the CPU it took: one
# Python start-up and import of the package (about 1 s of CPU) instead of one per case.
_BATCH = """
import contextlib, io, json, resource, sys, traceback
from mdae_fmu.cli import main
results = []
for bad, out in zip(sys.argv[1::2], sys.argv[2::2]):
    err = io.StringIO()
    t0 = resource.getrusage(resource.RUSAGE_SELF)
    with contextlib.redirect_stderr(err):
        try:
            code = main(["export", "--from-json", bad, "-o", out])
        except BaseException:
            traceback.print_exc()
            code = None
    t1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = t1.ru_utime - t0.ru_utime + t1.ru_stime - t0.ru_stime
    results.append({"code": code, "stderr": err.getvalue(), "cpu": cpu})
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def cli_refusals(request, tmp_path_factory) -> dict:
    """name -> (hostile file, marker, FMU path, the command line's answer) of every case of
    `CASES`, the command line run on all of them in one child process (`_BATCH`)."""
    root = tmp_path_factory.mktemp("hostile")
    cases = {}
    for k, (name, edit, _, base) in enumerate(CASES):
        bad, marker = _write_case(root / f"case{k}", edit, request.getfixturevalue(base))
        cases[name] = (bad, marker, bad.parent / "x.fmu")
    args = [str(p) for bad, _, fmu in cases.values() for p in (bad, fmu)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", _BATCH, *args], cwd=root, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    answers = json.loads(r.stdout.strip().splitlines()[-1])
    return {name: (*paths, answer) for (name, paths), answer in zip(cases.items(), answers)}


@pytest.mark.parametrize("name,edit,expected,base", CASES, ids=[c[0] for c in CASES])
def test_hostile_saved_analysis_is_refused(name, edit, expected, base, cli_refusals):
    bad, marker, fmu, answer = cli_refusals[name]
    with pytest.raises(InputError) as err:
        api.load_analysis(bad)
    stderr = answer["stderr"]
    assert answer["code"] == EXIT_INPUT, (answer["code"], stderr)
    assert "Traceback" not in stderr and "internal error" not in stderr
    assert stderr.startswith(f"{bad}:"), stderr
    for text in expected:
        assert text in stderr, (text, stderr)
    assert stderr.strip() == str(err.value)
    assert not fmu.exists()
    assert not marker.exists()
    assert answer["cpu"] < 30, answer["cpu"]


def test_a_string_field_holding_code_is_kept_as_text(clutch, tmp_path):
    """Code in a description is a description: the FMU is built, nothing runs."""
    doc = copy.deepcopy(clutch)
    marker = tmp_path / "marker"
    fields(doc, "model", "variables", 0)["description"] = code(marker)
    src = tmp_path / "ok.json"
    src.write_text(json.dumps(resign(doc)))
    r = _cli("export", "--from-json", str(src), "-o", "x.fmu", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert not marker.exists()
    import zipfile
    with zipfile.ZipFile(tmp_path / "x.fmu") as z:
        assert code(marker).replace("'", "&apos;") in z.read("modelDescription.xml").decode() \
            or code(marker) in z.read("modelDescription.xml").decode()


def test_unreadable_files_name_the_path(tmp_path):
    r = _cli("export", "--from-json", str(tmp_path), cwd=tmp_path)
    assert r.returncode == EXIT_INPUT
    assert r.stderr.startswith(f"{tmp_path}: cannot read: "), r.stderr
    r = _cli("export", "--from-json", "missing.json", cwd=tmp_path)
    assert r.returncode == EXIT_INPUT
    assert r.stderr.startswith("missing.json: cannot read: "), r.stderr
    assert "None" not in r.stderr


def test_format_string_is_the_new_one(clutch):
    assert clutch["saved_analysis"]["format"] == FORMAT == "mdae_fmu.saved-analysis/3"
