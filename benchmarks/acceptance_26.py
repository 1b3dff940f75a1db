"""Issue 26's acceptance list, end to end: one line per bullet with its figure and PASS or FAIL
(or NO EVIDENCE where this run could not measure it), every command in a fresh process, CPU
from the operating system's accounting of that process and of the children it waited for
(``wait4``: user + system, gcc and pytest workers included).

Bullets (``--only`` takes their names, cheapest first):

* ``singular40``: ``mdae-fmu analyze`` of the backlash beside 19 fault branches (40 guards,
  2^40 modes; tests/structure/test_guard_pruning.py's ``_backlash``) rejected with the formula
  of its one singular combination of guards and one concrete mode of it; the same model with
  ``b2 > 1e-10`` in both contact guards (the combination unreachable) accepted; and
  ``fault_chain_ill_posed(20, 3, 18)`` (4^20 = 2^40 valuations, benchmarks/gen_multimode.py)
  rejected naming ``open3 and open18``.
* ``gear``: OpenModelica's flat MSL Gear (tests/corpus/manifest.json ``om/msl/Gear``, fetched
  by benchmarks/fetch_corpus.py) analysed and exported by the CLI and simulated by FMPy (ME)
  to its stop time.
* ``rlc``: RLC ladders of benchmarks/gen_modeller.py with input-driven ideal switches and with
  ideal diodes, n = 10 and 20, exported by the CLI (accepted, exported, CPU), and
  tests/corpus/test_modeller_families.py's comparisons with the exact piecewise solution
  (matrix exponentials, brentq for the diodes' instants) to 1e-7, slow cases included.
* ``drive``: drive lines of benchmarks/gen_modeller.py (random inertias, a damper per shaft,
  clutches by Boolean inputs and by computed time windows): ``mdae-fmu export`` (default
  options) at n = 8 / 50 / 200 against 5 / 30 / 120 s CPU; 10 s simulated (FMPy ME with CVode
  and with Euler, and the CS FMU's own CVode; `guarded_scaling.simulate_one`) with 30 random
  host switchings (inputs) or 30 switchings of 15 time windows (``time30``), the run-time
  exponent from n = 50 to the largest size (at most 1.2; CPU of the simulation in its fresh
  process, median of ``--repeat``) and the largest relative jump of the angular momentum sum
  J_k w_k across the events (at most 1e-10).
* ``seeds``: every reference model (reference_models/*.mo) and the inline models of
  tests/data/one_pipeline/ recorded in tests/data/reference_trajectories/, no model listed as
  expected to differ, and tests/fmu/test_reference_trajectories.py (the default FMU's verdict
  and its ME and CS trajectories in FMPy against the enumerated per-mode FMU's recordings to
  1e-10) and tests/fmu/test_host_matrix.py (the emulating hosts of tests/host, against FMPy
  and the reference results) passing.
* ``oracle``: the enumerated oracle in tests covers every family of
  benchmarks/gen_multimode.py at its largest size up to 2^6 modes (verdict, offsets, index,
  states and blocks per mode in tests/structure/test_implicit_analysis.py; the guarded
  schedule's restart values against the enumerated automaton in
  tests/modes/test_enumerated_oracle.py), and so the families of benchmarks/gen_modeller.py
  (both, in test_enumerated_oracle.py), and those tests pass.
* ``corpus``: a JSON of ``benchmarks/corpus.py`` given by ``--corpus-json`` (a run takes
  30 min and more; not started here; a partial run's JSON is read too) against the statuses
  docs/corpus.md records per model: the models that lost a stage (import, analysis, export,
  simulation, reference values) and those that gained one; for a whole run also README.md's
  figures (accepted, every accepted exported, simulated, references matched).
* ``simbar``: the seed models' simulation bar (benchmarks/sim_bench.py: generated /
  hand-written CPU <= 1.2, 1.2, 1.5).

    .venv/bin/python benchmarks/acceptance_26.py [--only singular40,gear,rlc,drive,seeds,
        oracle,corpus,simbar] [--sizes 8,50,200] [--variants input,time30] [--repeat 3]
        [--corpus-json OUT.json]
        [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from accounting import run

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

CLI = "import sys; from mdae_fmu.cli import main; sys.exit(main())"
#: issue 26: export CPU seconds by drive-line size, run-time exponent, momentum jump
EXPORT_LIMIT = {8: 5.0, 50: 30.0, 200: 120.0}
MAX_EXPONENT = 1.2
MAX_JUMP = 1e-10
#: README.md's corpus figures (the 188 models of OpenModelica's tests, the MSL 3.1 examples and
#: rumoca's examples; the Base Modelica files apart)
CORPUS_BAR = {"accepted": 151, "simulated": 149, "references": 55}




def cli(*args: str, cwd: Path | None = None, timeout: float = 1800.0) -> dict:
    return run([sys.executable, "-c", CLI, *args], cwd=cwd, timeout=timeout)


def pytest(*args: str, timeout: float = 3600.0) -> dict:
    """A pytest run (``-p no:cacheprovider``) with its counts from a JUnit report: passed,
    failed (errors included), skipped (with their reasons), xfailed, and the failed ids."""
    with tempfile.TemporaryDirectory(prefix="acceptance26_") as tmp:
        xml = Path(tmp) / "junit.xml"
        r = run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                 f"--junitxml={xml}", *args], cwd=ROOT, timeout=timeout)
        counts = {"passed": 0, "failed": 0, "skipped": 0, "failed_ids": [], "skip_reasons": []}
        if xml.exists():
            for case in ET.parse(xml).getroot().iter("testcase"):
                name = f"{case.get('classname', '')}::{case.get('name', '')}"
                kinds = {child.tag: child for child in case}
                if "failure" in kinds or "error" in kinds:
                    counts["failed"] += 1
                    counts["failed_ids"].append(name)
                elif "skipped" in kinds:
                    counts["skipped"] += 1
                    counts["skip_reasons"].append(
                        (kinds["skipped"].get("message") or "")[:120])
                else:
                    counts["passed"] += 1
    return {**r, **counts}


def tests_line(r: dict) -> str:
    """``N passed, M failed, K skipped, C s CPU`` of a `pytest` run."""
    text = f"{r['passed']} passed, {r['failed']} failed, {r['skipped']} skipped, " \
        f"{r['cpu']} s CPU"
    if r["failed_ids"]:
        text += " (failed: " + ", ".join(r["failed_ids"][:4]) + ")"
    return text


def tests_pass(r: dict, allow_skips: bool = False) -> bool:
    return r["code"] == 0 and r["failed"] == 0 and r["passed"] > 0 and \
        (allow_skips or r["skipped"] == 0)


class Report:
    """The bullets' lines, printed as they come."""

    def __init__(self) -> None:
        self.rows: list[dict] = []

    def line(self, bullet: str, what: str, ok: bool | None, figure: str) -> None:
        verdict = {True: "PASS", False: "FAIL", None: "NO EVIDENCE"}[ok]
        self.rows.append({"bullet": bullet, "what": what, "verdict": verdict, "figure": figure})
        print(f"{verdict:11s} [{bullet}] {what}: {figure}", flush=True)


