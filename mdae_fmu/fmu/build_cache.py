"""Caches of compiled code, keyed by everything the compiler reads: object files of the
generic wrapper, and (for the test suite) whole shared libraries.

**Object cache** (`fetch_object`, `store_object`). The generic wrapper (fmi2Functions.c,
fmi2CoSimulation.c, mdae_runtime.c, mdae_sparse.c) reads the model's sizes at run time
(templates/mdae_wrapper.h), so its object files are the same for every model built with the
same flags: they are compiled once and kept in a per-user directory,
``$XDG_CACHE_HOME/mdae_fmu/objects`` (default ``~/.cache/mdae_fmu/objects``). The
environment variable ``MDAE_FMU_OBJECT_CACHE`` names another directory, or turns the cache off
with ``0``, ``off`` or an empty value. At most `OBJECT_CACHE_MAX_BYTES` are kept (least
recently used entries go first).

**Library cache** (`fetch`, `store`). Opt-in through ``MDAE_FMU_BUILD_CACHE`` (a directory;
unset or empty: no cache), for the test suite (tests/conftest.py, ``MDAE_FMU_TEST_BUILD_CACHE``):
an FMU whose build inputs did not change is linked once, not once per test or per run.

**Keys** (`unit_key`, `build_key`). A unit's key is the SHA-256 of the compiler (its path
and its ``-dumpfullversion -dumpmachine`` answer), the unit's name, every compile flag, and
the unit *after preprocessing* (``cc FLAGS -E``): the text of every header it includes,
system headers (libc, SUNDIALS) as well as the FMU's and FMPy's, with the macros the flags
define. A library's key adds the link arguments (with the size and modification time of
those that are files, e.g. the SUNDIALS static libraries). Before issue 26's object cache
the library key hashed the files of the source directory and FMPy's FMI headers only, so
a change of an included system header (a SUNDIALS upgrade) was a hit on a library built
with the old one.

The preprocessor runs once per process for a unit (`unit_key`): the key is remembered with
the digest of every file the preprocessed text names (its line markers) and reused while the
unit's text, flags, compiler, those files' bytes and the names of the headers beside the unit
are the same (a new header there could shadow a system one); the four wrapper units of an
export cost 0.1 s of preprocessor CPU otherwise.

Entries are written to a temporary name and renamed, so concurrent builders (pytest-xdist
workers, parallel exports) never read half a file; failed builds are never stored. An
object entry carries the SHA-256 of its bytes: a damaged entry is detected, removed and
rebuilt. The builds are reproducible (`mdae_fmu.fmu.build`), so a hit is the file gcc would
write again.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

CACHE_ENV = "MDAE_FMU_BUILD_CACHE"


def cache_dir() -> Path | None:
    """The cache directory named by ``MDAE_FMU_BUILD_CACHE``, created if missing; None when
    the variable is unset or empty."""
    value = os.environ.get(CACHE_ENV, "")
    if not value:
        return None
    path = Path(value)
    path.mkdir(parents=True, exist_ok=True)
    return path


@functools.lru_cache(maxsize=8)
def compiler_identity(cc: str) -> str:
    """``cc``'s resolved path and its version and target (one call per compiler and
    process)."""
    try:
        r = subprocess.run([cc, "-dumpfullversion", "-dumpmachine"], capture_output=True,
                           text=True, timeout=60)
        answer = r.stdout
    except (OSError, subprocess.SubprocessError):
        answer = ""
    return f"{shutil.which(cc) or cc}\n{answer}"


def _file_stamp(arg: str, cwd: Path) -> str:
    """Size and modification time of a link argument that names a file ('' otherwise)."""
    path = cwd / arg
    try:
        st = path.stat()
    except OSError:
        return ""
    return f"{st.st_size}:{st.st_mtime_ns}" if path.is_file() else ""


def unit_key(cc: str, src_dir: Path, name: str, flags: Iterable[str]) -> str | None:
    """SHA-256 of what compiling ``name`` (in ``src_dir``, with ``flags``) reads (module
    docstring); None when the preprocessor fails (the compiler then reports why). The
    preprocessor runs once per process for the same unit (`_remembered_key`)."""
    flags = list(flags)
    memo = _memo_key(cc, src_dir, name, flags)
    known = _remembered_key(src_dir, memo)
    if known is not None:
        return known
    try:
        r = subprocess.run([cc, *flags, "-E", name], cwd=src_dir, capture_output=True,
                           timeout=600)
    except (OSError, subprocess.SubprocessError):
        return None
    if r.returncode != 0:
        return None
    h = hashlib.sha256()
    for data in (compiler_identity(cc).encode(), name.encode(), *(f.encode() for f in flags),
                 r.stdout):
        _part(h, data)
    key = h.hexdigest()
    included = tuple((f, _content_digest(src_dir, f)) for f in sorted(_included_files(r.stdout)))
    if all(digest for _, digest in included):     # every file read: a later change is seen
        _KNOWN_UNITS[memo] = (included, key)
    return key


#: per process: what a unit's preprocessing read -> ((file, digest of its bytes), ...), key
_KNOWN_UNITS: dict[str, tuple[tuple[tuple[str, str], ...], str]] = {}


def _memo_key(cc: str, src_dir: Path, name: str, flags: list[str]) -> str:
    """What `unit_key` reads besides the included files: the compiler, the unit's name and
    text, the flags, and the names of the headers beside it (a new one could shadow a system
    header found through ``-I.``)."""
    h = hashlib.sha256()
    for data in (compiler_identity(cc).encode(), name.encode(), *(f.encode() for f in flags),
                 _content_digest(src_dir, name).encode(),
                 *sorted(p.name.encode() for p in src_dir.glob("*.h"))):
        _part(h, data)
    return h.hexdigest()


def _remembered_key(src_dir: Path, memo: str) -> str | None:
    """The key `unit_key` computed earlier in this process for the same compiler, unit text,
    flags and header names, if every file its preprocessing included still has the same
    bytes (a source directory's own headers read in ``src_dir``): the preprocessed text is
    then the same, and the preprocessor (0.01 to 0.05 s of CPU per wrapper unit, four per
    export) is not run again. None otherwise."""
    known = _KNOWN_UNITS.get(memo)
    if known is None:
        return None
    included, key = known
    if all(_content_digest(src_dir, f) == digest for f, digest in included):
        return key
    return None


def _included_files(preprocessed: bytes) -> set[str]:
    """The files named by the line markers of ``cc -E`` output (``# 12 "path" 2``),
    relative to the source directory or absolute; ``<built-in>`` and the like left out."""
    files = set()
    for line in preprocessed.splitlines():
        if line.startswith(b"# ") and b' "' in line:
            name = line.split(b'"', 2)[1]
            if name and not name.startswith(b"<"):
                files.add(name.decode(errors="surrogateescape"))
    return files


def _content_digest(src_dir: Path, name: str) -> str:
    """SHA-256 of the bytes of ``name`` (relative to ``src_dir``, or absolute); '' when it
    cannot be read (a unit that included such a file is not remembered)."""
    try:
        return hashlib.sha256((src_dir / name).read_bytes()).hexdigest()
    except OSError:
        return ""


def build_key(cc: str, src_dir: Path, unit_keys: Iterable[str], link_args: Iterable[str]) -> str:
    """SHA-256 of what the build of a shared library reads: the keys of its units
    (`unit_key`, in link order) and the link arguments (module docstring)."""
    h = hashlib.sha256()
    _part(h, compiler_identity(cc).encode())
    for key in unit_keys:
        _part(h, key.encode())
    _part(h, b"--link")
    for arg in link_args:
        _part(h, arg.encode())
        _part(h, _file_stamp(arg, src_dir).encode())
    return h.hexdigest()


def _part(h, data: bytes) -> None:
    """Feed ``data`` to the hash ``h`` with its length (no two sequences of parts collide)."""
    h.update(len(data).to_bytes(8, "little"))
    h.update(data)


def fetch(cache: Path, key: str, out: Path) -> bool:
    """Copy the library stored under ``key`` to ``out``; False when there is none. A hit
    refreshes the entry's time for `prune`."""
    entry = cache / f"{key}.so"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(entry, out)
        os.utime(entry)
    except FileNotFoundError:
        return False
    return True


def store(cache: Path, key: str, library: Path) -> None:
    """Keep a copy of ``library`` under ``key`` (written to a temporary name, then renamed)."""
    fd, tmp = tempfile.mkstemp(dir=cache, prefix=f".{key[:16]}.", suffix=".tmp")
    os.close(fd)
    try:
        shutil.copyfile(library, tmp)
        os.replace(tmp, cache / f"{key}.so")
    finally:
        Path(tmp).unlink(missing_ok=True)


def prune(cache: Path, max_bytes: int, suffix: str = ".so") -> int:
    """Remove the least recently used entries (files ending in ``suffix``) until the directory
    holds at most ``max_bytes`` of them, and the temporary files of writers that died more
    than an hour ago; the number of entries removed."""
    stale = time.time() - 3600
    for path in cache.glob(".*.tmp"):
        try:
            if path.stat().st_mtime < stale:
                path.unlink()
        except FileNotFoundError:
            pass
    entries = []
    for path in cache.glob(f"*{suffix}"):
        try:
            st = path.stat()
        except FileNotFoundError:
            continue
        entries.append((st.st_mtime, st.st_size, path))
    total = sum(size for _, size, _ in entries)
    removed = 0
    for _, size, path in sorted(entries):
        if total <= max_bytes:
            break
        path.unlink(missing_ok=True)
        total -= size
        removed += 1
    return removed


# --- object cache --------------------------------------------------------------------------

OBJECT_ENV = "MDAE_FMU_OBJECT_CACHE"
OBJECT_CACHE_MAX_BYTES = 64 << 20
_OFF = ("0", "off", "no", "false")
_DIGEST = 32                   # bytes of the SHA-256 that starts an object entry


def object_cache_dir() -> Path | None:
    """The per-user object cache (module docstring), created if missing; None when
    ``MDAE_FMU_OBJECT_CACHE`` turns it off or the directory cannot be created."""
    value = os.environ.get(OBJECT_ENV)
    if value is not None and value.strip().lower() in ("", *_OFF):
        return None
    if value:
        path = Path(value)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        path = Path(base) / "mdae_fmu" / "objects"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return path


def fetch_object(cache: Path, key: str, out: Path) -> bool:
    """Write the object file stored under ``key`` to ``out``; False when there is none, or
    when the entry's bytes do not match the digest it was stored with (the entry is then
    removed, and the caller compiles and stores it again)."""
    entry = cache / f"{key}.o"
    try:
        data = entry.read_bytes()
    except OSError:
        return False
    digest, obj = data[:_DIGEST], data[_DIGEST:]
    if len(digest) != _DIGEST or hashlib.sha256(obj).digest() != digest:
        entry.unlink(missing_ok=True)
        return False
    out.write_bytes(obj)
    try:
        os.utime(entry)
    except OSError:
        pass
    return True


def store_object(cache: Path, key: str, obj: Path) -> None:
    """Keep ``obj`` under ``key`` with its digest (written to a temporary name, then renamed),
    then bound the directory to `OBJECT_CACHE_MAX_BYTES`. A cache that cannot be written
    is skipped: the build does not depend on it."""
    try:
        data = obj.read_bytes()
        fd, tmp = tempfile.mkstemp(dir=cache, prefix=f".{key[:16]}.", suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(hashlib.sha256(data).digest())
            f.write(data)
        os.replace(tmp, cache / f"{key}.o")
        prune(cache, OBJECT_CACHE_MAX_BYTES, suffix=".o")
    except OSError:
        pass
    finally:
        Path(tmp).unlink(missing_ok=True)
