"""The models whose analysis builds no guarded block schedule, and why (issue 26 Deliver 2-3;
the list is in docs/multimode-fmu.md, "Models without a guarded schedule").

Every model of reference_models/, tests/data/ and the corpus (tests/corpus/manifest.json; the
OpenModelica entries fetched by benchmarks/fetch_corpus.py into benchmarks/results/corpus/) is
analysed with the default options (``analyze(model, full=False)``; ``implicit=True`` is the
same analysis since stop 42, docs/decisions.md §19). One line per model: the source, the
seconds, the verdict, and the refusal (``Analysis.guarded_refusal``) or ``-``; a model that
does not load gives its first error line.

    python benchmarks/guarded_refusals.py [SUBSTRING ...] [--timeout SECONDS]
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))


class _Timeout(Exception):
    pass


def _alarm(*_) -> None:
    raise _Timeout()


def models() -> Iterator[tuple[str, Callable]]:
    """``(name, load)`` of every model the module docstring lists."""
    from corpus import class_text
    from fetch_corpus import DEFAULT_OUT, corpus_file
    from mdae_fmu import api
    from mdae_fmu.diagnostics import InputError
    from mdae_fmu.importers import frontend
    from mdae_fmu.importers.flat_modelica import parse_modelica
    for p in sorted((ROOT / "reference_models").glob("*.mo")):
        yield p.relative_to(ROOT).as_posix(), lambda p=p: api.load(p)
    for p in sorted((ROOT / "tests" / "data").rglob("*")):
        if p.suffix in (".mo", ".xml", ".bmo") and p.is_file():
            yield p.relative_to(ROOT).as_posix(), lambda p=p: api.load(p)
    for e in json.loads((ROOT / "tests" / "corpus" / "manifest.json").read_text())["models"]:
        path = corpus_file(e, DEFAULT_OUT)

        def load(e=e, path=path):
            text = path.read_text()
            try:
                return parse_modelica(class_text(text, e.get("model")), str(path))
            except InputError:
                if not frontend.is_hierarchical(text):
                    raise
                return api.load(path, e.get("model"))
        yield "corpus:" + e["id"], load


def refusal(model) -> tuple[bool, str | None]:
    """The verdict of ``model``'s default analysis and its guarded refusal."""
    from mdae_fmu.analysis import analyze
    a = analyze(model, full=False)
    return a.accepted, a.guarded_refusal or None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("only", nargs="*", help="only the models whose name contains one of these")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per model (default 120)")
    args = ap.parse_args(argv)
    from mdae_fmu.diagnostics import MdaeError
    signal.signal(signal.SIGALRM, _alarm)
    for name, load in models():
        if args.only and not any(o in name for o in args.only):
            continue
        t0 = time.perf_counter()
        signal.alarm(args.timeout)
        try:
            accepted, why = refusal(load())
            print(f"{name}\t{time.perf_counter() - t0:.1f}s\t"
                  f"{'accepted' if accepted else 'rejected'}\t{why or '-'}", flush=True)
        except _Timeout:
            print(f"{name}\ttimeout ({args.timeout} s)", flush=True)
        except MdaeError as err:
            print(f"{name}\tnot loaded: {str(err).splitlines()[0][:160]}", flush=True)
        finally:
            signal.alarm(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
