"""The exact trajectory of a switched system under a host switching table, from its
per-mode flow and its restart rule (the oracle of the guarded FMUs' tests)."""

from __future__ import annotations

import numpy as np


def piecewise(table, names, x0, advance, restart, times):
    """The exact trajectory of a switched system under a host switching table: from ``x0``,
    ``advance(x, valuation, dt)`` within each mode and ``restart(x, valuation)`` into each new
    mode. Returns the state at each (t, left) of ``times`` (the left limit where t is a
    switching instant and left is True) and the valuation in force there."""
    rows = [(float(r["time"]), [bool(r[g]) for g in names]) for r in table]
    # the piecewise segments: (start time, state at its start, valuation)
    segments, x, t0, g = [], x0, 0.0, None
    for t, val in rows:
        if g is not None:
            x = advance(x, g, t - t0)
        if val != g:
            x = restart(x, val)
        segments.append((t, x, val))
        t0, g = t, val
    out, vals = [], []
    for t, left in times:
        i = max(j for j, s in enumerate(segments) if s[0] < t or (s[0] == t and not left)
                or j == 0)
        ts, xs, gs = segments[i]
        out.append(advance(xs, gs, t - ts))
        vals.append(gs)
    return np.array(out), vals
