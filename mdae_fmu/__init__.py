"""mdae_fmu: multimode DAE structural analysis, restart synthesis and FMI 2.0 export.

Python API (ARCHITECTURE.md): ``load(path) -> Model``, ``analyze(model)``,
``export_fmu(model, path, ...)``.
"""

from .api import analyze, export_fmu, load  # noqa: F401
from .version import __version__  # noqa: F401
