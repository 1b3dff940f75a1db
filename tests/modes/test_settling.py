"""The settling proof of event iteration over all long modes at once (`mdae_fmu.modes.settling`,
docs/theory.md §5.6) against its oracle, the enumeration of the long modes that it replaced
(`enumerated_settling` below: every consistent long mode, its forced change, and the first
chain of forced changes, in mode order, that comes back), on the models of the tests whose
guards read same-instant values, on seeded random systems of 2 to 10 Boolean guards on forced
values (up to 18 delayed guards with the composite conditions of their if-equations), and on
chains of 16 to 18 delayed guards (2^16 modes and more, beyond the enumeration's 2^12) whose
verdict is known in closed form."""

from __future__ import annotations

import importlib
import random
import sys
from pathlib import Path

import pytest

from mdae_fmu.diagnostics import ModelRejected
from mdae_fmu.importers.flat_modelica import parse_modelica
from mdae_fmu.modes import settling
from mdae_fmu.modes.event_iteration import (cycle_rejection, delayed_guards, forced_change,
                                            forced_constants, parameter_values)

pytest.importorskip("dd")

normalize_module = importlib.import_module("mdae_fmu.modes.normalize")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import gen_modeller  # noqa: E402


def enumerated_settling(system) -> None:
    """The oracle: the settling check as the enumeration of the long modes did it (up to
    `MAX_ENUMERATED_MODES`, `TooManyModes` beyond). Each consistent long mode's forced change
    (`forced_change`); from each changed mode in order, the forced changes are followed while
    they stay in changed modes, and the first that returns to a mode of its path is
    rejected."""
    inputs = settling.forcing_inputs(system)
    if inputs is None:
        return
    delayed, constants, params = inputs
    forced: dict = {}
    reasons: dict = {}
    for m in system.long_modes():
        nxt, why = forced_change(system, delayed, constants, params, m)
        if why:
            forced[m] = nxt
            reasons[m] = why
    for start in forced:
        path = [start]
        m = start
        while m in forced:
            m = forced[m]
            if m in path:
                raise cycle_rejection(system, path[path.index(m):], reasons)
            path.append(m)


def unchecked(text: str):
    """The normalized system of the Modelica ``text`` without its settling check."""
    real = settling.check_settling
    settling.check_settling = lambda system: None
    try:
        return normalize_module.normalize(parse_modelica(text))
    finally:
        settling.check_settling = real


def outcome(check, system):
    """None when ``check`` accepts ``system``, else its message and details."""
    try:
        check(system)
    except ModelRejected as err:
        return str(err), err.details
    return None


CHATTER = (ROOT / "tests" / "data" / "conditionals" / "Chatter.mo").read_text()

# two guards, one reading two forced values, the value of s1 chosen by a conjunction and an
# elseif (the first enabled equation)
TWO_GUARDS = """class TwoGuards
  Real x(start = 0, fixed = true);
  Real s1;
  Real s2;
  Boolean g1;
  Boolean g2;
equation
  der(x) = s1 + s2;
  g1 = s1 >= 0;
  g2 = s1 + s2 > 1;
  if g1 and g2 then
    s1 = -1;
  elseif g1 then
    s1 = 2;
  else
    s1 = 1;
  end if;
  if g2 then
    s2 = 3;
  else
    s2 = 0.5;
  end if;
end TwoGuards;
"""


# the transient guard edge(c) reads s, which its own equations fix: in every long mode s = 1
# makes it true, a forced change out of the long modes (a transient mode), where the chains
# of forced changes end; without that, g would cycle in the modes where c holds (u = -1 when
# g, else 2)
EDGE_FORCED = """class EdgeForced
  Real x(start = 0, fixed = true);
  Real s;
  Real u;
  Boolean c;
  Boolean g;
equation
  der(x) = s + u;
  c = s > 0;
  g = u >= 0;
  if edge(c) then
    s = -1;
  else
    s = 1;
  end if;
  if g then
    u = -1;
  elseif c then
    u = 2;
  else
    u = 1;
  end if;
end EdgeForced;
"""


