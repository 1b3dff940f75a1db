"""The README's tutorial is run as written (issue 28 Deliver 7, Acceptance).

Every ``$ command`` of the code blocks of the README section "Tutorial" runs with bash in a
scratch folder that sees the repository's ``reference_models/`` (``mdae-fmu`` is this
interpreter's), must exit 0, and must print each output line the README shows below it
("..." stands for lines left out). Numbers are compared to 1e-6 relative, except durations
and rates (a number followed by ``s`` or ``runs/s``), which depend on the machine.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]

#: A number, as the commands print them (``1.2863096896173765``, ``1e-06``, ``5003``).
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
#: A number that is a duration or a rate: its value is the machine's, not the model's.
TIMING = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?= (?:s\b|runs/s))")


def tutorial_steps(readme: str) -> list[tuple[str, list[str]]]:
    """``(command, expected output lines)`` for every ``$ `` line of the code blocks of the
    README's "Tutorial" section, in order; a trailing backslash continues a command."""
    start = readme.index("\n## Tutorial")
    end = readme.find("\n## ", start + 1)
    section = readme[start:end if end >= 0 else len(readme)]
    steps: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```\n(.*?)```", section, re.S):
        lines = block.splitlines()
        output: list[str] | None = None        # the output lines of this block's last command
        i = 0
        while i < len(lines):
            if not lines[i].startswith("$ "):
                if output is not None and lines[i].strip() not in ("", "..."):
                    output.append(lines[i].strip())
                i += 1
                continue
            command = lines[i][2:]
            while command.endswith("\\") and i + 1 < len(lines):
                i += 1
                command = command[:-1] + " " + lines[i].strip()
            output = []
            steps.append((command, output))
            i += 1
    return steps


def _shape(line: str) -> str:
    return NUMBER.sub("#", " ".join(line.split()))


def _numbers(line: str) -> list[float]:
    return [float(x) for x in NUMBER.findall(TIMING.sub("T", line))]


def line_matches(expected: str, actual: str) -> bool:
    """The same text with the same numbers (1e-6 relative), durations and rates aside."""
    if _shape(expected) != _shape(actual):
        return False
    want, got = _numbers(expected), _numbers(actual)
    return len(want) == len(got) and all(
        abs(w - g) <= 1e-6 * max(abs(w), abs(g)) for w, g in zip(want, got))


def test_the_tutorial_parser_and_matcher() -> None:
    """The parser keeps continuation lines and drops '...'; the matcher tolerates timings
    only."""
    text = ("# x\n\n## Tutorial\n\n```\n$ mdae-fmu a \\\n      --b c\nout 1.5\n...\n```\n"
            "```\nnot a command\n```\n\n## Next\n```\n$ ignored\n```\n")
    assert tutorial_steps(text) == [("mdae-fmu a  --b c", ["out 1.5"])]
    assert line_matches("8 runs; 0.71 s, 11.2 runs/s", "8 runs; 3.5 s, 2.0 runs/s")
    assert not line_matches("8 runs; 0.71 s", "9 runs; 0.71 s")
    assert not line_matches("w1 = 1.28630969", "w1 = 1.2863")
    assert not line_matches("verdict: accepted", "verdict: rejected")


def test_the_readme_tutorial_runs_as_written(tmp_path: Path) -> None:
    steps = tutorial_steps((ROOT / "README.md").read_text(encoding="utf-8"))
    assert [c.split()[:2] for c in (s[0] for s in steps) if c.startswith("mdae-fmu")] == [
        ["mdae-fmu", "analyze"], ["mdae-fmu", "export"], ["mdae-fmu", "simulate"],
        ["mdae-fmu", "compare"], ["mdae-fmu", "sweep"]], "the tutorial's order changed"
    (tmp_path / "reference_models").symlink_to(ROOT / "reference_models")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    for command, expected in steps:
        run = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        assert run.returncode == 0, f"{command}\n{run.stdout}"
        actual = run.stdout.splitlines()
        missing = [e for e in expected if not any(line_matches(e, a) for a in actual)]
        assert missing == [], f"{command}: lines not printed:\n" + "\n".join(missing) + \
            "\n--- printed:\n" + run.stdout
