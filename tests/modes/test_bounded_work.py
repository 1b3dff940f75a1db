"""Bounded work on any input (issue 15, item 7): when-clause combinations are limited before
they are enumerated, a long quoted identifier costs memory in proportion to its length, and
control characters in descriptions and units never break the XML outputs."""

from __future__ import annotations

import subprocess
import sys
import time
import zipfile

import pytest
from lxml import etree

from mdae_fmu.cli import main
from mdae_fmu.diagnostics import InputError
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.importers.xml_writer import model_to_xml
from mdae_fmu.modes.normalize import MAX_TRANSIENT_MODES, TooManyTransientModes, normalize


def when_clauses(n: int) -> str:
    """One state crossing n thresholds, each counted by its own when-clause."""
    lines = ["class W", "  Real x(start = 0, fixed = true);"]
    lines += [f"  discrete Real c{i}(start = 0, fixed = true);" for i in range(n)]
    lines += ["equation", "  der(x) = 1;"]
    lines += [f"  when x > {i + 1}.5 then c{i} = pre(c{i}) + 1; end when;" for i in range(n)]
    return "\n".join(lines + ["end W;"]) + "\n"


def test_when_clause_limit_is_exact():
    """16 when-clauses: 2^16 - 1 transient modes plus the long one are enumerated; 17 are
    refused before any enumeration."""
    assert MAX_TRANSIENT_MODES == 2 ** 16
    modes = normalize(parse_modelica(when_clauses(16), "w.mo")).modes()
    assert len(modes) == 2 ** 16 and len(set(modes)) == 2 ** 16
    with pytest.raises(TooManyTransientModes, match=r"17 when-conditions .* 2\^17 - 1 "
                                                    r"combinations"):
        normalize(parse_modelica(when_clauses(17), "w.mo")).modes()


def test_3000_when_clauses_accepted_and_listed_modes_refused_quickly(tmp_path, capsys):
    """3000 when-clauses on one state: the enumerated view (`analyze --list-modes`) refuses
    them before any enumeration, its bound a legitimate limit of a listing; `analyze` takes
    the one analysis, which enumerates no transient mode, and accepts them (issue 26: a
    well-posed model is never refused by a size limit)."""
    src = tmp_path / "W.mo"
    src.write_text(when_clauses(3000))
    t0 = time.monotonic()
    assert main(["analyze", "--list-modes", str(src)]) == 1
    elapsed = time.monotonic() - t0
    out = capsys.readouterr().out
    assert ("E-EXPLORE-BOUND: model W: 3000 when-conditions (transient guards) can become "
            "true at the same instant in 2^3000 - 1 combinations, more than the enumeration "
            "limit of 65536 transient modes") in out
    assert "at most 16 when-clauses" in out
    assert elapsed < 60, elapsed          # was a MemoryError traceback
    t0 = time.monotonic()
    assert main(["analyze", str(src)]) == 0
    elapsed = time.monotonic() - t0
    out = capsys.readouterr().out
    assert "verdict: accepted" in out and "E-EXPLORE-BOUND" not in out
    assert elapsed < 60, elapsed


MEASURE = """
import resource, sys
from mdae_fmu.importers.flat_modelica import load_modelica, _parser
_parser()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
m = load_modelica(sys.argv[1])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
assert len(m.variables[0].name) == int(sys.argv[2])
print((after - before) * 1024)
"""


def test_long_quoted_identifier_memory_proportional(tmp_path):
    """A 4 MB quoted identifier, used twice (8 MB of text): the import's peak memory grows by
    less than 8 bytes per byte of input (the regular expression of quoted identifiers used to
    keep state per character: 2 GB for 10 MB)."""
    n = 4 * 1024 * 1024
    name = "a" * (n // 2) + "\\'" + "b" * (n // 2 - 2)
    src = tmp_path / "Q.mo"
    src.write_text(f"class Q\n  Real '{name}'(start = 1, fixed = true);\nequation\n"
                   f"  der('{name}') = -1;\nend Q;\n")
    r = subprocess.run([sys.executable, "-c", MEASURE, str(src), str(n - 1)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    grown = int(r.stdout)
    assert grown < 8 * src.stat().st_size, grown


CONTROL = """class C
  parameter Real k = 2 "gain \\b of \\a";
  Real x(start = 1, fixed = true, unit = "m\\f");
equation
  der(x) = -k * x;
end C;
"""


@pytest.mark.long      # builds an FMU: out of -m quick
def test_control_characters_escaped_in_model_description(tmp_path):
    """Descriptions and units with control characters: backslash escapes in
    modelDescription.xml (FMPy validates it); the XML equation list, which must keep the
    text exactly, refuses them with a message."""
    from fmpy import read_model_description
    src = tmp_path / "C.mo"
    src.write_text(CONTROL)
    fmu = tmp_path / "C.fmu"
    assert main(["export", str(src), "-o", str(fmu)]) == 0
    md = read_model_description(str(fmu), validate=True)
    by_name = {v.name: v for v in md.modelVariables}
    assert by_name["k"].description == "gain \\x08 of \\x07"
    assert by_name["x"].unit == "m\\x0c"
    with zipfile.ZipFile(fmu) as zf:
        root = etree.fromstring(zf.read("modelDescription.xml"))
    assert [u.get("name") for u in root.iter("Unit")] == ["m\\x0c"]
    model = parse_modelica(CONTROL, "C.mo")
    with pytest.raises(InputError, match=r"attribute 'description' of <variable> contains the "
                                         r"character U\+0008, which XML 1.0 cannot hold"):
        model_to_xml(model)


def test_file_over_the_default_limit_refused_at_once(tmp_path, capsys):
    """A 200 MB file (sparse: nothing to read) is over the 128 MiB limit of 10^6-equation
    models: exit 2 with file:line:col, before any reading, no traceback."""
    src = tmp_path / "Huge.mo"
    with open(src, "wb") as f:
        f.truncate(200 * 1024 * 1024)
    t0 = time.monotonic()
    assert main(["analyze", str(src)]) == 2
    assert time.monotonic() - t0 < 5
    err = capsys.readouterr().err
    assert f"{src}:1:1: file is too large (209715200 bytes; the limit is 128 MiB)" in err
    assert "Traceback" not in err