# --- bullets ----------------------------------------------------------------------------------

def singular40(rep: Report, tmp: Path) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    sys.path.insert(0, str(ROOT / "tests" / "structure"))
    from gen_multimode import fault_chain_ill_posed
    from test_guard_pruning import _backlash

    from mdae_fmu.modelica_printer import print_model
    for guarded in (False, True):
        model = _backlash(19, guarded)
        path = tmp / f"{model.name}.mo"
        path.write_text(print_model(model))
        r = cli("analyze", str(path))
        out = r["out"]
        if not guarded:
            named = f"structurally singular in {2 ** 38} of {2 ** 40} modes: " \
                "(phi2 - phi1 > b2 and phi2 - phi1 < (-b2))" in out
            concrete = [ln for ln in out.splitlines() if ln.strip().startswith("mode {")]
            dm = any("no equation determines {tp, tn}" in ln for ln in concrete)
            ok = r["code"] == 1 and "1099511627776 consistent modes" in out and named and dm
            rep.line("singular40", "backlash + 19 fault branches (2^40 modes) rejected naming "
                     "the combination", ok,
                     f"exit {r['code']}, formula named {named}, concrete mode with its DM "
                     f"diagnostic {dm}, {r['cpu']} s CPU")
        else:
            ok = r["code"] == 0 and "verdict: accepted" in out
            modes = re.search(r"(\d+) consistent modes", out)
            rep.line("singular40", "the same with b2 > 1e-10 in the contact guards accepted",
                     ok, f"exit {r['code']}, {modes.group(1) if modes else '?'} consistent "
                     f"modes (3 * 2^38 = {3 * 2 ** 38}), {r['cpu']} s CPU")
    model = fault_chain_ill_posed(20, 3, 18)
    path = tmp / f"{model.name}.mo"
    path.write_text(print_model(model))
    r = cli("analyze", str(path))
    named = re.search(r"structurally singular in \d+ of \d+ modes: \(?open3 and open18\)?",
                      r["out"]) is not None
    rep.line("singular40", "fault_chain_ill_posed(20, 3, 18) (4^20 = 2^40 valuations) rejected "
             "naming open3 and open18", r["code"] == 1 and named,
             f"exit {r['code']}, formula named {named}, {r['cpu']} s CPU")


