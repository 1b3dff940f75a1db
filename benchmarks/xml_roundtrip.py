"""Flat Modelica -> XML equation list -> Model, over the corpus and the reference models
(issue 24 Deliver 6).

For each model that imports, `model_to_xml` writes its XML form and `parse_xml` reads it back;
the two `Model`s must be equal (variables, equations with their ids and guards, when-clauses,
initial equations, experiment). Every later stage (analysis, code generation, the FMU) is a
function of the `Model` alone, so equal models give one verdict and one FMU; source locations,
which differ between the two files, take no part in the equality. A model the format cannot
hold (user functions, String parameters: ``model_to_xml`` refuses it with a ValueError) is
counted as "not expressible".

    python benchmarks/fetch_corpus.py --openmodelica DIR --out CORPUS
    python benchmarks/xml_roundtrip.py [--corpus CORPUS] [--ids GLOB]

Prints one line per model that differs or fails, then the counts.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from corpus import class_text  # noqa: E402
from fetch_corpus import DEFAULT_OUT, MANIFEST, corpus_file  # noqa: E402


def round_trip(model) -> str:
    """"equal", "differs" or "not expressible" for one imported model."""
    from mdae_fmu.importers.xml_eqlist import parse_xml
    from mdae_fmu.importers.xml_writer import model_to_xml
    try:
        xml = model_to_xml(model)
    except ValueError:
        return "not expressible"
    return "equal" if parse_xml(xml, f"{model.name}.xml") == model else "differs"


def main(argv: list[str] | None = None) -> int:
    from mdae_fmu.diagnostics import InputError
    from mdae_fmu.importers.flat_modelica import load_modelica, parse_modelica
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--ids", default="*")
    a = ap.parse_args(argv)
    counts: dict[str, int] = {}
    work = [(p.name, lambda p=p: load_modelica(p))
            for p in sorted((ROOT / "reference_models").glob("*.mo"))]
    for e in json.loads(MANIFEST.read_text())["models"]:
        if not fnmatch.fnmatch(e["id"], a.ids):
            continue
        path = corpus_file(e, a.corpus)
        if path.is_file():
            work.append((e["id"], lambda e=e, path=path: parse_modelica(
                class_text(path.read_text(), e.get("model")), str(path))))
    for name, load in work:
        try:
            model = load()
        except InputError:
            status = "not imported"
        else:
            status = round_trip(model)
        counts[status] = counts.get(status, 0) + 1
        if status == "differs":
            print(f"{name}: the model read back from its XML form differs")
    print(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    return 1 if counts.get("differs") else 0


if __name__ == "__main__":
    sys.exit(main())
