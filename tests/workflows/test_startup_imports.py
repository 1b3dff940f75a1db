"""Start-up cost of the command line (issue 29): `mdae-fmu analyze` imports sympy only when
a reader needs the algebra of the differentiated equations (the full report, the
stateSelect-guided choice of a mode with few states), never scipy.optimize (0.16 s of CPU to
import; the Σ-method's transversal uses scipy.sparse.csgraph), and sympy's rewrite rule of
`mdae_fmu.symbolic` is in force whichever of the two modules is imported first."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.quick

# runs the command line in this process and prints the heavy modules it imported
_PROBE = textwrap.dedent("""
    import sys
    from mdae_fmu.cli import main
    rc = main(sys.argv[1:])
    heavy = ("sympy", "networkx", "lxml", "jinja2", "fmpy", "dd", "mpmath", "scipy.optimize")
    print("RC", rc, "IMPORTED", sorted(m for m in heavy if m in sys.modules))
""")

ODE = """model Heat
  Real T1(start = 1, fixed = true);
  Real T2(start = 0, fixed = true);
  Real q;
equation
  q = 2 * (T1 - T2);
  der(T1) = -q;
  der(T2) = q - 0.1 * T2;
end Heat;
"""

# index 2: the constraint is differentiated twice (sympy builds the latent equations when
# they are read)
PENDULUM = """model Pendulum
  Real x(start = 1, fixed = true);
  Real y;
  Real vx(start = 0, fixed = true);
  Real vy;
  Real F;
equation
  der(x) = vx;
  der(y) = vy;
  der(vx) = -F * x;
  der(vy) = -F * y - 9.81;
  x^2 + y^2 = 1;
