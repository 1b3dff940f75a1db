"""End-to-end pipeline benchmark: ``mdae-fmu analyze`` and ``mdae-fmu export`` as a user runs
them, on the single-mode chain with algebraic loops and an index-2 pendulum
(`gen_chain.loop_chain_model`, 6n + 5 equations).

Every command runs in a fresh process (``python -m mdae_fmu.cli``, output to a file): reported
are its wall time, its CPU time (user + system of the process and its children, so gcc counts)
and its peak resident memory (the largest ``ru_maxrss`` among the process and its children).
With ``--against DIR`` (a source tree of another revision, e.g.
``git archive dd75497 | tar -x -C /tmp/prev``) every run is paired with one of that revision's
on the same file, alternately, so that both see the same machine load. With ``--repeats N``
medians are printed. ``--timeout S`` stops a run after S seconds (reported as ``> S``).
``--this DIR`` measures the source tree DIR instead of the installed package.

``--family transmission|heat|grid`` measures a ScalableTestSuite family instead
(`gen_scalable`, issue 29 Deliver 6).

Usage: ``python benchmarks/pipeline_bench.py [--sizes 1e3 1e4 1e5] [--commands analyze export]
[--family chain] [--repeats N] [--against DIR] [--timeout S] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import gen_scalable  # noqa: E402
from gen_chain import loop_chain_model  # noqa: E402

# runs the command in a child and prints its resource usage (children included: gcc)
_WRAP = r"""
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
with open(sys.argv[1], "w") as out:
    p = subprocess.Popen([sys.executable, "-m", "mdae_fmu.cli"] + sys.argv[3:], stdout=out,
                         stderr=subprocess.STDOUT)
    try:
        rc = p.wait(timeout=float(sys.argv[2]))
    except subprocess.TimeoutExpired:
        p.kill(); p.wait(); rc = None
wall = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": rc, "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime,
                  "peak_rss_mb": ru.ru_maxrss / 1024}))
"""


def _run(command: str, path: str, out_dir: str, timeout: float, source: str | None) -> dict:
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [source, env.get("PYTHONPATH")]))
    args = [command, path]
    if command == "export":
        args += ["-o", os.path.join(out_dir, "out.fmu")]
    log = os.path.join(out_dir, f"{command}.log")
    res = subprocess.run([sys.executable, "-c", _WRAP, log, str(timeout)] + args,
                         capture_output=True, text=True, env=env, cwd=out_dir)
    if res.returncode != 0:
        sys.exit(f"benchmark wrapper failed:\n{res.stderr}")
    r = json.loads(res.stdout.strip().splitlines()[-1])
    if r["rc"] not in (0, None):
        with open(log) as f:
            sys.exit(f"{command} failed with exit code {r['rc']}:\n{f.read()[-2000:]}")
    return r


def _median(runs: list[dict]) -> dict:
    if any(r["rc"] is None for r in runs):
        return {"timeout": True, "wall_s": max(r["wall_s"] for r in runs),
                "cpu_s": max(r["cpu_s"] for r in runs),
                "peak_rss_mb": max(r["peak_rss_mb"] for r in runs)}
    return {k: statistics.median(r[k] for r in runs) for k in ("wall_s", "cpu_s", "peak_rss_mb")}


def _fmt(r: dict) -> str:
    gt = ">" if r.get("timeout") else " "
    return (f"{gt}{r['wall_s']:7.2f} s wall {gt}{r['cpu_s']:7.2f} s cpu "
            f"{r['peak_rss_mb']:7.0f} MB")


def _model(family: str, eqs: int) -> tuple[str, str, int]:
    """File stem, flat Modelica text and equation count of ``family`` nearest ``eqs``
    equations: the loop chain (6n + 5), or a ScalableTestSuite family (`gen_scalable`)."""
    if family == "chain":
        n = max(1, round((eqs - 5) / 6))
        return f"LoopChain{n}", loop_chain_model(n), 6 * n + 5
    n = gen_scalable.by_equations(family, eqs)
    return (f"{family}{n}", gen_scalable.FAMILIES[family][0](n),
            gen_scalable.equation_count(family, n))


def run(sizes, commands, repeats=1, against=None, timeout=600.0, this=None,
        family: str = "chain") -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="pipeline_bench_") as tmp:
        for eqs in sizes:
            stem, text, count = _model(family, eqs)
            path = os.path.join(tmp, f"{stem}.mo")
            with open(path, "w") as f:
                f.write(text)
            for cmd in commands:
                mine, other = [], []
                for _ in range(repeats):
                    mine.append(_run(cmd, path, tmp, timeout, this))
                    if against is not None:
                        other.append(_run(cmd, path, tmp, timeout, against))
                row = {"command": cmd, "family": family, "equations": count,
                       "this": _median(mine)}
                line = f"{cmd:8}{count:>9} eq  this {_fmt(row['this'])}"
                if against is not None:
                    row["against"] = _median(other)
                    line += f"  | previous {_fmt(row['against'])}"
                print(line + (f"  (median of {repeats})" if repeats > 1 else ""), flush=True)
                rows.append(row)
    for cmd in commands:
        pts = [(r["equations"], r["this"]["wall_s"]) for r in rows
               if r["command"] == cmd and not r["this"].get("timeout")]
        for (n0, t0), (n1, t1) in zip(pts, pts[1:]):
            print(f"{cmd}: growth exponent {n0} -> {n1}: "
                  f"{math.log(t1 / t0) / math.log(n1 / n0):.2f}")
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", nargs="+", type=float, default=[1e3, 1e4, 1e5])
    p.add_argument("--commands", nargs="+", choices=("analyze", "export"),
                   default=["analyze", "export"])
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--against", metavar="DIR", help="source tree of the previous revision")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    p.add_argument("--this", metavar="DIR", help="source tree measured as 'this' (default: "
                   "the installed mdae_fmu)")
    p.add_argument("--json", metavar="OUT")
    p.add_argument("--family", choices=["chain", *sorted(gen_scalable.FAMILIES)],
                   default="chain", help="the loop chain, or a ScalableTestSuite family "
                   "(benchmarks/gen_scalable.py)")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    # absolute: the runs happen in a temporary directory, where "--this ." would name it
    this, against = (os.path.abspath(d) if d else None for d in (a.this, a.against))
    rows = run([int(s) for s in a.sizes], a.commands, a.repeats, against, a.timeout, this,
               a.family)
    print(f"total {time.perf_counter() - t0:.0f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
