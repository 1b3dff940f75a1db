"""`mdae-fmu analyze --json` against its documented schema (docs/analyze-json.md; issue 3
Deliver 5: "`--json` gives the same content machine-readable, with its schema documented").

The schema is read from the document itself: every ``## Name`` / ``### Name`` section with a
``| key | type | meaning |`` table describes one JSON object. Types are written in a small
language: ``string``, ``int``, ``bool``, ``T or null``, ``[T]`` (list), ``{string: T}``
(map), or the name of another section. The checker is strict both ways: a key the document
lists must be present with its type, and a key the output has must be documented. So the
document cannot drift from the output without a failing test.

``python tests/workflows/test_structure_json_schema.py`` prints the document's example (the real
output for reference_models/ClutchBasic.mo) in the document's compact layout.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "analyze-json.md"
TOP = "Top level"
EXAMPLE_MODEL = "reference_models/ClutchBasic.mo"


# --- the schema, parsed from the document ---------------------------------------------------

def parse_schema(text: str) -> dict[str, dict[str, str]]:
    """``{section name: {key: type}}`` for every section that holds a key table."""
    schema: dict[str, dict[str, str]] = {}
    section = None
    for line in text.splitlines():
        m = re.match(r"#{2,3} (.+?)\s*$", line)
        if m:
            section = re.sub(r"\s*\(.*\)$", "", m.group(1)).strip().strip("`")
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")] \
            if line.startswith("|") else []
        if len(cells) >= 3 and section and re.fullmatch(r"`[^`]+`", cells[0]) and \
                re.fullmatch(r"`[^`]+`", cells[1]):
            schema.setdefault(section, {})[cells[0].strip("`")] = cells[1].strip("`")
    return schema


def check(value, typ: str, schema: dict, path: str, errors: list[str]) -> None:
    """Validate ``value`` against type expression ``typ``; append messages to ``errors``."""
    typ = typ.strip()
    if typ.endswith(" or null"):
        if value is not None:
            check(value, typ[:-len(" or null")], schema, path, errors)
        return
    if typ == "string":
        ok = isinstance(value, str)
    elif typ == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif typ == "bool":
        ok = isinstance(value, bool)
    elif typ.startswith("[") and typ.endswith("]"):
        ok = isinstance(value, list)
        if ok:
            for k, x in enumerate(value):
                check(x, typ[1:-1], schema, f"{path}[{k}]", errors)
    elif typ.startswith("{string:") and typ.endswith("}"):
        ok = isinstance(value, dict)
        if ok:
            for k, x in value.items():
                check(x, typ[len("{string:"):-1], schema, f"{path}.{k}", errors)
    elif typ in schema:
        ok = isinstance(value, dict)
        if ok:
            keys = schema[typ]
            for k in keys.keys() - value.keys():
                errors.append(f"{path}: documented key {k!r} ({typ}) missing")
            for k in value.keys() - keys.keys():
                errors.append(f"{path}: key {k!r} not documented in section {typ!r}")
            for k in keys.keys() & value.keys():
                check(value[k], keys[k], schema, f"{path}.{k}", errors)
    else:
        errors.append(f"{path}: unknown type {typ!r} in the document")
        return
    if not ok:
        errors.append(f"{path}: expected {typ}, got {type(value).__name__} {value!r:.60}")


def validate(j: dict, schema: dict) -> list[str]:
    errors: list[str] = []
    check(j, TOP, schema, "$", errors)
    return errors


@pytest.fixture(scope="module")
def schema():
    return parse_schema(DOC.read_text(encoding="utf-8"))


# --- the checker itself can fail ------------------------------------------------------------

def test_schema_checker_catches_drift(schema):
    assert {TOP, "Mode", "Equation", "Automaton", "Diagnostic"} <= schema.keys()
    good = {"a": 1, "b": [{"x": "s", "y": None}], "c": {"e1": 2}}
    mini = {TOP: {"a": "int", "b": "[Item]", "c": "{string: int}"},
            "Item": {"x": "string", "y": "int or null"}}
    assert validate(good, mini) == []
    assert validate({**good, "z": 0}, mini) == ["$: key 'z' not documented in section "
                                                "'Top level'"]
    assert validate({"a": 1, "c": {}}, mini) == ["$: documented key 'b' (Top level) missing"]
    bad = {"a": True, "b": [{"x": 1, "y": None}], "c": {"e1": "2"}}
    assert len(validate(bad, mini)) == 3
    # every type the document uses is known
    for sec, keys in schema.items():
        for k, t in keys.items():
            errs = []
            check(None, t if t.endswith(" or null") else t + " or null", schema, k, errs)
            assert not errs, (sec, k, t)


# --- real outputs ---------------------------------------------------------------------------

def _analysis_json(path: str):
    from mdae_fmu import api
    from mdae_fmu.analysis import analyze, render_json
    model = api.load(path)
    a = analyze(model, implicit=False)      # the enumerated report (--list-modes --json)
    return a, json.loads(json.dumps(render_json(model, a)))


@functools.lru_cache(maxsize=None)
def _reference_json(name: str):
    """The analysis of a reference model, run from the repository root (so that
    ``loc.file`` reads ``reference_models/NAME.mo``), once per test session."""
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return _analysis_json(f"reference_models/{name}.mo")
    finally:
        os.chdir(cwd)


def _reference_models():
    files = sorted((ROOT / "reference_models").glob("*.mo"))
    return [f.stem for f in files]


@pytest.mark.parametrize("name", _reference_models())
def test_reference_model_json_matches_documented_schema(name, schema):
    """Every reference model, accepted or rejected: the whole --json object (per-mode part,
    mode_changes, verdict) has exactly the documented keys and types."""
    a, j = _reference_json(name)
    assert validate(j, schema) == []
    assert j["exit_code"] == a.exit_code and j["accepted"] == a.accepted
    assert j["accepted"] == (j["exit_code"] == 0)
    assert j["counts"]["modes"] == len(j["modes"])
    if j["accepted"]:
        assert j["mode_changes"] is not None and j["mode_changes"]["accepted"]
        assert all(m["ok"] and m["index"] is not None for m in j["modes"])
        # warnings only in the messages of an accepted model
        assert all(msg.startswith("W-") for msg in j["messages"])


def test_most_reference_models_are_accepted():
    """Keeps the schema test above from passing vacuously on rejections only."""
    names = _reference_models()
    accepted = [n for n in names if _reference_json(n)[1]["accepted"]]
    assert len(names) >= 15 and len(accepted) >= 10, accepted


def test_rejected_mode_json(schema, tmp_path):
    bad = tmp_path / "ClutchBad.mo"
    bad.write_text("""class ClutchBad
  parameter Real k1 = 0.01;
  parameter Real k2 = 0.0125;
  Boolean engaged;
  Real w1(start = 1.0, fixed = true);
  Real w2(start = 1.5, fixed = true);
  Real f1;
  Real f2;
