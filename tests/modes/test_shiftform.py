"""The shift form of equation instances (mdae_fmu.modes.shiftform, docs/theory.md §5.5):
``pre`` of a continuous unknown is its shift instance, ``pre`` of a discrete variable (a
constant of the instant) is its left limit at shift 0 and the instant's value later. The MSL
Gear's bearing friction reads ``pre(mode) == 1`` in its torque equation: its shifted instance
gave the restart formula a symbol ``mode@1`` that no slot of the FMU holds (export refused
the model: "unknown symbol gear1.bearingFriction.mode@1")."""

from __future__ import annotations

from mdae_fmu import api
from mdae_fmu.modes.normalize import normalize
from mdae_fmu.modes.shiftform import ShiftForm

PRE_DISCRETE = """
model PreDiscrete
  Real x(start = 1.0, fixed = true);
  Real y;
  Integer m(start = 1, fixed = true);
equation
  der(x) = -x + y + 0.1 * pre(x);
  y = if pre(m) == 1 then 1.0 else -1.0;
  when x < 0.5 then
    m = 2;
  end when;
end PreDiscrete;
"""


def test_pre_of_a_discrete_variable_is_its_left_limit_then_its_value(tmp_path):
    src = tmp_path / "PreDiscrete.mo"
    src.write_text(PRE_DISCRETE)
    system = normalize(api.load(src))
    sf = ShiftForm(system)
    names = {}
    for eq in system.equations:
        for s in (0, 1, 2):
            names[eq.id, s] = {x.name for x in sf.equation((eq.id, s)).free_symbols}
    reads_m = [e for e, s in names if s == 0 and "pre(m)" in names[e, 0]]
    assert len(reads_m) == 1
    e = reads_m[0]
    assert names[e, 1] >= {"m", "y@1"} and names[e, 2] >= {"m", "y@2"}
    assert not any("@" in n and n.startswith("m") for key in names for n in names[key])
    assert not any("pre(m)" in names[e, s] for s in (1, 2))
    # a continuous unknown keeps its shift instances: pre(x) at shift s is x@s
    reads_x = [k for k, ns in names.items() if k[1] == 1 and "x@2" in ns]
    assert reads_x and all("x@1" in names[k] for k in reads_x)
