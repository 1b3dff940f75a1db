"""Fuzzing of what the tool reads, each kind of input (a *surface*) through the command that
reads it: mutated models through ``mdae-fmu analyze`` and ``export`` (``--surface model``,
issue 15, item 5; the short version is tests/workflows/test_export_fuzz.py), and (issue 25) saved
analyses through ``export --from-json`` (``saved``, `SavedAnalysisSurface`), FMU archives
through ``info`` and ``simulate`` (``fmu``, `FmuSurface`), reference CSVs through ``compare``
(``csv``, `CsvSurface`), suite files through ``regress`` (``suite``, `SuiteSurface`).
``--surface all`` runs them all. What follows describes the model
surface; each surface's class says what it mutates and what it counts as a failure.

Inputs: small seed models (one-mode, when-clauses with restarts, Integer and Boolean discrete
variables, guarded equations, parameter bindings, descriptions and units), mutated by
`mutate`: one to three edits, token edits (delete, duplicate, swap, truncate, random bytes, a
syntax token; about 30 %), and value edits aimed at the numeric checks (a number replaced by
an extreme literal, a parameter binding or a start value replaced by an expression without a
finite value, a control character in a description or unit, an experiment annotation with
odd values).

Each input runs through the command line's ``main`` in this process (its stdout and stderr
captured), analyze then export (Model Exchange), each under a time limit (`time_limit`:
CPU seconds of this process, and ten times as many seconds of wall time). Counted:

* tracebacks: exit code 3 (the command line's internal error) or any exception out of main;
* hangs: a run over the time limit;
* gcc failures: an export that fails in the C compiler (BuildError: "gcc failed",
  "linking");
* invalid FMUs: an exported FMU whose modelDescription.xml FMPy's schema validation refuses
  (e.g. ``start="inf"``), and export accepted although analyze rejected (or the reverse is
  fine: export only needs the per-mode stage);
* the exit codes of both commands, and the messages of the refusals (first line, without the
  file name), by frequency.

Usage: ``python benchmarks/fuzz_export.py [--surface model|saved|fmu|csv|suite|all|A,B] [--n 1000]
[--seed 1] [--timeout 120] [--json OUT]``. The acceptance of issue 15: 0 tracebacks, 0 hangs,
0 gcc failures for >= 1000 inputs; of issue 25: >= 2000 runs over the surfaces of untrusted
files, 0 tracebacks, 0 hangs, 0 wrong exit codes (README, "Hostile input").
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import csv
import io
import json
import math
import random
import re
import shutil
import signal
import stat
import sys
import tempfile
import time
import zipfile
from pathlib import Path

SEEDS = {
    "Decay.mo": '''class Decay "exponential decay"
  parameter Real k = 2.0 "rate";
  parameter Real x0 = 1.5;
  Real x(start = x0, fixed = true, unit = "m") "amount";
  output Real y;
equation
  der(x) = -k * x;
  y = 2 * x + 1;
  annotation(experiment(StartTime = 0, StopTime = 2, Tolerance = 1e-6, Interval = 0.01));
end Decay;
''',
    "Ball.mo": '''class Ball "bouncing ball"
  parameter Real g = 9.81 "gravity";
  parameter Real e = 0.7;
  Real h(start = 1.0, fixed = true) "height";
  Real v(start = 0.0, fixed = true);
  Integer n(start = 0, fixed = true) "bounces";
equation
  der(h) = v;
  der(v) = -g;
  when h <= 0.0 then
    reinit(v, -e * pre(v));
    n = pre(n) + 1;
  end when;
end Ball;
''',
    "Switch.mo": '''class Switch
  parameter Real a = 1.0;
  parameter Integer m = 3;
  parameter Real c = a * m / 2;
  Real x(start = 0.5, fixed = true);
  Boolean on(start = false, fixed = true);
  discrete Real level(start = 0.0, fixed = true);
equation
  der(x) = if on then -a * x else c - x;
  when x > 1.0 then
    on = true;
    level = pre(level) + 1;
  elsewhen x < 0.2 then
    on = false;
    level = pre(level);
  end when;
end Switch;
''',
    "Tank.mo": '''class Tank
  parameter Real A = 2.0 "area";
  parameter Real q = 0.3;
  parameter Real hmax = 1.0;
  Real h(start = 0.1, fixed = true);
  Real qout;
equation
  der(h) = (q - qout) / A;
  if h > hmax then
    qout = q + (h - hmax);
  else
    qout = 0.1 * sqrt(h * h + 1e-6);
  end if;
  assert(h < 10, "overflow");
end Tank;
''',
    "Osc.mo": '''class Osc "harmonic oscillator"
  parameter Real w = 2 * 3.14159;
  parameter Real d = 0.1;
  Real x(start = 1, fixed = true);
  Real v(start = 0, fixed = true);
  output Real E;
equation
  der(x) = v;
  der(v) = -w ^ 2 * x - 2 * d * w * v;
  E = 0.5 * v ^ 2 + 0.5 * w ^ 2 * x ^ 2;
end Osc;
''',
}

#: literals that a double or an FMI Integer cannot hold, and harmless ones
LITERALS = ["1e400", "1e-400", "1e308", "2147483647", "2147483648", "99999999999", "0", "0.0",
            "9" * 5000, "1" + "0" * 400, "4.9e-324", "1.7976931348623157e308", "007"]
#: expressions without a finite value, and harmless ones, for bindings and start values
EXPRESSIONS = ["1/0", "0.0/0.0", "sqrt(-1)", "log(0)", "10^100000", "2^1000000", "exp(1000)",
               "asin(2)", "(-8)^(1/3)", "0^(-1)", "mod(1, 0)", "div(7, 0)", "1e300*1e300",
               "2147483647 + 1", "-2147483648 - 1", "integer(1e300)", "k/0", "x0/(x0 - x0)",
               "log10(-1)", "sqrt(2)", "2^31", "1e200*1e200*0", "if 1 > 0 then 1 else 1/0",
               "max(1, 1e400)", "sin(1e308)", "tan(1e308)", "acos(-1.0000001)"]
TOKENS = ["(", ")", ";", "=", "end", "if", "when", "then", "else", "der", "'", '"', "/*", "<",
          "pre(", "initial", "equation", "parameter", "Integer", "reinit(", ",", "^", "/", "-"]
CONTROL = ["\\a", "\\b", "\\f", "\\v", "\u0001", "\u007f", "\ufffe"]

_TOKEN = re.compile(r"\s+|[A-Za-z_'][A-Za-z0-9_.'\[\],]*|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|"
                    r'"[^"]*"|.', re.S)
_NUMBER = re.compile(r"\d+(?:\.\d*)?(?:[eE][+-]?\d+)?")
_BINDING = re.compile(r"(parameter (?:Real|Integer) \w+(?:\([^)]*\))? = )([^;\"]+)")
_START = re.compile(r"(start = )([^,)]+)")
_STRING = re.compile(r'"([^"]*)"')


def mutate(rng: random.Random, text: str) -> str:
    """One to three random edits of ``text`` (module docstring)."""
    for _ in range(rng.choice((1, 1, 1, 1, 1, 1, 2, 2, 2, 3))):
        kind = rng.choice(["delete", "duplicate", "swap", "truncate", "bytes", "token",
                           "literal", "literal", "literal", "literal", "binding", "binding",
                           "binding", "binding", "start", "start", "start", "control",
                           "control", "experiment", "experiment"])
        if kind in ("delete", "duplicate", "swap", "truncate", "bytes", "token"):
            toks = _TOKEN.findall(text)
            if not toks:
                continue
            text = "".join(edit_tokens(rng, toks, kind))
        elif kind == "literal":
            spots = list(_NUMBER.finditer(text))
            if spots:
                m = rng.choice(spots)
                text = text[:m.start()] + rng.choice(LITERALS) + text[m.end():]
        elif kind in ("binding", "start"):
            spots = list((_BINDING if kind == "binding" else _START).finditer(text))
            if spots:
                m = rng.choice(spots)
                text = text[:m.start(2)] + rng.choice(EXPRESSIONS) + text[m.end(2):]
        elif kind == "control":
            spots = list(_STRING.finditer(text))
            if spots:
                m = rng.choice(spots)
                k = rng.randint(m.start(1), m.end(1))
                text = text[:k] + rng.choice(CONTROL) + text[k:]
        else:
            values = ["StopTime = 0", "StopTime = 1e400", "Tolerance = 2", "Interval = -1",
                      "StopTime = 2 * 3", "StartTime = 5", "StopTime = 1e-300"]
            text = re.sub(r"annotation\(experiment\([^;]*\)\);",
                          f"annotation(experiment({rng.choice(values)}));", text) \
                if "experiment" in text else text.replace(
                    "end ", f"  annotation(experiment({rng.choice(values)}));\nend ", 1)
    return text


def mutants(n: int, seed: int) -> list[tuple[str, str]]:
    """``n`` distinct mutated inputs ``(seed model name, text)``, reproducible from ``seed``."""
    rng = random.Random(seed)
    names = sorted(SEEDS)
    out, seen = [], set(SEEDS.values())
    while len(out) < n:
        name = names[len(out) % len(names)]
        text = mutate(rng, SEEDS[name])
        if text not in seen:
            seen.add(text)
            out.append((name, text))
    return out


class Hang(BaseException):
    """A run exceeded its time limit (raised by SIGPROF or SIGALRM; not an Exception, so the
    command line's catch-all does not take it)."""


def _on_alarm(signum, frame):
    raise Hang()


#: Wall time a run may take, in multiples of its CPU time limit: the machine is shared, and a
#: run waiting for a processor is not hanging.
WALL_FACTOR = 10


@contextlib.contextmanager
def time_limit(timeout: float):
    """`Hang` after ``timeout`` seconds of this process's CPU time (SIGPROF), or after
    `WALL_FACTOR` times as many seconds of wall time (SIGALRM)."""
    previous = {s: signal.signal(s, _on_alarm) for s in (signal.SIGPROF, signal.SIGALRM)}
    signal.setitimer(signal.ITIMER_PROF, timeout)
    signal.setitimer(signal.ITIMER_REAL, timeout * WALL_FACTOR)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        for s, h in previous.items():
            signal.signal(s, h)


def run_cli(args: list[str], timeout: float) -> tuple[int | str, str]:
    """``mdae-fmu ARGS`` in this process: (exit code, or "traceback"/"hang", stderr)."""
    from mdae_fmu.cli import main
    err = io.StringIO()
    try:
        with time_limit(timeout), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(err):
            code = main(args)
    except Hang:
        code = "hang"
    except BaseException as exc:      # noqa: BLE001 - counted, the point of the benchmark
        code = "traceback"
        err.write(f"{type(exc).__name__}: {exc}")
    return code, err.getvalue()


def _message(stderr: str) -> str:
    """The first line of a refusal without its location, numbers elided: a message class."""
    line = stderr.strip().splitlines()[0] if stderr.strip() else ""
    line = re.sub(r"^\S+:\d+:\d+: ", "", line)
    return re.sub(r"\d+(\.\d+)?(e[+-]?\d+)?", "N", line)[:100]


def check_fmu(path: Path) -> str | None:
    """None when FMPy reads and validates the FMU's model description, else the problem."""
    from fmpy import read_model_description
    try:
        read_model_description(str(path), validate=True)
    except Exception as exc:        # noqa: BLE001 - FMPy raises plain exceptions
        return str(exc)[:200]
    return None


def fuzz_one(name: str, text: str, workdir: Path, timeout: float) -> dict:
    """Analyze and export one input; returns its record (module docstring)."""
    src = workdir / name
    src.write_text(text, encoding="utf-8", errors="surrogatepass")
    fmu = workdir / "out.fmu"
    fmu.unlink(missing_ok=True)
    rec = {"seed": name}
    t0 = time.perf_counter()
    rec["analyze"], a_err = run_cli(["analyze", str(src)], timeout)
    rec["export"], e_err = run_cli(["export", str(src), "-o", str(fmu)], timeout)
    rec["seconds"] = round(time.perf_counter() - t0, 3)
    rec["gcc_failure"] = "gcc failed" in e_err or ("linking" in e_err and "failed" in e_err)
    rec["message"] = _message(e_err if rec["export"] != 0 else a_err)
    if rec["export"] in ("traceback", 3) or rec["analyze"] in ("traceback", 3):
        rec["traceback"] = (a_err + "\n" + e_err)[-2000:]
    if rec["export"] == 0:
        rec["invalid_fmu"] = check_fmu(fmu)
    return rec


def summarize(records: list[dict]) -> dict:
    def count(pred):
        return sum(1 for r in records if pred(r))
    return {
        "inputs": len(records),
        "runs": 2 * len(records),
        "tracebacks": count(lambda r: r["analyze"] in ("traceback", 3)
                            or r["export"] in ("traceback", 3)),
        "hangs": count(lambda r: "hang" in (r["analyze"], r["export"])),
        "gcc_failures": count(lambda r: r["gcc_failure"]),
        "invalid_fmus": count(lambda r: r.get("invalid_fmu")),
        "analyze_exit_codes": dict(collections.Counter(str(r["analyze"]) for r in records)),
        "export_exit_codes": dict(collections.Counter(str(r["export"]) for r in records)),
        "exported_fmus": count(lambda r: r["export"] == 0),
        "slowest_input_s": max((r["seconds"] for r in records), default=0.0),
        "total_s": round(sum(r["seconds"] for r in records), 1),
        "messages": dict(collections.Counter(r["message"] for r in records
                                             if r["message"]).most_common(25)),
    }


def model_failure(rec: dict) -> str | None:
    """Why a record of the model surface is a failure (module docstring), else None."""
    if rec.get("traceback"):
        return "traceback"
    if "hang" in (rec["analyze"], rec["export"]):
        return "hang"
    if rec["gcc_failure"]:
        return "gcc failure"
    if rec.get("invalid_fmu"):
        return "invalid FMU"
    return None


# --- the harness: surfaces ---------------------------------------------------------------------

class Surface:
    """One kind of input the tool reads. A surface makes ``n`` inputs from a seed
    (`inputs`: ``(label, data)`` pairs, reproducible), runs one through the command that
    reads it (`run`: a record, a dict with ``seconds``), says whether a record is a failure
    (`failure`: the reason, or None) and sums its records up (`summarize`). `main` runs the
    surfaces asked for, each for ``--n`` inputs, and exits 1 when any record is a failure."""
    name = ""

    def inputs(self, n: int, seed: int) -> list[tuple[str, object]]:
        raise NotImplementedError

    def run(self, label: str, data, workdir: Path, timeout: float) -> dict:
        raise NotImplementedError

    def failure(self, rec: dict) -> str | None:
        raise NotImplementedError

    def summarize(self, records: list[dict]) -> dict:
        raise NotImplementedError


class ModelSurface(Surface):
    """Mutated models through ``analyze`` and ``export`` (`mutate`, `fuzz_one`)."""
    name = "model"

    def inputs(self, n, seed):
        return mutants(n, seed)

    def run(self, label, data, workdir, timeout):
        return fuzz_one(label, data, workdir, timeout)

    def failure(self, rec):
        return model_failure(rec)

    def summarize(self, records):
        return summarize(records)


SURFACES: dict[str, type[Surface]] = {"model": ModelSurface}


def register(cls: type[Surface]) -> type[Surface]:
    """Class decorator: add a surface to `SURFACES` under its ``name``."""
    SURFACES[cls.name] = cls
    return cls


# --- saved analyses ----------------------------------------------------------------------------

#: The reference models whose saved analyses are mutated (one mode with restarts, multimode with
#: impulsive restarts, index reduction, a staircase of modes), and a model with user functions.
SAVED_SEEDS = ["BouncingBall", "ClutchBasic", "CupAndBallElastic", "Pendulum", "Stair"]
FUNCTION_SEED = '''function constraint "x^2 + y^2 - L^2, with its derivative given"
  input Real x;
  input Real y;
  input Real L;
  output Real c;
algorithm
  c := x * x + y * y - L * L;
  annotation(derivative(zeroDerivative = L) = constraintDer, Inline = false);
end constraint;

function constraintDer
  input Real x;
  input Real y;
  input Real L;
  input Real dx;
  input Real dy;
  output Real dc;
protected
  Real s;
algorithm
  s := 0;
  for i in 1:2 loop
    s := s + 1;
  end for;
  dc := 2 * x * dx + 2 * y * dy;
end constraintDer;

class P
  parameter Real L = 1;
  parameter Real g = 9.81;
  Real x(start = 1, fixed = true);
  Real y(start = 0);
  Real vx(start = 0, fixed = true);
  Real vy;
  Real lam;
equation
  der(x) = vx;
  der(y) = vy;
  der(vx) = -lam * x;
  der(vy) = -lam * y - g;
  0 = constraint(x, y, L);
end P;
'''
#: Text that runs code if anything evaluates it; MARKER is replaced by a path that must not
#: exist after the run.
CODE = ["__import__('os').system('touch MARKER')", "exec(\"open('MARKER', 'w')\")",
        "Symbol('x').__class__.__init__.__globals__['__builtins__']['open']('MARKER', 'w')"]
_MUTATIONS = ["swap", "swap", "delete field", "delete item", "retype", "retype", "nest",
              "deep expression", "huge", "huge", "rename", "rename", "reference", "class",
              "head", "inject", "inject", "duplicate", "power", "big integer", "tweak",
              "tweak"]


def saved_seeds() -> dict[str, dict]:
    """The ``saved_analysis`` value of each seed model, analysed in this process."""
    from mdae_fmu import api
    from mdae_fmu.analysis import analyze
    from mdae_fmu.saved import save
    root = Path(__file__).resolve().parent.parent / "reference_models"
    out = {}
    with tempfile.TemporaryDirectory(prefix="mdae_fuzz_seed_") as tmp:
        fn = Path(tmp) / "P.mo"
        fn.write_text(FUNCTION_SEED)
        for path in [root / f"{m}.mo" for m in SAVED_SEEDS] + [fn]:
            model = api.load(path)
            out[path.stem if path != fn else "Functions"] = save(model, analyze(model))
    return out


def _slots(j, path=""):
    """Every value of the JSON tree ``j`` as ``(container, key, value, path)``."""
    stack = [(j, path)]
    while stack:
        v, p = stack.pop()
        items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) \
            else ()
        for k, x in items:
            q = f"{p}.{k}" if isinstance(v, dict) else f"{p}[{k}]"
            yield v, k, x, q
            if isinstance(x, (dict, list)):
                stack.append((x, q))


