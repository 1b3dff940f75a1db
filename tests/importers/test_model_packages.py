"""Models in packages (issue 28 Deliver 4): ``--model`` takes the short or the qualified name
and never guesses, ``--modelica-path`` / ``MODELICAPATH`` find libraries, diagnostics of a
hierarchical model point into the user's file (or into the flat text ``--keep-flat`` writes),
and a library with thousands of classes is not listed whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from mdae_fmu import api
from mdae_fmu.cli import main
from mdae_fmu.diagnostics import InputError

DATA = Path(__file__).resolve().parents[1] / "data" / "hierarchical"

LIBRARY = """package RotLib "a small rotational library"
  connector Flange
    Real w;
    flow Real tau;
  end Flange;
  model Inertia
    parameter Real J = 1.0;
    Real w(start = 1.0, fixed = true);
    Flange flange;
  equation
    flange.w = w;
    J * der(w) = flange.tau;
  end Inertia;
  model Damper
    parameter Real d = 0.5;
    Flange flange;
  equation
    flange.tau = -d * flange.w;
  end Damper;
end RotLib;
"""

PACKAGE = """package Pkg
  package Components
    connector Pin
      Real v;
      flow Real i;
    end Pin;
    model Resistor
      parameter Real R = 1.0;
      Pin p;
      Pin n;
    equation
      p.v - n.v = R * p.i;
      p.i + n.i = 0;
    end Resistor;
    model Capacitor
      parameter Real C = 1.0;
      Real v(start = 1.0, fixed = true);
      Pin p;
      Pin n;
    equation
      v = p.v - n.v;
      C * der(v) = p.i;
      p.i + n.i = 0;
    end Capacitor;
    model Ground
      Pin p;
    equation
      p.v = 0;
    end Ground;
  end Components;
  package Examples
    model Circuit2
      Components.Resistor r(R = 2.0);
      Components.Capacitor c(C = 0.5);
      Components.Ground g;
    equation
      connect(r.p, c.p);
      connect(r.n, c.n);
      connect(c.n, g.p);
    end Circuit2;
    model Circuit3
      Components.Resistor r1;
      Components.Resistor r2;
      Components.Capacitor c;
      Components.Ground g;
    equation
      connect(r1.p, c.p);
      connect(r1.n, r2.p);
      connect(r2.n, c.n);
      connect(c.n, g.p);
    end Circuit3;
  end Examples;
