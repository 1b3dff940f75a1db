"""The ``mdae-fmu`` command: analyze, export, simulate (docs/cli.md, docs/architecture.md).

Exit codes: 0 ok, 1 the model is rejected by the analysis, 2 the input cannot be read or an
output cannot be written, 3 internal error (an unexpected exception: a bug of mdae-fmu),
130/143 interrupted by SIGINT/SIGTERM (temporary files removed, `mdae_fmu.output`). User
errors are printed as one diagnostic, never as a Python traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
from typing import Callable

from .diagnostics import (EXIT_INPUT, EXIT_INTERNAL, EXIT_OK, EXIT_SIGINT, EXIT_SIGTERM,
                          InputError, MdaeError)
from .collector import gc_paused
from .output import Interrupted, check_destination, check_writable, os_reason, signals_raise
from .version import VERSION


#: The commands whose parsers are built here; the others' come from their modules, imported
#: only when one of them runs or the whole command list is shown (start-up of analyze/export)
_OWN_COMMANDS = ("analyze", "export")


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every command's, or only ``command``'s when it is one of
    `_OWN_COMMANDS` (the other commands' modules are then not imported)."""
    p = argparse.ArgumentParser(
        prog="mdae-fmu",
        description="Multimode DAE structural analysis and FMI 2.0 export.")
    p.add_argument("--version", action="version", version=f"mdae-fmu {VERSION}")
    sub = p.add_subparsers(dest="command", required=True)

    a = sub.add_parser("analyze", help="structural report of every mode and mode change")
    a.add_argument("model", help="flat Modelica (.mo), Base Modelica (.bmo) or XML equation list")
    _model_option(a)
    a.add_argument("--json", action="store_true",
                   help="machine-readable full report (docs/analyze-json.md)")
    a.add_argument("-v", "--verbose", action="store_true",
                   help="the full report (offsets, blocks and every instant of every mode "
                   "change) instead of the summary")
    a.add_argument("--dot", metavar="FILE", help="write the mode-change automaton as Graphviz "
                   "DOT (built for a multimode model with --list-modes)")
    a.add_argument("--list-modes", action="store_true",
                   help="debugging view: every enumerated mode and mode change (offsets, "
                   "states, blocks, restarts; up to 2^12 consistent modes), where the default "
                   "report states the modes as formulas over the guards; with --json, the "
                   "enumerated JSON report (modes, mode_changes)")
    _analysis_options(a)
    a.add_argument("--implicit", action="store_true",
                   help="the one analysis (modes as formulas over the guards, no "
                   "enumeration, the guarded block schedule): the default of every model, "
                   "kept for scripts; it changes nothing")

    e = sub.add_parser("export", help="build an FMI 2.0 FMU")
    e.add_argument("model", nargs="?", help="the model file (or --from-json)")
    _model_option(e)
    e.add_argument("--from-json", metavar="ANALYSIS.json",
                   help="export from a saved analysis: the output of `mdae-fmu analyze --json`, "
                   "without analysing again (its model and analysis options are the saved ones)")
    _analysis_options(e)
    e.add_argument("-o", "--output", help="output .fmu (default: MODEL_NAME.fmu)")
    e.add_argument("--implicit", action="store_true", default=None,
                   help="the guarded block schedule, what every model is exported on by "
                   "default: kept for scripts, it changes nothing")
    # removed (issue 26): an error naming the guarded default (exit 2)
    e.add_argument("--per-mode", action="store_true", help=argparse.SUPPRESS)
    e.add_argument("--fmi-type", choices=("me", "cs", "both"), default=None,
                   help="default: me (C backend), cs (python backend)")
    e.add_argument("--backend", choices=("c", "python"), default="c",
                   help="c: generated C compiled by gcc; python: a pythonfmu Co-Simulation "
                   "FMU running the same plan with numpy/scipy, no compiler needed (needs "
                   "the 'python' extra; docs/python-backend.md)")
    e.add_argument("--start-time", type=float, default=None,
                   help="DefaultExperiment startTime (default: the model's experiment "
                   "annotation, else 0)")
    e.add_argument("--stop-time", type=float, default=None,
                   help="DefaultExperiment stopTime (default: the annotation, else start + 1)")
    e.add_argument("--tolerance", type=float, default=None,
                   help="DefaultExperiment tolerance, also the CS integrator's relative "
                   "tolerance when the host gives none (default: the annotation, else 1e-6)")
    e.add_argument("--step-size", type=float, default=None,
                   help="DefaultExperiment stepSize (default: the annotation's Interval, else "
                   "(stop - start)/500)")

    if command in _OWN_COMMANDS:
        return p
    from . import info, simulation
    simulation.add_parser(sub)
    info.add_parser(sub)

    from . import comparison, regression, sweeps
    comparison.add_parser(sub)
    regression.add_parser(sub)
    sweeps.add_parser(sub)
    return p