def mutate_saved(rng: random.Random, sa: dict, marker: str) -> tuple[str, str, bool]:
    """One random edit of the ``saved_analysis`` value ``sa`` (a copy is edited), the digest
    computed again: ``(file text, description, must_fail)``; ``must_fail`` when no valid file
    can result (a missing field, a value of another JSON type, a number beyond the limits).
    Numbers and nestings json.dumps cannot write go in as raw text (`_dump`)."""
    from mdae_fmu.saved import digest
    sa = json.loads(json.dumps(sa))
    raws: list[str] = []

    def raw(text: str) -> str:
        raws.append(text)
        return f"@@RAW{len(raws) - 1}@@"

    payload = sa["payload"]
    slots = list(_slots(payload, "payload"))
    leaves = [s for s in slots if not isinstance(s[2], (dict, list))]
    kind = rng.choice(_MUTATIONS)
    must_fail = False
    what = kind
    if kind == "swap":
        a = rng.choice(leaves)
        same = [s for s in leaves if type(s[2]) is type(a[2]) and s[2] != a[2]]
        if same:
            b = rng.choice(same)
            a[0][a[1]], b[0][b[1]] = b[2], a[2]
            what = f"swap {a[3]} <-> {b[3]}"
    elif kind == "delete field":
        fields = [s for s in slots if s[1] == "f" and isinstance(s[2], dict) and s[2]]
        c, k, f, p = rng.choice(fields)
        name = rng.choice(list(f))
        del f[name]
        what, must_fail = f"delete {p}.{name}", True
    elif kind in ("delete item", "duplicate"):
        lists = [s for s in slots if isinstance(s[2], list) and s[2]]
        c, k, lst, p = rng.choice(lists)
        i = rng.randrange(len(lst))
        if kind == "duplicate":
            lst.insert(i, json.loads(json.dumps(lst[i])))
        else:
            del lst[i]
        what = f"{kind} {p}[{i}]"
    elif kind == "retype":
        c, k, v, p = rng.choice(leaves)
        options = ["text", [], {"k": 1}] if not isinstance(v, str) else [7, [], {"k": 1}]
        c[k] = rng.choice(options)
        # null is the value of an optional field, which may hold a string
        what, must_fail = f"retype {p}: {v!r} -> {c[k]!r}", v is not None or c[k] != "text"
    elif kind == "nest":
        c, k, v, p = rng.choice(slots)
        levels = rng.choice([3, 1200, 200_000])
        c[k] = raw("[" * levels + json.dumps(v) + "]" * levels)
        what, must_fail = f"nest {p} in {levels} lists", True
    elif kind == "deep expression":
        exprs = [s for s in slots if isinstance(s[2], dict) and "$e" in s[2]]
        c, k, v, p = rng.choice(exprs)
        levels = rng.choice([100, 200, 400, 2000])
        v["$e"] = raw('["un", "-", ' * levels + json.dumps(v["$e"]) + "]" * levels)
        what, must_fail = f"deep expression {p} ({levels} levels)", levels > 300
    elif kind in ("huge", "big integer"):
        nums = [s for s in leaves if type(s[2]) in (int, float)]
        c, k, v, p = rng.choice(nums)
        new = rng.choice(["10" + "0" * 400, "3000000000", str(-2 ** 70), "1e400", "1e308",
                          "9" * 5000, "2" + "0" * 300, "-1", "0"]) if kind == "huge" \
            else rng.choice(["1" + "0" * 300, str(2 ** 1023 + 1), str(-(2 ** 1023)), "0"])
        c[k] = raw(new)
        what = f"number {p}: {v!r} -> {new[:20]}{'...' if len(new) > 20 else ''}"
        must_fail = new in ("10" + "0" * 400, "1e400", "9" * 5000)
    elif kind == "tweak":
        ints = [s for s in leaves if type(s[2]) is int and s[1] not in ("#", "@")]
        c, k, v, p = rng.choice(ints)
        c[k] = rng.choice([v + 1, v - 1, -1, 0, 2, 7, 1000, 2 ** 40])
        what = f"number {p}: {v} -> {c[k]}"
    elif kind == "rename":
        c, k, v, p = rng.choice([s for s in leaves if isinstance(s[2], str)])
        strings = [s[2] for s in leaves if isinstance(s[2], str) and s[2] != v]
        c[k] = rng.choice(strings + ["renamed", "", "x" * 70000])
        what = f"rename {p}: {v!r} -> {c[k][:30]!r}"
    elif kind == "reference":
        refs = [s for s in slots if isinstance(s[2], dict) and "@" in s[2]]
        if refs:
            c, k, v, p = rng.choice(refs)
            top = max(s[2]["#"] for s in slots if isinstance(s[2], dict) and "#" in s[2])
            v["@"] = rng.choice([-1, 0, v["@"] + 1, v["@"] - 1, top + 5, rng.randrange(top)])
            what = f"reference {p}: -> {v['@']}"
    elif kind == "class":
        objs = [s for s in slots if isinstance(s[2], dict) and "$o" in s[2]]
        c, k, v, p = rng.choice(objs)
        names = sorted({s[2]["$o"] for s in objs} - {v["$o"]}) + ["os:system", "builtins.eval"]
        old, v["$o"] = v["$o"], rng.choice(names)
        what, must_fail = f"class {p}: {old} -> {v['$o']}", True
    elif kind == "head":
        heads = [s for s in slots if isinstance(s[2], list) and s[2] and isinstance(s[2][0], str)
                 and s[2][0] in _SYMPY_HEADS]
        if heads:
            c, k, v, p = rng.choice(heads)
            old, v[0] = v[0], rng.choice(sorted(_SYMPY_HEADS) + ["ImmutableDenseMatrix",
                                                                  "Lambda", "eval"])
            what = f"sympy head {p}: {old} -> {v[0]}"
    elif kind == "inject":
        code = rng.choice(CODE).replace("MARKER", marker)
        spots = [s for s in slots if isinstance(s[2], dict) and "$sp" in s[2]]
        where = rng.choice(["string", "sympy", "tuple"])
        if where == "string" or not spots:
            c, k, v, p = rng.choice([s for s in leaves if isinstance(s[2], str)])
            c[k] = code
            what = f"inject code in the string {p}"
        else:
            c, k, v, p = rng.choice(spots)
            v["$sp"] = code if where == "sympy" else ["Tuple", code] if rng.random() < 0.5 \
                else ["Symbol", code, {}]
            what = f"inject code in the sympy expression {p} ({where})"
            must_fail = where == "sympy" or v["$sp"][0] == "Tuple"
    elif kind == "power":
        spots = [s for s in slots if isinstance(s[2], dict) and "$sp" in s[2]]
        c, k, v, p = rng.choice(spots)
        ex = rng.choice([3000000000, 10001, 2, -10 ** 6])
        base = rng.choice([v["$sp"], 3, ["Rational", 1, 3], 10 ** 300])
        v["$sp"] = ["Pow", base, ex]
        what = f"power {p}: exponent {ex}"
        must_fail = abs(ex) > 10_000 or not isinstance(base, list) and ex != 2
    try:            # Python's json cannot read back every raw text: the digest stays stale
        sa["sha256"] = digest(json.loads(_dump(sa, raws))["saved_analysis"]["payload"])
    except (ValueError, RecursionError):
        pass
    return _dump(sa, raws), what, must_fail


