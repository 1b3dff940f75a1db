"""One verdict per model (issue 24, Acceptance): ``mdae-fmu analyze`` and ``mdae-fmu export``
exit with the same code on the corpus models. The whole corpus is
``benchmarks/verdicts.py`` (docs/corpus.md, "One verdict per model"); here a sample of the
committed models, one per kind of verdict and the former disagreements among them
(SimpleTriacCircuit: analyze 0, export 3 "no C form for ITE"; issue 24)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from fetch_corpus import MANIFEST, corpus_file  # noqa: E402
from verdicts import disagreements, markdown, merge, verdicts  # noqa: E402

ENTRIES = {e["id"]: e for e in json.loads(MANIFEST.read_text())["models"]}

# model id -> the exit code both commands give
SAMPLE = {
    "rumoca/SympyDecay": 0,
    "rumoca/first_subset": 1,           # no equation determines der(inertia1.w), inertia1.a
    "bm-jl/SimpleTriacCircuit": 0,      # was analyze 0 / export 3
    "bm-jl/WhenEquation": 0,
}


@pytest.mark.parametrize("model_id", sorted(SAMPLE))
def test_analyze_and_export_give_one_verdict(model_id):
    entry = ENTRIES[model_id]
    r = verdicts(entry, corpus_file(entry, ROOT))
    assert (r["analyze"], r["export"]) == (SAMPLE[model_id], SAMPLE[model_id]), r
    if SAMPLE[model_id] == 1:       # the same reason from both commands
        assert "no equation determines {der(inertia1.w), inertia1.a}" in r["analyze_message"]
        assert "no equation determines {der(inertia1.w), inertia1.a}" in r["export_message"]


def test_disagreements_are_listed():
    """The benchmark's table lists a model whose two codes differ, with export's message, and
    not one whose codes agree or whose run did not finish."""
    results = [{"id": "a", "analyze": 0, "export": 0},
               {"id": "b", "analyze": 0, "export": 3, "export_message": "internal | error"},
               {"id": "c", "analyze": None, "export": None, "analyze_message": "timeout"}]
    assert [r["id"] for r in disagreements(results)] == ["b"]
    table = markdown(results)
    assert table.startswith("3 models, 2 run to the end: 1 with one verdict, 1 where")
    assert "| b | 0 | 3 | internal \\| error |" in table and "| a |" not in table


def test_runs_in_batches_are_merged_in_manifest_order():
    """`verdicts.py --merge`: a later finished run replaces an earlier one, an unfinished
    run does not replace a finished one, and the models come in manifest order."""
    first = [{"id": "b", "analyze": None, "export": None, "analyze_message": "over 600 s"},
             {"id": "a", "analyze": 0, "export": 0}]
    second = [{"id": "a", "analyze": None, "export": None},
              {"id": "b", "analyze": 1, "export": 1}, {"id": "c", "analyze": 2, "export": 2}]
    joined = merge([first, second], ["a", "b", "c", "d"])
    assert [(r["id"], r["analyze"]) for r in joined] == [("a", 0), ("b", 1), ("c", 2)]
    assert markdown(joined).startswith("3 models, 3 run to the end: 3 with one verdict, 0 ")
