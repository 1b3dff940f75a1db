"""One verdict per model: run ``mdae-fmu analyze`` and ``mdae-fmu export`` on every corpus model
(tests/corpus/manifest.json) and list each model where their exit codes differ (issue 24,
Acceptance: "analyze and export give one verdict on every corpus model").

Exit codes (docs/cli.md): 0 accepted / exported, 1 rejected by the analysis, 2 unreadable
input, 3 internal error. ``analyze`` 0 with ``export`` 1 or 3 is a model the analysis accepts
and the code generation then refuses (or crashes on); ``analyze`` 1 with ``export`` 0 would be
an FMU built for a rejected model. Both commands run in one child process per model, through
`mdae_fmu.cli.main` (the commands the user runs, in-process), with a time limit; the export
is the default one (Model Exchange, C backend, gcc).

    python benchmarks/fetch_corpus.py --openmodelica /path/to/OpenModelica
    python benchmarks/verdicts.py [--ids PATTERN] [--timeout S] [--json OUT]
                                  [--markdown docs/corpus.md]
    python benchmarks/verdicts.py --merge RUN1.json RUN2.json ... [--json OUT] [--markdown ...]

``--merge`` runs nothing: it joins the results of earlier runs (batches run in parallel or
one after the other; for a model in several, the last file's finished run), in manifest
order, and prints and writes them as a run would.

With ``--markdown`` the table of the disagreements replaces the part of the file between
``<!-- corpus table verdicts: begin -->`` and ``<!-- corpus table verdicts: end -->``.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from corpus import write_markdown  # noqa: E402
from fetch_corpus import DEFAULT_OUT, MANIFEST, corpus_file  # noqa: E402


def _message(text: str, limit: int = 400) -> str:
    """The last unindented line of ``text`` (a syntax error's source line and caret are
    indented under its ``file:line:col: message``), with the first indented line under it
    when it ends with ``:`` (the reasons of a rejection)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    heads = [k for k, ln in enumerate(lines) if not ln[0].isspace()]
    if not heads:
        return ""
    k = heads[-1]
    msg = lines[k]
    if msg.endswith(":") and k + 1 < len(lines):
        msg += " " + lines[k + 1].strip()
    return msg[:limit]


def _command(argv: list[str]) -> tuple[int, str]:
    """Exit code and the last line of stderr of ``mdae-fmu argv`` run in this process."""
    from mdae_fmu.cli import main
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = main(argv)
        except SystemExit as exc:             # argparse
            code = exc.code if isinstance(exc.code, int) else 2
    return code, _message(err.getvalue()) or _verdict_reason(out.getvalue())


def _verdict_reason(report: str, limit: int = 200) -> str:
    """The first reason under ``verdict: rejected`` in the report ``analyze`` prints on
    stdout (a rejection is reported there, not on stderr)."""
    lines = report.splitlines()
    for k, line in enumerate(lines):
        if line.startswith("verdict: rejected") and k + 1 < len(lines):
            return lines[k + 1].strip()[:limit]
    return ""


def verdicts(entry: dict, path: Path) -> dict:
    """``analyze`` then ``export`` of one corpus model: their exit codes and messages."""
    model = ["--model", entry["model"]] if entry.get("model") else []
    out: dict = {"id": entry["id"]}
    out["analyze"], out["analyze_message"] = _command(["analyze", str(path), *model])
    with tempfile.TemporaryDirectory(prefix="mdae_verdict_") as tmp:
        out["export"], out["export_message"] = _command(
            ["export", str(path), *model, "-o", str(Path(tmp) / "m.fmu")])
    return out


def _run_child(entry: dict, a) -> dict:
    cmd = [sys.executable, __file__, "--one", entry["id"], "--corpus-dir", str(a.corpus_dir)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
    except subprocess.TimeoutExpired:
        return {"id": entry["id"], "analyze": None, "export": None,
                "analyze_message": f"over {a.timeout:.0f} s for analyze and export"}
    lines = p.stdout.strip().splitlines()
    if p.returncode == 0 and lines:
        return json.loads(lines[-1])
    return {"id": entry["id"], "analyze": None, "export": None,
            "analyze_message": _message(p.stderr) or f"exit code {p.returncode}"}


def disagreements(results: list[dict]) -> list[dict]:
    """The models whose two exit codes differ (a timed-out run counts as neither)."""
    return [r for r in results if r.get("analyze") is not None and r["analyze"] != r["export"]]


def markdown(results: list[dict]) -> str:
    bad = disagreements(results)
    done = [r for r in results if r.get("analyze") is not None]
    head = (f"{len(results)} models, {len(done)} run to the end: {len(done) - len(bad)} with "
            f"one verdict, {len(bad)} where analyze and export disagree.\n\n")
    if not bad:
        return head
    rows = ["| model | analyze | export | export's message |", "|---|---|---|---|"]
    for r in bad:
        msg = (r.get("export_message") or r.get("analyze_message") or "").replace("|", "\\|")
        rows.append(f"| {r['id']} | {r['analyze']} | {r['export']} | {msg} |")
    return head + "\n".join(rows) + "\n"


def merge(runs: list[list[dict]], order: list[str]) -> list[dict]:
    """The results of several runs joined, one per model in ``order`` (manifest ids): a
    finished run of a later file replaces an earlier one; a model no run finished keeps the
    last unfinished result, a model no run reached is left out."""
    best: dict[str, dict] = {}
    for run in runs:
        for r in run:
            old = best.get(r["id"])
            if old is None or r.get("analyze") is not None or old.get("analyze") is None:
                best[r["id"]] = r
    return [best[i] for i in order if i in best]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ids", default="*", help="fnmatch pattern over model ids")
    ap.add_argument("--corpus-dir", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--json", type=Path, help="write the results as JSON")
    ap.add_argument("--markdown", type=Path, help="write the disagreements as Markdown")
    ap.add_argument("--merge", type=Path, nargs="+",
                    help="join the JSON of earlier runs instead of running")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    entries = json.loads(MANIFEST.read_text())["models"]
    if a.merge:
        results = merge([json.loads(f.read_text()) for f in a.merge],
                        [e["id"] for e in entries])
        if a.json:
            a.json.write_text(json.dumps(results, indent=1))
        print(markdown(results).split("\n\n")[0])
        if a.markdown:
            write_markdown(a.markdown, markdown(results), "verdicts")
        return 0
    if a.one:
        entry = next(e for e in entries if e["id"] == a.one)
        print(json.dumps(verdicts(entry, corpus_file(entry, a.corpus_dir))))
        return 0
    results = []
    for entry in entries:
        if not fnmatch.fnmatch(entry["id"], a.ids):
            continue
        if not corpus_file(entry, a.corpus_dir).exists():
            r = {"id": entry["id"], "analyze": None, "export": None,
                 "analyze_message": "not fetched (run benchmarks/fetch_corpus.py)"}
        else:
            r = _run_child(entry, a)
        results.append(r)
        flag = "" if r.get("analyze") == r.get("export") else "  DISAGREE"
        print(f"{r['id']:60s} analyze {r.get('analyze')} export {r.get('export')}{flag} "
              f"{(r.get('export_message') or r.get('analyze_message') or '')[:120]}",
              flush=True)
        if a.json:    # after each model: an interrupted run keeps what it measured
            a.json.write_text(json.dumps(results, indent=1))
    print(markdown(results).split("\n\n")[0])
    if a.markdown:
        write_markdown(a.markdown, markdown(results), "verdicts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