_SYMPY_HEADS = {"Add", "Mul", "Pow", "Symbol", "Rational", "Float", "Equality", "sin", "cos",
                "Piecewise", "ExprCondPair", "Max", "Min", "Abs", "Derivative", "Tuple", "call",
                "opaque"}


def _dump(value: dict, raws: list[str]) -> str:
    """JSON text of a saved analysis file, the raw texts of `mutate_saved` put in place."""
    text = json.dumps({"saved_analysis": value})
    return re.sub(r'"@@RAW(\d+)@@"', lambda m: raws[int(m.group(1))], text)


@register
class SavedAnalysisSurface(Surface):
    """Mutated saved analyses of the reference models through ``export --from-json``
    (`mutate_saved`). Each run first reads the file with `mdae_fmu.saved.load_file`, then
    runs the command. A failure: a traceback (exit 3 or an exception), a hang, a file
    refused by the reader but not with exit 2 and a message starting with the file's name,
    a file read although ``must_fail``, exit 1 unless the analysis read is a rejection,
    any other exit code, and the marker file of a code-execution payload existing after
    the run."""
    name = "saved"

    def inputs(self, n, seed):
        rng = random.Random(seed)
        seeds = saved_seeds()
        names = sorted(seeds)
        marker = str(Path(tempfile.gettempdir()) / f"mdae_fuzz_marker_{seed}")
        out = []
        for k in range(n):
            name = names[k % len(names)]
            text, what, must_fail = mutate_saved(rng, seeds[name], marker)
            out.append((f"{name}: {what}", (text, must_fail, marker)))
        return out

    def run(self, label, data, workdir, timeout):
        text, must_fail, marker = data
        src = workdir / "saved.json"
        src.write_text(text, encoding="utf-8")
        fmu = workdir / "out.fmu"
        fmu.unlink(missing_ok=True)
        Path(marker).unlink(missing_ok=True)
        rec: dict = {"input": label, "must_fail": must_fail, "path": str(src)}
        t0 = time.perf_counter()
        rec["read"], rec["accepted"] = _read_saved(src, timeout)
        code, err = run_cli(["export", "--from-json", str(src), "-o", str(fmu)], timeout)
        rec["seconds"] = round(time.perf_counter() - t0, 3)
        rec["export"] = code
        rec["stderr"] = err[-1500:]
        rec["named"] = err.startswith(str(src) + ":")
        rec["message"] = _message(err.replace(str(src), "FILE"))
        rec["marker"] = Path(marker).exists()
        Path(marker).unlink(missing_ok=True)
        return rec

    def failure(self, rec):
        code, read = rec["export"], rec["read"]
        if rec["marker"]:
            return "code ran (the marker file exists)"
        if code in ("traceback", 3) or read == "traceback":
            return "traceback"
        if "hang" in (code, read):
            return "hang"
        if read != "ok":
            if code != 2:
                return f"refused by the reader but exit {code}"
            if not rec["named"]:
                return "refusal without the file's name"
            return None
        if rec["must_fail"]:
            return "an invalid file was read"
        if code == 1 and rec["accepted"]:
            return "exit 1 for an analysis that accepts the model"
        if code not in (0, 1):
            return f"exit {code} after the file was read"
        return None

    def summarize(self, records):
        def count(pred):
            return sum(1 for r in records if pred(r))
        fails = collections.Counter(self.failure(r) for r in records if self.failure(r))
        return {
            "runs": len(records),
            "failures": sum(fails.values()),
            "failure_kinds": dict(fails),
            "tracebacks": fails.get("traceback", 0),
            "hangs": fails.get("hang", 0),
            "wrong_exit_codes": sum(v for k, v in fails.items()
                                    if k not in ("traceback", "hang")),
            "code_executed": fails.get("code ran (the marker file exists)", 0),
            "refused": count(lambda r: r["read"] != "ok"),
            "must_fail": count(lambda r: r["must_fail"]),
            "exit_codes": dict(collections.Counter(str(r["export"]) for r in records)),
            "exported_fmus": count(lambda r: r["export"] == 0),
            "slowest_run_s": max((r["seconds"] for r in records), default=0.0),
            "total_s": round(sum(r["seconds"] for r in records), 1),
            "messages": dict(collections.Counter(r["message"] for r in records
                                                 if r["message"]).most_common(25)),
        }


