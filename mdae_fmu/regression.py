"""``mdae-fmu regress SUITE.toml``: export, simulate and compare a suite of models.

A suite file (`mdae_fmu.suite_file`, docs/regression.md "Suite files") names per entry a
test (a model file or an FMU) and a reference (a CSV, a model or an FMU), with tolerances,
options of the runs and an optional input CSV; it is read and checked whole before anything
runs. Each entry is one `mdae_fmu.comparison.compare`; an entry that fails to import, export
or simulate is a failed entry carrying its message, and the suite goes on.

The entries run in this process, one after the other: an entry's export already compiles
on every core, so an embedded cluster does not pay (docs/regression.md, "Where the work
runs"). ``--scheduler`` (or ``--dask``, an embedded cluster of thread workers) sends them to
Dask (`mdae_fmu.batch`); for a cluster that may not see this machine's files, the entry's
files travel with its task as bytes.
Outputs: a summary table on stdout, ``index.html`` linking one report per model
(``models/NAME.html``), and JUnit XML; the reports name the files as the suite file writes
them, never the temporary copies a worker ran.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

from . import dask_tasks
from .batch import DEFAULT_RUN_TIMEOUT, Executed, ProgressBar, run_batch
from .diagnostics import EXIT_OK, EXIT_REJECTED, MdaeError
from .fmu_archive import temporary_folder
from .suite_file import Entry, Suite, load_suite

def run_entry(entry: Entry, contents: dict[str, bytes] | None = None) -> dict:
    """Export, simulate and compare one entry (in this process, or on a worker). Never
    raises: an entry that cannot be read, exported or simulated comes back with status
    ``error`` and the message. ``contents``: the entry's files as bytes (role -> bytes), for
    a worker that cannot read this machine's files; they are written to a temporary folder
    under their own names. Paths in the result and its messages are the suite's."""
    from .comparison import compare
    t0 = time.perf_counter()
    out: dict[str, Any] = {"name": entry.name, "comparison": None, "message": ""}
    shown: dict[str, str] = {}
    try:
        with temporary_folder("mdae_regress_") as tmp:
            paths = {}
            for role, (written, disk) in entry.files.items():
                if contents is not None:
                    folder = tmp / role
                    folder.mkdir()
                    disk = folder / Path(written).name
                    disk.write_bytes(contents[role])
                paths[role] = disk
                shown[str(disk)] = written
            o = entry.options
            c = compare(paths["test"], paths["reference"], variables=o.get("variables"),
                        rtol=o.get("rtol", 1e-3), atol=o.get("atol", 1e-6),
                        time_tolerance=o.get("time_tolerance"), stop_time=o.get("stop_time"),
                        method=o.get("method", "tube"), start_values=o.get("start_values"),
                        input=paths.get("input"),
                        relative_tolerance=o.get("relative_tolerance"),
                        fmi_type=o.get("fmi_type"), validate=o.get("validate", True),
                        timeout=o.get("timeout", DEFAULT_RUN_TIMEOUT), quiet=True)
        c = dataclasses.replace(c, test=entry.files["test"][0],
                                reference=entry.files["reference"][0],
                                warnings=[_as_written(w, shown) for w in c.warnings])
        out["comparison"] = c
        out["status"] = "pass" if c.passed else "fail"
        out["summary"] = ("every variable inside its tube" if c.passed else
                          "; ".join(f"{s.name} leaves at t = {s.first_exit:.6g}"
                                    for s in c.failed))
    except MdaeError as err:
        message = _as_written(str(err), shown)
        out.update(status="error", message=message, summary=message.splitlines()[0],
                   error_type=type(err).__name__)
    except Exception as err:       # an internal error of one entry must not stop the suite
        out.update(status="error", message=f"internal error: {type(err).__name__}: {err}",
                   summary=f"internal error: {type(err).__name__}", error_type="internal")
    out["seconds"] = time.perf_counter() - t0
    return out


def _as_written(text: str, shown: dict[str, str]) -> str:
    """``text`` with every file path of the run replaced by the path the suite writes."""
    for disk in sorted(shown, key=len, reverse=True):
        text = text.replace(disk, shown[disk])
    return text


def _contents(entry: Entry) -> dict[str, bytes]:
    """The entry's files as bytes, for a worker of another machine."""
    return {role: disk.read_bytes() for role, (_, disk) in entry.files.items()}


def _report_name(name: str, used: set) -> str:
    stem = "".join(c if c.isalnum() or c in "_-" else "_" for c in name) or "model"
    cand, k = stem, 1
    while cand in used:
        k += 1
        cand = f"{stem}_{k}"
    used.add(cand)
    return f"models/{cand}.html"


def _on_dask(suite: Suite, scheduler: str | None, n_workers: int | None, client: Any):
    """The Dask runner of a batch of entry numbers: one task per entry, files as bytes when
    the cluster is not this process's threads; a task lost too often (KilledWorker) is an
    entry in error."""
    def run(numbers: Sequence[int]) -> Iterator[tuple[int, dict]]:
        with dask_tasks.client_for(client, scheduler, n_workers,
                                   "mdae-fmu regress") as (dask, local):
            futures = {}
            for k in numbers:
                e = suite.entries[k]
                futures[dask.submit(run_entry, e, None if local else _contents(e), pure=False,
                                    key=f"mdae-regress-{k}-{e.name}")] = k
            for k, result, err in dask_tasks.as_finished(futures):
                if err is not None:
                    result = {"name": suite.entries[k].name, "comparison": None,
                              "status": "error", "message": f"{type(err).__name__}: {err}",
                              "seconds": math.nan, "summary": type(err).__name__}
                yield k, result
    return run


