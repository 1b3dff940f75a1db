"""A directory of compiled shared libraries, keyed by everything the compiler reads.

Opt-in through the environment variable ``MDAE_FMU_BUILD_CACHE`` (a directory; unset or empty:
no cache). The test suite sets it to a folder of the pytest cache (tests/conftest.py), so an
FMU whose generated sources did not change is compiled once, not once per test or per run.

The key is the SHA-256 of: the compiler (its path and its ``-dumpfullversion -dumpmachine``
answer), every flag and link argument (with the size and modification time of those that
are files, e.g. the SUNDIALS static libraries), the FMI headers, and the name and bytes of
every file of the source directory (the generated ``.c`` and ``.h`` files; ``config.h``
carries the content GUID). The builds are reproducible (`mdae_fmu.fmu.build`), so a hit is
the library gcc would write again. Failed builds are never stored; an entry is written to a
temporary name and renamed, so concurrent builders (pytest-xdist workers) never read half a
file. `prune` keeps the directory under a size, least recently used entries first.
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


def build_key(cc: str, src_dir: Path, flags: Iterable[str], link_args: Iterable[str],
              header_dir: Path) -> str:
    """SHA-256 of what the build of the shared library in ``src_dir`` reads (module
    docstring); ``flags`` are all compile flags in a canonical order."""
    h = hashlib.sha256()

    def part(data: bytes) -> None:
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)

    part(compiler_identity(cc).encode())
    for flag in flags:
        part(flag.encode())
    part(b"--link")
    for arg in link_args:
        part(arg.encode())
        part(_file_stamp(arg, src_dir).encode())
    for directory in (header_dir, src_dir):
        part(b"--dir")
        for path in sorted(p for p in directory.iterdir() if p.is_file()):
            if directory is header_dir and path.suffix != ".h":
                continue
            part(path.name.encode())
            part(path.read_bytes())
    return h.hexdigest()


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


def prune(cache: Path, max_bytes: int) -> int:
    """Remove the least recently used entries until the directory holds at most
    ``max_bytes``, and the temporary files of writers that died more than an hour ago; the
    number of entries removed."""
    stale = time.time() - 3600
    for path in cache.glob(".*.tmp"):
        try:
            if path.stat().st_mtime < stale:
                path.unlink()
        except FileNotFoundError:
            pass
    entries = []
    for path in cache.glob("*.so"):
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
