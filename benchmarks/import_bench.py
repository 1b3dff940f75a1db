"""Importer benchmark: time and peak memory to import the scalable chain model
(`benchmarks/gen_chain.py`, 6N + 3 equations) at about 10^3, 10^4 and 10^5 equations.

Each size runs in a fresh Python process so that its peak resident memory (``ru_maxrss``) is
its own. Reported: equations, file size, wall time and CPU time of the import (the parser is
built beforehand, as in a long-running process; its one-off construction time is reported
separately; what the parser learns from the file, `importers.lalr_shapes`, is learned during
the timed import), peak RSS of the process, and the CPU time of a fixed 3-million-iteration
Python loop as a machine-speed reference (about 0.12 s on an idle 3 GHz core): on a loaded
machine, scale the import times by the ratio. With ``--repeats N`` each size runs N times and
the medians are printed. With ``--against DIR`` (a checkout of another revision, e.g.
``git archive REV | tar -x -C DIR``) every run is paired with one of that revision's importer on
the same file, alternately, so that both see the same load ("before" and "after" in the same
run). With ``--xml`` the XML equation list of the same model is imported too; with
``--roundtrip`` the printer and the XML writer are timed as well.

Usage: ``python benchmarks/import_bench.py [--sizes 1e3 1e4 1e5] [--repeats N] [--against DIR]
[--xml] [--roundtrip] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from gen_chain import chain_model
from mdae_fmu.importers import flat_modelica as F
n, path, do_xml, do_rt = int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1", sys.argv[5] == "1"
with open(path, "w") as f:
    f.write(chain_model(n))
t0 = time.process_time()
x = 0
for i in range(3_000_000):     # machine speed reference: ~0.12 s CPU on an idle 3 GHz core
    x += i
calibration = time.process_time() - t0
t0 = time.perf_counter()
F.parse_expression("0")          # builds the grammar and its tables (once per process)
build = time.perf_counter() - t0
t0, c0 = time.perf_counter(), time.process_time()
m = F.load_modelica(path)
out = {"masses": n, "equations": len(m.equations), "variables": len(m.variables),
       "bytes": __import__("os").path.getsize(path), "parser_build_s": build,
       "calibration_cpu_s": calibration,
       "import_s": time.perf_counter() - t0, "import_cpu_s": time.process_time() - c0}
if do_rt or do_xml:
    from mdae_fmu.importers.xml_writer import model_to_xml
    from mdae_fmu.modelica_printer import print_model
    t0 = time.perf_counter(); text = print_model(m); out["print_s"] = time.perf_counter() - t0
    t0 = time.perf_counter(); xml = model_to_xml(m); out["xml_write_s"] = time.perf_counter() - t0
    if do_xml:
        from mdae_fmu.importers.xml_eqlist import parse_xml
        t0 = time.perf_counter(); mx = parse_xml(xml, "chain.xml")
        out["xml_import_s"] = time.perf_counter() - t0
        out["xml_equal"] = mx == m
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out["source"] = F.__file__.rsplit("/mdae_fmu/", 1)[0]     # the source tree measured
print(json.dumps(out))
"""


def _child(n: int, path: str, xml: bool, roundtrip: bool, source: str | None = None) -> dict:
    """One import in a fresh process; ``source``: a directory whose ``mdae_fmu`` is imported
    instead of the installed one."""
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [source, env.get("PYTHONPATH")]))
    res = subprocess.run([sys.executable, "-c", _CHILD, HERE, str(n), path,
                          "1" if xml else "0", "1" if roundtrip else "0"],
                         capture_output=True, text=True, env=env,
                         cwd=os.path.dirname(path))    # not a source tree: PYTHONPATH decides
    if res.returncode != 0:
        sys.exit(f"benchmark child failed:\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def _summary(runs: list[dict]) -> dict:
    """The medians of the numeric fields of several runs of one size."""
    r = {k: (statistics.median(x[k] for x in runs) if isinstance(v, float) else v)
         for k, v in runs[0].items()}
    r["repeats"] = len(runs)
    if len(runs) > 1:
        r["import_cpu_runs"] = [x["import_cpu_s"] for x in runs]
    return r


def _line(r: dict, label: str = "") -> str:
    line = (f"{label}{r['equations']:>8} eq  {r['bytes'] / 1e6:7.2f} MB  import "
            f"{r['import_s']:7.2f} s (cpu {r['import_cpu_s']:6.2f} s)  peak "
            f"{r['peak_rss_mb']:7.1f} MB  (3M-loop {r['calibration_cpu_s']:.2f} s)")
    if "xml_import_s" in r:
        line += f"  xml {r['xml_import_s']:6.2f} s"
    if "print_s" in r:
        line += f"  print {r['print_s']:5.2f} s  xml-write {r['xml_write_s']:5.2f} s"
    if r["repeats"] > 1:
        line += f"  median of {r['repeats']}"
    return line


def run(sizes, xml: bool, roundtrip: bool, repeats: int = 1,
        against: str | None = None) -> list[dict]:
    """One row per size: the medians over ``repeats`` fresh processes (and, with ``against``,
    the other revision's, measured alternately, under ``"against"``)."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for eqs in sizes:
            n = max(1, round((eqs - 3) / 6))
            path = os.path.join(tmp, f"chain{n}.mo")
            runs, other = [], []
            for _ in range(repeats):
                runs.append(_child(n, path, xml, roundtrip))
                if against is not None:
                    other.append(_child(n, path, xml, roundtrip, against))
            r = _summary(runs)
            if against is None:
                print(_line(r), flush=True)
            else:
                r["against"] = _summary(other)
                print(_line(r, "this    "), flush=True)
                print(_line(r["against"], "against "), flush=True)
            rows.append(r)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", nargs="+", type=float, default=[1e3, 1e4, 1e5],
                   help="target numbers of equations")
    p.add_argument("--repeats", type=int, default=1, help="runs per size (medians printed)")
    p.add_argument("--against", metavar="DIR",
                   help="also run the importer of the source tree DIR, alternately")
    p.add_argument("--xml", action="store_true", help="also import the XML form")
    p.add_argument("--roundtrip", action="store_true", help="also time printer and writer")
    p.add_argument("--json", metavar="OUT", help="write the rows as JSON")
    args = p.parse_args(argv)
    rows = run([int(s) for s in args.sizes], args.xml, args.roundtrip, args.repeats,
               args.against and os.path.abspath(args.against))   # children run elsewhere
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
