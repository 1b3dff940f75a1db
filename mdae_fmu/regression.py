"""``mdae-fmu regress SUITE.toml``: export, simulate and compare a suite of models on Dask.

A suite file (docs/regression.md, suite files) has an optional ``[suite]`` table (``name``
and default ``rtol``, ``atol``, ``time_tolerance``, ``method``) and one ``[[model]]`` table
per entry: ``name``, ``test`` (a model file or an FMU), ``reference`` (a CSV, a model or an
FMU), and optionally ``stop_time``, ``variables``, ``rtol``, ``atol``, ``time_tolerance``,
``method``, ``solver_tolerance`` (FMPy's relative tolerance), ``input`` (a CSV of input
signals, same format as a reference) and ``start_values`` (a table). Paths are relative to the
suite file.

Every entry is one Dask task (embedded LocalCluster by default, ``--scheduler`` for an
existing cluster); the entry's files travel with the task as bytes, so workers need no shared
file system. An entry that fails to import, export or simulate is a failed entry carrying its
message; the suite goes on. Outputs: a summary table on stdout, ``index.html`` linking one
report per model (``models/NAME.html``), and JUnit XML.
"""

from __future__ import annotations

import math
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .diagnostics import EXIT_OK, EXIT_REJECTED, InputError, MdaeError, SourceLoc

ENTRY_KEYS = {"name", "test", "reference", "stop_time", "variables", "rtol", "atol",
              "time_tolerance", "method", "input", "start_values", "solver_tolerance"}
SUITE_KEYS = {"name", "rtol", "atol", "time_tolerance", "method", "solver_tolerance"}
FILE_KEYS = ("test", "reference", "input")


@dataclass
class Entry:
    """One model of a suite, with its files read into memory (name -> bytes)."""
    name: str
    files: dict[str, tuple[str, bytes]]          # role -> (file name, content)
    options: dict = field(default_factory=dict)


def _toml():
    try:
        import tomllib
        return tomllib
    except ImportError:                           # Python 3.10
        import tomli
        return tomli