# one relation reading 13 forced values (3^13 choices of a value or none for `may_force`,
# beyond `MAX_LEAF_CHOICES`; two combinations occur in the modes): Chatter with a sum
WIDE_READ = "\n".join([
    "class WideRead", "  Real x(start = 0, fixed = true);",
    *(f"  Real s{k};" for k in range(13)), "  Boolean g;", "equation",
    "  der(x) = s0;", "  g = " + " + ".join(f"s{k}" for k in range(13)) + " >= 0;",
    *(line for k in range(13)
      for line in ("  if g then", f"    s{k} = -1;", "  else", f"    s{k} = 1;", "  end if;")),
    "end WideRead;", ""])


@pytest.mark.parametrize("text", [
    CHATTER, TWO_GUARDS, EDGE_FORCED, WIDE_READ,
    (ROOT / "tests" / "data" / "GearPattern.mo").read_text(),
    (ROOT / "tests" / "data" / "conditionals" / "ChatterRuntime.mo").read_text(),
    (ROOT / "tests" / "data" / "conditionals" / "RLDC2IdealDiodes.mo").read_text(),
    (ROOT / "reference_models" / "CupAndBallOriginal.mo").read_text(),
    (ROOT / "reference_models" / "RLDC2Original.mo").read_text(),
    gen_modeller.rlc_cells(6, "diode")],
    ids=["Chatter", "TwoGuards", "EdgeForced", "WideRead", "GearPattern", "ChatterRuntime",
         "RLDC2IdealDiodes", "CupAndBallOriginal", "RLDC2Original", "RLCDiode6"])
def test_the_symbolic_proof_is_the_enumerated_one_on_the_tests_models(text):
    """Every model of the tests with delayed guards: the same verdict, and for a rejected one
    the same message (modes, guards, values, equations) and details."""
    system = unchecked(text)
    assert delayed_guards(system)
    assert outcome(settling.check_settling, system) == outcome(enumerated_settling, system)


def test_chatter_is_rejected_with_the_enumerated_cycle():
    """Chatter (each mode forces the other): the cycle from the first mode in order, not g."""
    err = outcome(settling.check_settling, unchecked(CHATTER))
    assert err is not None
    text, details = err
    assert text.splitlines()[1:] == [
        "  in mode [not g] guard g becomes true (s = 1 (equation e4, <string>:14)): -> [g]",
        "  in mode [g] guard g becomes false (s = -1 (equation e3, <string>:12)): -> [not g]"]
    assert details == {"code": "E-FIXPOINT", "modes": ["not g", "g"], "guards": ["g"]}


def random_system(seed: int) -> str:
    """A model of 2 to 10 delayed guards ``g_k`` on same-instant values ``s_k`` that if-
    equations on the guards fix to constants in some modes (or leave to the state x): a random
    forced map, which settles or cycles. Definitions read one or two values, in relations,
    conjunctions, disjunctions and negations, and a state (undecided, Kleene's unknown); the
    branches' conditions are literals of the guards, of two ordered thresholds on x and of a
    Boolean ``h`` defined as a conjunction of guards (care-set constraints); some constants
    come from a parameter or from an affine equation."""
    rng = random.Random(seed)
    n = rng.randint(2, 10)
    decl = ["  parameter Real p = 0.5;", "  Real x(start = 0, fixed = true);",
            "  Boolean h;"]
    eqs = ["  der(x) = 1 - x;"]
    for k in range(n):
        decl += [f"  Real s{k};", f"  Boolean g{k};"]
        j = rng.randrange(n)
        c = rng.choice([-1, 0, 0.5, 1])
        eqs.append(f"  g{k} = " + rng.choice([
            f"s{k} >= {c}", f"s{k} < {c}", f"not s{k} > {c}", f"s{k} + s{j} > {c}",
            f"s{k} > {c} and s{j} < 1", f"s{k} > {c} or x > 2", f"x > 1 or s{k} <= {c}"])
            + ";")
    a, b = rng.sample(range(n), 2)
    eqs.append(f"  h = g{a} and g{b};")
    literals = [f"g{k}" for k in range(n)] + ["h", "x > 1", "x > 2"]

    def condition() -> str:
        lits = rng.sample(literals, rng.choice([1, 1, 2]))
        return " and ".join(f"not {x}" if rng.random() < 0.4 else x for x in lits)

    def value(k: int) -> str:
        r = rng.random()
        if r < 0.15:
            return f"s{k} = x"
        if r < 0.25:
            return f"s{k} = 2 * p"
        if r < 0.35:
            return f"2 * s{k} + 1 = 0"
        return f"s{k} = {rng.choice([-2, -1, 0, 1, 2])}"
    for k in range(n):
        branches = rng.randint(1, 3)
        eqs.append(f"  if {f'g{k}' if rng.random() < 0.5 else condition()} then")
        eqs.append(f"    {value(k)};")
        for _ in range(branches - 1):
            eqs.append(f"  elseif {condition()} then")
            eqs.append(f"    {value(k)};")
        eqs.append("  else")
        eqs.append(f"    {value(k)};")
        eqs.append("  end if;")
    return "\n".join([f"class Random{seed}", *decl, "equation", *eqs, f"end Random{seed};", ""])