def _model_option(p: argparse.ArgumentParser) -> None:
    """``--model NAME``: the class to read from a file that defines several (api.load)."""
    p.add_argument("--model", dest="class_name", metavar="NAME", default=None,
                   help="the model (class) to read from a file that defines several, e.g. "
                   "P.M or M (required for such a file)")
    p.add_argument("--modelica-path", dest="modelica_path", metavar="DIR", action="append",
                   default=[], help="a directory of Modelica libraries (packages) for a "
                   "hierarchical model, searched before MODELICAPATH (repeatable)")
    p.add_argument("--keep-flat", metavar="FILE", default=None,
                   help="write the flat text of a hierarchical model (flattened by rumoca) "
                   "to FILE; locations outside your files refer to it")


def _analysis_options(p: argparse.ArgumentParser) -> None:
    """The options of the analysis, shared by analyze and export (one analysis, one verdict)."""
    p.add_argument("--erasure", choices=("restricted", "canonical"), default="restricted",
                   help="conflict-erasure rule at mode changes (docs/decisions.md)")
    p.add_argument("--lemma22", choices=("two-graph", "literal"), default="two-graph",
                   help="reading of Lemma 22 at transient modes: two-graph (default) or the "
                   "literal printed one (docs/decisions.md)")
    p.add_argument("--strict-units", action="store_true",
                   help="unit inconsistencies (W-UNIT warnings) reject the model (exit 1)")


def _analyze(args) -> int:
    if args.dot:                    # before the analysis (mdae_fmu.output)
        check_writable(args.dot, [args.model])
    with gc_paused():   # millions of acyclic nodes: the cyclic collector only rescans them
        return _analyze_model(args)


def _analyze_model(args) -> int:
    from . import api
    from .analysis import analyze, render_json, text_pieces
    from .summary import summary_lines
    from .progress import Progress
    if args.list_modes and (args.implicit or args.verbose):
        raise InputError("analyze: --list-modes prints the enumerated modes; it does not "
                         "combine with --implicit or -v")
    progress = Progress("analyze")
    progress("import")
    model = api.load(args.model, args.class_name, modelica_path=args.modelica_path,
                     keep_flat=args.keep_flat)
    if args.list_modes:
        _check_enumerable(model)
    result = analyze(model, erasure=args.erasure, lemma22=args.lemma22, progress=progress,
                     # --list-modes: the enumerated analysis (issue 26: the debugging view)
                     # (--implicit is the default: docs/decisions.md §19)
                     implicit=False if args.list_modes else None,
                     strict_units=args.strict_units,
                     # the summary and the verdict need no mode-change exploration of a
                     # model without guards; the full report and the automaton's graph do
                     full=bool(args.json or args.verbose or args.dot or args.list_modes))
    progress("report")
    if args.list_modes and not args.json:
        _list_modes(model, result)
    elif args.json:
        from .saved import save
        out = render_json(model, result)
        out["saved_analysis"] = save(model, result)
        print(json.dumps(out, indent=2))
    elif args.verbose:
        # (not joined: up to 200 MB at 10^6)
        for piece in text_pieces(model, result):
            sys.stdout.write(piece)
        sys.stdout.write("\n")
    else:
        for line in summary_lines(model, result):
            sys.stdout.write(line + "\n")
    if args.dot:
        if result.automaton is None:
            why = ("the one analysis builds no mode-change automaton (--list-modes "
                   "enumerates the modes and builds it)"
                   if result.modes is None else
                   "the modes were rejected before the mode changes were explored")
            print(f"{args.dot}: not written, {why}", file=sys.stderr)
        else:
            from .automaton_dot import write_dot
            png = write_dot(result.automaton, args.dot, [args.model])
            print(f"wrote {args.dot}" + (f" and {png}" if png else ""), file=sys.stderr)
    return _done(args, result.exit_code)


