"""Test helpers: an FMU exported from a model's text, and the log of a run that fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from mdae_fmu import api


def export_text(tmp_path: Path, text: str, name: str, **options) -> Path:
    """``text`` written to ``<name>.mo`` and exported (`api.export_fmu`, ``options``) to
    ``<name>.fmu`` in ``tmp_path``, read back through `api.load` as a user's file is."""
    src = tmp_path / f"{name}.mo"
    src.write_text(text)
    fmu = tmp_path / f"{name}.fmu"
    api.export_fmu(api.load(src), fmu, progress=False, **options)
    return fmu


def failed_run_log(fmu: Path, match: str, **simulate) -> list[str]:
    """The FMU's log messages (debug logging on) of an FMPy run that must raise an error
    matching ``match``."""
    from fmpy import simulate_fmu
    log: list[str] = []

    def logger(*args):
        log.append(args[-1].decode() if isinstance(args[-1], bytes) else str(args[-1]))
    with pytest.raises(Exception, match=match):
        simulate_fmu(str(fmu), logger=logger, debug_logging=True, **simulate)
    return log