end Pkg;
"""


@pytest.fixture(autouse=True)
def _rumoca(monkeypatch):
    pytest.importorskip("rumoca")
    monkeypatch.delenv("MODELICAPATH", raising=False)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_short_and_qualified_names_choose_the_same_model(tmp_path):
    src = _write(tmp_path, "Pkg.mo", PACKAGE)
    short = api.load(src, "Circuit2")
    full = api.load(src, "Pkg.Examples.Circuit2")
    assert short.name == full.name
    assert [str(e.residual) for e in short.equations] == \
        [str(e.residual) for e in full.equations]
    assert {v.name for v in short.variables} >= {"r.R", "c.v", "g.p.v"}
    assert "r1.R" in {v.name for v in api.load(src, "Circuit3").variables}


def test_without_model_a_file_with_two_top_models_is_refused_with_both(tmp_path, capsys):
    src = _write(tmp_path, "Pkg.mo", PACKAGE)
    assert main(["analyze", str(src)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{src}:1:1: this file defines 2 models that could be the one to "
                          "simulate (Pkg.Examples.Circuit2, Pkg.Examples.Circuit3): choose one "
                          "with --model NAME"), err
    assert main(["analyze", "--model", "Circuit2", str(src)]) == 0
    assert "verdict: accepted" in capsys.readouterr().out


def test_the_only_top_model_needs_no_option(tmp_path):
    """The components (used by other classes) are not candidates: one top model is not a
    guess."""
    src = _write(tmp_path, "Lib.mo", PACKAGE.replace(
        PACKAGE[PACKAGE.index("    model Circuit3"):PACKAGE.index("  end Examples;")], ""))
    assert api.load(src).name == api.load(src, "Pkg.Examples.Circuit2").name


def test_an_ambiguous_short_name_lists_the_candidates(tmp_path):
    text = PACKAGE.replace("  end Examples;\n", "  end Examples;\n  package More\n"
                           "    model Circuit2\n      Real x(start = 1, fixed = true);\n"
                           "    equation\n      der(x) = -x;\n    end Circuit2;\n"
                           "  end More;\n")
    src = _write(tmp_path, "Pkg.mo", text)
    with pytest.raises(InputError) as err:
        api.load(src, "Circuit2")
    assert err.value.message == ("'Circuit2' is ambiguous in this file: Pkg.Examples.Circuit2, "
                                 "Pkg.More.Circuit2; give the qualified name")
    assert api.load(src, "Pkg.More.Circuit2").name


def test_libraries_through_modelica_path_and_the_environment(tmp_path, capsys, monkeypatch):
    lib = tmp_path / "libs" / "RotLib"
    lib.mkdir(parents=True)
    (lib / "package.mo").write_text(LIBRARY)
    src = _write(tmp_path, "UseLib.mo", "model UseLib\n  RotLib.Inertia inertia(J = 2.0);\n"
                 "  RotLib.Damper damper(d = 0.25);\nequation\n"
                 "  connect(inertia.flange, damper.flange);\nend UseLib;\n")
    assert main(["analyze", str(src)]) == 2
    err = capsys.readouterr().err
    assert "rumoca could not flatten 'UseLib'" in err and "--modelica-path" in err
    assert main(["analyze", "--modelica-path", str(tmp_path / "libs"), str(src)]) == 0
    out = capsys.readouterr().out
    assert "states (1): inertia.w" in out and "verdict: accepted" in out
    monkeypatch.setenv("MODELICAPATH", str(tmp_path / "nowhere") + ":" + str(tmp_path / "libs"))
    model = api.load(src)
    assert {v.name for v in model.variables} >= {"inertia.J", "damper.d", "inertia.w"}


def test_library_equations_point_into_the_kept_flat_text(tmp_path):
    """The equations of the library's classes are not in the user's file: their locations
    refer to the flat text --keep-flat writes, where that line is the equation."""
    lib = tmp_path / "libs" / "RotLib"
    lib.mkdir(parents=True)
    (lib / "package.mo").write_text(LIBRARY)
    src = _write(tmp_path, "UseLib.mo", "model UseLib\n  RotLib.Inertia inertia(J = 2.0);\n"
                 "  RotLib.Damper damper(d = 0.25);\n  Real extra(start = 0, fixed = true);\n"
                 "equation\n  der(extra) = -inertia.w;\n"
                 "  connect(inertia.flange, damper.flange);\nend UseLib;\n")
    flat = tmp_path / "UseLib.flat.mo"
    model = api.load(src, modelica_path=[tmp_path / "libs"], keep_flat=flat)
    flat_lines = flat.read_text().splitlines()
    own = [e for e in model.equations if e.loc.file == str(src)]
    assert [e.loc.line for e in own] == [6], [e.loc for e in model.equations]
    kept = [e for e in model.equations if e.loc.file == str(flat)]
    assert len(kept) == len(model.equations) - 1
    assert "der(inertia.w)" in flat_lines[kept[1].loc.line - 1]


def test_diagnostics_of_a_hierarchical_model_name_the_users_lines(tmp_path, capsys):
    """ClutchComponents with the clutch law written the same in both branches: the analysis
    names its equations at their lines in the user's file, not in rumoca's flat text."""
    text = (DATA / "ClutchComponents.mo").read_text().replace(
        "0 = if g then a.w - b.w else a.tau;", "0 = if g then a.w - b.w else 2 * (a.w - b.w);")
    src = _write(tmp_path, "ClutchSame.mo", text)
    line = text[:text.index("2 * (a.w - b.w)")].count("\n") + 1
    model = api.load(src)
    assert all(e.loc.file == str(src) for e in model.equations)
    law = [e for e in model.equations if e.loc.line == line]
    assert len(law) == 1 and "If" in type(law[0].residual).__name__ + str(law[0].residual)
    assert main(["analyze", str(src)]) == 0
    out = capsys.readouterr().out
    assert f"(ClutchSame.mo:{line})" in out and "flat" not in out
    shaft = text[:text.index("J * der(w) = -k * w + flange.tau;")].count("\n") + 1
    assert sum(e.loc.line == shaft for e in model.equations) == 2   # one per shaft


def test_a_large_package_is_not_listed_whole(tmp_path):
    """A package of 300 models and documentation classes (the shape of the MSL's
    package.mo): --model with a wrong name gets a bounded list, examples first, no
    UsersGuide classes, and the count."""
    parts = ["package Big", "  package UsersGuide"]
    parts += [f"    class Page{i}\n    end Page{i};" for i in range(100)]
    parts += ["  end UsersGuide;", "  package Examples"]
    parts += [f"    model Ex{i}\n      Real x(start = 1, fixed = true);\n    equation\n"
              f"      der(x) = -x;\n    end Ex{i};" for i in range(200)]
    parts += ["  end Examples;", "end Big;"]
    src = _write(tmp_path, "package.mo", "\n".join(parts) + "\n")
    with pytest.raises(InputError) as err:
        api.load(src, "Nope")
    msg = err.value.message
    assert len(msg) < 800 and "UsersGuide" not in msg
    assert msg.startswith("no model, block or class named 'Nope' in this file; its models: "
                          "Big.Examples.Ex0, Big.Examples.Ex1, ")
    assert "... (300 models in all, 200 outside the documentation classes; --model takes " \
           "the qualified name, e.g. --model Big.Examples.Ex0)" in msg
    assert api.load(src, "Ex17").name