def gear(rep: Report, tmp: Path) -> None:
    from fetch_corpus import DEFAULT_OUT, MANIFEST, corpus_file
    entry = next(e for e in json.loads(MANIFEST.read_text())["models"]
                 if e["id"] == "om/msl/Gear")
    src = corpus_file(entry, DEFAULT_OUT)
    if not src.exists():
        rep.line("gear", "MSL Gear accepted and simulated", None,
                 f"{src.relative_to(ROOT)} not fetched (benchmarks/fetch_corpus.py "
                 "--openmodelica DIR); tests/corpus/test_gear.py skips it too")
        return
    from corpus import class_text
    path = tmp / "Gear.mo"
    path.write_text(class_text(src.read_text(), entry["model"]))
    a = cli("analyze", str(path))
    fmu = tmp / "Gear.fmu"
    e = cli("export", str(path), "-o", str(fmu))
    sim = run([sys.executable, "-c", (
        "import json, sys; import numpy as np; from fmpy import simulate_fmu\n"
        "r = simulate_fmu(sys.argv[1], stop_time=1.0, relative_tolerance=1e-8,"
        " output_interval=1e-3, record_events=True)\n"
        "t = r['time']; names = [n for n in r.dtype.names if n != 'time']\n"
        "print(json.dumps(dict(stop=float(t[-1]), rows=len(t),"
        " events=int(np.sum(np.diff(t) == 0)),"
        " finite=bool(all(np.isfinite(r[n]).all() for n in names)))))"), str(fmu)]) \
        if e["code"] == 0 else {"code": None, "out": "", "cpu": 0.0}
    res = json.loads(sim["out"].splitlines()[-1]) if sim["code"] == 0 else {}
    ok = a["code"] == 0 and e["code"] == 0 and res.get("stop") == 1.0 and res.get("finite")
    t = pytest("tests/corpus/test_gear.py", "-m", "")
    rep.line("gear", "MSL Gear (omc flat output) accepted, exported, simulated 1 s (FMPy ME)",
             bool(ok) and tests_pass(t),
             f"analyze exit {a['code']} ({a['cpu']} s CPU), export exit {e['code']} "
             f"({e['cpu']} s CPU), run to t = {res.get('stop')} with {res.get('events')} "
             f"events, finite {res.get('finite')}; tests/corpus/test_gear.py {tests_line(t)}")


def rlc(rep: Report, tmp: Path) -> None:
    import gen_modeller
    for element in ("switch", "diode"):
        figures, ok = [], True
        for n in (10, 20):
            text = gen_modeller.rlc_cells(n, element)
            name = re.search(r"^class (\w+)", text, re.M).group(1)
            path = tmp / f"{name}.mo"
            path.write_text(text)
            r = cli("export", str(path), "-o", str(path.with_suffix(".fmu")), cwd=tmp)
            ok = ok and r["code"] == 0
            figures.append(f"n = {n}: exit {r['code']}, {r['cpu']} s CPU")
        plural = "switches" if element == "switch" else "diodes"
        rep.line("rlc", f"RLC cells with ideal {plural} exported (n = 10, 20)", ok,
                 "; ".join(figures))
    t = pytest("tests/corpus/test_modeller_families.py", "-m", "", "-k", "rlc")
    rep.line("rlc", "the same FMUs against the exact piecewise solution to 1e-7 "
             "(n = 10, 20, switches and diodes)", tests_pass(t) and t["passed"] >= 4,
             tests_line(t))


