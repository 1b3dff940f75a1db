"""mdae_fmu: multimode DAE structural analysis, restart synthesis and FMI 2.0 export.

Python API (ARCHITECTURE.md): ``load(path) -> Model``, ``analyze(model)``,
``export_fmu(model, path, ...)``, ``load_analysis(path)`` (a saved ``analyze --json``);
simulation (an FMU run in a child process, FMPy's keywords): ``simulate(model_or_fmu, ...)``;
regression testing (docs/regression.md):
``compare(test, reference, ...)``, ``sweep(model_or_fmu, params, ...)``, ``regress(suite)``.
Errors: `InputError` (exit 2), `ModelRejected` (1), `SimulationFailed` (1).
"""

from .api import (analyze, compare, export_fmu, load, load_analysis, regress,  # noqa: F401
                  save_analysis, sweep)
from .diagnostics import InputError, MdaeError, ModelRejected, SimulationFailed  # noqa: F401
from .simulation import simulate  # noqa: F401
from .version import __version__  # noqa: F401
