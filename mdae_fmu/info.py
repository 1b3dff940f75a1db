"""``mdae-fmu info FMU``: what ``fmpy info`` prints about an FMU (model info, default
experiment, inputs and outputs), then, for an FMU that mdae_fmu generated, its modes, its
discrete variables (the guards whose changes are its events) and its impulse outputs, read
from its model description.

The FMU is read through `mdae_fmu.fmu_archive.open_fmu` (extraction with limits, temporary
folder removed); nothing of it is loaded or run.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from .diagnostics import EXIT_OK, InputError, MdaeError
from .fmu_archive import open_fmu

#: The variable of our FMUs that holds the current mode; its description lists the modes.
MODE_VARIABLE = "mdae_mode"
#: Modes listed before "... N more".
MAX_MODES = 50


def is_ours(md) -> bool:
    """Whether mdae_fmu generated the FMU: its generationTool is ``mdae_fmu VERSION``."""
    return re.fullmatch(r"mdae_fmu \d[\w.+-]*", md.generationTool or "") is not None


def _mode_description(md) -> str:
    """The description of our FMU's mode variable, "" when it has none."""
    return next((v.description or "" for v in md.modelVariables if v.name == MODE_VARIABLE),
                "")


def modes(md) -> list[str]:
    """``["0 = [not g]", "1 = [g]"]``: the modes our FMU declares in the description of its
    mode variable after its colon (the per-mode FMU's mode numbers, the guarded FMU's guard
    bits as a number, `mdae_fmu.codegen.guarded.mode_description`); empty for another tool's
    FMU, a single-mode model or a guarded FMU with too many guards to list its modes."""
    text = _mode_description(md)
    if ":" not in text:
        return []
    text = text.split(":", 1)[1]
    return [m.strip() for m in re.split(r",\s*(?=\d+\s*=)", text)
            if re.match(r"\s*\d+\s*=", m)]


def mode_count(md) -> int:
    """The number of modes of our FMU: those listed, else the count its mode variable's
    description gives (``4096 modes``), else 1."""
    listed = modes(md)
    if listed:
        return len(listed)
    found = re.search(r"\b(\d+) modes\b", _mode_description(md))
    return int(found.group(1)) if found else 1


def ours_section(md) -> list[str]:
    """The lines on our FMU's multimode structure (module docstring)."""
    lines = ["", "Multimode structure (mdae_fmu)", ""]
    listed = modes(md)
    lines.append(f"  Modes              {mode_count(md)}")
    for m in listed[:MAX_MODES]:
        lines.append(f"    {m}")
    if len(listed) > MAX_MODES:
        lines.append(f"    ... {len(listed) - MAX_MODES} more")
    discrete = [v for v in md.modelVariables
                if v.variability == "discrete" and v.causality in ("local", "output")
                and v.name != MODE_VARIABLE and not v.name.startswith("impulse(")]
    impulses = [v for v in md.modelVariables if v.name.startswith("impulse(")]
    for title, group in (("Discrete Variables", discrete), ("Impulse Outputs", impulses)):
        lines.append(f"  {title:18} {len(group)}")
        for v in group[:MAX_MODES]:
            desc = f"  {v.description}" if v.description else ""
            lines.append(f"    {v.name} ({v.type}){desc}")
        if len(group) > MAX_MODES:
            lines.append(f"    ... {len(group) - MAX_MODES} more")
    return lines


def info_text(fmu: str | Path) -> str:
    """The text ``mdae-fmu info`` prints (module docstring). Raises `InputError` for a file
    that is not a readable FMU within the extraction limits."""
    from fmpy.util import fmu_info
    path = Path(fmu)
    if path.suffix.lower() != ".fmu":
        raise InputError(f"{path}: info takes an .fmu (export a model first)")
    with open_fmu(path) as opened:
        text = fmu_info(str(opened.directory)).strip("\n")
        md = opened.model_description
    lines = [f"{path}", "", text]
    if is_ours(md):
        lines += ours_section(md)
    return "\n".join(lines)


def info_command(args) -> int:
    """The ``mdae-fmu info`` command: exit 0, or 2 for an unreadable FMU."""
    try:
        print(info_text(args.fmu))
    except MdaeError as err:
        print(str(err), file=sys.stderr)
        return err.exit_code
    return EXIT_OK


def add_parser(sub) -> None:
    """Register ``info`` on the CLI's subparsers."""
    i = sub.add_parser("info", help="describe an FMU (as fmpy info, plus the modes of ours)")
    i.add_argument("fmu", help="an .fmu")


__all__ = ["info_text", "info_command", "add_parser", "modes", "mode_count", "is_ours"]