def load_suite(path: str | Path) -> tuple[str, list[Entry]]:
    """Read a suite file; unreadable TOML, unknown keys, missing fields and missing files
    are `InputError`s naming the file (and the line for TOML syntax)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror}") from None
    toml = _toml()
    try:
        data = toml.loads(raw.decode("utf-8"))
    except toml.TOMLDecodeError as err:
        import re
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(err))
        line, col = (int(m.group(1)), int(m.group(2))) if m else (None, None)
        msg = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", str(err))
        if line:
            src = raw.decode("utf-8", "replace").splitlines()
            raise InputError(msg, SourceLoc(str(path), line, col or 1),
                             src[line - 1] if line <= len(src) else None) from None
        raise InputError(f"{path}: {msg}") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a UTF-8 text file") from None
    unknown = set(data) - {"suite", "model"}
    if unknown:
        raise InputError(f"{path}: unknown table '{sorted(unknown)[0]}' (expected [suite] and "
                         "[[model]])")
    suite = data.get("suite", {})
    bad = set(suite) - SUITE_KEYS
    if bad:
        raise InputError(f"{path}: [suite]: unknown key '{sorted(bad)[0]}' (known: "
                         f"{', '.join(sorted(SUITE_KEYS))})")
    models = data.get("model", [])
    if not isinstance(models, list) or not models:
        raise InputError(f"{path}: no [[model]] entries")
    base = path.parent
    entries, names = [], set()
    defaults = {k: v for k, v in suite.items() if k != "name"}
    for k, m in enumerate(models, start=1):
        where = f"{path}: [[model]] #{k}"
        bad = set(m) - ENTRY_KEYS
        if bad:
            raise InputError(f"{where}: unknown key '{sorted(bad)[0]}' (known: "
                             f"{', '.join(sorted(ENTRY_KEYS))})")
        for req in ("test", "reference"):
            if req not in m:
                raise InputError(f"{where}: missing '{req}'")
        name = str(m.get("name") or Path(m["test"]).stem)
        if name in names:
            raise InputError(f"{where}: name '{name}' is used twice")
        names.add(name)
        files = {}
        for role in FILE_KEYS:
            if role in m:
                f = base / m[role]
                try:
                    files[role] = (Path(m[role]).name, f.read_bytes())
                except OSError as err:
                    raise InputError(f"{where} ({name}): {role} {f}: {err.strerror}") from None
        options = {**defaults, **{k2: v for k2, v in m.items()
                                  if k2 not in FILE_KEYS and k2 != "name"}}
        entries.append(Entry(name, files, options))
    return str(suite.get("name") or path.stem), entries


def run_entry(entry: Entry) -> dict:
    """Export, simulate and compare one entry (on a worker). Never raises: an entry that
    cannot be read, exported or simulated comes back with status ``error`` and the
    message."""
    from .comparison import compare
    t0 = time.perf_counter()
    out = {"name": entry.name, "comparison": None, "message": ""}
    try:
        with tempfile.TemporaryDirectory(prefix="mdae_regress_") as tmp:
            paths = {}
            for role, (fname, data) in entry.files.items():
                d = Path(tmp) / role
                d.mkdir()
                p = d / fname
                p.write_bytes(data)
                paths[role] = p
            o = entry.options
            c = compare(paths["test"], paths["reference"], variables=o.get("variables"),
                        rtol=float(o.get("rtol", 1e-3)), atol=float(o.get("atol", 1e-6)),
                        time_tolerance=o.get("time_tolerance"), stop_time=o.get("stop_time"),
                        method=o.get("method", "tube"), start_values=o.get("start_values"),
                        input=paths.get("input"),
                        relative_tolerance=o.get("solver_tolerance"), quiet=True)
        out["comparison"] = c
        out["status"] = "pass" if c.passed else "fail"
        out["summary"] = ("every variable inside its tube" if c.passed else
                          "; ".join(f"{s.name} leaves at t = {s.first_exit:.6g}"
                                    for s in c.failed))
    except MdaeError as err:
        out.update(status="error", message=str(err), summary=str(err).splitlines()[0],
                   error_type=type(err).__name__)
    except Exception as err:       # an internal error of one entry must not stop the suite
        out.update(status="error", message=f"internal error: {type(err).__name__}: {err}",
                   summary=f"internal error: {type(err).__name__}", error_type="internal")
    out["seconds"] = time.perf_counter() - t0
    return out


def _report_name(name: str, used: set) -> str:
    stem = "".join(c if c.isalnum() or c in "_-" else "_" for c in name) or "model"
    cand, k = stem, 1
    while cand in used:
        k += 1
        cand = f"{stem}_{k}"
    used.add(cand)
    return f"models/{cand}.html"


def regress(suite_file: str | Path, output_dir: str | Path = "regress-report",
            junit: str | Path | None = None, scheduler: str | None = None,
            n_workers: int | None = None, client=None, progress: bool = False) -> dict:
    """Run a suite and write its reports. Returns plain data: ``{"suite", "entries" (dicts
    with name, status pass/fail/error, message, seconds, report, comparison), "passed",
    "index", "junit"}``."""
    from .report_html import entry_page, index_page, junit_xml, write_text
    from . import dask_tasks
    name, entries = load_suite(suite_file)
    if client is None:
        dask_tasks.require("mdae-fmu regress")
    out_dir = Path(output_dir)
    results: list[dict | None] = [None] * len(entries)
    with dask_tasks.client_for(client, scheduler, n_workers, "mdae-fmu regress") as client:
        futures = {client.submit(run_entry, e, pure=False, key=f"mdae-regress-{k}-{e.name}"): k
                   for k, e in enumerate(entries)}
        for k, result, err in dask_tasks.as_finished(futures, progress):
            results[k] = result if err is None else {   # the worker died under it, repeatedly
                "name": entries[k].name, "comparison": None, "status": "error",
                "message": f"{type(err).__name__}: {err}", "seconds": math.nan,
                "summary": type(err).__name__}
    used: set = set()
    for r in results:
        r["report"] = _report_name(r["name"], used)
        write_text(out_dir / r["report"], entry_page(r))
    write_text(out_dir / "index.html", index_page(f"Regression suite {name}", results))
    junit_path = Path(junit) if junit else out_dir / "junit.xml"
    write_text(junit_path, junit_xml(name, results))
    return {"suite": name, "entries": results, "passed": all(r["status"] == "pass"
                                                              for r in results),
            "index": str(out_dir / "index.html"), "junit": str(junit_path)}


def summary_table(result: dict) -> str:
    rows = [("model", "verdict", "seconds", "details")]
    for r in result["entries"]:
        rows.append((r["name"], r["status"].upper(), f"{r['seconds']:.2f}",
                     r.get("summary", "")[:100]))
    w = [max(len(row[k]) for row in rows) for k in range(3)]
    lines = [f"{a:<{w[0]}}  {b:<{w[1]}}  {c:>{w[2]}}  {d}" for a, b, c, d in rows]
    n = sum(r["status"] == "pass" for r in result["entries"])
    lines.append(f"{n} of {len(result['entries'])} passed")
    return "\n".join(lines)


def regress_command(args) -> int:
    """The ``mdae-fmu regress`` command: exit 0 when every entry passes, 1 otherwise, 2 for an
    unreadable suite file."""
    try:
        res = regress(args.suite, output_dir=args.output_dir, junit=args.junit,
                      scheduler=args.scheduler, n_workers=args.workers,
                      progress=sys.stderr.isatty() or args.progress)
    except MdaeError as err:
        print(str(err), file=sys.stderr)
        return err.exit_code
    print(summary_table(res))
    for r in res["entries"]:
        if r["status"] == "error":
            print(f"{r['name']}: {r['message']}", file=sys.stderr)
    print(f"wrote {res['index']} and {res['junit']}")
    return EXIT_OK if res["passed"] else EXIT_REJECTED


def add_parser(sub) -> None:
    """Register ``regress`` on the CLI's subparsers."""
    from . import dask_tasks
    r = sub.add_parser("regress", help="run a regression suite (TOML) on Dask; JUnit XML and "
                       "an HTML index")
    r.add_argument("suite", help="suite file (TOML)")
    r.add_argument("--output-dir", default="regress-report",
                   help="where index.html and models/*.html go (default regress-report)")
    r.add_argument("--junit", metavar="OUT.xml", help="JUnit XML (default OUTPUT_DIR/junit.xml)")
    dask_tasks.add_cluster_options(r)
    r.add_argument("--progress", action="store_true",
                   help="show Dask's progress bar even when not on a terminal")


__all__ = ["regress", "load_suite", "run_entry", "regress_command", "add_parser", "Entry"]
