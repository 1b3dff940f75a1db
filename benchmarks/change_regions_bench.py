"""CPU of the mode-change diagnostics of the one analysis (`mdae_fmu.implicit.changes`),
in-process inside the default `analyze`, with the number of concrete changes analysed and the
largest region (docs/theory.md §10.5, §10.9; docs/performance.md, stop 39).

Usage: ``python benchmarks/change_regions_bench.py SPEC [--no-key]`` with SPEC a ``.mo``
file, ``rlc:N:switch``, ``rlc:N:diode`` (`gen_modeller.rlc_cells`) or ``drive:N:TAIL``
(`gen_modeller.drive_line` with an unswitched tail); ``--no-key`` replaces
`changes.region_key` by None (every class analysed). Compare trees by putting a baseline
checkout first on the import path.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time


def model_path(spec: str) -> str:
    """The file of ``spec`` (module docstring), written to a temporary directory if
    generated."""
    if spec.endswith(".mo"):
        return spec
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from gen_modeller import drive_line, rlc_cells
    kind, n, x = spec.split(":")
    text = rlc_cells(int(n), x) if kind == "rlc" else drive_line(int(n), tail=int(x))
    path = os.path.join(tempfile.mkdtemp(), "Model.mo")
    with open(path, "w") as f:
        f.write(text)
    return path


def main() -> None:
    import mdae_fmu.implicit.changes as C
    from mdae_fmu.analysis import analyze
    from mdae_fmu.importers.reading import load
    from mdae_fmu.modes import explore
    spec = sys.argv[1]
    model = load(model_path(spec))
    if "--no-key" in sys.argv:
        C.region_key = lambda *args: None
    calls: list[int] = []
    sizes: list[int] = []
    cpu: list[float] = []
    analyze_changes, diagnostics, region = (explore.analyze_changes, C.change_diagnostics,
                                            C.change_region)

    def counted(*args, **kwargs):
        calls.append(1)
        return analyze_changes(*args, **kwargs)

    def sized(system, old, new, occurs):
        sub = region(system, old, new, occurs)
        sizes.append(len(sub.equations))
        return sub

    def timed(*args, **kwargs):
        t = time.process_time()
        out = diagnostics(*args, **kwargs)
        cpu.append(time.process_time() - t)
        return out
    explore.analyze_changes, C.change_region, C.change_diagnostics = counted, sized, timed
    t = time.process_time()
    a = analyze(model)
    total = time.process_time() - t
    print(f"{spec}{' --no-key' if '--no-key' in sys.argv else ''}: analyze {total:.2f} s, "
          f"change diagnostics {sum(cpu):.3f} s, {len(calls)} changes analysed of "
          f"{len(sizes)} classes, largest region {max(sizes, default=0)} equations, "
          f"accepted {a.accepted}")


if __name__ == "__main__":
    main()
