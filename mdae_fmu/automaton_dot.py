"""Graphviz DOT of the mode-change automaton (``mdae-fmu analyze --dot FILE``).

Nodes are the configurations of the exploration (docs/theory.md §8.1,
Figure 20 of RR-9334): a steady configuration is labelled with its long mode; the intermediate
configurations of a cascade with the context they carry. Edges are ExecRuns labelled with the
mode and the solved blocks: blue self-loops are continuous modes, black edges discrete restart
steps, red edges steps with erased equations (conflicts, possible impulses), dashed red edges
failures. Labels are escaped: model names never reach the output unquoted.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .modes.explore import Automaton
from .output import atomic_output, write_text
from .modes.runs import eq_label


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def automaton_to_dot(a: Automaton, max_label: int = 60) -> str:
    """The automaton as a DOT digraph."""
    system = a.system
    steady_label: dict = {}
    for e in a.edges:
        src, mode, dst, inst = e
        if dst == src and not inst.erased and system is not None:
            steady_label.setdefault(src, system.mode_label(mode))
    lines = [f"digraph {_q(a.name)} {{", "  rankdir=LR;", '  node [shape=box, fontsize=10];',
             '  edge [fontsize=9];']
    for i, c in enumerate(a.configs):
        if i in steady_label:
            lab = f"C{i}\nsteady [{steady_label[i]}]"
            lines.append(f"  C{i} [label={_q(lab)}, style=bold];")
        else:
            ctx = ", ".join(eq_label(k) for k in sorted(c.context)) or "-"
            lab = f"C{i}\ncontext {{{ctx[:max_label]}}}"
            lines.append(f"  C{i} [label={_q(lab)}];")
    fail_n = 0
    for src, mode, dst, inst in a.edges:
        mlabel = system.mode_label(mode) if system is not None else str(mode)
        if dst < 0:
            fail_n += 1
            code = inst.diagnostic.code if inst.diagnostic else ""
            lines.append(f"  F{fail_n} [label={_q('FAIL: ' + code)}, color=red, fontcolor=red];")
            lines.append(f"  C{src} -> F{fail_n} [label={_q(mlabel)}, color=red, style=dashed];")
            continue
        blocks = "; ".join("+".join(eq_label(k) for k in b.equations) for b in inst.blocks)
        if len(blocks) > max_label:
            blocks = blocks[:max_label] + "..."
        lab = f"[{mlabel}]\n{blocks}"
        if inst.erased:
            lab += "\nerased " + ", ".join(eq_label(k) for k in sorted(inst.erased))
        color = "blue" if (src == dst and not inst.erased) else ("red" if inst.erased else "black")
        lines.append(f"  C{src} -> C{dst} [label={_q(lab)}, color={color}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_dot(a: Automaton, path: str | Path, inputs=()) -> Path | None:
    """Write ``path`` (DOT) and, when the ``dot`` program is installed, ``path`` with suffix
    ``.png``; returns the PNG path or None. Both are written atomically
    (`mdae_fmu.output.atomic_output`); ``inputs``: files they must not replace."""
    path = Path(path)
    write_text(path, automaton_to_dot(a), inputs)
    exe = shutil.which("dot")
    if exe is None:
        return None
    png = path.with_suffix(".png")
    try:
        with atomic_output(png, inputs) as partial:
            subprocess.run([exe, "-Tpng", str(path), "-o", str(partial)], check=True,
                           capture_output=True, timeout=60)
    except (subprocess.SubprocessError, OSError):
        return None
    return png