def regress(suite_file: str | Path, *, output_dir: str | Path = "regress-report",
            junit: str | Path | None = None, executor: str = "auto",
            scheduler: str | None = None, n_workers: int | None = None, client: Any = None,
            timeout: float | None = None, progress: bool = False) -> dict:
    """Run a suite and write its reports. Returns plain data: ``{"suite", "entries" (dicts
    with name, status pass/fail/error, message, seconds, report, comparison), "passed",
    "index", "junit", "executed"}`` (`mdae_fmu.batch.Executed`).

    The suite file is checked whole first (`mdae_fmu.suite_file.load_suite`: `InputError`,
    exit 2, before anything runs). ``timeout``: seconds each simulation may take, for the
    entries whose suite gives none (default `DEFAULT_RUN_TIMEOUT`). Where the entries run:
    ``executor`` "auto" or "serial" (in this process: module docstring), or "dask"
    (``n_workers`` thread workers of an embedded cluster); ``scheduler``'s or ``client``'s
    cluster always gets the entries. ``progress``: a bar on stderr counting entries. No
    ``if __name__ == "__main__":`` is needed."""
    from .report_html import entry_page, index_page, junit_xml, write_text
    suite = load_suite(suite_file)
    if timeout is not None:
        from .fmu_runner import check_run_options
        check_run_options(timeout=timeout)
        suite = dataclasses.replace(suite, entries=tuple(
            dataclasses.replace(e, options={"timeout": timeout, **e.options})
            for e in suite.entries))
    executor = dask_tasks.executor_of(executor, client, scheduler)
    # An entry's export already compiles its C units on every core (mdae_fmu.fmu.build) and
    # the analysis holds the GIL: the embedded cluster's thread workers do not pay (measured,
    # docs/regression.md), so "auto" runs here and only a cluster asked for gets entries.
    use_dask = executor == "dask" and dask_tasks.dask_usable(executor, n_workers,
                                                             "mdae-fmu regress")
    out_dir = Path(output_dir)
    results: dict[int, dict] = {}
    bar = ProgressBar("regress", len(suite.entries), "models", enabled=progress)

    def keep(k: int, result: dict) -> None:
        results[k] = result
        bar.advance(failed=result["status"] != "pass")
    try:
        executed = run_batch(list(range(len(suite.entries))),
                             lambda k: run_entry(suite.entries[k]),
                             _on_dask(suite, scheduler, n_workers, client) if use_dask else None,
                             keep, executor=executor)
    finally:
        bar.close()
    ordered = [results[k] for k in range(len(suite.entries))]
    used: set = set()
    for r in ordered:
        r["report"] = _report_name(r["name"], used)
        write_text(out_dir / r["report"], entry_page(r))
    write_text(out_dir / "index.html", index_page(f"Regression suite {suite.name}", ordered))
    junit_path = Path(junit) if junit else out_dir / "junit.xml"
    write_text(junit_path, junit_xml(suite.name, ordered))
    return {"suite": suite.name, "entries": ordered,
            "passed": all(r["status"] == "pass" for r in ordered),
            "index": str(out_dir / "index.html"), "junit": str(junit_path),
            "executed": executed}


def summary_table(result: dict) -> str:
    rows = [("model", "verdict", "seconds", "details")]
    for r in result["entries"]:
        rows.append((r["name"], r["status"].upper(), f"{r['seconds']:.2f}",
                     r.get("summary", "")[:100]))
    w = [max(len(row[k]) for row in rows) for k in range(3)]
    lines = [f"{a:<{w[0]}}  {b:<{w[1]}}  {c:>{w[2]}}  {d}" for a, b, c, d in rows]
    n = sum(r["status"] == "pass" for r in result["entries"])
    lines.append(f"{n} of {len(result['entries'])} passed")
    executed: Executed | None = result.get("executed")
    if executed is not None:
        lines.append(executed.describe("models"))
    return "\n".join(lines)


def regress_command(args) -> int:
    """The ``mdae-fmu regress`` command: exit 0 when every entry passes, 1 otherwise, 2 for an
    unreadable suite file."""
    from . import run_options
    try:
        res = regress(args.suite, output_dir=args.output_dir, junit=args.junit,
                      executor=args.executor, scheduler=args.scheduler,
                      n_workers=args.workers, timeout=args.timeout,
                      progress=sys.stderr.isatty() or args.progress)
    except MdaeError as err:
        print(str(err), file=sys.stderr)
        return err.exit_code
    for r in res["entries"]:
        if r["comparison"] is not None:
            run_options.print_warnings(r["comparison"].warnings)
    print(summary_table(res))
    for r in res["entries"]:
        if r["status"] == "error":
            print(f"{r['name']}: {r['message']}", file=sys.stderr)
    print(f"wrote {res['index']} and {res['junit']}")
    return EXIT_OK if res["passed"] else EXIT_REJECTED


def add_parser(sub) -> None:
    """Register ``regress`` on the CLI's subparsers."""
    r = sub.add_parser("regress", help="run a regression suite (TOML): JUnit XML and an HTML "
                       "index (on Dask when it pays)")
    r.add_argument("suite", help="suite file (TOML)")
    r.add_argument("--output-dir", default="regress-report",
                   help="where index.html and models/*.html go (default regress-report)")
    r.add_argument("--junit", metavar="OUT.xml", help="JUnit XML (default OUTPUT_DIR/junit.xml)")
    r.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="seconds each simulation may take, for entries whose suite gives no "
                   f"timeout (default {DEFAULT_RUN_TIMEOUT:g})")
    dask_tasks.add_cluster_options(r)
    r.add_argument("--progress", action="store_true",
                   help="show the progress bar even when stderr is not a terminal")


__all__ = ["regress", "load_suite", "run_entry", "regress_command", "add_parser", "Entry",
           "summary_table", "DEFAULT_RUN_TIMEOUT"]