def _exponent(rows: list[dict], key: str) -> float | None:
    ok = [r for r in rows if r["n"] >= 50 and isinstance(r.get(key), float)]
    if len(ok) < 2:
        return None
    a, b = ok[0], ok[-1]
    return math.log(b[key] / a[key]) / math.log(b["n"] / a["n"])


def drive(rep: Report, tmp: Path, sizes: list[int], variants: list[str],
          repeat: int) -> None:
    from drive_line_bench import FAMILY, SOLVERS, simulate
    from guarded_scaling import model_text_and_inertias
    for variant in variants:
        rows = []
        for n in sizes:
            path = tmp / f"DriveLine{n}{variant.capitalize()}.mo"
            path.write_text(model_text_and_inertias(FAMILY[variant], n)[0])
            fmu = path.with_suffix(".fmu")
            r = cli("export", str(path), "-o", str(fmu), cwd=tmp)
            row: dict = {"n": n, "export_cpu": r["cpu"], "export_code": r["code"]}
            limit = EXPORT_LIMIT.get(n)
            rep.line("drive", f"{variant}: export n = {n}"
                     + (f" under {limit:g} s CPU" if limit else ""),
                     r["code"] == 0 and (limit is None or r["cpu"] < limit),
                     f"exit {r['code']}, {r['cpu']} s CPU ({r['wall']} s wall)")
            if r["code"] == 0:
                cs = path.with_name(f"{path.stem}_cs.fmu")
                c = cli("export", "--fmi-type", "cs", str(path), "-o", str(cs), cwd=tmp)
                for solver in SOLVERS:
                    if solver == "CS" and c["code"] != 0:
                        row["run_CS"] = f"CS export exit {c['code']}"
                        continue
                    try:
                        sims = [simulate(cs if solver == "CS" else fmu, variant, n, solver)
                                for _ in range(repeat)]
                    except RuntimeError as err:
                        row[f"run_{solver}"] = str(err)
                        continue
                    row[f"run_{solver}"] = round(statistics.median(s["cpu"] for s in sims), 3)
                    if solver != "CS":      # (the CS results have no event rows)
                        row["events"] = sims[0]["events"]
                    row["jump"] = max(row.get("jump", 0.0), *(s["momentum_jump"] for s in sims))
            rows.append(row)
            print(json.dumps({"variant": variant, **row}), flush=True)
        jumps = [r.get("jump") for r in rows]
        events = [r.get("events") for r in rows]
        # 30 host switchings; time30: 15 windows (2 switchings each) when n >= 15
        want = [30 if variant == "input" else 2 * min(15, n) for n in sizes]
        rep.line("drive", f"{variant}: angular momentum across every event (n = "
                 f"{', '.join(map(str, sizes))})",
                 all(j is not None and j <= MAX_JUMP for j in jumps)
                 and all(e is not None and e >= w for e, w in zip(events, want)),
                 f"largest relative jump {max((j for j in jumps if j is not None), default=0):.1e}"
                 f" over {events} events")
        for solver in SOLVERS:
            e = _exponent(rows, f"run_{solver}")
            times = " / ".join(str(r.get(f"run_{solver}")) for r in rows)
            label = {"CVode": "FMPy CVode (ME)", "Euler": "FMPy Euler (ME)",
                     "CS": "the CS FMU's CVode"}[solver]
            rep.line("drive", f"{variant}: 10 s run-time exponent n = 50 -> {max(sizes)}, "
                     f"{label}", None if e is None else e <= MAX_EXPONENT,
                     f"{'-' if e is None else f'{e:.2f}'} (CPU s at n = "
                     f"{', '.join(map(str, sizes))}: {times})")


