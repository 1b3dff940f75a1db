"""Simulation CPU time of our FMUs against the Reference-FMUs' own C, in one run (issue 29).

The Reference-FMUs (github.com/modelica/Reference-FMUs, BSD-2-Clause) are hand-written FMI
models; this script builds their FMI 2.0 Model Exchange binaries from a checkout of their
sources with the flags our FMUs get (`mdae_fmu.fmu.build.CFLAGS`, so the comparison is of the
code, not of the optimizer), exports the same models from `reference_models/*.mo` with
`mdae_fmu.api.export_fmu`, and simulates both through one FMPy call (CVode, the same relative
tolerance, output interval and stop time, FMUs pre-extracted and model descriptions read
once). Each figure is the median of ``--repeats`` process-CPU-time measurements taken
alternately after one warm-up call each (`sim_bench.cpu_medians`). The table also gives the
number of event rows of each run (issue 29: BouncingBall's must equal the reference FMU's)
and the largest difference between the two trajectories away from events.

The models agree: VanDerPol (mu = 1, x0 = 2, x1 = 0), Dahlquist (k = 1, x = 1) and
BouncingBall (g = 9.81, e = 0.7, h = 1, v = 0) up to 2 s, before the reference model's stop
rule (v < 0.1) and our model's Zeno point matter.

    python benchmarks/refmu_bench.py --refmu PATH/TO/Reference-FMUs [--repeats 9] [--rtol 1e-6]

``--refmu`` is a source checkout (``git clone https://github.com/modelica/Reference-FMUs``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from benchmarks.sim_bench import (Case, Prepared, cpu_medians, event_times,  # noqa: E402
                                  export_generated, max_difference)

CASES = (
    Case("BouncingBall", 2.0, 0.01, ("h", "v"), 1.05),
    Case("VanDerPol", 20.0, 0.01, ("x0", "x1"), 1.05),
    Case("Dahlquist", 10.0, 0.01, ("x",), 1.05),
)


def build_reference_fmu(refmu: Path, name: str, out: Path) -> Path:
    """The FMI 2.0 FMU of the Reference-FMUs model ``name`` built from the checkout ``refmu``
    (its model.c, the generic src/fmi2Functions.c and src/cosimulation.c, as its CMake build
    compiles them) with our C flags."""
    from mdae_fmu.fmu.build import CFLAGS, compiler
    for rel in (f"{name}/model.c", f"{name}/FMI2.xml", "src/fmi2Functions.c",
                "src/cosimulation.c", "include/model.h"):
        if not (refmu / rel).is_file():
            raise SystemExit(f"{refmu}: no {rel}: not a Reference-FMUs source checkout")
    stage = out / f"{name}_reference"
    lib = stage / "binaries" / "linux64" / f"{name}.so"
    lib.parent.mkdir(parents=True, exist_ok=True)
    flags = [f for f in CFLAGS if f not in ("-Werror", "-fvisibility=hidden", "-std=c99")]
    cmd = [compiler(), *flags, "-shared", "-DFMI_VERSION=2", "-DDISABLE_PREFIX",
           f"-I{refmu / 'include'}", f"-I{refmu / name}",
           str(refmu / name / "model.c"), str(refmu / "src" / "fmi2Functions.c"),
           str(refmu / "src" / "cosimulation.c"), "-o", str(lib), "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"building the reference {name} failed:\n{r.stderr[-3000:]}")
    fmu = out / f"{name}_reference.fmu"
    with zipfile.ZipFile(fmu, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(refmu / name / "FMI2.xml", "modelDescription.xml")
        z.write(lib, f"binaries/linux64/{name}.so")
    return fmu


def run(refmu: Path, repeats: int, rtol: float, cases=CASES) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="refmu_bench_") as tmp_name:
        tmp = Path(tmp_name)
        for case in cases:
            ref = Prepared(build_reference_fmu(refmu, case.name, tmp), tmp / "r")
            gen = Prepared(export_generated(case.name, tmp), tmp / "g")
            medians, results = cpu_medians(
                [lambda ref=ref, case=case: ref.simulate(case, rtol, case.compare),
                 lambda gen=gen, case=case: gen.simulate(case, rtol, case.compare)], repeats)
            rows.append({"model": case.name, "target": case.target, "reference": medians[0],
                         "generated": medians[1],
                         "events": (len(event_times(results[1])),
                                    len(event_times(results[0]))),
                         "max_diff": max_difference(results[1], results[0], case.compare)})
    return rows


def markdown(rows: list[dict], repeats: int, rtol: float) -> str:
    lines = [f"FMPy CVode, rtol={rtol:g}, output interval 0.01 s; process CPU time per "
             f"simulation, median of {repeats}, alternating",
             "",
             "| model | generated ms | Reference-FMUs ms | generated / reference (target) | "
             "event rows generated / reference | max abs diff |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        g, b = r["generated"], r["reference"]
        lines.append(f"| {r['model']} | {1e3 * g:.2f} | {1e3 * b:.2f} | {g / b:.2f} "
                     f"(<= {r['target']}) | {r['events'][0]} / {r['events'][1]} | "
                     f"{r['max_diff']:.1e} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--refmu", type=Path, required=True,
                    help="a source checkout of github.com/modelica/Reference-FMUs")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--rtol", type=float, default=1e-6)
    ap.add_argument("--models", nargs="*", default=[c.name for c in CASES])
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    cases = [c for c in CASES if c.name in args.models]
    print(markdown(run(args.refmu.resolve(), args.repeats, args.rtol, cases), args.repeats,
                   args.rtol))
    return 0


if __name__ == "__main__":
    sys.exit(main())