def _list_modes(model, result) -> None:
    """``analyze --list-modes``: the enumerated modes (the per-mode structure,
    `mdae_fmu.structure.per_mode`) and the mode-change automaton (`mdae_fmu.modes.explore`)
    with the verdict: the enumerated listing of ``-v``, kept as the debugging view when the
    guarded schedule became the one pipeline (issue 26); a model beyond the enumeration was
    refused before its analysis (`_check_enumerable`)."""
    from .analysis import text_pieces
    for piece in text_pieces(model, result):
        sys.stdout.write(piece)
    sys.stdout.write("\n")


def _check_enumerable(model) -> None:
    """`InputError` when ``--list-modes`` has no enumerated modes to print: a model beyond
    the enumeration (2^12 consistent modes), before any analysis."""
    from .analysis import more_modes_than
    if more_modes_than(model):
        from .structure.valuations import MAX_ENUMERATED_MODES
        raise InputError(f"analyze --list-modes: model {model.name} has more than "
                         f"{MAX_ENUMERATED_MODES} consistent modes, beyond the enumeration; "
                         f"`mdae-fmu analyze -v` states them as formulas over the guards")


def _export(args) -> int:
    with gc_paused():   # the import too, as `_analyze` (mdae_fmu.collector)
        return _export_model(args)


def _export_model(args) -> int:
    from . import api
    from .progress import Progress
    if args.per_mode:
        from .fmu.export import REMOVED_PER_MODE
        raise InputError(f"export: {REMOVED_PER_MODE}")
    progress = Progress("export")
    progress("import")
    if (args.model is None) == (args.from_json is None):
        raise InputError("export: give either a model file or --from-json ANALYSIS.json"
                         + (", not both" if args.model is not None else ""))
    analysis = None
    if args.from_json is not None:
        model, analysis = api.load_analysis(args.from_json)
    else:
        model = api.load(args.model, args.class_name, modelica_path=args.modelica_path,
                         keep_flat=args.keep_flat)
    out = Path(args.output) if args.output else Path(f"{_file_stem(model.name)}.fmu")
    # a directory or an input as the output: refused before the exporter's imports (sympy,
    # jinja2: about 0.9 s of CPU); the rest (a missing directory is created, a read-only one
    # refused) when the export reserves its temporary file, which must be the first one there
    check_destination(out, [args.model, args.from_json])
    de = {"startTime": args.start_time, "stopTime": args.stop_time,
          "tolerance": args.tolerance, "stepSize": args.step_size}
    fmi_type = args.fmi_type or ("cs" if args.backend == "python" else "me")
    api.export_fmu(model, out, fmi_type=fmi_type, default_experiment=de,
                   analysis=analysis, erasure=args.erasure, lemma22=args.lemma22,
                   progress=progress, backend=args.backend, implicit=args.implicit,
                   strict_units=args.strict_units,
                   on_warning=lambda text: print(text, file=sys.stderr))
    print(f"wrote {out}")
    return _done(args, EXIT_OK)


def _file_stem(name: str) -> str:
    return "".join(c if c.isalnum() or c in "_-" else "_" for c in name) or "model"


#: Commands that run an FMU in this process's child (`mdae_fmu.fmu_runner`): ``sweep`` and
#: ``regress`` start their runs here too (`mdae_fmu.batch`), unless sent to a scheduler.
_RUNS_FMUS = ("simulate", "compare", "sweep", "regress")