def seeds(rep: Report) -> None:
    from record_reference_trajectories import OUT
    manifest = json.loads((OUT / "manifest.json").read_text())["models"]
    sources = {m.get("source") for m in manifest.values()}
    wanted = sorted(str(p.relative_to(ROOT)) for p in
                    [*(ROOT / "reference_models").glob("*.mo"),
                     *(ROOT / "tests" / "data" / "one_pipeline").glob("*.mo")])
    missing = [w for w in wanted if w not in sources]
    sys.path.insert(0, str(ROOT / "tests" / "fmu"))
    import test_reference_trajectories as trt
    rep.line("seeds", "every reference and one-pipeline model recorded, none expected to differ",
             not missing and not trt.EXPECTED_TO_DIFFER,
             f"{len(wanted)} models, {len(manifest)} recorded, missing {missing or 'none'}, "
             f"expected to differ {sorted(trt.EXPECTED_TO_DIFFER) or 'none'}")
    t = pytest("tests/fmu/test_reference_trajectories.py", "-m", "", "-n", "2")
    rep.line("seeds", "default FMU = recorded enumerated FMU, verdicts and ME/CS trajectories "
             "to 1e-10 (FMPy)", tests_pass(t), tests_line(t))
    h = pytest("tests/fmu/test_host_matrix.py", "-m", "", "-n", "2")
    rep.line("seeds", "the emulating hosts of tests/host (fmusim- and checker-style) on every "
             "reference model", tests_pass(h, allow_skips=True), tests_line(h)
             + (f"; skipped: {sorted(set(h['skip_reasons']))[:2]}" if h["skipped"] else ""))


def oracle(rep: Report) -> None:
    from gen_multimode import FAMILIES
    sys.path.insert(0, str(ROOT / "tests" / "modes"))
    from test_enumerated_oracle import CASES

    from mdae_fmu.structure.per_mode import analyze_modes
    text = (ROOT / "tests" / "structure" / "test_implicit_analysis.py").read_text()
    per_mode_sizes = {"clutch_chain": range(1, 9), "diode_bank": range(1, 9),
                      "fault_chain": range(1, 5)}
    gaps = []
    for fam, make in FAMILIES.items():
        largest = 0
        for n in range(1, 7):
            if len(analyze_modes(make(n), latent=False).modes) <= 64:
                largest = n
        if (fam, largest) not in CASES:
            gaps.append(f"{fam}({largest}): restart values not compared")
        if largest not in per_mode_sizes[fam] or f'"{fam}"' not in text:
            gaps.append(f"{fam}({largest}): per-mode offsets and blocks not compared")
    rep.line("oracle", "every gen_multimode family at its largest size up to 2^6 modes covered",
             not gaps, "; ".join(gaps) or
             f"{', '.join(FAMILIES)}: restarts (test_enumerated_oracle CASES {CASES}), "
             "offsets/index/states/blocks (test_implicit_analysis n <= 8, fault_chain <= 4)")
    from test_enumerated_oracle import MODELLER
    rep.line("oracle", "the gen_modeller families against the same oracle",
             {"drive_line", "drive_line_time", "shaft_tree", "rlc_switch", "rlc_diode"}
             <= set(MODELLER),
             f"{', '.join(MODELLER)}: per-mode structure and restarts "
             "(test_enumerated_oracle.py::test_modeller_families_agree_with_the_enumerated_"
             "analysis, below)")
    t = pytest("tests/modes/test_enumerated_oracle.py",
               "tests/structure/test_implicit_analysis.py::test_families_agree_with_enumeration",
               "tests/structure/test_implicit_analysis.py::test_fault_chain_agrees_with_enumeration",
               "tests/structure/test_implicit_analysis.py::test_seed_models_agree_with_enumeration",
               "-m", "", "-n", "2")
    rep.line("oracle", "the oracle tests pass (verdicts, offsets, states, blocks, restarts)",
             tests_pass(t), tests_line(t))


#: a corpus model's stages, each good or not (benchmarks/corpus.py's statuses)
STAGES = (("import", "imported"), ("analysis", "accepted"), ("export", "ok"), ("simulate", "ok"),
          ("reference", "match"))


