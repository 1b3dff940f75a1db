"""`mdae-fmu export --implicit` end to end on the model families written the way a modeller
writes them (benchmarks/gen_modeller.py) and on the project's clutch chain
(benchmarks/gen_multimode.py), each run a fresh process: wall seconds and CPU seconds (user +
system of the process and of the gcc it waits for, from the operating system's accounting),
peak memory, and the size exponent between consecutive sizes (issue 26 Deliver 6: near-linear
in the number of switches for chains and trees).

    .venv/bin/python benchmarks/modeller_bench.py [--families drive_line,shaft_tree]
        [--sizes 8,50,200] [--timeout 300] [--src DIR] [--json out.json]

``--src DIR`` runs the ``mdae_fmu`` package found in DIR instead of the installed one (a
checkout of another commit, for a baseline in the same run: ``git archive COMMIT | tar -x -C
DIR``); a run past ``--timeout`` seconds is stopped and reported as such.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gen_modeller  # noqa: E402
from accounting import run  # noqa: E402

FAMILIES = {
    "drive_line": lambda n: gen_modeller.drive_line(n, "input"),
    "drive_line_time": lambda n: gen_modeller.drive_line(n, "time"),
    "drive_line_pressure": lambda n: gen_modeller.drive_line(n, "pressure"),
    "shaft_tree": gen_modeller.shaft_tree,
    "rlc_switch": lambda n: gen_modeller.rlc_cells(n, "switch"),
    "rlc_diode": lambda n: gen_modeller.rlc_cells(n, "diode"),
    "clutch_chain": None,       # the project's own family, printed as flat Modelica
}
CLI = "import sys; from mdae_fmu.cli import main; sys.exit(main())"


def model_text(family: str, n: int) -> str:
    if family == "clutch_chain":
        from gen_multimode import clutch_chain
        from mdae_fmu.modelica_printer import print_model
        return print_model(clutch_chain(n))
    return FAMILIES[family](n)


def run_export(path: Path, out: Path, timeout: float, src: str | None) -> dict:
    """One fresh ``mdae-fmu export --implicit`` process, started in the model's directory
    (so that ``--src`` is not shadowed by a checkout in the current directory): its wall and
    CPU seconds and peak memory from the operating system's accounting of that process
    (``wait4``: user + system of it and of the gcc it waited for), and its status."""
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    r = run([sys.executable, "-c", CLI, "export", "--implicit", str(path), "-o", str(out)],
            cwd=path.parent, timeout=timeout, env=env)
    last = (r["err"].strip().splitlines() or ["?"])[-1]
    if r["code"] is None:
        status = f"stopped after {timeout:g} s"
    else:
        status = "ok" if r["code"] == 0 else f"exit {r['code']}: {last[:120]}"
    return {"wall_s": r["wall"], "cpu_s": r["cpu"], "peak_mb": r["peak_mb"], "status": status}


def bench(families, sizes, timeout, src, repeat) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="modeller_bench_") as tmp:
        for fam in families:
            for n in sizes:
                text = model_text(fam, n)
                name = re.search(r"^(?:class|model) (\w+)", text, re.M).group(1)
                path = Path(tmp) / f"{name}.mo"
                path.write_text(text)
                runs = [run_export(path, Path(tmp) / f"{name}.fmu", timeout, src)
                        for _ in range(repeat)]
                cpu = sorted(r["cpu_s"] for r in runs)[len(runs) // 2]
                wall = sorted(r["wall_s"] for r in runs)[len(runs) // 2]
                row = {"family": fam, "n": n, "cpu_s": cpu, "wall_s": wall,
                       "peak_mb": max(r["peak_mb"] for r in runs),
                       "status": runs[-1]["status"], "runs": len(runs)}
                rows.append(row)
                print(json.dumps(row), flush=True)
                if row["status"] != "ok":
                    break           # larger sizes of a failing family are not tried
    return rows


def table(rows) -> str:
    out = ["| family | n | CPU s (median) | wall s | peak MB | exponent (CPU) | status |",
           "|---|---|---|---|---|---|---|"]
    prev: dict = {}
    for r in rows:
        p = prev.get(r["family"])
        exp = ""
        if p and r["status"] == "ok" and p["status"] == "ok" and p["cpu_s"] > 0:
            exp = f"{math.log(r['cpu_s'] / p['cpu_s']) / math.log(r['n'] / p['n']):.2f}"
        out.append(f"| {r['family']} | {r['n']} | {r['cpu_s']} | {r['wall_s']} | "
                   f"{r['peak_mb']} | {exp} | {r['status']} |")
        prev[r["family"]] = r
    return "\n".join(out)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--families", default="drive_line,shaft_tree,clutch_chain",
                   help="comma-separated subset of " + ", ".join(FAMILIES))
    p.add_argument("--sizes", default="8,50,200", help="comma-separated numbers of switches")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per export")
    p.add_argument("--repeat", type=int, default=1, help="runs per size (median reported)")
    p.add_argument("--src", help="directory holding the mdae_fmu package to run instead")
    p.add_argument("--json", help="write the rows as JSON")
    a = p.parse_args(argv)
    fams = a.families.split(",")
    unknown = set(fams) - set(FAMILIES)
    if unknown:
        p.error(f"unknown families: {', '.join(sorted(unknown))}")
    rows = bench(fams, [int(x) for x in a.sizes.split(",")], a.timeout, a.src, a.repeat)
    print(table(rows))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
