"""mdae_fmu: multimode DAE structural analysis, restart synthesis and FMI 2.0 export.

Python API (ARCHITECTURE.md): ``load(path) -> Model``, ``analyze(model)``,
``export_fmu(model, path, ...)``, ``load_analysis(path)`` (a saved ``analyze --json``);
regression testing (docs/regression.md):
``compare(test, reference, ...)``, ``sweep(model_or_fmu, params, ...)``, ``regress(suite)``.
"""

from .api import (analyze, compare, export_fmu, load, load_analysis, regress,  # noqa: F401
                  save_analysis, sweep)
from .version import __version__  # noqa: F401
