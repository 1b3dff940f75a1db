"""Corrupted FMU states under valgrind memcheck (issue 25, acceptance; the short version is
tests/fmu/test_fmu_state_checks.py).

Two FMUs of ClutchBasic (reference_models/, two modes): the default multimode Model
Exchange export (guarded schedule, guard bits and activity flags in Integer slots) and the
Co-Simulation interface of the ``both`` export; BouncingBall gives the
states of another model. For each, the C host tests/host/state_fuzz_host.c, compiled against
the FMU's own sources, runs N trials under ``valgrind --error-exitcode=99`` (tests/
valgrind_util.VALGRIND_ARGS: full leak check, definite and indirect leaks are errors): bit
flips, truncations, extensions, random bytes, states of another model and of the other
interface, fields out of range with the checksum recomputed, Integer slots of the mode logic,
and, as controls, good states and states with extreme Reals (NaN, inf, 1e308), each given to
fmi2DeSerializeFMUstate + fmi2SetFMUstate or as a block in memory to fmi2SetFMUstate, then
fmi2GetDerivatives, fmi2GetEventIndicators, fmi2EnterEventMode, fmi2NewDiscreteStates (100
times more when it fails), fmi2CompletedIntegratorStep (ME) or fmi2DoStep (CS, 100 times more
when it fails), then a good state again.

Printed per FMU: trials, refused / accepted per kind, the most log lines of 100 refused calls,
failed host checks, valgrind errors and the wall time.

Usage: ``python benchmarks/fuzz_fmu_state.py [--trials 1000] [--seed 25]``. The acceptance of
issue 25: 0 valgrind errors and 0 failed checks on the three FMUs at 1000 trials.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def export(name: str, out: Path, **options) -> Path:
    from mdae_fmu import api
    return api.export_fmu(api.load(ROOT / "reference_models" / f"{name}.mo"),
                          out / f"{name}_{'_'.join(f'{k}{v}' for k, v in options.items())}.fmu",
                          progress=False, **options)


def main(argv: list[str] | None = None) -> int:
    from valgrind_util import have_valgrind, prepare_state_fuzz, run_state_fuzz
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=25)
    args = ap.parse_args(argv)
    if not have_valgrind():
        print("valgrind is not installed", file=sys.stderr)
        return 2
    bad = 0
    with tempfile.TemporaryDirectory(prefix="fuzz_fmu_state_") as tmp:
        work = Path(tmp)
        other = prepare_state_fuzz(export("BouncingBall", work), work / "other")
        both = export("ClutchBasic", work, fmi_type="both")
        targets = {
            "ME default": (export("ClutchBasic", work), "me", True),
            "CS": (both, "cs", True),
        }
        for label, (fmu, interface, guarded) in targets.items():
            wd = work / label.replace(" ", "_").replace("-", "")
            target = prepare_state_fuzz(fmu, wd, interface, guarded=guarded)
            t0 = time.perf_counter()
            run = run_state_fuzz(target, other, args.trials, args.seed, wd)
            seconds = time.perf_counter() - t0
            errors = len(run.report.errors)
            print(f"{label}: {args.trials} trials in {seconds:.1f} s under valgrind, exit "
                  f"{run.returncode}, failed checks {run.failures}, valgrind errors {errors}, "
                  f"most log lines of 100 refused calls {run.loop_lines}")
            for kind, (n, refused, accepted) in run.kinds.items():
                print(f"    {kind:16s} {n:5d} trials  {refused:5d} refused  "
                      f"{accepted:5d} accepted")
            for kind, text in sorted(run.messages.items()):
                print(f"    message {kind}: {text[:150]}")
            if run.returncode or run.failures or errors:
                bad += 1
                print(run.stderr[-2000:])
    print("acceptance (0 valgrind errors, 0 failed checks):", "met" if bad == 0 else "NOT met")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
