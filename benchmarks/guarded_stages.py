"""CPU of the stages of one export, the guarded path against the per-mode one (issue 26
Deliver 1, docs/multimode.md "Steady blocks"): load, analysis, then the FMU's planning, C and
gcc (`mdae_fmu.fmu.export.fmu_entries`), each as process CPU including gcc's child processes.

``MODE``: ``guarded`` runs `mdae_fmu.analysis.guarded_analysis` (the implicit analysis and
its schedule, also on a single-mode model, whose default analysis wraps its mode's schedule
instead, docs/theory.md §10.14) after what `analyze` runs
before it (the unit check, the residual scan, the structural parameters, the mode count;
since stop 40), ``permode`` or ``default``
the default `analyze`. Run it with ``MDAE_FMU_OBJECT_CACHE=off`` so that gcc compiles the
runtime every time, and side by side with a baseline checkout put first on PYTHONPATH. The
cyclic garbage collector is paused, as the commands pause it (`mdae_fmu.collector`; before
stop 40 it ran here, about 1.5 s of the guarded path's 10 s at chain n = 10^4).

Usage: ``python benchmarks/guarded_stages.py FILE.mo MODE [--no-export]``;
``python benchmarks/guarded_stages.py --chain N > Chain.mo`` writes the single-mode chain of
docs/multimode.md (``der(x_k) = y_(k-1) - x_k``, ``y_k = 2 x_k + x_k^2/(1 + x_k^2)``: 2N
equations, 2N one-equation blocks).
"""

from __future__ import annotations

import os
import sys


def chain(n: int) -> str:
    """Flat Modelica text of the single-mode chain of ``n`` states (module docstring)."""
    out = [f"class Chain{n}"]
    for k in range(1, n + 1):
        out.append(f"  Real x{k}(start = {0.1 * (k % 7)!r}, fixed = true);")
        out.append(f"  Real y{k};")
    out.append("equation")
    for k in range(1, n + 1):
        prev = f"y{k - 1}" if k > 1 else "sin(time)"
        out.append(f"  der(x{k}) = {prev} - x{k};")
        out.append(f"  y{k} = 2 * x{k} + x{k}^2 / (1 + x{k}^2);")
    out.append(f"end Chain{n};")
    return "\n".join(out) + "\n"


def cpu() -> float:
    """User + system CPU of this process and of its waited-for children (gcc)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def main() -> None:
    if sys.argv[1] == "--chain":
        print(chain(int(sys.argv[2])), end="")
        return
    from mdae_fmu.collector import gc_paused
    with gc_paused():       # as the commands run (`mdae_fmu.cli`, `mdae_fmu.collector`)
        stages(sys.argv[1], sys.argv[2])
    print(f"process CPU {cpu():.2f} s")


def stages(path: str, mode: str) -> None:
    """Load, analyse and export ``path`` on the path ``mode`` (module docstring), printing
    the CPU of each stage."""
    from mdae_fmu import analysis as A
    from mdae_fmu.fmu import export as X
    from mdae_fmu.fmu.model_description import resolve_default_experiment
    from mdae_fmu.importers.reading import load
    t0 = cpu()
    model = load(path)
    t1 = cpu()
    if mode == "guarded":
        # what `analyze` runs before the one analysis (`mdae_fmu.analysis._structure`)
        from mdae_fmu.structure.residual_scan import residual_scan
        from mdae_fmu.structure.structural_parameters import fix_structural_parameters
        from mdae_fmu.unit_check import check_units
        check_units(model)
        residual_scan(model)
        assert not fix_structural_parameters(model).parameters
        A.more_modes_than(model, 1)
        a = A.guarded_analysis(model, None)
    else:
        a = A.analyze(model, full=False)
    t2 = cpu()
    a.raise_if_rejected()
    print(f"load {t1 - t0:.2f} s, analysis {t2 - t1:.2f} s", flush=True)
    if "--no-export" not in sys.argv:
        stamps = [(cpu(), "start")]
        X.fmu_entries(model, "me", resolve_default_experiment(None), X.scheduled(a, False),
                      lambda msg: stamps.append((cpu(), msg)))
        stamps.append((cpu(), "end"))
        gcc = sum(b[0] - a_[0] for a_, b in zip(stamps, stamps[1:]) if a_[1].startswith("gcc"))
        print(f"export {stamps[-1][0] - stamps[0][0]:.2f} s (gcc {gcc:.2f} s; one mode's "
              f"schedule: {a.guarded is not None and a.guarded.single is not None})")


if __name__ == "__main__":
    main()