equation
  engaged = time >= 5.0;
  der(w1) = -k1 * w1 + f1;
  0 = if engaged then w1 - 2.0 else f1;
  der(w2) = -k2 * w2 + (if engaged then -f1 else f2);
  0 = if engaged then w1 - 1.0 else f2;
end ClutchBad;
""")
    a, j = _analysis_json(str(bad))
    assert validate(j, schema) == []
    assert j["exit_code"] == 1 and not j["accepted"] and j["mode_changes"] is None
    m = next(m for m in j["modes"] if not m["ok"])
    assert m["status"] == "singular" and m["index"] is None and m["structural_index"] is None
    assert m["over"]["variables"] == ["w1"] and m["under"]["variables"] == ["f2"]
    assert j["messages"] == [m["diagnostic"]]


def test_document_example_is_real_output(schema):
    """The example in the document is `mdae-fmu analyze --list-modes
    reference_models/ClutchBasic.mo --json`: the per-mode part and the verdict are compared
    exactly; the mode-change part (owned by the multimode stage) is checked against the
    schema."""
    text = DOC.read_text(encoding="utf-8")
    m = re.search(r"## Example.*?```json\n(.*?)```", text, re.S)
    assert m, "no example in docs/analyze-json.md"
    example = json.loads(m.group(1))
    assert validate(example, schema) == []
    _, j = _reference_json("ClutchBasic")
    for k in j:
        if k != "mode_changes":
            assert example[k] == j[k], f"example differs from the real output at {k!r}"
    assert example.keys() == j.keys()


# --- the document's compact layout ----------------------------------------------------------

def dumps_compact(v, indent: int = 0, width: int = 96) -> str:
    """JSON with one line per object or list when it fits in ``width`` columns."""
    flat = json.dumps(v, ensure_ascii=False)
    if len(flat) + indent <= width or not isinstance(v, (dict, list)) or not v:
        return flat
    pad = " " * (indent + 2)
    if isinstance(v, dict):
        items = [f"{pad}{json.dumps(k)}: {dumps_compact(x, indent + 2, width)}"
                 for k, x in v.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + dumps_compact(x, indent + 2, width) for x in v]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    print(dumps_compact(_analysis_json(EXAMPLE_MODEL)[1]))
