"""Fuzzing of the whole pipeline: mutated models through ``mdae-fmu analyze`` and
``mdae-fmu export`` (issue 15, item 5; the short version is tests/test_export_fuzz.py).

Inputs: small seed models (one-mode, when-clauses with restarts, Integer and Boolean discrete
variables, guarded equations, parameter bindings, descriptions and units), mutated by
`mutate`: one to three edits, token edits (delete, duplicate, swap, truncate, random bytes, a
syntax token; about 30 %), and value edits aimed at the numeric checks (a number replaced by
an extreme literal, a parameter binding or a start value replaced by an expression without a
finite value, a control character in a description or unit, an experiment annotation with
odd values).

Each input runs through the command line's ``main`` in this process (its stdout and stderr
captured), analyze then export (Model Exchange), each under a SIGALRM time limit. Counted:

* tracebacks: exit code 3 (the command line's internal error) or any exception out of main;
* hangs: a run over the time limit;
* gcc failures: an export that fails in the C compiler (BuildError: "gcc failed",
  "linking");
* invalid FMUs: an exported FMU whose modelDescription.xml FMPy's schema validation refuses
  (e.g. ``start="inf"``), and export accepted although analyze rejected (or the reverse is
  fine: export only needs the per-mode stage);
* the exit codes of both commands, and the messages of the refusals (first line, without the
  file name), by frequency.

Usage: ``python benchmarks/fuzz_export.py [--n 1000] [--seed 1] [--timeout 120] [--json OUT]``.
The acceptance of issue 15: 0 tracebacks, 0 hangs, 0 gcc failures for >= 1000 inputs.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import random
import re
import signal
import sys
import tempfile
import time
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
            text = "".join(toks)
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
    """A run exceeded its time limit (raised by SIGALRM; not an Exception, so the command
    line's catch-all does not take it)."""


def _on_alarm(signum, frame):
    raise Hang()


def run_cli(args: list[str], timeout: float) -> tuple[int | str, str]:
    """``mdae-fmu ARGS`` in this process: (exit code, or "traceback"/"hang", stderr)."""
    from mdae_fmu.cli import main
    err = io.StringIO()
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(args)
    except Hang:
        code = "hang"
    except BaseException as exc:      # noqa: BLE001 - counted, the point of the benchmark
        code = "traceback"
        err.write(f"{type(exc).__name__}: {exc}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--json", metavar="OUT")
    args = ap.parse_args(argv)
    records = []
    with tempfile.TemporaryDirectory(prefix="mdae_fuzz_") as tmp:
        for k, (name, text) in enumerate(mutants(args.n, args.seed)):
            rec = fuzz_one(name, text, Path(tmp), args.timeout)
            records.append(rec)
            bad = rec.get("traceback") or rec["gcc_failure"] or "hang" in (
                rec["analyze"], rec["export"]) or rec.get("invalid_fmu")
            if bad:
                print(f"--- input {k} ({name}) is a failure:\n{text}\n{rec}", file=sys.stderr)
            if (k + 1) % 50 == 0:
                s = summarize(records)
                print(f"{k + 1} inputs: {s['tracebacks']} tracebacks, {s['hangs']} hangs, "
                      f"{s['gcc_failures']} gcc failures, {s['invalid_fmus']} invalid FMUs, "
                      f"{s['exported_fmus']} FMUs, {s['total_s']} s", file=sys.stderr,
                      flush=True)
    summary = summarize(records)
    print(json.dumps(summary, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "records": records},
                                              indent=1))
    ok = not (summary["tracebacks"] or summary["hangs"] or summary["gcc_failures"]
              or summary["invalid_fmus"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