def _read_saved(path: Path, timeout: float) -> tuple[str, bool | None]:
    """``mdae_fmu.saved.load_file(path)`` in this process: ("ok", whether the analysis
    accepts the model), ("refused", None), ("traceback", None) or ("hang", None)."""
    from mdae_fmu.saved import SavedAnalysisError, load_file
    try:
        with time_limit(timeout):
            _, analysis = load_file(path)
        return "ok", bool(analysis.accepted)
    except SavedAnalysisError:
        return "refused", None
    except Hang:
        return "hang", None
    except BaseException:      # noqa: BLE001 - counted, the point of the benchmark
        return "traceback", None


# --- FMUs --------------------------------------------------------------------------------------

#: The seed models exported as the FMU surface's seeds, with the interfaces exported.
FMU_SEEDS = {"Decay": "me", "Ball": "both"}
#: ``simulate --timeout`` of the FMU and CSV surfaces (wall seconds): a mutated FMU that loops
#: or integrates for ever must end as a failed simulation (exit 1) within it.
SIM_TIMEOUT = 5.0
#: Values put in an attribute of modelDescription.xml (`mutate_fmu`).
ATTRIBUTE_VALUES = ["", "-1", "0", "4294967296", "99999999999999999999", "1e400", "-1e400",
                    "nan", "inf", "abc", "1e-300", "\u0001", "&amp;", "x" * 5000, "2.5",
                    "true", "local", "parameter", "continuous", "{00000000-0000}"]
