"""Test helpers: FMUs built once per test run and shared by every test and xdist worker, an
FMU exported from a model's text, and the log of a run that fails."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

# The directory of the FMUs shared by the whole run: tests/conftest.py creates it in the
# controller process (before pytest-xdist starts its workers, which inherit the variable) and
# removes it at the end. Without it (a helper imported outside pytest) a directory per process.
# mdae_fmu is imported by the functions that export: the controller imports this module too.
SHARED_ENV = "MDAE_FMU_TEST_SHARED_DIR"
_process_dir: Path | None = None


def shared_dir() -> Path:
    """The run's shared build directory (`SHARED_ENV`), else one for this process."""
    global _process_dir
    value = os.environ.get(SHARED_ENV, "")
    if value:
        return Path(value)
    if _process_dir is None:
        _process_dir = Path(tempfile.mkdtemp(prefix="mdae_fmu_tests_"))
    return _process_dir


def remove_process_dir() -> None:
    """Remove the per-process directory `shared_dir` fell back to, if any."""
    global _process_dir
    if _process_dir is not None:
        shutil.rmtree(_process_dir, ignore_errors=True)
        _process_dir = None


def shared_build(key: tuple, file_name: str, build: Callable[[Path], object]) -> Path:
    """The file ``file_name`` that ``build(path)`` writes at ``path``, built once per run for
    ``key`` (everything the result depends on: the model's text, the export options) and
    shared by every test and worker. The first caller builds it under an exclusive lock on the
    key, the others wait and read it; a build that raises leaves nothing behind, so the next
    caller builds again (and raises again). Callers must not modify the file."""
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:32]
    root = shared_dir()
    root.mkdir(parents=True, exist_ok=True)
    done = root / digest
    with open(root / f"{digest}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (done / file_name).exists():
            work = Path(tempfile.mkdtemp(dir=root, prefix=f".{digest}."))
            try:
                build(work / file_name)
                shutil.rmtree(done, ignore_errors=True)
                os.replace(work, done)
            finally:
                shutil.rmtree(work, ignore_errors=True)
    return done / file_name


def export_text(tmp_path: Path, text: str, name: str, **options) -> Path:
    """``text`` written to ``<name>.mo`` and exported (`api.export_fmu`, ``options``) to
    ``<name>.fmu`` in ``tmp_path``, read back through `api.load` as a user's file is. The
    export runs once per run for the same text, name and options (`shared_build`); the
    test gets its own copy."""
    from mdae_fmu import api
    src = tmp_path / f"{name}.mo"
    src.write_text(text)

    def build(fmu: Path) -> None:
        model_file = fmu.with_suffix(".mo")
        if model_file != src:
            model_file.write_text(text)
        api.export_fmu(api.load(model_file), fmu, progress=False, **options)

    fmu = tmp_path / f"{name}.fmu"
    if not all(_plain(v) for v in options.values()):    # e.g. a callback: export each time
        build(fmu)
        return fmu
    key = ("export_text", text, name, sorted(options.items()), export_environment())
    shared = shared_build(key, f"{name}.fmu", build)
    shutil.copyfile(shared, fmu)
    return fmu


def export_environment() -> list[tuple[str, str]]:
    """The ``MDAE_*`` variables of the environment, part of every export's key: some change
    what the export writes (``MDAE_FUNCTION_BUDGET`` is compiled in). A test that changes the
    exporter otherwise (a monkeypatched constant) exports by itself, not through this module."""
    return sorted((k, v) for k, v in os.environ.items()
                  if k.startswith("MDAE_") and k != SHARED_ENV)


def _plain(value: object) -> bool:
    """Whether ``value`` is data whose repr says all of it (a valid part of a build key)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return True
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


def model_fmu(model_file: Path, **options) -> Path:
    """The FMU of the model in ``model_file`` (`api.load`, then `api.export_fmu` with
    ``options``, which must be plain data), built once per run for its text and the options
    (`shared_build`) and named after the file; read-only."""
    from mdae_fmu import api
    key = ("model_fmu", model_file.name, model_file.read_text(), sorted(options.items()),
           export_environment())
    return shared_build(key, f"{model_file.stem}.fmu", lambda fmu: api.export_fmu(
        api.load(model_file), fmu, progress=False, **options))


def baseline_fmu(name: str, *bugs: str, debug: bool = False, suffix: str | None = None) -> Path:
    """The hand-written baseline FMU ``name`` of benchmarks/baselines (`build_baseline`), with
    the fault macros ``bugs`` (named after them unless ``suffix`` is given) and ``debug``
    (-O0 -g), built once per run and shared by every test and worker (`shared_build`, keyed
    by these and the text of the baseline's sources: a shared directory named beforehand
    outlives the run); read-only."""
    import sys
    root = Path(__file__).resolve().parent.parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from benchmarks.baselines.build import HERE, build_baseline
    suffix = suffix if suffix is not None else ("_".join(bugs) or None)
    file_name = f"{name}{'_' + suffix if suffix else ''}.fmu"
    sources = hashlib.sha256()
    for path in sorted([*HERE.glob("*.[ch]"), *(HERE / name).glob("*")]):
        if path.is_file():
            sources.update(path.name.encode() + b"\0" + path.read_bytes())
    return shared_build(("baseline", name, sorted(bugs), debug, suffix, sources.hexdigest()),
                        file_name,
                        lambda fmu: build_baseline(name, fmu.parent, defines=bugs, debug=debug,
                                                   suffix=suffix))


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
