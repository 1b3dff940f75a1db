"""Run every model of the corpus (tests/corpus/manifest.json) through import, analysis, export
and simulation, compare with the source's reference values where it has some, and print the
table (issue 13, Acceptance).

Per model:

* **import**: the flat importer on the model's class (for a file that defines several classes,
  the text of class ``model`` alone); if that is refused and the file is hierarchical Modelica,
  the rumoca front end on the whole file (``api.load(file, model)``; "rumoca" in the table);
  ``refused`` with the importer's ``file:line:col: message`` otherwise;
* **analysis**: accepted / rejected (first message);
* **export**: an FMI 2.0 Model Exchange FMU (gcc -Werror);
* **simulate**: FMPy CVode (rtol 1e-8, 500 output intervals, at most 500 steps each) up to
  the test's stopTime (default 1 s; for an MSL example, whose flat text carries no
  annotation, the manifest's ``stop_time`` is its ``experiment(StopTime)``);
* **cs** (with ``--fmi-type both``): the same FMU's Co-Simulation interface (its embedded
  CVODE, rtol 1e-8, 500 communication steps) over the same time; ``ok`` when it runs to the
  stop time and every Real state and output it records (at most 30, with the variables of
  the references) agrees with the Model Exchange run at the communication points (``|cs -
  me| <= 1e-3 max(1, |me|)``, the Model Exchange value the right limit), ``differs`` (with
  the worst variable) when not, ``failed`` when it stops;
* **reference**: for OpenModelica simulation tests, the ``val(x, t)`` values of the test's
  expected output; a value matches when ``|sim - ref| <= 1e-3 * max(1, |ref|)``.

With export, each model runs in its own process with a time limit (an FMU is loaded into the
process that simulates it). The models that are not committed are
fetched first by ``benchmarks/fetch_corpus.py``.

    python benchmarks/fetch_corpus.py --openmodelica /path/to/OpenModelica
    python benchmarks/corpus.py [--ids PATTERN] [--import-only] [--json OUT]
                                [--fmi-type me|both] [--markdown docs/corpus.md]
                                [--reuse EARLIER.json]
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from fetch_corpus import DEFAULT_OUT, MANIFEST, corpus_file  # noqa: E402

_CLASS_KINDS = "model|class|block"


def class_text(text: str, model: str | None) -> str:
    """The definition of class ``model`` (its last name part) in ``text``, preceded by the
    functions, records and types of ``text`` that it names, or ``text`` itself when there is no
    model name or the file defines no other model class."""
    if not model:
        return text
    last = re.escape(model.rsplit(".", 1)[-1])
    kinds = re.findall(rf"(?m)^\s*(?:partial\s+)?(?:{_CLASS_KINDS})\s+\w+", text)
    if len(kinds) <= 1 and not re.search(r"(?m)^\s*package\b", text):
        return text
    m = re.search(rf"(?ms)^[ \t]*(?:{_CLASS_KINDS})\s+{last}\b.*?^[ \t]*end\s+{last}\s*;", text)
    if not m:
        return text
    body = m.group(0)
    # the functions, records and types of the file (not local to one of its model classes)
    # that the class names come with it
    spans = [(c.start(), c.end()) for c in re.finditer(
        rf"(?ms)^[ \t]*(?:partial\s+)?(?:{_CLASS_KINDS})\s+(\w+)\b.*?^[ \t]*end\s+\1\s*;", text)]
    defs = []
    for d in re.finditer(r"(?ms)^[ \t]*(?:(?:impure|pure)\s+)?(function|record|type)\s+(\w+)\b"
                         r"(?:[^;]*?=[^;]*;|.*?^[ \t]*end\s+\2\s*;)", text):
        if not any(a <= d.start() < b for a, b in spans):
            if re.search(rf"\b{d.group(2)}\b", body):
                defs.append(d.group(0))
    return "\n".join(defs + [body]) + "\n"


def _first_line(msg: str, limit: int = 220) -> str:
    line = str(msg).strip().splitlines()[0] if str(msg).strip() else type(msg).__name__
    return line[:limit]


def right_limit(t, v, at):
    """The values of the result column ``v`` (times ``t``, nondecreasing, with a repeated
    time at an event) at the times ``at``: the last stored row at a stored time (the value
    after the event, as OpenModelica's ``val`` reads it), else linear interpolation between
    the last row before and the first row after (the left limit of a later event)."""
    import numpy as np
    t = np.asarray(t, dtype=float)
    v = np.asarray(v, dtype=float)
    at = np.atleast_1d(np.asarray(at, dtype=float))
    k = np.clip(np.searchsorted(t, at, side="right") - 1, 0, len(t) - 1)
    nxt = np.minimum(k + 1, len(t) - 1)
    span = t[nxt] - t[k]
    frac = np.where((span > 0) & (at > t[k]), (at - t[k]) / np.where(span > 0, span, 1.0), 0.0)
    return v[k] + np.clip(frac, 0.0, 1.0) * (v[nxt] - v[k])


def cs_agreement(me, cs) -> tuple[str, str, int]:
    """``("ok", "", n)`` when every one of the ``n`` float columns of the Co-Simulation result
    ``cs`` matches the Model Exchange result ``me`` at the communication points (``|cs - me|
    <= 1e-3 max(1, |me|)``), else ``("differs", the worst variable and its two values, n)``."""
    import numpy as np
    t = np.asarray(cs["time"], dtype=float)
    worst, text, n = 1.0, "", 0
    for name in cs.dtype.names:
        if name == "time" or name not in me.dtype.names or cs[name].dtype.kind != "f":
            continue
        n += 1
        ref = right_limit(me["time"], me[name], t)
        got = np.asarray(cs[name], dtype=float)
        ratio = np.abs(got - ref) / (1e-3 * np.maximum(1.0, np.abs(ref)))
        k = int(np.argmax(ratio)) if len(ratio) else 0
        if len(ratio) and ratio[k] > worst:
            worst = float(ratio[k])
            text = f"CS {name}({t[k]:g}) = {got[k]:.6g}, ME {ref[k]:.6g}"
    return ("ok" if not text else "differs"), text, n


def run_one(entry: dict, path: Path, import_only: bool, export: bool,
            fmi_type: str = "me") -> dict:
    """Import, analyze, export, simulate and compare one model (module docstring)."""
    from mdae_fmu import api
    from mdae_fmu.diagnostics import InputError, ModelRejected
    from mdae_fmu.importers import frontend
    from mdae_fmu.importers.flat_modelica import parse_modelica
    out: dict = {"id": entry["id"]}
    text = path.read_text()
    t0 = time.perf_counter()
    try:
        try:
            model = parse_modelica(class_text(text, entry.get("model")), str(path))
            out["route"] = "flat"
        except InputError:
            if not frontend.is_hierarchical(text):
                raise
            model = api.load(path, entry.get("model"))
            out["route"] = "rumoca"
    except InputError as err:
        out["import"] = "refused"
        out["message"] = _first_line(err).replace(str(path), path.name)
        return out
    except Exception as err:  # noqa: BLE001 — an importer crash is a finding of the run
        out["import"] = "crash"
        out["message"] = f"{type(err).__name__}: {_first_line(err)}"
        return out
    out["import"] = "imported"
    out["import_s"] = round(time.perf_counter() - t0, 3)
    try:
        analysis = api.analyze(model)
    except ModelRejected as err:        # a refusal the analysis raises, with its diagnosis
        out["analysis"] = "rejected"
        out["message"] = _first_line(err).replace(str(path), path.name)
        return out
    except Exception as err:  # noqa: BLE001
        out["analysis"] = "crash"
        out["message"] = f"{type(err).__name__}: {_first_line(err)}"
        return out
    if not analysis.accepted:
        out["analysis"] = "rejected"
        out["message"] = _first_line(analysis.messages[0] if analysis.messages else "rejected")
        return out
    out["analysis"] = "accepted"
    if import_only or not export:
        return out
    from fmpy import simulate_fmu
    with tempfile.TemporaryDirectory(prefix="mdae_corpus_") as tmp:
        fmu = Path(tmp) / "m.fmu"
        try:
            api.export_fmu(model, fmu, fmi_type=fmi_type)
            out["export"] = "ok"
        except Exception as err:  # noqa: BLE001
            out["export"] = "failed"
            out["message"] = f"{type(err).__name__}: {_first_line(err)}"
            return out
        refs = entry.get("reference", [])
        from fmpy import read_model_description
        md = read_model_description(str(fmu))
        names = {v.name for v in md.modelVariables}
        wanted = sorted({r["variable"] for r in refs if r["variable"] in names})
        if fmi_type == "both":   # the states and outputs too, for the CS/ME agreement
            wanted += [v for v in sorted({d.variable.derivative.name for d in md.derivatives}
                                         | {v.name for v in md.modelVariables
                                            if v.causality == "output"})
                       if v not in wanted][:30]
        stop = float(entry.get("stop_time", 1.0))
        errors: list[str] = []

        def logger(_env, _name, status, _category, message):
            if status >= 3:       # fmi2Error, fmi2Fatal: the FMU's own diagnosis
                errors.append(message.decode() if isinstance(message, bytes) else message)
        try:
            res = simulate_fmu(str(fmu), stop_time=stop, relative_tolerance=1e-8,
                               output_interval=stop / 500, output=wanted or None,
                               logger=logger, fmi_type="ModelExchange")
            out["simulate"] = "ok"
        except Exception as err:  # noqa: BLE001
            out["simulate"] = "failed"
            out["message"] = f"{type(err).__name__}: {_first_line(err)}" + "".join(
                f" [FMU: {e}]" for e in errors[:1])
            return out
        if fmi_type == "both":
            errors.clear()
            try:
                res_cs = simulate_fmu(str(fmu), stop_time=stop, relative_tolerance=1e-8,
                                      output_interval=stop / 500, output=wanted or None,
                                      logger=logger, fmi_type="CoSimulation")
                out["cs"], text, out["cs_compared"] = cs_agreement(res, res_cs)
                if text:
                    out["message"] = text
            except Exception as err:  # noqa: BLE001
                out["cs"] = "failed"
                out["message"] = f"CS: {type(err).__name__}: {_first_line(err)}" + "".join(
                    f" [FMU: {e}]" for e in errors[:1])
    if refs:
        import numpy as np
        t = np.asarray(res["time"], dtype=float)
        checked, bad = 0, []
        for r in refs:
            if r["variable"] not in wanted:
                bad.append(f"{r['variable']}: not a variable of the FMU")
                continue
            # OpenModelica's val(x, t) reads the last stored value at t (the right limit)
            sim = float(right_limit(t, res[r["variable"]], r["time"])[0])
            checked += 1
            if abs(sim - r["value"]) > 1e-3 * max(1.0, abs(r["value"])):
                bad.append(f"{r['variable']}({r['time']:g}) = {sim:.6g}, reference "
                           f"{r['value']:.6g}")
        out["reference"] = "match" if not bad else "differs"
        if bad:
            cs_note = [out["message"]] if "message" in out else []
            out["message"] = "; ".join(bad + cs_note)[:300]
    return out


def _status(r: dict) -> str:
    """One word for the furthest stage reached."""
    for key, good in (("import", "imported"), ("analysis", "accepted"), ("export", "ok"),
                      ("simulate", "ok"), ("cs", "ok")):
        if key == "cs" and key not in r:
            break
        if key not in r:
            return {"analysis": "imported", "export": "accepted",
                    "simulate": "exported"}.get(key, "?")
        if r[key] != good:
            return f"{key} {r[key]}"
    return "simulated"


def markdown(results: list[dict]) -> str:
    """The per-model table; a column ``CS`` when some model was simulated through its
    Co-Simulation interface too (``--fmi-type both``)."""
    with_cs = any("cs" in r for r in results)
    cells = []
    for r in results:
        cs = f" {r.get('cs', '')} |" if with_cs else ""
        cells.append("| {id} | {route} | {imp} | {ana} | {exp} | {sim} |{cs} {ref} | {msg} |"
                     .format(id=r["id"], route=r.get("route", ""), imp=r.get("import", ""),
                             ana=r.get("analysis", ""), exp=r.get("export", ""),
                             sim=r.get("simulate", ""), cs=cs, ref=r.get("reference", ""),
                             msg=r.get("message", "").replace("|", "\\|")))
    cs_head, cs_rule = (" CS |", "---|") if with_cs else ("", "")
    head = (f"| model | route | import | analysis | export | simulate |{cs_head} reference | "
            f"message |\n|---|---|---|---|---|---|{cs_rule}---|---|")
    return head + "\n" + "\n".join(cells) + "\n"


def summary(results: list[dict]) -> str:
    n = len(results)
    imp = sum(r.get("import") == "imported" for r in results)
    acc = sum(r.get("analysis") == "accepted" for r in results)
    exp = sum(r.get("export") == "ok" for r in results)
    sim = sum(r.get("simulate") == "ok" for r in results)
    refs = [r for r in results if "reference" in r]
    match = sum(r["reference"] == "match" for r in refs)
    cs_runs = [r for r in results if "cs" in r]
    cs = (f", {sum(r['cs'] == 'ok' for r in cs_runs)} of {len(cs_runs)} also through "
          "Co-Simulation, agreeing with Model Exchange" if cs_runs else "")
    return (f"{n} models: {imp} imported ({n - imp} refused or crashed), {acc} accepted by the "
            f"analysis, {exp} exported, {sim} simulated{cs}; reference values: {match} of "
            f"{len(refs)} simulated models with references match")


def _full_run(entry: dict, a) -> dict:
    """`run_one` with export in a process of its own, with the time limit ``a.timeout``."""
    cmd = [sys.executable, __file__, "--one", entry["id"], "--corpus-dir", str(a.corpus_dir),
           "--fmi-type", a.fmi_type]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
    except subprocess.TimeoutExpired:
        # the limit covers the whole run (import, analysis, export, simulation): the stage
        # that overran is not known here
        return {"id": entry["id"], "import": "timeout",
                "message": f"over {a.timeout:.0f} s for import, analysis, export and "
                           "simulation together"}
    lines = p.stdout.strip().splitlines()
    if p.returncode == 0 and lines:
        return json.loads(lines[-1])
    err = p.stderr.strip().splitlines()
    return {"id": entry["id"], "import": "crash",
            "message": _first_line(err[-1] if err else f"exit code {p.returncode}")}


def write_markdown(path: Path, table: str, name: str = "") -> None:
    """Write ``table`` to ``path``, between the begin/end markers (``<!-- corpus table NAME:
    begin -->``, without NAME for the main table) when the file has them (the hand-written
    part of docs/corpus.md stays)."""
    label = f"corpus table {name}".rstrip()
    begin, end = f"<!-- {label}: begin -->", f"<!-- {label}: end -->"
    text = path.read_text() if path.exists() else ""
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + begin + "\n" + table + rest[rest.index(end):]
    else:
        text = table
    path.write_text(text)


def _reusable(new: dict, old: dict | None) -> bool:
    """An earlier full result can stand for a model whose import and analysis came out the
    same now (same status, same message)."""
    if not old or ("export" not in old and old.get("analysis") == "accepted"):
        return False   # an import-only result has nothing to reuse for an accepted model
    return all(new.get(k) == old.get(k) for k in ("import", "route", "analysis")) and (
        new.get("analysis") == "accepted" or new.get("message") == old.get("message"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ids", default="*", help="fnmatch pattern over model ids")
    ap.add_argument("--corpus-dir", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--import-only", action="store_true", help="import and analysis only")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--fmi-type", choices=("me", "both"), default="me",
                    help="'both': export Model Exchange and Co-Simulation in one FMU and "
                    "simulate each (column CS of the table)")
    ap.add_argument("--json", type=Path, help="write the results as JSON")
    ap.add_argument("--markdown", type=Path, help="write the table as Markdown")
    ap.add_argument("--table", default="", help="the name of the table's markers in the "
                    "--markdown file (e.g. 'bm': '<!-- corpus table bm: begin -->')")
    ap.add_argument("--reuse", type=Path, help="JSON of an earlier full run: a model whose "
                    "import and analysis come out the same is not exported and simulated again")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    entries = json.loads(MANIFEST.read_text())["models"]
    if a.one:
        entry = next(e for e in entries if e["id"] == a.one)
        print(json.dumps(run_one(entry, corpus_file(entry, a.corpus_dir), a.import_only,
                                 export=True, fmi_type=a.fmi_type)))
        return 0
    previous = ({r["id"]: r for r in json.loads(a.reuse.read_text())} if a.reuse else {})
    results = []
    for entry in entries:
        if not fnmatch.fnmatch(entry["id"], a.ids):
            continue
        path = corpus_file(entry, a.corpus_dir)
        if not path.exists():
            r = {"id": entry["id"], "import": "missing",
                 "message": "not fetched (run benchmarks/fetch_corpus.py)"}
        elif a.import_only or previous:   # no FMU is loaded: one process for all
            try:
                r = run_one(entry, path, True, export=False)
            except Exception as err:  # noqa: BLE001
                r = {"id": entry["id"], "import": "crash",
                     "message": f"{type(err).__name__}: {_first_line(err)}"}
            if not a.import_only and _reusable(r, previous.get(entry["id"])):
                r = previous[entry["id"]]
            elif not a.import_only and r.get("analysis") == "accepted":
                r = _full_run(entry, a)
        else:
            r = _full_run(entry, a)
        results.append(r)
        print(f"{r['id']:60s} {_status(r):22s} {r.get('message', '')[:150]}", flush=True)
        if a.json:    # after each model: an interrupted run keeps what it measured
            a.json.write_text(json.dumps(results, indent=1))
    print(summary(results))
    if a.markdown:
        write_markdown(a.markdown, summary(results) + "\n\n" + markdown(results), a.table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