@pytest.mark.parametrize("seed", range(24))
def test_the_symbolic_proof_is_the_enumerated_one_on_random_systems(seed):
    """Seeded random systems of 2 to 10 Booleans on forced values: the same verdict and
    message."""
    system = unchecked(random_system(seed))
    assert outcome(settling.check_settling, system) == outcome(enumerated_settling, system)


def test_random_systems_both_settle_and_cycle():
    """The random systems are not all of one verdict (the test above would then miss half
    of the proof)."""
    verdicts = {outcome(enumerated_settling, unchecked(random_system(seed))) is None
                for seed in range(4)}
    assert verdicts == {True, False}


@pytest.mark.parametrize("seed", range(24))
def test_the_care_set_is_the_enumerated_long_modes(seed):
    """The care set of the proof (`SettlingSpace.consistent_modes`) holds exactly the long
    modes the enumeration lists (`MultimodeSystem.long_modes`), on the random systems (ordered
    thresholds on x, a conjunction h, relations in the guards' definitions)."""
    system = unchecked(random_system(seed))
    space = settling.SettlingSpace(system)
    care = space.consistent_modes()
    listed = set()
    for assignment in space.bdd.pick_iter(care, care_vars=list(space.names.values())):
        mode = [bool(space.bit(i) == space.bdd.true) for i in range(len(system.guards))]
        for i, name in space.names.items():
            mode[i] = assignment[name]
        listed.add(tuple(mode))
    assert listed == set(system.long_modes())


def chain(n: int, ring: bool = False, tail: bool = False, pair: bool = False) -> str:
    """``n`` delayed guards ``g_k = s_k >= 0`` in a chain: ``s_k = 1`` when g_{k-1} holds,
    else ``s_k = x`` (a state: g_k not decided) when g_k holds, else -1, so that F(m)_k =
    m_{k-1} or m_k, a forced change that spreads along the chain and stops (F only turns
    guards on). ``ring``: g_k copies g_{k-1} (s_k = 1 when g_{k-1} holds, else -1) and g_0
    reads g_{n-1} negated (s_0 = -1 when g_{n-1} holds, else 1), F the rotation with negation,
    whose orbits are cycles of 2n modes. ``tail``: first a
    guard ``a`` that every mode forces true (a mode with a false is changed but on no cycle).
    ``pair``: last two guards c1, c2 with F(c1, c2) = (not c2, c1), a cycle of 4 modes."""
    decl = ["  Real x(start = 0, fixed = true);"]
    eqs = ["  der(x) = 1 - x;"]
    if tail:
        decl += ["  Real sa;", "  Boolean a;"]
        eqs += ["  a = sa >= 0;", "  if a then", "    sa = 1;", "  else", "    sa = 2;",
                "  end if;"]
    for k in range(n):
        decl += [f"  Real s{k};", f"  Boolean g{k};"]
        eqs.append(f"  g{k} = s{k} >= 0;")
        if k == 0 and ring:
            eqs += [f"  if g{n - 1} then", "    s0 = -1;", "  else", "    s0 = 1;", "  end if;"]
        elif k == 0:
            eqs += ["  if g0 then", "    s0 = x;", "  else", "    s0 = -1;", "  end if;"]
        elif ring:
            eqs += [f"  if g{k - 1} then", f"    s{k} = 1;", "  else", f"    s{k} = -1;",
                    "  end if;"]
        else:
            eqs += [f"  if g{k - 1} then", f"    s{k} = 1;", f"  elseif g{k} then",
                    f"    s{k} = x;", "  else", f"    s{k} = -1;", "  end if;"]
    if pair:
        decl += ["  Real u1;", "  Real u2;", "  Boolean c1;", "  Boolean c2;"]
        eqs += ["  c1 = u1 >= 0;", "  c2 = u2 >= 0;",
                "  if c2 then", "    u1 = -1;", "  else", "    u1 = 1;", "  end if;",
                "  if c1 then", "    u2 = 1;", "  else", "    u2 = -1;", "  end if;"]
    return "\n".join(["class Chain", *decl, "equation", *eqs, "end Chain;", ""])


