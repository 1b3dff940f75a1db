"""Reading a model file of any supported format: flat Modelica and Base Modelica (one class
chosen among several, `mdae_fmu.importers.select`), hierarchical Modelica through the front
end (`mdae_fmu.importers.frontend`), or an XML equation list. `mdae_fmu.api.load` is this
function."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..diagnostics import InputError, SourceLoc
from ..ir import Model


def load(path: str | Path, model: str | None = None, *,
         modelica_path: Sequence[str | Path] = (), keep_flat: str | Path | None = None) -> Model:
    """Read a model from flat Modelica / Base Modelica (``.mo``, ``.bmo``) or an XML equation
    list (``.xml``); a hierarchical ``.mo`` file is flattened by rumoca when it is installed
    (`mdae_fmu.importers.frontend`). ``model``: the class to read from a file that defines
    several (qualified ``P.A`` or, when unique, ``A``; `importers.select`); without it a flat
    file with several models is refused with their names, and a hierarchical file flattens
    `frontend.choose_model`. ``modelica_path``: library directories for a hierarchical model,
    searched before those of the ``MODELICAPATH`` environment variable; ``keep_flat``: a file
    where the flat text of a hierarchical model is written (the locations that are not in
    the user's file refer to it). Raises `InputError` (exit code 2) when the file cannot be
    read or has no class ``model`` (the message lists the file's models)."""
    path = Path(path)
    if path.suffix.lower() == ".xml":
        from .xml_eqlist import load_xml
        model_xml = load_xml(path)
        if model is not None and model != model_xml.name:
            raise InputError(f"no model named '{model}' in this file; its model: "
                             f"{model_xml.name}", SourceLoc(str(path), 1, 1))
        return model_xml
    from .flat_modelica import parse_modelica, read_text
    text = read_text(path)
    flat_text = _one_class(text, path, model)
    try:
        return parse_modelica(flat_text, str(path))
    except InputError as err:
        from . import frontend
        # a class chosen among flat ones keeps the flat importer's message
        if not (frontend.uses_hierarchical_keywords(text) if flat_text is not text
                else frontend.is_hierarchical(text)):
            raise
        return frontend.load_hierarchical(text, path, err, model, roots=modelica_path,
                                          keep_flat=keep_flat)


def _one_class(text: str, path: Path, model: str | None) -> str:
    """The text the flat importer reads: ``text`` itself, or with the class ``model`` alone
    when the file defines several (`importers.select`); a flat file with several models and
    no ``model`` is refused with their names. Hierarchical files keep the front end's choice
    (`frontend.choose_model`)."""
    import re

    from . import frontend, select
    if model is None and (
            sum(text.count(k) for k in ("model", "block", "class", "package")) <= 1
            or len(re.findall(r"\b(?:model|block|class|package)\s+['A-Za-z_]", text)) <= 1):
        return text                 # cheap tests first: the import of large files stays fast
    spans = select.class_spans(text)
    names = select.model_names(spans)
    if model is None:
        if len(names) > 1 and not frontend.uses_hierarchical_keywords(text):
            select.refuse_several(text, spans, str(path))
        return text
    chosen = select.find_model(spans, model, str(path))
    if len(names) <= 1:             # e.g. Base Modelica's package 'M' around model 'M'
        return text
    return select.select_class(text, spans, chosen)


__all__ = ["load"]