def corpus_table(path: Path = ROOT / "docs" / "corpus.md") -> dict[str, dict]:
    """The statuses docs/corpus.md records per model (its tables' rows: model, route, import,
    analysis, export, simulate, [CS,] reference, message)."""
    rows: dict[str, dict] = {}
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 8 or "/" not in cells[0] or " " in cells[0]:
            continue
        ref = cells[7] if len(cells) >= 9 else cells[6]
        rows[cells[0]] = dict(zip(("import", "analysis", "export", "simulate"), cells[2:6]),
                              reference=ref)
    return rows


def corpus(rep: Report, corpus_json: Path | None) -> None:
    if corpus_json is None or not corpus_json.exists():
        rep.line("corpus", "corpus figures of README.md", None,
                 "no --corpus-json (python benchmarks/corpus.py --json OUT, about 30 min)")
        return
    rows = json.loads(corpus_json.read_text())
    table = corpus_table()
    worse, better = [], []
    for r in rows:
        was = table.get(r["id"])
        if was is None:
            continue
        lost = [k for k, good in STAGES if was.get(k) == good and r.get(k) != good]
        gained = [k for k, good in STAGES if was.get(k) != good and r.get(k) == good]
        if lost:
            worse.append(f"{r['id']} ({', '.join(lost)}: {r.get('message', '')[:60]})")
        if gained:
            better.append(f"{r['id']} ({', '.join(gained)})")
    core = [r for r in rows if not r["id"].startswith("bm-")]
    got = {"accepted": sum(r.get("analysis") == "accepted" for r in core),
           "simulated": sum(r.get("simulate") == "ok" for r in core),
           "references": sum(r.get("reference") == "match" for r in core)}
    exported = sum(r.get("export") == "ok" for r in core)
    complete = len(rows) >= len(table)
    ok = not worse and (not complete or (all(got[k] >= v for k, v in CORPUS_BAR.items())
                                         and exported == got["accepted"]))
    rep.line("corpus", "corpus models no worse than docs/corpus.md"
             + (f", README's {CORPUS_BAR}" if complete else ""), ok,
             f"{len(rows)} of {len(table)} models run; {got}, exported {exported} (Base "
             f"Modelica apart); worse: {worse or 'none'}; better: {better or 'none'}")


def simbar(rep: Report) -> None:
    r = run([sys.executable, str(HERE / "sim_bench.py"), "--repeats", "3"], cwd=ROOT)
    ratios = re.findall(r"^\| (\w+) \|[^|]*\|[^|]*\|[^|]*\| ([0-9.]+) \(<= ([0-9.]+)\)",
                        r["out"], re.M)
    ok = r["code"] == 0 and bool(ratios) and all(float(x) <= float(b) for _, x, b in ratios)
    rep.line("simbar", "seed models' simulation CPU, generated / hand-written (sim_bench.py)",
             ok, ", ".join(f"{m} {x} (<= {b})" for m, x, b in ratios) or r["out"][-300:])


BULLETS = ("singular40", "gear", "rlc", "drive", "seeds", "oracle", "corpus", "simbar")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", default=",".join(BULLETS))
    p.add_argument("--sizes", default="8,50,200")
    p.add_argument("--variants", default="input,time30")
    p.add_argument("--repeat", type=int, default=3, help="simulations per FMU (median)")
    p.add_argument("--corpus-json", type=Path)
    p.add_argument("--json", type=Path)
    a = p.parse_args(argv)
    rep = Report()
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="acceptance26_") as d:
        tmp = Path(d)
        for name in a.only.split(","):
            if name == "drive":
                drive(rep, tmp, [int(x) for x in a.sizes.split(",")], a.variants.split(","),
                      a.repeat)
            elif name == "corpus":
                corpus(rep, a.corpus_json)
            elif name in ("seeds", "oracle", "simbar"):
                globals()[name](rep)
            else:
                globals()[name](rep, tmp)
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    if a.json:
        a.json.write_text(json.dumps(rep.rows, indent=1))
    return 0 if all(r["verdict"] == "PASS" for r in rep.rows) else 1


if __name__ == "__main__":
    sys.exit(main())
