"""Fetch the corpus models that are not committed (tests/corpus/manifest.json, "committed": false)
into a git-ignored directory (default benchmarks/results/corpus/), extracting each flat model.

OpenModelica's testsuite files (OSMC-PL / GPL) cannot be redistributed in this BSD-3-Clause
project: only their origin (repository, commit, path) is kept, and this script reads them either
from a local clone (``--openmodelica DIR``, ``git show COMMIT:PATH``) or from GitHub's raw file
service at the pinned commit. Extraction ("extract" in the manifest):

* ``result-block``: the lines between ``// Result:`` and ``// endResult``, each without its
  leading ``// ``, up to the first line ``end NAME;`` (the flat class omc printed);
* ``whole-file``: the file unchanged (a model file that a simulation test loads);
* ``mos-loadString``: the Modelica text given to the last ``loadString("...")`` of a ``.mos``
  simulation test that defines the class named by ``model`` (string escapes undone);
* ``mos-instantiate``: the flat text that ``instantiateModel(model)`` printed in the result
  block of a ``.mos`` test that instantiates several library models (OpenModelica's
  ``simulation/libraries/msl31`` tests: the Modelica Standard Library 3.1 examples): the
  string from its opening quote (the functions omc printed before the class) to ``end model;``;
* ``base-modelica``: the Base Modelica text omc printed (``-f``, ``--baseModelica``) in the
  result block of a test, as a file or as the string an ``instantiateModel`` call returned:
  from the line ``//! base ...`` to the ``end 'P';`` of its ``package 'P'`` (string escapes
  undone when it was a string).

``benchmarks/corpus.py`` then reads the class ``model`` of that text.

    python benchmarks/fetch_corpus.py [--openmodelica /path/to/OpenModelica] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "tests" / "corpus" / "manifest.json"
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "corpus"
_RESULT_RE = re.compile(r"^// Result:\n(.*?)^// endResult", re.S | re.M)
_END_RE = re.compile(r"^end [^;]+;[ \t]*$", re.M)


_LOADSTRING_RE = re.compile(r'loadString\(\s*"((?:[^"\\]|\\.)*)"', re.S)


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


def extract(text: str, how: str, model: str | None = None) -> str:
    """The flat model of a source file (module docstring); ValueError when there is none."""
    if how == "whole-file":
        return text
    if how == "mos-loadString":
        head = text.split("// Result:", 1)[0]
        last = (model or "").rsplit(".", 1)[-1]
        defines = re.compile(rf"\b(?:model|class|block)\s+{re.escape(last)}\b")
        found = [_unescape(m.group(1)) for m in _LOADSTRING_RE.finditer(head)]
        found = [t for t in found if defines.search(t)]
        if not found:
            raise ValueError(f"no loadString(...) defining {model!r}")
        return found[-1]
    if how not in ("result-block", "mos-instantiate", "base-modelica"):
        raise ValueError(f"unknown extraction {how!r}")
    m = _RESULT_RE.search(text)
    if not m:
        raise ValueError("no '// Result:' ... '// endResult' block")
    lines = [ln[3:] if ln.startswith("// ") else ln[2:] for ln in m.group(1).splitlines()]
    if how == "mos-instantiate":
        return _instantiated(lines, model or "")
    if how == "base-modelica":
        return _base_modelica(lines)
    body = "\n".join(lines)
    end = _END_RE.search(body)
    if not end:
        raise ValueError("the result block has no 'end NAME;' line")
    return body[:end.end()] + "\n"


def _instantiated(lines: list[str], model: str) -> str:
    """The string instantiateModel(``model``) printed, among the result block's ``lines``."""
    head = next((k for k, ln in enumerate(lines) if ln.strip().lstrip('"') == f"class {model}"),
                None)
    if head is None:
        raise ValueError(f"the result block has no 'class {model}'")
    start = next((k for k in range(head, -1, -1) if lines[k].startswith('"')), None)
    end = next((k for k in range(head, len(lines)) if lines[k].strip() == f"end {model};"),
               None)
    if start is None or end is None:
        raise ValueError(f"no quoted instantiateModel output around 'class {model}'")
    text = "\n".join([lines[start][1:], *lines[start + 1:end + 1]]) + "\n"
    # omc prints the result as a Modelica string: some tests record it with its escapes
    return _unescape(text) if '\\"' in text else text


def _base_modelica(lines: list[str]) -> str:
    """The Base Modelica package printed among the result block's ``lines`` (module
    docstring, ``base-modelica``)."""
    head = next((k for k, ln in enumerate(lines) if ln.lstrip('"').startswith("//! base")),
                None)
    if head is None:
        raise ValueError("the result block has no '//! base' line")
    quoted = lines[head].startswith('"')
    pkg = next((re.match(r"package\s+('(?:[^'\\]|\\.)*'|\w+)", ln) for ln in lines[head:]
                if ln.startswith("package")), None)
    if pkg is None:
        raise ValueError("no 'package' after the '//! base' line")
    end = next((k for k in range(head, len(lines))
                if lines[k].rstrip() == f"end {pkg.group(1)};"), None)
    if end is None:
        raise ValueError(f"no 'end {pkg.group(1)};' closing the package")
    text = "\n".join([lines[head].lstrip('"'), *lines[head + 1:end + 1]]) + "\n"
    return _unescape(text) if quoted else text


def source_text(entry: dict, clones: dict[str, Path]) -> str:
    repo = clones.get(entry["source"])
    if repo is not None:
        return subprocess.run(["git", "show", f"{entry['commit']}:{entry['path']}"], cwd=repo,
                              check=True, capture_output=True, text=True).stdout
    url = (f"https://raw.githubusercontent.com/{entry['source']}/{entry['commit']}/"
           f"{entry['path']}")
    with urllib.request.urlopen(url, timeout=60) as resp:  # noqa: S310 — fixed https host
        return resp.read().decode("utf-8")


def corpus_file(entry: dict, out: Path) -> Path:
    """Where the flat text of ``entry`` is (committed file, or fetched into ``out``)."""
    if entry.get("committed"):
        return ROOT / entry["file"]
    return out / (entry["id"].replace("/", "__") + ".mo")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--openmodelica", type=Path, help="local clone of OpenModelica/OpenModelica")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = ap.parse_args(argv)
    clones = {"OpenModelica/OpenModelica": a.openmodelica} if a.openmodelica else {}
    a.out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for entry in json.loads(MANIFEST.read_text())["models"]:
        if entry.get("committed"):
            continue
        try:
            flat = extract(source_text(entry, clones), entry["extract"], entry.get("model"))
        except (OSError, ValueError, subprocess.CalledProcessError) as err:
            print(f"{entry['id']}: {err}", file=sys.stderr)
            failed += 1
            continue
        corpus_file(entry, a.out).write_text(flat)
    print(f"fetched into {a.out} ({failed} failed)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
