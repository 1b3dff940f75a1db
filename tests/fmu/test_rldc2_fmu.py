"""RLDC2's mode changes in running Model Exchange FMUs (issue: "RLDC2 restarts show charge
sharing / flux sharing as analysed").

RLDC2.mo itself stays in its initial mode on its consistent start (reference_models/README.md),
so the restarts are exercised on its two variants:

* RLDC2Switched: the diodes replaced by ideal switches whose states are Boolean inputs, driven
  by FMPy's input table with the schedule of reference_models/make_references.py: switches
  close on unequal capacitor voltages (charge sharing) and open on non-cancelling inductor
  currents (flux sharing), docs/theory.md §13.4;
* RLDC2Diodes: the physical diode law, whose two switches are located state events with
  continuous restarts (§2.4.4).

Oracles: the reference CSVs (matrix exponential per mode, independent of mdae_fmu) and the
sharing formulas applied to the FMU's own left limits.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

REF = Path(__file__).resolve().parents[2] / "reference_models"
INDEX = json.loads((REF / "references.json").read_text())
C1, C2, L1, L2 = 0.1, 0.15, 1.0, 1.5
STATES = ("j1", "j2", "v1", "v2")
# (time, g1, g2): RLDC2_SWITCHED_SCHEDULE of make_references.py, the reference's own input
SCHEDULE = ((0.0, True, False), (0.1, True, True), (0.2, False, True), (0.3, False, False),
            (0.4, True, True), (0.5, False, False), (0.6, True, False))


def reference(name: str) -> dict[str, np.ndarray]:
    with open(REF / f"{name}.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    data = np.array([[float(v) for v in r] for r in rows[1:]])
    return {h: data[:, i] for i, h in enumerate(rows[0])}


@pytest.fixture(scope="module")
def fmus():
    """The default FMUs, built once per run (`model_fmu`, shared with test_multimode_fmu)."""
    from fmu_files import model_fmu
    return {name: str(model_fmu(REF / f"{name}.mo"))
            for name in ("RLDC2Switched", "RLDC2Diodes")}


def input_table() -> np.ndarray:
    """FMPy input signal for g1, g2: a repeated time row makes a step at that time."""
    rows = []
    for k, (t, g1, g2) in enumerate(SCHEDULE):
        if k:
            rows.append((t, SCHEDULE[k - 1][1], SCHEDULE[k - 1][2]))
        rows.append((t, g1, g2))
    rows.append((1.0, SCHEDULE[-1][1], SCHEDULE[-1][2]))
    return np.array(rows, dtype=[("time", float), ("g1", np.bool_), ("g2", np.bool_)])


def simulate(fmu: str, stop: float, **kw):
    from fmpy import simulate_fmu
    return simulate_fmu(fmu, stop_time=stop, relative_tolerance=1e-10, output_interval=1e-3,
                        output=[*STATES, "i1", "i2", "u1", "u2", "mdae_mode"],
                        record_events=True, **kw)


def event_rows(res, te: float) -> tuple[int, int]:
    """Indices of the left and right limits FMPy recorded at the event at ``te``."""
    idx = np.flatnonzero(np.abs(res["time"] - te) < 1e-9)
    assert len(idx) >= 2, f"no event recorded at t = {te}"
    return int(idx[0]), int(idx[-1])


def assert_matches_reference(res, ref: dict[str, np.ndarray], events, rel: float) -> None:
    """Every state within ``rel`` of its column's magnitude at the reference grid points
    (a point within 2 ms of a switch may lie on either side of it in the FMU's output)."""
    t_ref = ref["time"]
    keep = np.ones(len(t_ref), dtype=bool)
    for te in events:
        keep &= np.abs(t_ref - te) > 2e-3
    t_sim, first = np.unique(res["time"][::-1], return_index=True)   # right limits at events
    for k in STATES:
        sim = np.interp(t_ref[keep], t_sim, res[k][::-1][first])
        scale = float(np.max(np.abs(ref[k])))
        assert np.max(np.abs(sim - ref[k][keep])) <= rel * scale, k


def test_switched_rldc2_shares_charge_and_flux_in_the_fmu(fmus):
    ref = reference("RLDC2Switched")
    events = INDEX["RLDC2Switched"]["events"]
    res = simulate(fmus["RLDC2Switched"], 0.8, input=input_table())
    assert_matches_reference(res, ref, events, 1e-6)
    modes = set()
    for te, g1, g2 in SCHEDULE[1:]:
        a, b = event_rows(res, te)
        left = {k: float(res[k][a]) for k in STATES}
        right = {k: float(res[k][b]) for k in STATES}
        modes.add(int(res["mdae_mode"][b]))
        if (g1, g2) == (True, True):            # into TT: v1 = v2 is restored by sharing
            share = (C1 * left["v1"] + C2 * left["v2"]) / (C1 + C2)
            assert abs(left["v1"] - left["v2"]) > 1e-2      # the switch closes on a difference
            assert right["v1"] == pytest.approx(share, rel=1e-10)
            assert right["v2"] == pytest.approx(share, rel=1e-10)
            assert right["j1"] == left["j1"] and right["j2"] == left["j2"]
        elif (g1, g2) == (False, False):        # into FF: j1 + j2 = 0 is restored by sharing
            flux = (L1 * left["j1"] - L2 * left["j2"]) / (L1 + L2)
            assert abs(left["j1"] + left["j2"]) > 1e-4
            assert right["j1"] == pytest.approx(flux, rel=1e-10)
            assert right["j2"] == pytest.approx(-flux, rel=1e-10)
            # the restart recomputes the charges: continuous to rounding
            assert right["v1"] == pytest.approx(left["v1"], rel=1e-15, abs=0)
            assert right["v2"] == pytest.approx(left["v2"], rel=1e-15, abs=0)
        else:                                   # TT -> FT and FF -> TF: continuous
            assert right == left
        # the switch law holds right after the restart
        for closed, u, i in ((g1, "u1", "i1"), (g2, "u2", "i2")):
            assert abs(res[u if closed else i][b]) < 1e-9, (te, u, i)
    assert len(modes) == 4          # TT, TF, FT and FF were all visited


def test_physical_diodes_switch_at_the_reference_times(fmus):
    ref = reference("RLDC2Diodes")
    events = INDEX["RLDC2Diodes"]["events"]
    res = simulate(fmus["RLDC2Diodes"], 1.0)
    mode = res["mdae_mode"]
    changes = [float(res["time"][k]) for k in range(1, len(mode)) if mode[k] != mode[k - 1]]
    assert len(changes) == 2, changes
    assert changes == pytest.approx(events, abs=1e-6)
    assert_matches_reference(res, ref, events, 1e-6)
    for te in changes:                      # physical switching: continuous restarts
        a, b = event_rows(res, te)
        for k in STATES:
            assert res[k][b] == pytest.approx(res[k][a], rel=1e-8, abs=1e-10)
    # the diode law 0 <= i _|_ u <= 0 on every output row
    for i, u in (("i1", "u1"), ("i2", "u2")):
        assert np.all(res[i] >= -1e-8) and np.all(res[u] <= 1e-8)
        assert np.max(np.abs(res[i] * res[u])) < 1e-8