@pytest.mark.parametrize("n, ring, tail, pair", [
    (3, False, False, False), (6, False, True, False), (3, True, False, False),
    (5, True, False, False), (4, True, True, False), (3, False, True, True)])
def test_chains_and_rings_are_the_enumerated_verdict(n, ring, tail, pair):
    """Chains of forced changes that stop, rings whose cycles pass through 2n modes, a first
    mode (in order) that is changed but lies on no cycle (the cycle is reported from where
    its path enters it): the enumerated verdict and message."""
    system = unchecked(chain(n, ring, tail, pair))
    assert len(delayed_guards(system)) == n + tail + 2 * pair
    got = outcome(settling.check_settling, system)
    assert got == outcome(enumerated_settling, system)
    assert (got is None) == (not ring and not pair)
    if ring:
        assert got is not None and len(got[1]["modes"]) == 2 * n


def test_a_ring_is_rejected_from_its_first_mode():
    """The ring of 3 (g_k takes g_{k-1}'s value, g_0 the negation of g_2): from every guard
    false, F turns them on one by one, then off, 6 modes, as the enumeration reports."""
    system = unchecked(chain(3, ring=True))
    err = outcome(settling.check_settling, system)
    assert err is not None
    order = [g.name for g in system.guards]         # g2 first: s0's equation reads it
    bits = ["000", "100", "110", "111", "011", "001"]       # g0 g1 g2
    assert err[1]["modes"] == [",".join(name if m[int(name[1])] == "1" else f"not {name}"
                                        for name in order) for m in bits]


def test_sixteen_delayed_guards_that_settle_are_accepted_with_the_proof():
    """The chain of 16 delayed guards (2^16 long modes, beyond the enumeration's 2^12, where
    the proof used to be skipped): forced changes in most modes (`may_force`), every chain of
    them stops, so the iteration settles: accepted by normalization. The RLC ladder of 16
    ideal diodes (16 delayed guards, no value forced) too."""
    text = chain(16)
    system = unchecked(text)
    delayed = delayed_guards(system)
    params = parameter_values(system.model)
    constants = forced_constants(system, {v for names in delayed.values() for v in names},
                                 params)
    assert len(delayed) == 16 and settling.may_force(system, delayed, constants, params)
    assert settling.first_unsettled(system, delayed, constants, params) is None
    normalize_module.normalize(parse_modelica(text))
    ladder = gen_modeller.rlc_cells(16, "diode")
    assert len(delayed_guards(unchecked(ladder))) == 16
    normalize_module.normalize(parse_modelica(ladder))


def test_eighteen_delayed_guards_with_one_cycle_are_rejected_naming_it():
    """The chain of 16 with the pair c1, c2 (2^18 long modes): rejected by normalization with
    the pair's cycle of 4 modes from the first mode (every guard false; the chain stays so),
    each line naming the guard, the forced value and its equation."""
    with pytest.raises(ModelRejected) as err:
        normalize_module.normalize(parse_modelica(chain(16, pair=True)))
    chain_off = ",".join(f"not g{k}" for k in range(16))
    # c2 is the guard before c1 (u1's equation reads it first); (c1, c2): 00, 10, 11, 01
    pairs = [("not c2", "not c1"), ("not c2", "c1"), ("c2", "c1"), ("c2", "not c1")]
    modes = [f"{chain_off},{a},{b}" for a, b in pairs]
    assert err.value.details == {"code": "E-FIXPOINT", "modes": modes, "guards": ["c1", "c2"]}
    lines = str(err.value).splitlines()
    assert lines[0].startswith("logico-numerical fixpoint (E-FIXPOINT)")
    assert lines[1] == (f"  in mode [{modes[0]}] guard c1 becomes true (u1 = 1 (equation "
                        f"{lines[1].split('(equation ')[1].split(')')[0]})): -> [{modes[1]}]")
    assert len(lines) == 5 and " guard c2 becomes true (u2 = 1 " in lines[2]
