"""mdae_fmu: multimode DAE structural analysis, restart synthesis and FMI 2.0 export.

Python API (`mdae_fmu.api`): ``load(path) -> Model``, ``analyze(model)``,
``export_fmu(model, path, ...)``, ``load_analysis(path)`` (a saved ``analyze --json``);
simulation (an FMU run in a child process, FMPy's keywords): ``simulate(model_or_fmu, ...)``;
regression testing (docs/regression.md):
``compare(test, reference, ...)``, ``sweep(model_or_fmu, params, ...)``, ``regress(suite)``.
Errors: `InputError` (exit 2), `ModelRejected` (1), `SimulationFailed` (1).
"""

from typing import TYPE_CHECKING, Any

from .api import analyze, export_fmu, load, load_analysis, save_analysis  # noqa: F401
from .diagnostics import InputError, MdaeError, ModelRejected, SimulationFailed  # noqa: F401
from .version import VERSION

__version__ = VERSION

if TYPE_CHECKING:
    from .comparison import compare  # noqa: F401
    from .simulation import simulate  # noqa: F401
    from .regression import regress  # noqa: F401
    from .sweeps import sweep  # noqa: F401

#: Functions bound on first use: their modules import numpy (``import mdae_fmu`` stays light).
_LAZY = {"compare": "comparison", "sweep": "sweeps", "regress": "regression",
         "simulate": "simulation"}


def __getattr__(name: str) -> Any:
    """``mdae_fmu.compare``, ``sweep``, ``regress`` and ``simulate``: the functions of their modules
    themselves (their signatures and docstrings), imported on first use."""
    if name in _LAZY:
        import importlib
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