end Pendulum;
"""


def _imported(tmp_path: Path, text: str, *command: str) -> tuple[str, list[str]]:
    """The exit code and heavy imports of ``mdae-fmu COMMAND m.mo`` (default ``analyze``)."""
    path = tmp_path / "m.mo"
    path.write_text(text)
    out = subprocess.run([sys.executable, "-c", _PROBE, *(command or ("analyze",)), str(path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    last = out.stdout.strip().splitlines()[-1]
    assert last.startswith("RC "), out.stdout + out.stderr
    rc = last.split()[1]
    return rc, eval_list(last.split("IMPORTED", 1)[1])


def eval_list(text: str) -> list[str]:
    """The printed list of module names (``['a', 'b']``), read without eval."""
    return [w.strip(" '") for w in text.strip().strip("[]").split(",") if w.strip()]


def test_analyze_of_an_ode_imports_no_sympy(tmp_path):
    rc, mods = _imported(tmp_path, ODE)
    assert rc == "0"
    assert mods == []


def test_analyze_of_an_ode_imports_neither_scipy_nor_lark(tmp_path):
    """Issue 29, the fixed cost of every command: a model whose systems have one matching
    each is analyzed without scipy (`structure.graph.strong_components`,
    `structure.sigma._only_transversal`; about 0.2 s of CPU to import) and read by the
    hand-written parser without lark (`importers.terminal_table`; about 0.13 s with the
    LALR tables). The pendulum's constraint closes a cycle: its transversal is scipy's."""
    for text, want in ((ODE, []), (PENDULUM, ["scipy"])):
        assert _scipy_and_lark(tmp_path, text, "analyze") == want


@pytest.mark.long
def test_export_of_an_ode_imports_neither_scipy_nor_lark(tmp_path):
    """The export too (the co-simulation's band ordering, `fmu.cosim.choose_linear_solver`,
    loads scipy only for a model with many states). (long: gcc builds the FMU)"""
    assert _scipy_and_lark(tmp_path, ODE, "export", "-o", str(tmp_path / "m.fmu")) == []


def _scipy_and_lark(tmp_path: Path, text: str, *command: str) -> list[str]:
    """Which of scipy and lark ``mdae-fmu COMMAND m.mo`` imported (it must succeed)."""
    path = tmp_path / "m.mo"
    path.write_text(text)
    probe = ("import sys\nfrom mdae_fmu.cli import main\nrc = main(sys.argv[1:])\n"
             "print('RC', rc, 'IMPORTED', sorted({m.split('.')[0] for m in sys.modules}"
             " & {'scipy', 'lark'}))\n")
    out = subprocess.run([sys.executable, "-c", probe, command[0], str(path), *command[1:]],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    last = out.stdout.strip().splitlines()[-1]
    assert last.startswith("RC 0 "), out.stdout + out.stderr
    return eval_list(last.split("IMPORTED", 1)[1])


def _project_modules(tmp_path: Path, text: str, *command: str) -> list[str]:
    """The `mdae_fmu` modules that ``mdae-fmu COMMAND m.mo`` imported (it must succeed)."""
    path = tmp_path / "m.mo"
    path.write_text(text)
    probe = ("import sys\nfrom mdae_fmu.cli import main\nrc = main(sys.argv[1:])\n"
             "print('RC', rc, 'IMPORTED', sorted(m for m in sys.modules"
             " if m.startswith('mdae_fmu.')))\n")
    out = subprocess.run([sys.executable, "-c", probe, command[0], str(path), *command[1:]],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    last = out.stdout.strip().splitlines()[-1]
    assert last.startswith("RC 0 "), out.stdout + out.stderr
    return eval_list(last.split("IMPORTED", 1)[1])


def test_analyze_of_a_model_without_guards_loads_no_implicit_analysis(tmp_path):
    """Issue 29 (stop 44): a model without guards has one mode, known from its guards alone,
    and the guarded schedule of that mode is built when read (`analysis.SingleSchedule`):
    neither the summary nor ``-v`` loads `mdae_fmu.implicit`, nor the normalization's
    delayed guards (`mdae_fmu.modes.delay`); a model with a long guard does."""
    for opts in ((), ("-v",)):
        mods = _project_modules(tmp_path, ODE, "analyze", *opts)
        assert "mdae_fmu.analysis" in mods and "mdae_fmu.structure.per_mode" in mods
        assert not [m for m in mods if m.startswith("mdae_fmu.implicit")], mods
        assert "mdae_fmu.modes.delay" not in mods
    switched = ODE.replace("der(T2) = q - 0.1 * T2;",
                           "der(T2) = if T2 > 0.5 then q else q - 0.1 * T2;")
    assert "mdae_fmu.implicit.analysis" in _project_modules(tmp_path, switched, "analyze")


def test_analyze_of_an_index_2_model_loads_sympy_on_use(tmp_path):
    """A few states: the stateSelect-guided choice reads the consistency equations."""
    rc, mods = _imported(tmp_path, PENDULUM)
    assert rc == "0"
    assert "sympy" in mods


def test_summary_of_a_large_index_2_model_imports_no_sympy(tmp_path):
    """Beyond `MAX_STATE_SELECTION` states nothing in the verdict or the summary reads a
    latent equation's expression: no sympy (the differentiated equations are converted when
    read, `LatentEquation.derived`); the full report (``-v``) prints them, and loads it."""
    from mdae_fmu.structure.per_mode import MAX_STATE_SELECTION
    n = MAX_STATE_SELECTION + 1
    lines = PENDULUM.splitlines()
    decls = [f"  Real z{i}(start = 1, fixed = true);" for i in range(n)]
    eqs = [f"  der(z{i}) = -z{i} + y;" for i in range(n)]
    text = "\n".join(lines[:6] + decls + lines[6:-1] + eqs + lines[-1:]) + "\n"
    rc, mods = _imported(tmp_path, text)
    assert rc == "0"
    assert mods == []
    rc, mods = _imported(tmp_path, text, "analyze", "-v")
    assert rc == "0"
    assert "sympy" in mods


def test_export_to_an_unwritable_output_is_refused_before_the_exporter_loads(tmp_path):
    """``export -o DIR``: exit 2 (the output is a directory) with none of the exporter's
    modules imported (sympy, jinja2: about 0.9 s of CPU that a refusal would waste)."""
    (tmp_path / "adir").mkdir()
    rc, mods = _imported(tmp_path, ODE, "export", "-o", str(tmp_path / "adir"))
    assert rc == "2"
    assert mods == []


@pytest.mark.parametrize("first", ["symbolic", "sympy"])
def test_rewrite_rule_installed_in_either_import_order(first):
    """`symbolic._piecewise_as_ite` replaces sympy's rule whether sympy is imported before
    mdae_fmu.symbolic or after it (by a plain ``import sympy``, as code generation does)."""
    order = ("import mdae_fmu.symbolic as S\nimport sympy\n" if first == "symbolic"
             else "import sympy\nimport mdae_fmu.symbolic as S\n")
    probe = order + textwrap.dedent("""
        b = sympy.Symbol("b")
        pw = sympy.Piecewise((sympy.true, b), (sympy.false, True))
        print(sympy.Piecewise._eval_rewrite_as_ITE is S._piecewise_as_ite, pw.rewrite(sympy.ITE))
    """)
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # the Boolean chain becomes an ITE, which sympy simplifies to b itself
    assert out.stdout.split() == ["True", "b"]
