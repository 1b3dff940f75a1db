"""``mdae-fmu analyze --json`` is the same bytes in every process: two runs under different
``PYTHONHASHSEED`` differ only in the measured seconds (and the checksum of the saved analysis,
which covers them). The saved analysis once wrote its sets (the constants of the symbol table,
the known instants of a mode change) in the iteration order of the process's hash seed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from gen_scalable import heat_conduction  # noqa: E402

_TIMED = re.compile(r"\b\d+(\.\d+)?(e-?\d+)? ?s\b")


def _masked(x):
    """``x`` with every measured time replaced by ``"T"``: the values of keys naming seconds
    (also as ``["seconds", value]`` pairs of a saved dictionary), the checksum, and the times
    printed in text ("0.10 s")."""
    if isinstance(x, dict):
        return {k: "T" if "seconds" in k or k == "sha256" else _masked(v) for k, v in x.items()}
    if isinstance(x, list):
        if len(x) == 2 and isinstance(x[0], str) and "seconds" in x[0]:
            return [x[0], "T"]
        return [_masked(v) for v in x]
    if isinstance(x, str):
        return _TIMED.sub("T", x)
    return x


def _analyze_json(model: Path, seed: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONHASHSEED=seed)
    r = subprocess.run([sys.executable, "-m", "mdae_fmu.cli", "analyze", "--json", str(model)],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_analyze_json_does_not_depend_on_the_hash_seed(tmp_path):
    model = tmp_path / "Heat.mo"
    model.write_text(heat_conduction(12))
    one, two = (json.loads(_analyze_json(model, seed)) for seed in ("1", "2"))
    # not vacuous: the saved analysis holds sets of names (the constants C, G, T_left, the
    # known instants of the mode changes)
    assert '{"$fs": ["' in json.dumps(one["saved_analysis"])
    a, b = (json.dumps(_masked(d), indent=1).splitlines() for d in (one, two))
    first = next((i for i, (p, q) in enumerate(zip(a, b)) if p != q), None)
    assert a == b, f"first difference at line {first}: {a[first or 0]!r} vs {b[first or 0]!r}"
