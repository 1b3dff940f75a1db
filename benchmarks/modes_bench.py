"""Benchmark of the multimode analysis by explicit enumeration (issue 5, performance).

For each family of `gen_multimode` and size n: the number of long modes, the CPU time
(`time.process_time`, robust on a shared machine) of the per-mode Sigma-method over all modes
(with the steady-instant check), and of the mode-change exploration (one cascade per
single-guard change, Assumption 3; ``analyze_multimode(simultaneous=False)``), without and (for
small n) with impulse analysis and standardization of every restart instant.

    .venv/bin/python benchmarks/modes_bench.py [--max-modes 4096] [--change-max 4096]
        [--std-max 16] [--families clutch_chain,fault_chain] [--budget 300] [--json OUT]

``--budget S``: a family stops growing once one of its sizes took more than S CPU seconds
(the mode-enumeration table of docs/performance.md stops where a size ran over it).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_multimode import FAMILIES  # noqa: E402

from mdae_fmu.modes import analyze_multimode  # noqa: E402
from mdae_fmu.modes.normalize import normalize  # noqa: E402
from mdae_fmu.modes.runs import exec_long, sigma_of_mode, steady_config  # noqa: E402

SIZES = {"clutch_chain": [1, 2, 4, 6, 8, 10, 12], "diode_bank": [1, 2, 4, 6, 8, 10, 12],
         "fault_chain": [1, 2, 3, 4, 5, 6]}


def per_mode(system) -> tuple[int, float]:
    t = time.process_time()
    n = 0
    for m in system.long_modes():
        sig = sigma_of_mode(system, m)
        if sig.ok:
            cfg = steady_config(system, m, sig)
            exec_long(system, cfg, m, sig)
        n += 1
    return n, time.process_time() - t


def bench(max_modes: int, std_max: int, change_max: int, families=None, budget=None):
    rows = []
    for fam, sizes in SIZES.items():
        if families and fam not in families:
            continue
        for n in sizes:
            model = FAMILIES[fam](n)
            system = normalize(model)
            n_modes = 2 ** len(system.guards)
            if n_modes > max_modes:
                break
            nm, t_modes = per_mode(system)
            row = {"family": fam, "n": n, "guards": len(system.guards), "modes": nm,
                   "equations": len(system.equations), "t_modes_s": round(t_modes, 3)}
            if nm <= change_max:
                t = time.process_time()
                a = analyze_multimode(system, standardize=False, simultaneous=False)
                row.update(t_changes_s=round(time.process_time() - t, 3),
                           changes=len(a.changes), configs=len(a.configs),
                           accepted=a.accepted,
                           max_instants=max((c.n_instants for c in a.changes), default=0))
            if nm <= std_max:
                t = time.process_time()
                a = analyze_multimode(system, standardize=True, simultaneous=False)
                row.update(t_std_s=round(time.process_time() - t, 3))
            rows.append(row)
            print(json.dumps(row), flush=True)
            spent = row["t_modes_s"] + row.get("t_changes_s", 0) + row.get("t_std_s", 0)
            if budget is not None and spent > budget:
                break
    return rows


def table(rows) -> str:
    head = ("| family | n | guards | modes | t per-mode (s) | changes | configs | t changes (s) "
            "| t with standardization (s) |")
    out = [head, "|" + "---|" * 9]
    for r in rows:
        out.append(f"| {r['family']} | {r['n']} | {r['guards']} | {r['modes']} | "
                   f"{r['t_modes_s']} | {r.get('changes', '')} | {r.get('configs', '')} | "
                   f"{r.get('t_changes_s', '')} | {r.get('t_std_s', '')} |")
    return "\n".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--max-modes", type=int, default=4096)
    p.add_argument("--std-max", type=int, default=16)
    p.add_argument("--change-max", type=int, default=4096)
    p.add_argument("--families", help="comma-separated subset of " + ", ".join(SIZES))
    p.add_argument("--budget", type=float, help="CPU seconds per size before a family stops")
    p.add_argument("--json", help="write the rows as JSON")
    args = p.parse_args(argv)
    fams = set(args.families.split(",")) if args.families else None
    if fams and fams - set(SIZES):
        p.error(f"unknown families: {', '.join(sorted(fams - set(SIZES)))}")
    rows = bench(args.max_modes, args.std_max, args.change_max, fams, args.budget)
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