#: DOCTYPEs an FMI model description never needs: entity expansion, an external entity.
DOCTYPES = ['<!DOCTYPE fmiModelDescription [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;'
            '&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>',
            '<!DOCTYPE fmiModelDescription [<!ENTITY x SYSTEM "file:///etc/passwd">]>']
_XML_TOKEN = re.compile(r'\s+|<[/!?]?[\w:]*|/?>|"[^"]*"|=|[^\s<>="]+', re.S)
_XML_ATTRIBUTE = re.compile(r'(\w+)="([^"]*)"')
_FMU_MUTATIONS = ["xml token", "xml token", "xml token", "xml attribute", "xml attribute",
                  "xml attribute", "xml attribute", "xml element", "xml element", "doctype",
                  "no description", "binary bytes", "binary bytes", "binary garbage",
                  "no binary", "archive bytes", "archive bytes", "bomb", "traversal", "symlink",
                  "many files", "experiment"]


def fmu_seeds(workdir: Path) -> dict[str, bytes]:
    """The archives of `FMU_SEEDS`, exported by the command line from `SEEDS`."""
    out = {}
    for name, kind in FMU_SEEDS.items():
        src = workdir / f"{name}.mo"
        src.write_text(SEEDS[f"{name}.mo"])
        fmu = workdir / f"{name}.fmu"
        code, err = run_cli(["export", str(src), "-o", str(fmu), "--fmi-type", kind], 600)
        if code != 0:
            raise RuntimeError(f"cannot export the seed {name}: {err}")
        out[name] = fmu.read_bytes()
    return out


def _entries(archive: bytes) -> list[tuple[zipfile.ZipInfo, bytes]]:
    with zipfile.ZipFile(io.BytesIO(archive)) as zf:
        return [(info, zf.read(info)) for info in zf.infolist()]