def main(argv: list[str] | None = None, *, end_at_once: bool = False) -> int:
    """Run the command of ``argv`` (default: the process's arguments) and return its exit
    code. ``end_at_once`` (the console script, `console`): ``analyze`` and ``export`` end
    the process as soon as their output is complete (`_done`)."""
    words = sys.argv[1:] if argv is None else argv
    if words and words[0] in _RUNS_FMUS and "--scheduler" not in words:
        from .fmu_runner import warm_up     # the child imports FMPy while this process starts
        warm_up()
    args = _parser(words[0] if words else None).parse_args(argv)
    args.end_at_once = end_at_once
    handler = _handler(args.command)
    with signals_raise():
        try:
            return handler(args)
        except MdaeError as err:
            print(str(err), file=sys.stderr)
            return err.exit_code
        except UnicodeDecodeError as err:
            print(f"{getattr(args, 'model', '')}: cannot read: {err}", file=sys.stderr)
            return EXIT_INPUT
        except OSError as err:
            print(f"mdae-fmu: {err.filename or ''}: {os_reason(err)}".replace(": : ", ": "),
                  file=sys.stderr)
            return EXIT_INPUT
        except (KeyboardInterrupt, Interrupted) as err:
            return _interrupted(err)
        except Exception as err:  # noqa: BLE001 - the catch-all of the command line
            # a signal that arrives inside code that wraps exceptions (e.g. a class being
            # created during a lazy import: RuntimeError from __set_name__) is still a signal
            cause = _interruption_in(err)
            return _interrupted(cause) if cause is not None else _internal_error(err)


def console() -> None:
    """The ``mdae-fmu`` console script (pyproject.toml) and ``python -m mdae_fmu.cli``:
    `main` with ``end_at_once`` (`_done`). Calls of `main` in a process that goes on (tests,
    scripts) return as before."""
    sys.exit(main(end_at_once=True))


def _done(args: argparse.Namespace, code: int) -> int:
    """The exit code ``code`` of a command that has written all its output, returned; or,
    from the console script (``args.end_at_once``, `console`), the process ended with it at
    once (``os._exit`` after flushing stdout and stderr): the command's data, still
    referenced here, are left to the operating system instead of being freed object by
    object as the functions return and the interpreter shuts down (1.2 s of CPU after an
    export of 10^5 equations, docs/performance.md). Every file is written and closed and
    every temporary file removed by then (`mdae_fmu.output`, the build's own directory);
    no atexit hook of analyze or export has work left. If stdout or stderr cannot be
    flushed (a closed pipe), ``code`` is returned and the interpreter's exit reports it."""
    if not getattr(args, "end_at_once", False):
        return code
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return code
    os._exit(code)


def _handler(command: str) -> Callable[[argparse.Namespace], int]:
    """The function that runs ``command`` (its module imported now)."""
    if command == "analyze":
        return _analyze
    if command == "export":
        return _export
    from . import comparison, info, regression, simulation, sweeps
    return {"simulate": simulation.simulate_command, "info": info.info_command,
            "compare": comparison.compare_command, "regress": regression.regress_command,
            "sweep": sweeps.sweep_command}[command]


def _interruption_in(err: BaseException) -> BaseException | None:
    """The SIGINT/SIGTERM exception in ``err``'s chain of causes and contexts, if any."""
    seen = set()
    e: BaseException | None = err
    while e is not None and id(e) not in seen:
        if isinstance(e, (KeyboardInterrupt, Interrupted)):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


def _interrupted(err: BaseException) -> int:
    """Exit code and message of a command stopped by SIGINT (130) or SIGTERM (143); the
    temporary files are already removed (`mdae_fmu.output`)."""
    term = isinstance(err, Interrupted) and err.signum == signal.SIGTERM
    print(f"mdae-fmu: {'terminated' if term else 'interrupted'}", file=sys.stderr)
    return EXIT_SIGTERM if term else EXIT_SIGINT


def _internal_error(err: BaseException) -> int:
    """An unexpected exception: one message saying it is a bug of mdae-fmu (exit 3, never 1,
    which means "model rejected"); the traceback only with MDAE_FMU_TRACEBACK=1."""
    import os
    if isinstance(err, MemoryError):
        what = "out of memory"
    else:
        what = f"{type(err).__name__}: {str(err)[:500]}"
    print(f"mdae-fmu: internal error ({what}). This is a bug of mdae-fmu, not a problem "
          "found in the model; set MDAE_FMU_TRACEBACK=1 to see where it happened.",
          file=sys.stderr)
    if os.environ.get("MDAE_FMU_TRACEBACK") == "1":
        import traceback
        traceback.print_exception(err)
    return EXIT_INTERNAL


if __name__ == "__main__":
    console()
