"""The command-line options of a simulation run, in FMPy's vocabulary (``fmpy simulate``), for
``simulate``, ``compare`` and ``sweep``; the spellings of earlier releases are kept as aliases
that print a deprecation note on stderr (docs/regression.md, "Running FMUs").

======================================  ===================================================
option                                  old spelling (deprecated)
======================================  ===================================================
``--start-values NAME VALUE [...]``
``--output-variables NAME [...]``       ``--output-var NAMES`` (sweep)
``--relative-tolerance TOL``            ``--solver-tolerance TOL`` (compare)
``--fmi-type ModelExchange|CoSimulation``  ``me`` / ``cs``
``--output-file OUT.csv``               ``--csv OUT`` (simulate)
======================================  ===================================================
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

from .diagnostics import InputError

_SHORT_FMI_TYPES = {"me": "ModelExchange", "cs": "CoSimulation"}


def deprecation(old: str, new: str) -> None:
    """The note an old spelling prints on stderr (it still works, for one release)."""
    print(f"mdae-fmu: {old} is deprecated, use {new}", file=sys.stderr)


class DeprecatedAlias(argparse.Action):
    """An old option spelling: stores (or appends) like its new one, after a note on stderr
    naming the new spelling."""

    def __init__(self, option_strings, dest, new: str, append: bool = False, **kwargs):
        self.new = new
        self.append = append
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        deprecation(option_string or self.option_strings[0], self.new)
        if self.append:
            items = list(getattr(namespace, self.dest, None) or [])
            items.append(values if isinstance(values, list) else [values])
            setattr(namespace, self.dest, items)
        else:
            setattr(namespace, self.dest, values)


def fmi_type(text: str) -> str:
    """``--fmi-type``: ModelExchange or CoSimulation (``me``/``cs``: deprecated)."""
    if text in ("ModelExchange", "CoSimulation"):
        return text
    if text in _SHORT_FMI_TYPES:
        deprecation(f"--fmi-type {text}", f"--fmi-type {_SHORT_FMI_TYPES[text]}")
        return _SHORT_FMI_TYPES[text]
    raise argparse.ArgumentTypeError(f"'{text}' is not ModelExchange or CoSimulation")


def add_fmi_type(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fmi-type", type=fmi_type, default=None,
                   metavar="ModelExchange|CoSimulation",
                   help="the FMU's interface to simulate (default: ModelExchange when the FMU "
                   "has it)")


def add_start_values(p: argparse.ArgumentParser) -> None:
    p.add_argument("--start-values", nargs="+", action="append", metavar="NAME VALUE",
                   help="start values of parameters and variables, as name-value pairs; "
                   "repeatable (--start-values k 2 --start-values j1 0.5)")


def add_output_variables(p: argparse.ArgumentParser, old: str | None = None) -> None:
    p.add_argument("--output-variables", nargs="+", action="append", metavar="NAME",
                   help="variables to record (names, or comma-separated lists)")
    if old:
        p.add_argument(old, dest="output_variables", action=DeprecatedAlias,
                       new="--output-variables", append=True, metavar="NAMES",
                       help="deprecated spelling of --output-variables")


def add_relative_tolerance(p: argparse.ArgumentParser, old: str | None = None) -> None:
    p.add_argument("--relative-tolerance", type=float, default=None, metavar="TOL",
                   help="relative tolerance of CVode, and of a Co-Simulation FMU's "
                   "integrator (default: the FMU's DefaultExperiment tolerance)")
    if old:
        p.add_argument(old, dest="relative_tolerance", type=float, action=DeprecatedAlias,
                       new="--relative-tolerance", metavar="TOL",
                       help="deprecated spelling of --relative-tolerance")


def add_timeout(p: argparse.ArgumentParser, default: float | None = None) -> None:
    limit = "no limit" if default is None else f"{default:g} s"
    p.add_argument("--timeout", type=float, default=default, metavar="SECONDS",
                   help="stop a simulation that runs longer (wall time) and report it as "
                   f"failed (default: {limit})")


def add_validate(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-validate", dest="validate", action="store_false",
                   help="simulate an FMU whose modelDescription.xml fails FMPy's validation "
                   "(e.g. undefined units); its problems are printed as warnings")


def print_problems(label: str, problems: Sequence[str], limit: int = 20) -> None:
    """The validation problems of an FMU opened with ``--no-validate``, as warnings on
    stderr (at most ``limit``, then a count)."""
    print_warnings([f"{label}: modelDescription.xml: {p}" for p in problems], limit)


def print_warnings(lines: Sequence[str], limit: int = 20) -> None:
    """``warning: LINE`` on stderr for each line (at most ``limit``, then a count)."""
    for line in lines[:limit]:
        print(f"warning: {line}", file=sys.stderr)
    if len(lines) > limit:
        print(f"warning: {len(lines) - limit} more", file=sys.stderr)


def start_values(pairs: Sequence[Sequence[str]] | None) -> dict[str, str]:
    """``--start-values`` as a dict name -> text (converted to each variable's type by the run
    layer); an odd number of words is an `InputError`."""
    words = [w for group in pairs or () for w in group]
    if len(words) % 2:
        raise InputError(f"--start-values takes name-value pairs; '{words[-1]}' has no value")
    return dict(zip(words[0::2], words[1::2]))


def names(groups: Sequence[Sequence[str]] | None) -> list[str] | None:
    """Variable names from repeatable options that take names or comma-separated lists."""
    if not groups:
        return None
    return [n.strip() for group in groups for word in group for n in word.split(",")
            if n.strip()]


def run_keywords(args: Any) -> dict:
    """The run layer's keywords (`mdae_fmu.fmu_runner.run_fmu`) from parsed options that
    exist on the command (missing ones are left out)."""
    out: dict = {}
    if hasattr(args, "start_values"):
        out["start_values"] = start_values(args.start_values)
    if hasattr(args, "output_variables"):
        out["output_variables"] = names(args.output_variables)
    for key in ("relative_tolerance", "start_time", "stop_time", "output_interval", "timeout",
                "fmi_type", "validate"):
        if hasattr(args, key):
            out[key] = getattr(args, key)
    return out


__all__ = ["DeprecatedAlias", "deprecation", "fmi_type", "add_fmi_type", "add_start_values",
           "add_output_variables", "add_relative_tolerance", "add_timeout", "add_validate",
           "print_problems", "print_warnings", "start_values",
           "names", "run_keywords"]