def _zip(entries: list[tuple[zipfile.ZipInfo, bytes]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, blob in entries:
            zf.writestr(info, blob)
    return buf.getvalue()


def _bomb(entries: list[tuple[zipfile.ZipInfo, bytes]]) -> bytes:
    """The archive of ``entries`` plus 64 MiB of zeros deflated (a ratio of 1000), written in
    chunks: the harness never holds them."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, blob in entries:
            zf.writestr(info, blob)
        info = zipfile.ZipInfo("resources/zeros.bin")
        info.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(info, "w", force_zip64=True) as fh:
            block = bytes(1 << 20)
            for _ in range(64):
                fh.write(block)
    return buf.getvalue()


def _flip(rng: random.Random, blob: bytes, count: int) -> bytes:
    data = bytearray(blob)
    for _ in range(count):
        data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


def edit_tokens(rng: random.Random, toks: list[str], kind: str) -> list[str]:
    """One edit of the token list ``toks`` (in place, returned) at a random token: "delete",
    "duplicate", "swap" (with another random token), "truncate" (from it or from the middle),
    "bytes" (three random characters inserted), "token" (replaced by one of `TOKENS`)."""
    i = rng.randrange(len(toks))
    if kind == "delete":
        del toks[i]
    elif kind == "duplicate":
        toks.insert(i, toks[i])
    elif kind == "swap":
        j = rng.randrange(len(toks))
        toks[i], toks[j] = toks[j], toks[i]
    elif kind == "truncate":
        del toks[max(i, len(toks) // 2):]
    elif kind == "bytes":
        toks.insert(i, "".join(chr(rng.randrange(1, 0x2FF)) for _ in range(3)))
    else:
        toks[i] = rng.choice(TOKENS)
    return toks


#: The token edits of the FMU and CSV surfaces (`edit_tokens`).
TOKEN_EDITS = ("delete", "duplicate", "swap", "truncate", "bytes")


def mutate_fmu(rng: random.Random, archive: bytes, escape: str) -> tuple[bytes, str, str]:
    """One random edit of an FMU archive: ``(archive, description, expected)``, ``expected``
    "refused" when the archive must be refused on reading (exit 2 for info and simulate: a
    DOCTYPE, no model description, a zip bomb, an entry outside the folder, a link, too many
    entries), "fails" when it may be read but cannot be simulated (no binary, or garbage in its
    place: exit 1 or 2), else "any". ``escape`` is the path a traversal entry aims at."""
    entries = _entries(archive)
    names = [i.filename for i, _ in entries]
    md = names.index("modelDescription.xml")
    binaries = [k for k, n in enumerate(names) if n.endswith(".so")]
    kind = rng.choice(_FMU_MUTATIONS)
    expected, what = "any", kind
    if kind in ("xml token", "xml attribute", "xml element", "doctype", "experiment"):
        xml = entries[md][1].decode("utf-8")
        if kind == "xml token":
            xml = "".join(edit_tokens(rng, _XML_TOKEN.findall(xml), rng.choice(TOKEN_EDITS)))
        elif kind == "xml attribute":
            m = rng.choice(list(_XML_ATTRIBUTE.finditer(xml)))
            value = rng.choice(ATTRIBUTE_VALUES)
            xml = xml[:m.start(2)] + value + xml[m.end(2):]
            what = f"attribute {m.group(1)}={value[:20]!r}"
        elif kind == "xml element":
            lines = xml.splitlines(keepends=True)
            k = rng.randrange(2, len(lines))
            if rng.random() < 0.5:
                del lines[k]
                what = f"delete line {k}"
            else:
                lines.insert(k, lines[k])
                what = f"duplicate line {k}"
            xml = "".join(lines)
        elif kind == "doctype":
            head, sep, tail = xml.partition("?>")
            xml = head + sep + rng.choice(DOCTYPES) + tail.replace(
                'description="', 'description="&c;&x;', 1)
            expected = "refused"
        else:
            values = ['stopTime="1e300"', 'stepSize="1e-300"', 'startTime="5" stopTime="1"',
                      'stopTime="nan"', 'tolerance="-1"', 'stopTime="1e-300"']
            value = rng.choice(values)
            if "<DefaultExperiment" in xml:
                xml = re.sub(r"<DefaultExperiment[^>]*/>", f"<DefaultExperiment {value}/>", xml)
            else:
                xml = xml.replace("<ModelVariables>",
                                  f"<DefaultExperiment {value}/>\n  <ModelVariables>", 1)
            what = f"experiment {value}"
        entries[md] = (entries[md][0], xml.encode("utf-8", "surrogatepass"))
    elif kind == "no description":
        del entries[md]
        expected = "refused"
    elif kind in ("binary bytes", "binary garbage", "no binary"):
        k = rng.choice(binaries)
        info, blob = entries[k]
        if kind == "binary bytes":
            count = rng.choice([1, 4, 32, 256])
            entries[k] = (info, _flip(rng, blob, count))
            what = f"{count} bytes of {info.filename}"
        elif kind == "binary garbage":
            entries[k] = (info, rng.choice([blob[:len(blob) // 2], rng.randbytes(4096), b""]))
            expected = "fails"
        else:
            del entries[k]
            expected = "fails"
    elif kind == "archive bytes":
        data = _zip(entries)
        if rng.random() < 0.5:
            cut = rng.randrange(len(data))
            return data[:cut], f"truncated at {cut} of {len(data)} bytes", "any"
        count = rng.choice([1, 8, 64])
        return _flip(rng, data, count), f"{count} bytes of the archive", "any"
    elif kind == "bomb":
        return _bomb(entries), "64 MiB of zeros in 64 KiB", "refused"
    elif kind == "traversal":
        name = rng.choice(["../" * 12 + escape.lstrip("/"), escape, "resources/../../x"])
        entries.append((zipfile.ZipInfo(name), b"escaped"))
        what, expected = f"entry {name}", "refused"
    elif kind == "symlink":
        info = zipfile.ZipInfo("resources/link")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        entries.append((info, rng.choice([b"/etc/passwd", b"../../../../" + escape.encode()])))
        expected = "refused"
    else:
        entries += [(zipfile.ZipInfo(f"resources/f{k}"), b"") for k in range(10_001)]
        expected = "refused"
    return _zip(entries), what, expected


@register
class FmuSurface(Surface):
    """Mutated FMU archives (`mutate_fmu`) of exported seed models through ``info`` and
    ``simulate --timeout`` (Model Exchange or, for an FMU that has it, Co-Simulation). A
    failure: a traceback (exit 3, an exception, or a Python traceback printed), a hang (beyond
    the harness's time limit), info's exit code not 0 or 2, simulate's not 0, 1 or 2, a
    non-zero exit whose message does not name the FMU, an archive that must be refused but
    is not (exit 2 both), one without a usable binary simulated with exit 0, simulate
    running an FMU that info refused, a temporary folder left behind, a file written
    outside the extraction folder."""
    name = "fmu"

    def inputs(self, n, seed):
        rng = random.Random(seed)
        escape = str(Path(tempfile.gettempdir()) / f"mdae_fuzz_escape_{seed}")
        with tempfile.TemporaryDirectory(prefix="mdae_fuzz_seed_") as tmp:
            seeds = fmu_seeds(Path(tmp))
        names = sorted(seeds)
        out = []
        for k in range(n):
            name = names[k % len(names)]
            data, what, expected = mutate_fmu(rng, seeds[name], escape)
            cs = FMU_SEEDS[name] == "both" and rng.random() < 0.5
            out.append((f"{name}: {what}", (data, expected, cs, escape)))
        return out

    def run(self, label, data, workdir, timeout):
        archive, expected, cs, escape = data
        fmu = workdir / "mutated.fmu"
        fmu.write_bytes(archive)
        temp = workdir / "tmp"
        temp.mkdir(exist_ok=True)
        rec: dict = {"input": label, "expected": expected, "path": str(fmu),
                     "fmi_type": "CoSimulation" if cs else "ModelExchange"}
        t0 = time.perf_counter()
        saved, tempfile.tempdir = tempfile.tempdir, str(temp)
        try:
            rec["info"], info_err = run_cli(["info", str(fmu)], timeout)
            rec["simulate"], sim_err = run_cli(
                ["simulate", str(fmu), "--timeout", str(SIM_TIMEOUT), "--fmi-type",
                 rec["fmi_type"], "--output-file", str(workdir / "out.csv")], timeout)
        finally:
            tempfile.tempdir = saved
        rec["seconds"] = round(time.perf_counter() - t0, 3)
        rec["stderr"] = (info_err[-700:] + "\n---\n" + sim_err[-700:])
        rec["info_named"] = rec["info"] == 0 or str(fmu) in info_err
        rec["simulate_named"] = rec["simulate"] == 0 or str(fmu) in sim_err
        rec["python_traceback"] = "Traceback (most recent call last)" in info_err + sim_err
        rec["message"] = _message((sim_err or info_err).replace(str(fmu), "FMU"))
        rec["left"] = sorted(p.name for p in temp.iterdir())
        for p in temp.iterdir():
            shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink()
        rec["escaped"] = Path(escape).exists() or (workdir.parent / "x").exists()
        Path(escape).unlink(missing_ok=True)
        return rec

    def failure(self, rec):
        info, sim = rec["info"], rec["simulate"]
        if "traceback" in (info, sim) or 3 in (info, sim) or rec["python_traceback"]:
            return "traceback"
        if "hang" in (info, sim):
            return "hang"
        if rec["escaped"]:
            return "a file was written outside the extraction folder"
        if rec["left"]:
            return "temporary folder left behind"
        if info not in (0, 2) or sim not in (0, 1, 2):
            return f"exit codes info {info}, simulate {sim}"
        if not rec["info_named"] or not rec["simulate_named"]:
            return "an error message that does not name the FMU"
        if rec["expected"] == "refused" and (info, sim) != (2, 2):
            return f"a hostile archive read (info {info}, simulate {sim})"
        if rec["expected"] == "fails" and sim == 0:
            return "an FMU without a usable binary simulated"
        if info == 2 and sim == 0:
            return "simulate ran an FMU that info refused"
        return None

    def summarize(self, records):
        return _summary(self, records, {
            "info_exit_codes": dict(collections.Counter(str(r["info"]) for r in records)),
            "simulate_exit_codes": dict(collections.Counter(str(r["simulate"])
                                                            for r in records)),
            "expected": dict(collections.Counter(r["expected"] for r in records))},
            runs_per_input=2)


def _summary(surface: Surface, records: list[dict], extra: dict, runs_per_input: int) -> dict:
    """The counts of a surface's records: runs, failures by kind, tracebacks, hangs, wrong
    exit codes (every other failure), ``extra``, time, the most frequent messages."""
    fails = collections.Counter(surface.failure(r) for r in records if surface.failure(r))
    return {
        "inputs": len(records),
        "runs": sum(r.get("runs", runs_per_input) for r in records),
        "failures": sum(fails.values()),
        "failure_kinds": dict(fails),
        "tracebacks": fails.get("traceback", 0),
        "hangs": fails.get("hang", 0),
        "wrong_exit_codes": sum(v for k, v in fails.items() if k not in ("traceback", "hang")),
        **extra,
        "slowest_input_s": max((r["seconds"] for r in records), default=0.0),
        "total_s": round(sum(r["seconds"] for r in records), 1),
        "messages": dict(collections.Counter(r["message"] for r in records
                                             if r["message"]).most_common(25)),
    }


# --- CSV references ----------------------------------------------------------------------------

#: The seed reference: Decay's exact solution x = 1.5 exp(-2 t), y = 2 x + 1 on [0, 2].
CSV_TIMES = [k / 50 for k in range(101)]
CSV_FIELDS = ["nan", "inf", "-inf", "1e400", "1e-300", "0", "-0", "abc", "", " 1.0 ", "0x10",
              "1e308", "9" * 400, "NaN", "+1", ".5", "5.", "1;5", '"1"', "1e-400", "-1e308"]
#: Every how many CSV inputs the seed FMU is compared against the mutated reference.
CSV_FMU_EVERY = 4


def csv_seed() -> str:
    """The seed reference CSV (`CSV_TIMES`), numbers written with 17 significant digits."""
    rows = ["time,x,y"]
    for t in CSV_TIMES:
        x = 1.5 * math.exp(-2 * t)
        rows.append(f"{t!r},{x!r},{2 * x + 1!r}")
    return "\n".join(rows) + "\n"


def mutate_csv(rng: random.Random, text: str) -> bytes:
    """One or two random edits of a reference CSV: token edits, a field replaced by an odd
    number or by text, the time of a row, the header, line endings, blank lines, a BOM,
    bytes that are not UTF-8, an empty file or one of one row."""
    data = text
    for _ in range(rng.choice((1, 1, 1, 2))):
        kind = rng.choice(["token", "token", "field", "field", "field", "time", "time",
                           "header", "header", "lines", "short", "encoding"])
        lines = data.splitlines(keepends=True)
        if kind == "token" and data:
            data = "".join(edit_tokens(rng, re.findall(r"\r?\n|,|[^,\r\n]+", data),
                                       rng.choice(TOKEN_EDITS)))
        elif kind == "field" and len(lines) > 1:
            k = rng.randrange(1, len(lines))
            fields = lines[k].rstrip("\r\n").split(",")
            fields[rng.randrange(len(fields))] = rng.choice(CSV_FIELDS)
            lines[k] = ",".join(fields) + "\n"
            data = "".join(lines)
        elif kind == "time" and len(lines) > 2:
            k = rng.randrange(1, len(lines))
            fields = lines[k].rstrip("\r\n").split(",")
            fields[0] = rng.choice(["1e-300", "-1", "0", "1e300", fields[0], "2.0000001"])
            lines[k] = ",".join(fields) + "\n"
            if rng.random() < 0.3:
                lines.insert(k, lines[k])            # a repeated time: an event
            data = "".join(lines)
        elif kind == "header" and lines:
            lines[0] = rng.choice(["time,x,x\n", "time,,y\n", 'time,"x",y\n', 'time,"x,y"\n',
                                   "Time,x,y\n", "time,x,y,z\n", "time,a,b\n", "time\n",
                                   "x,time,y\n", "time ,x , y\n", "\ufefftime,x,y\n"])
            data = "".join(lines)
        elif kind == "lines":
            data = rng.choice([data.replace("\n", "\r\n"), data.replace("\n", "\n\n"),
                               data.replace("\n", "\r"), data + "\n\n\n", data.rstrip("\n")])
        elif kind == "short":
            data = "".join(lines[:rng.choice([0, 1, 2, 3])])
        else:
            return data.encode() + rng.choice([b"\xff\xfe", b"\x80", b"\xc3("])
    return data.encode("utf-8", "surrogatepass")


def read_csv_oracle(data: bytes) -> dict[str, list[float]] | None:
    """The columns of a reference CSV, or None when the documented format (docs/regression.md:
    UTF-8, header ``time,name,...`` with unique non-empty names, names possibly double-quoted,
    one finite number per field, time never decreasing, at least two rows) refuses it; the
    harness's own reading, to say which exit code compare owes."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        return None
    header = [h.strip() for h in next(csv.reader([lines[0]]))]
    if header[0] != "time" or len(set(header)) != len(header) or not all(header):
        return None
    columns: dict[str, list[float]] = {h: [] for h in header}
    for line in lines[1:]:
        if not line.strip():
            continue
        fields = line.split(",")
        if len(fields) != len(header):
            return None
        try:
            values = [float(f) for f in fields]
        except ValueError:
            return None
        if not all(map(math.isfinite, values)) or columns["time"] and \
                values[0] < columns["time"][-1]:
            return None
        for h, v in zip(header, values):
            columns[h].append(v)
    return columns if len(columns["time"]) >= 2 else None


@register
class CsvSurface(Surface):
    """Mutated reference CSVs (`mutate_csv`) through ``compare``: the mutated file against
    the seed (as the result under test and as the reference) and, every `CSV_FMU_EVERY`
    inputs, the seed's FMU against it as the reference. The expected exit code comes from
    `read_csv_oracle`: 2 for a file it refuses or a pair without a variable in common, 0 for
    a file equal to the seed in value, else 0 or 1. A failure: a traceback (exit 3, an
    exception, or a Python traceback printed, e.g. by FMPy), a hang, another exit code, an
    exit 2 without a message naming the mutated file (for a file the oracle refuses)."""
    name = "csv"

    def inputs(self, n, seed):
        rng = random.Random(seed)
        seed_text = csv_seed()
        out, seen = [], {seed_text.encode()}
        while len(out) < n:
            data = mutate_csv(rng, seed_text)
            if data not in seen or rng.random() < 0.02:
                seen.add(data)
                out.append((f"csv {len(out)}", (data, len(out) % CSV_FMU_EVERY == 0)))
        return out

    def run(self, label, data, workdir, timeout):
        blob, with_fmu = data
        ref, mutated = workdir / "seed.csv", workdir / "mutated.csv"
        ref.write_text(csv_seed())
        mutated.write_bytes(blob)
        rec: dict = {"input": label, "path": str(mutated), "data": blob[:3000].decode(
            "utf-8", "backslashreplace")}
        mine = read_csv_oracle(blob)
        seed = read_csv_oracle(csv_seed().encode())
        assert seed is not None
        rec["valid"] = mine is not None
        rec["same"] = mine == seed
        rec["common"] = mine is not None and bool({"x", "y"} & set(mine) - {"time"})
        pairs = [("as_test", [str(mutated), str(ref)]), ("as_reference", [str(ref), str(mutated)])]
        if with_fmu:
            fmu = workdir / "Decay.fmu"
            if not fmu.exists():
                fmu.write_bytes(fmu_seeds(workdir)["Decay"])
            pairs.append(("fmu", [str(fmu), str(mutated), "--timeout", str(SIM_TIMEOUT)]))
        t0 = time.perf_counter()
        errs = []
        for key, args in pairs:
            rec[key], err = run_cli(["compare", *args], timeout)
            errs.append(err)
            rec[key + "_named"] = rec[key] != 2 or str(mutated) in err
        rec["seconds"] = round(time.perf_counter() - t0, 3)
        rec["runs"] = len(pairs)
        rec["python_traceback"] = any("Traceback (most recent call last)" in e for e in errs)
        rec["stderr"] = "\n---\n".join(e[-600:] for e in errs)
        rec["message"] = _message(next((e for e in errs if e.strip()), "").replace(
            str(mutated), "FILE"))
        return rec

    def failure(self, rec):
        keys = [k for k in ("as_test", "as_reference", "fmu") if k in rec]
        codes = [rec[k] for k in keys]
        if "traceback" in codes or 3 in codes or rec["python_traceback"]:
            return "traceback"
        if "hang" in codes:
            return "hang"
        for k in keys:
            code = rec[k]
            if not rec["valid"] or not rec["common"]:
                want: tuple = (2,)
            else:
                want = (0,) if rec["same"] else (0, 1)
            if code not in want:
                return f"compare {k}: exit {code}, expected {' or '.join(map(str, want))}"
            if not rec[k + "_named"]:
                return f"compare {k}: a refusal that does not name the file"
        return None

    def summarize(self, records):
        return _summary(self, records, {
            "refused_by_oracle": sum(1 for r in records if not r["valid"]),
            "equal_to_seed": sum(1 for r in records if r["same"]),
            "exit_codes": dict(collections.Counter(
                str(r[k]) for r in records for k in ("as_test", "as_reference", "fmu")
                if k in r))}, runs_per_input=2)


# --- suite files -------------------------------------------------------------------------------

#: The seed suite: two entries comparing the seed CSV with itself, every option given once.
SUITE_SEED = '''[suite]
name = "fuzz"
rtol = 1e-3
atol = 1e-6

[[model]]
name = "same"
test = "test.csv"
reference = "ref.csv"
variables = ["x", "y"]
time_tolerance = 0.01
method = "tube"
validate = false

[[model]]
test = "ref.csv"
reference = "test.csv"
stop_time = 2.0
relative_tolerance = 1e-6
timeout = 60
start_values = { k = 2.0 }
fmi_type = "ModelExchange"
'''
#: Values put in place of a value of the seed suite (`mutate_suite`).
SUITE_VALUES = ['"1e-3"', "true", "-1", "inf", "nan", "-inf", "1e400", "0", "[]", "{}",
                '"tub"', '"both"', '"../../../../etc/passwd"', '"/dev/zero"', '"missing.csv"',
                '"."', "[" * 400 + "]" * 400, '"' + "x" * 100_000 + '"',
                "1979-05-27T07:32:00Z", "0x10", '{ k = "a" }', '["x", 1]', '"ref.csv"',
                "9" * 400, "1_000", '""', "'\\u0000'"]
_SUITE_VALUE = re.compile(r"(?m)^(\w+ = )(.+)$")


def mutate_suite(rng: random.Random, text: str) -> bytes:
    """One or two random edits of a suite file: a value replaced (`SUITE_VALUES`), a key
    misspelt or unknown, a line deleted or repeated, token edits, an unknown table, bytes that
    are not UTF-8, more entries than a suite may hold."""
    for _ in range(rng.choice((1, 1, 1, 2))):
        kind = rng.choice(["value", "value", "value", "value", "key", "line", "token",
                           "table", "bytes", "entries"])
        if kind == "value":
            m = rng.choice(list(_SUITE_VALUE.finditer(text)))
            text = text[:m.start(2)] + rng.choice(SUITE_VALUES) + text[m.end(2):]
        elif kind == "key":
            m = rng.choice(list(_SUITE_VALUE.finditer(text)))
            key = m.group(1)[:-3]
            new = rng.choice([key[:-1], key + "s", key.upper(), "rtl", "command", "__class__"])
            text = text[:m.start(1)] + new + " = " + text[m.end(1):]
        elif kind == "line":
            lines = text.splitlines(keepends=True)
            k = rng.randrange(len(lines))
            if rng.random() < 0.5:
                del lines[k]
            else:
                lines.insert(k, lines[k])
            text = "".join(lines)
        elif kind == "token":
            text = "".join(edit_tokens(rng, re.findall(r"\s+|\w+|.", text),
                                       rng.choice(TOKEN_EDITS)))
        elif kind == "table":
            text += rng.choice(["\n[[modle]]\ntest = \"a.csv\"\n", "\n[extra]\n", "\n[suite]\n",
                                "\n[[model]]\n", "\n[[model]]\ntest = \"test.csv\"\n"])
        elif kind == "bytes":
            return text.encode() + rng.choice([b"\xff\xfe", b"\x80", b"\xc3("])
        else:
            count = rng.choice([3, 10_001])
            text += "".join(f'\n[[model]]\nname = "e{k}"\ntest = "test.csv"\n'
                            f'reference = "ref.csv"\n' for k in range(count))
    return text.encode("utf-8", "surrogatepass")


@register
class SuiteSurface(Surface):
    """Mutated suite files (`mutate_suite`) through ``regress --serial``: the seed compares
    the seed CSV with itself. The file is first read with `mdae_fmu.suite_file.load_suite`
    in this process. A failure: a traceback (exit 3, an exception, a Python traceback
    printed), a hang, a file refused by the reader but not with exit 2 and a message naming
    it, a file read but regress ending with another exit code than 0 or 1."""
    name = "suite"

    def inputs(self, n, seed):
        rng = random.Random(seed)
        return [(f"suite {k}", mutate_suite(rng, SUITE_SEED)) for k in range(n)]

    def run(self, label, data, workdir, timeout):
        from mdae_fmu.diagnostics import InputError
        from mdae_fmu.suite_file import load_suite
        for name in ("ref.csv", "test.csv"):
            (workdir / name).write_text(csv_seed())
        suite = workdir / "suite.toml"
        suite.write_bytes(data)
        rec: dict = {"input": label, "path": str(suite),
                     "data": data[:2000].decode("utf-8", "backslashreplace")}
        t0 = time.perf_counter()
        try:
            with time_limit(timeout):
                load_suite(suite)
            rec["read"] = "ok"
        except InputError:
            rec["read"] = "refused"
        except Hang:
            rec["read"] = "hang"
        except BaseException:      # noqa: BLE001 - counted, the point of the benchmark
            rec["read"] = "traceback"
        out = workdir / "report"
        rec["regress"], err = run_cli(["regress", str(suite), "--serial", "--output-dir",
                                       str(out), "--timeout", str(SIM_TIMEOUT * 4)], timeout)
        shutil.rmtree(out, ignore_errors=True)
        rec["seconds"] = round(time.perf_counter() - t0, 3)
        rec["named"] = str(suite) in err
        rec["python_traceback"] = "Traceback (most recent call last)" in err
        rec["stderr"] = err[-1000:]
        rec["message"] = _message(err.replace(str(suite), "FILE"))
        return rec

    def failure(self, rec):
        code, read = rec["regress"], rec["read"]
        if code in ("traceback", 3) or read == "traceback" or rec["python_traceback"]:
            return "traceback"
        if "hang" in (code, read):
            return "hang"
        if read == "refused":
            if code != 2:
                return f"refused by the reader but exit {code}"
            if not rec["named"]:
                return "a refusal that does not name the suite file"
            return None
        if code not in (0, 1):
            return f"exit {code} for a suite the reader accepts"
        return None

    def summarize(self, records):
        return _summary(self, records, {
            "refused": sum(1 for r in records if r["read"] == "refused"),
            "exit_codes": dict(collections.Counter(str(r["regress"]) for r in records))},
            runs_per_input=1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--surface", default="model",
                    help=f"comma-separated surfaces among {', '.join(SURFACES)}, or all "
                         "(default: model)")
    ap.add_argument("--n", type=int, default=1000, help="inputs per surface")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per run")
    ap.add_argument("--json", metavar="OUT")
    args = ap.parse_args(argv)
    names = list(SURFACES) if args.surface == "all" else args.surface.split(",")
    unknown = [n for n in names if n not in SURFACES]
    if unknown:
        ap.error(f"unknown surface {unknown[0]} (surfaces: {', '.join(SURFACES)})")
    summaries, all_records, failed = {}, {}, False
    with tempfile.TemporaryDirectory(prefix="mdae_fuzz_") as tmp:
        for name in names:
            surface = SURFACES[name]()
            records = []
            for k, (label, data) in enumerate(surface.inputs(args.n, args.seed)):
                rec = surface.run(label, data, Path(tmp), args.timeout)
                records.append(rec)
                why = surface.failure(rec)
                if why:
                    shown = data if isinstance(data, str) else label
                    print(f"--- {name} input {k} is a failure ({why}):\n{shown}\n"
                          f"{ {k: v for k, v in rec.items() if k != 'stderr'} }\n"
                          f"{rec.get('stderr', '')[-600:]}", file=sys.stderr)
                if (k + 1) % 50 == 0:
                    bad = sum(1 for r in records if surface.failure(r))
                    print(f"{name}: {k + 1} inputs, {bad} failures, "
                          f"{round(sum(r['seconds'] for r in records), 1)} s",
                          file=sys.stderr, flush=True)
            summaries[name] = surface.summarize(records)
            all_records[name] = records
            failed = failed or any(surface.failure(r) for r in records)
    out = summaries[names[0]] if len(names) == 1 else summaries
    print(json.dumps(out, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summaries, "records": all_records},
                                              indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
