"""Co-Simulation build pieces: which FMI interfaces an FMU offers, the C defines that select
them, and the static SUNDIALS link of the embedded integrator.

The CS step driver itself is C (``templates/fmi2CoSimulation.c``, docs/cosimulation.md). A
Co-Simulation FMU links CVODE statically (``libsundials_cvode.a`` holds CVODE, the serial
N_Vector, the dense matrix and linear solver and the Newton solver of SUNDIALS 6) with
``-Wl,--exclude-libs,ALL``, so the binary depends only on libc and libm and exports only the
``fmi2*`` functions. ``scripts/install-system-deps.sh`` installs Debian's libsundials-dev.

The integrator's linear solver follows the structure (`choose_linear_solver`, docs/cosimulation.md,
"Linear solver"): CVODE's Newton matrix I - gamma J has the sparsity of the Jacobian J of the
state derivatives, whose pattern is the Derivatives ``dependencies`` on the states
(`mdae_fmu.fmu.dependencies`, a superset over every mode). Ordered by reverse Cuthill-McKee
(scipy), a chain or a ladder has a narrow band, and CVODE's band solver with its
difference-quotient Jacobian costs mu + ml + 1 evaluations of f and O(n (mu + ml) ml) per
factorization instead of n evaluations and O(n^3). When the union over the modes is wide (a
drive line: all clutches engaged couple every shaft) the band of the current mode is measured
by the FMU at each start of the integrator (templates/fmi2CoSimulation.c, cs_probe_band).
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sps
    from scipy.sparse import csgraph
else:   # loaded on first use (`mdae_fmu.lazy_modules`): only for BAND_MIN_STATES states or more
    from ..lazy_modules import csgraph, sparse as sps

from ..diagnostics import ModelRejected
from .build import BuildError, compiler

FMI_TYPES = ("me", "cs", "both")
SUNDIALS_ARCHIVES = ("libsundials_cvode.a",)
SUNDIALS_HEADER = "cvode/cvode.h"


# The CS integrator (SUNDIALS CVODE) is compiled in only when MDAE_WITH_SUNDIALS is defined:
# mdae-fmu's own build defines it (`SUNDIALS_DEFINE`) and links CVODE; a rebuild of the
# source FMU without it (plain `fmpy compile`) still gives a working Model Exchange binary
# whose fmi2Instantiate refuses Co-Simulation with a message (docs/cosimulation.md).
SUNDIALS_DEFINE = "MDAE_WITH_SUNDIALS"
CS_INTEGRATOR_SWITCH = (f"#if MDAE_CO_SIMULATION && defined({SUNDIALS_DEFINE})\n"
                        "#define MDAE_CS_INTEGRATOR 1\n#else\n#define MDAE_CS_INTEGRATOR 0\n"
                        "#endif\n")


def check_fmi_type(fmi_type: str) -> str:
    """``fmi_type`` itself if it is one of `FMI_TYPES`, else `ModelRejected`."""
    if fmi_type not in FMI_TYPES:
        raise ModelRejected(f"unknown FMI type {fmi_type!r}: use one of "
                            f"{', '.join(FMI_TYPES)} (Model Exchange, Co-Simulation, both)")
    return fmi_type


def offers_me(fmi_type: str) -> bool:
    return fmi_type in ("me", "both")


def offers_cs(fmi_type: str) -> bool:
    return fmi_type in ("cs", "both")


def interface_defines(fmi_type: str, default_tolerance: float | None = None) -> str:
    """The ``#define`` lines telling the generic wrapper which interfaces are compiled in,
    and the DefaultExperiment tolerance: the relative tolerance of the embedded integrator
    and the scale of the drift threshold when the host gives none (the C default is 1e-6)."""
    out = (f"#define MDAE_MODEL_EXCHANGE {int(offers_me(fmi_type))}\n"
           f"#define MDAE_CO_SIMULATION {int(offers_cs(fmi_type))}\n"
           f"{CS_INTEGRATOR_SWITCH}")
    if default_tolerance is not None:
        tol = float(default_tolerance)
        if not (0.0 < tol < 1.0):
            raise ModelRejected(f"default experiment tolerance {tol!r} must be in (0, 1)")
        out += f"#define MDAE_DEFAULT_TOLERANCE {tol!r}\n"
    return out


# fewer states than this: the dense solver, as before (the same numbers bit for bit)
BAND_MIN_STATES = 16


@dataclass(frozen=True)
class LinearSolver:
    """The linear solver of the CS integrator (module docstring). ``order``: CVODE's entry k
    holds state ``order[k]`` (empty: the model's order); ``upper``, ``lower``: the half-widths
    of a band solver used in every mode, -1 for none; ``probe``: the widest band (mu + ml +
    1) the FMU accepts when it measures the current mode's band at each start of the
    integrator, 0 for no measurement (then dense when ``upper`` is -1)."""
    order: tuple[int, ...] = ()
    upper: int = -1
    lower: int = -1
    probe: int = 0


DENSE = LinearSolver()


def band_widths(pattern: Sequence[Collection[int]], order: Sequence[int]) -> tuple[int, int]:
    """Upper and lower half-widths of the matrix with ``pattern[i]`` the columns of row ``i``,
    rows and columns permuted by ``order`` (entry k is index ``order[k]``)."""
    pos = {v: k for k, v in enumerate(order)}
    upper = lower = 0
    for i, cols in enumerate(pattern):
        for j in cols:
            upper = max(upper, pos[j] - pos[i])
            lower = max(lower, pos[i] - pos[j])
    return upper, lower


def widest_band(nx: int) -> int:
    """The widest band (mu + ml + 1) worth a band solver for ``nx`` states: a quarter of
    them, where the band factorization costs at most 3/16 of the dense one's n^3 / 3."""
    return max(nx // 4, 1)


def choose_linear_solver(pattern: Sequence[Collection[int]]) -> LinearSolver:
    """The linear solver for states whose derivative ``i`` depends on the states
    ``pattern[i]`` in some mode (module docstring): dense below `BAND_MIN_STATES`; else the
    band of the reverse Cuthill-McKee order of the symmetrized pattern (or of the model's
    order, when narrower) when it is at most `widest_band`; else the model's order with the
    band of the current mode measured by the FMU (``probe``)."""
    nx = len(pattern)
    if nx < BAND_MIN_STATES:
        return DENSE
    rows = [i for i, cols in enumerate(pattern) for _ in cols]
    cols = [j for c in pattern for j in c]
    graph = sps.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(nx, nx))
    graph = graph + graph.T
    rcm = csgraph.reverse_cuthill_mckee(graph, symmetric_mode=True)
    candidates = [tuple(range(nx)), tuple(int(k) for k in rcm)]
    widths = [band_widths(pattern, order) for order in candidates]
    best = min(range(2), key=lambda k: sum(widths[k]))
    (upper, lower), order = widths[best], candidates[best]
    if upper + lower + 1 <= widest_band(nx):
        return LinearSolver(order=order, upper=upper, lower=lower)
    return LinearSolver(order=candidates[0], probe=widest_band(nx))


def state_pattern(states: Sequence[Hashable], derivatives: Sequence[str],
                  dependencies: Mapping[str, Sequence[Hashable]]) -> list[frozenset[int]]:
    """The Jacobian pattern of the state derivatives: for the derivative ``derivatives[i]``
    of ``states[i]``, the indices of the states in its ``dependencies`` (FMI names of the
    derivatives; the states and the dependencies named alike, by FMI name or by
    ScalarVariable index as `mdae_fmu.fmu.dependencies.Structure`; a derivative missing
    from ``dependencies`` depends on every state)."""
    index = {name: k for k, name in enumerate(states)}
    everything = frozenset(range(len(states)))
    return [frozenset(index[n] for n in dependencies[d] if n in index)
            if d in dependencies else everything for d in derivatives]


def linear_solver_defines(solver: LinearSolver) -> str:
    """The config.h lines of ``solver`` (read by templates/mdae_info.c); none for dense."""
    if solver == DENSE:
        return ""
    return (f"#define MDAE_CS_BAND_UPPER {solver.upper}\n"
            f"#define MDAE_CS_BAND_LOWER {solver.lower}\n"
            f"#define MDAE_CS_BAND_PROBE {solver.probe}\n"
            f"#define MDAE_CS_STATE_ORDER {{{', '.join(map(str, solver.order))}}}\n")


def configure_sources(sources: dict[str, str], fmi_type: str,
                      default_tolerance: float | None = None,
                      linear_solver: LinearSolver = DENSE) -> dict[str, str]:
    """Return ``sources`` with `interface_defines` (and, for Co-Simulation, the
    `linear_solver_defines`) added to ``config.h`` (before its final ``#endif``). The generic
    files (``fmi2CoSimulation.c`` included) are already there."""
    out = dict(sources)
    cfg = out["config.h"]
    k = cfg.rstrip().rfind("#endif")
    if k < 0:
        raise ValueError("config.h has no include guard")
    solver = linear_solver_defines(linear_solver) if offers_cs(fmi_type) else ""
    out["config.h"] = (cfg[:k] + interface_defines(fmi_type, default_tolerance) + solver
                       + "\n" + cfg[k:])
    return out


def find_static_library(name: str) -> Path | None:
    """Full path of a static library the C compiler finds (``gcc -print-file-name``)."""
    r = subprocess.run([compiler(), f"-print-file-name={name}"], capture_output=True,
                       text=True)
    p = Path(r.stdout.strip())
    return p if r.returncode == 0 and p.is_absolute() and p.exists() else None


@functools.lru_cache(maxsize=1)
def sundials_missing() -> str | None:
    """None when a Co-Simulation binary can be built here (the CVODE headers and static
    archives are found by the C compiler), else a message saying what is missing and how to
    install it."""
    try:
        cc = compiler()
    except BuildError as err:
        return str(err)
    for name in SUNDIALS_ARCHIVES:
        if find_static_library(name) is None:
            return (f"SUNDIALS CVODE static library {name} not found (Debian: apt-get install "
                    f"libsundials-dev, or run scripts/install-system-deps.sh as root)")
    r = subprocess.run([cc, "-E", "-x", "c", "-"], input=f"#include <{SUNDIALS_HEADER}>\n",
                       capture_output=True, text=True)
    if r.returncode != 0:
        return (f"SUNDIALS CVODE header <{SUNDIALS_HEADER}> not found (Debian: apt-get "
                f"install libsundials-dev, or run scripts/install-system-deps.sh as root)")
    return None


def sundials_compile_flags(fmi_type: str) -> tuple[str, ...]:
    """Compiler flags of the FMU's own build: ``-DMDAE_WITH_SUNDIALS`` for CS/both."""
    return (f"-D{SUNDIALS_DEFINE}",) if offers_cs(fmi_type) else ()


def rebuild_cmake_options() -> dict[str, str]:
    """``cmake_options`` for ``fmpy.build.build_platform_binary`` that rebuild the complete
    binary (Co-Simulation included) of a CS/both source FMU: define MDAE_WITH_SUNDIALS, link
    libsundials_cvode.a after the objects, keep its symbols local. Raises `BuildError` when
    SUNDIALS is missing (docs/cosimulation.md, "Rebuilding from sources")."""
    args = sundials_link_args()
    return {"CMAKE_C_FLAGS:STRING": f"-D{SUNDIALS_DEFINE}",
            "CMAKE_SHARED_LINKER_FLAGS:STRING": args[0],
            "CMAKE_C_STANDARD_LIBRARIES:STRING": " ".join(args[1:]) + " -lm"}


def sundials_link_args() -> tuple[str, ...]:
    """Linker arguments of a Co-Simulation binary: the SUNDIALS archives, their symbols kept
    local to the shared object. Raises `BuildError` (with the fix) when SUNDIALS is missing."""
    paths = []
    for name in SUNDIALS_ARCHIVES:
        p = find_static_library(name)
        if p is None:
            raise BuildError(
                f"Co-Simulation FMUs embed SUNDIALS CVODE, but {name} was not found. "
                f"Install it with scripts/install-system-deps.sh (Debian: apt-get install "
                f"libsundials-dev), or export with --fmi-type me")
        paths.append(str(p))
    return ("-Wl,--exclude-libs,ALL", *paths)
