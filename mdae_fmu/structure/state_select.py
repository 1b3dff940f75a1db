"""State selection with ``stateSelect`` hints among the Σ-method states of a mode (issue 13).

The Σ-method's states of a mode are the instances ``x^(j)``, ``j < d_x`` (docs/theory.md §4.5);
an index-reduced mode also has consistency equations F^{<c} (docs/theory.md §4.6, RR-9387 Def 15)
that tie them,
so only DOF = #states − #F^{<c} of them are independent. A dummy-derivative style choice
(Mattsson–Söderlind: the other states are computed from the constraints) picks which: a set S
of states is *selectable* when the consistency equations can be matched, one each, to distinct
states outside S (a structural test: the Jacobian of F^{<c} with respect to the non-selected
states is then structurally nonsingular, docs/theory.md §4.7).

Rule (greedy, one matching test per candidate): candidates in the order of the variable's
``stateSelect`` (always, prefer, default, avoid, never; a derivative instance ``der(y)``
inherits ``y``'s hint), then lower derivative order, then the mode's state order; a candidate is
selected when S plus it is still selectable, until DOF states are selected. So prefer and avoid
order the candidates, never is selected only when no other choice completes S, and always is
selected whenever any selectable set contains it; the notes say when always or never could
not be honoured (it is a property of the structure, not an error). The choice is structural:
it does not see where a constraint's Jacobian is numerically singular (the pendulum through
y = 0 with y computed from x² + y² = L²), which is the dynamic state selection tools switch
on at run time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

_RANK = {"always": 0, "prefer": 1, "default": 2, None: 2, "avoid": 3, "never": 4}


@dataclass(frozen=True)
class StateSelection:
    selected: tuple[Any, ...]  # the independent states (Instances), in candidate order
    computed: tuple[Any, ...]  # the states the consistency equations determine
    notes: tuple[str, ...]     # hints that could not be honoured


def _matches_all(constraints: Sequence[frozenset[Any]], allowed: set[Any]) -> bool:
    """True when every constraint can be matched to a distinct state of ``allowed`` among
    the states it reads (augmenting paths, Kuhn's algorithm)."""
    owner: dict[Any, int] = {}

    def augment(i: int, seen: set[Any]) -> bool:
        for s in constraints[i]:
            if s in allowed and s not in seen:
                seen.add(s)
                if s not in owner or augment(owner[s], seen):
                    owner[s] = i
                    return True
        return False

    return all(augment(i, set()) for i in range(len(constraints)))


def select_states(states: Sequence[Any], constraints: Sequence[frozenset[Any]],
                  hints: Mapping[str, str | None]) -> StateSelection:
    """The selection of module docstring. ``states``: the mode's state Instances (``name``,
    ``order``); ``constraints``: per consistency equation, the state Instances it reads;
    ``hints``: variable name -> stateSelect literal (None: default)."""
    order = sorted(range(len(states)),
                   key=lambda k: (_RANK.get(hints.get(states[k].name)), states[k].order, k))
    everything = set(states)
    if not constraints or not _matches_all(constraints, everything):
        selected = list(states)
        computed: list[Any] = []
    else:
        want = len(states) - len(constraints)
        selected = []
        for k in order:
            if len(selected) == want:
                break
            trial = set(selected) | {states[k]}
            if _matches_all(constraints, everything - trial):
                selected.append(states[k])
        computed = [s for s in states if s not in set(selected)]
    notes = []
    for s in states:
        hint = hints.get(s.name)
        if hint == "always" and s in computed and s.order == 0:
            notes.append(f"{s}: stateSelect = always cannot be honoured (the consistency "
                         "equations need it as a computed state)")
        if hint == "never" and s in selected and s.order == 0:
            notes.append(f"{s}: stateSelect = never cannot be honoured (no other choice of "
                         "states is consistent with the structure)")
    return StateSelection(selected=tuple(selected), computed=tuple(computed), notes=tuple(notes))
