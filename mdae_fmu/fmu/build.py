"""Compile the generated C sources into ``binaries/linux64/<modelIdentifier>.so`` with gcc.

Flags: ``-O2 -Wall -Wextra -Werror -fPIC -fvisibility=hidden`` (the FMI functions are exported
through ``FMI2_Export`` of the FMI 2.0 header) and ``-shared`` for the link. The FMI headers
are the ones FMPy installs (``fmpy/c-code``), which is also what ``fmpy compile`` uses, so the
FMU does not ship its own copy. Files are compiled in parallel (one process per core) with
relative paths from the source directory, so the binary does not depend on where the build
ran (reproducible builds). The units of the generic wrapper (`REUSABLE_UNITS`) do not depend
on the model (templates/mdae_wrapper.h): their objects come from the per-user object cache
when one was compiled before from the same preprocessed text, flags and compiler
(`mdae_fmu.fmu.build_cache`, ``MDAE_FMU_OBJECT_CACHE``), so an export compiles the model's own
units only. With ``MDAE_FMU_BUILD_CACHE`` set, a whole library whose inputs did not change is
copied from that directory instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from ..diagnostics import EXIT_REJECTED, MdaeError
from . import build_cache

CFLAGS = ("-O2", "-Wall", "-Wextra", "-Werror", "-fPIC", "-fvisibility=hidden", "-std=c99")


class BuildError(MdaeError):
    """The C compiler is missing or failed (exit code 1); the message holds its output."""
    exit_code = EXIT_REJECTED


def fmi_header_dir() -> Path:
    """Directory holding fmi2Functions.h (FMPy's copy of the FMI 2.0 headers), found without
    importing FMPy (about 0.4 s CPU of every export)."""
    import importlib.util
    spec = importlib.util.find_spec("fmpy")
    if spec is None or not spec.submodule_search_locations:
        raise BuildError("FMPy is not installed: its copy of the FMI 2.0 headers is needed")
    return Path(spec.submodule_search_locations[0]) / "c-code"


def run_tool(cmd: list[str], cwd: Path) -> tuple[int, str]:
    """Run the compiler or linker ``cmd`` in ``cwd``: its exit code and standard error. When
    the wait is interrupted (SIGINT/SIGTERM raise in this process, `mdae_fmu.output`), the tool
    gets SIGTERM and is waited for, so it removes its temporary files from TMPDIR (gcc and
    collect2 do on SIGTERM; the SIGKILL of `subprocess.run` leaves them behind)."""
    with subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True) as p:
        try:
            _, stderr = p.communicate()
        except BaseException:
            p.terminate()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
            raise
    return p.returncode, stderr


def compiler() -> str:
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not cc:
        raise BuildError("no C compiler found (install gcc or set CC)")
    return cc


#: the generic wrapper: the same object for every model built with the same flags
REUSABLE_UNITS = frozenset({"fmi2Functions.c", "fmi2CoSimulation.c", "mdae_runtime.c",
                            "mdae_sparse.c"})


def compile_unit(cc: str, src_dir: Path, name: str, flags: list[str]) -> str:
    """Compile the unit ``name`` of ``src_dir`` with ``flags`` into its object file (its
    name returned); `BuildError` with gcc's output on failure."""
    obj = name[:-2] + ".o"
    code, stderr = run_tool([cc, *flags, "-c", name, "-o", obj], src_dir)
    if code != 0:
        raise BuildError(f"gcc failed on {name}:\n{stderr[-4000:]}")
    return obj


def unit_flags(extra_flags: tuple[str, ...] = (), own: tuple[str, ...] = ()) -> list[str]:
    """The compile flags of a unit: `CFLAGS`, the build's ``extra_flags``, the unit's
    ``own`` flags and the include directories."""
    return [*CFLAGS, *extra_flags, *own, "-I.", f"-I{fmi_header_dir()}"]


class EarlyUnits:
    """Units compiled while the caller prepares the others (`start_early`): gcc runs in
    its own processes, so the caller's Python goes on meanwhile (at 10^6 equations the
    model description is built while the name tables compile). `compile_shared_library`
    takes their objects; `close` waits for any still running (a failed export leaves no
    gcc behind in its temporary directory)."""

    def __init__(self, src_dir: Path, names: list[str], extra_flags: tuple[str, ...],
                 jobs: int | None = None) -> None:
        cc = compiler()
        self.flags = unit_flags(extra_flags)
        self.pool = ThreadPoolExecutor(max_workers=max(1, min(len(names),
                                                              jobs or os.cpu_count() or 1)))
        self.futures = {n: self.pool.submit(compile_unit, cc, src_dir, n, self.flags)
                        for n in names}

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def start_early(src_dir: Path, texts: dict[str, str],
                extra_flags: tuple[str, ...] = ()) -> EarlyUnits | None:
    """Write the units ``texts`` (name -> C text, needing no header of the source directory)
    into ``src_dir`` and start compiling them (`EarlyUnits`); None, and nothing written,
    when there are none or when the library cache (``MDAE_FMU_BUILD_CACHE``) is on, whose key
    reads every unit before any is compiled."""
    if not texts or build_cache.cache_dir() is not None:
        return None
    for name, text in texts.items():
        (src_dir / name).write_text(text, encoding="utf-8")
    return EarlyUnits(src_dir, list(texts), extra_flags)


def compile_shared_library(src_dir: Path, c_files: list[str], out: Path,
                           jobs: int | None = None, extra_flags: tuple[str, ...] = (),
                           link_args: tuple[str, ...] = (),
                           per_file_flags: dict[str, tuple[str, ...]] | None = None,
                           progress=None, early: EarlyUnits | None = None) -> Path:
    """Compile ``c_files`` (names relative to ``src_dir``) and link ``out`` (module
    docstring); ``link_args`` go after the objects (static libraries, e.g. SUNDIALS for
    Co-Simulation, `mdae_fmu.fmu.cosim.sundials_link_args`); ``per_file_flags`` are appended
    for single files (``-O1`` for the schedule of very large models). Raises `BuildError`
    with the compiler output on failure. ``progress(done, total)`` is called as units finish.
    ``early``: units already being compiled with the same flags (`start_early`), whose
    objects are taken as they are."""
    per_file_flags = per_file_flags or {}
    cc = compiler()
    jobs = jobs or os.cpu_count() or 1
    lib_cache = build_cache.cache_dir()
    obj_cache = build_cache.object_cache_dir()
    started = early.futures if early is not None else {}

    def flags_of(name: str) -> list[str]:
        return unit_flags(extra_flags, per_file_flags.get(name, ()))

    keys: dict[str, str | None] = {}

    def key_of(name: str) -> str | None:
        if name not in keys:
            keys[name] = build_cache.unit_key(cc, src_dir, name, flags_of(name))
        return keys[name]

    # biggest files first: better load balance
    order = sorted(c_files, key=lambda n: -(src_dir / n).stat().st_size)
    if early is not None and any(early.flags != flags_of(n) for n in started):
        raise ValueError("a unit compiled early with other flags than the build's")
    lib_key = None
    if lib_cache is not None:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            unit_keys = list(pool.map(key_of, sorted(c_files)))
        if all(unit_keys):
            lib_key = build_cache.build_key(cc, src_dir, [k or "" for k in unit_keys],
                                            link_args)
            if build_cache.fetch(lib_cache, lib_key, out):
                if progress is not None:
                    progress(len(c_files), len(c_files))
                return out

    def one(name: str) -> str:
        obj = name[:-2] + ".o"
        key = key_of(name) if obj_cache is not None and name in REUSABLE_UNITS else None
        if key is not None and obj_cache is not None and \
                build_cache.fetch_object(obj_cache, key, src_dir / obj):
            return obj
        compile_unit(cc, src_dir, name, flags_of(name))
        if key is not None and obj_cache is not None:
            build_cache.store_object(obj_cache, key, src_dir / obj)
        return obj

    objs = {}
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        futures = {pool.submit(one, n): n for n in order if n not in started}
        futures.update({f: n for n, f in started.items() if n in c_files})
        for f in as_completed(futures):
            objs[futures[f]] = f.result()
            if progress is not None:
                progress(len(objs), len(order))
    finally:        # on an error or an interrupt, the files not started are not compiled
        pool.shutdown(wait=True, cancel_futures=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [cc, "-shared", "-o", str(out.resolve()), *[objs[n] for n in sorted(c_files)],
           *link_args, "-lm"]
    code, stderr = run_tool(cmd, src_dir)
    if code != 0:
        raise BuildError(f"linking {out.name} failed:\n{stderr[-4000:]}")
    for o in objs.values():
        (src_dir / o).unlink(missing_ok=True)
    if lib_cache is not None and lib_key is not None:
        build_cache.store(lib_cache, lib_key, out)
    return out
