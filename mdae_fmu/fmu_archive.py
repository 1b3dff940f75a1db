"""An FMU archive opened with limits: extracted into a temporary folder that is always removed.

An FMU is a zip archive, and any zip may be hostile: a few megabytes that expand to gigabytes
(a zip bomb), entries named ``../x`` or ``/etc/x`` that land outside the folder, symbolic
links, millions of files, a truncated download. `extract_fmu` checks the archive's directory
against `ArchiveLimits` *before* it writes a byte (entry count, declared total size, each
entry's compression ratio, names, file types), then copies each entry in chunks while counting
what it really writes, so an entry whose data expands beyond its declared size is stopped too.
Anything refused is an `InputError` (exit code 2) naming the FMU, the entry and the limit.

`open_fmu` is the one way the tool reads an FMU (simulate, compare, regress, sweep, info): a
temporary folder, the archive extracted into it, the model description read from it (without
a DOCTYPE: no entities), and the folder removed when the ``with`` block ends: normally, on an
error, or on SIGINT/SIGTERM (the command line turns both into exceptions,
`mdae_fmu.output.signals_raise`).
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import zipfile
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from .diagnostics import InputError

MiB = 1 << 20
GiB = 1 << 30
#: Bytes copied at a time while extracting (and counted against the limits).
CHUNK = MiB


@dataclass(frozen=True)
class ArchiveLimits:
    """What an FMU archive may hold. ``max_total_size``: bytes of all entries together, once
    extracted; ``max_files``: number of entries (folders included); ``max_ratio``: uncompressed
    over compressed size of one entry, checked for entries larger than ``ratio_floor`` bytes
    (small files, such as a short XML, compress well and harm nobody)."""
    max_total_size: int = GiB
    max_files: int = 10_000
    max_ratio: float = 200.0
    ratio_floor: int = MiB


DEFAULT_LIMITS = ArchiveLimits()


@dataclass(frozen=True)
class OpenedFmu:
    """An FMU extracted by `open_fmu`: the archive's path, the folder that holds its content
    (valid inside the ``with`` block only) and its model description (FMPy's
    ``ModelDescription``). ``problems``: what FMPy's validation found in the description when
    it was opened with ``validate=False`` (empty otherwise: a failed validation refuses the
    FMU)."""
    path: Path
    directory: Path
    model_description: Any
    problems: tuple[str, ...] = ()


def _size(n: float) -> str:
    """``6.0 GiB``, ``12.5 MiB``, ``300 bytes``."""
    if n >= GiB:
        return f"{n / GiB:.1f} GiB"
    if n >= MiB:
        return f"{n / MiB:.1f} MiB"
    return f"{int(n)} bytes"


def _refuse(label: str, what: str) -> InputError:
    return InputError(f"{label}: refused: {what}")


def _check_name(label: str, name: str) -> list[str]:
    """The path components of an entry name, or `InputError` for a name that could land
    outside the extraction folder: absolute, a drive letter, a backslash, ``..``, a NUL."""
    if "\x00" in name:
        raise _refuse(label, f"entry {name!r} has a NUL character in its name")
    if name.startswith("/") or "\\" in name or ":" in name:
        raise _refuse(label, f"entry {name!r} is an absolute path or not a plain relative "
                      "path (entries must stay inside the FMU's folder)")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise _refuse(label, f"entry {name!r} climbs out of the FMU's folder with '..'")
    if not parts:
        raise _refuse(label, f"entry {name!r} has no name")
    return parts


def _file_type(info: zipfile.ZipInfo) -> int:
    """The Unix file type bits of an entry (0 when the archive does not record them)."""
    return stat.S_IFMT(info.external_attr >> 16) if info.create_system == 3 else 0


def check_directory(label: str, infos: list[zipfile.ZipInfo], limits: ArchiveLimits) -> None:
    """Refuse an archive from its directory alone, before anything is written: too many
    entries, a declared total size above the limit, an entry compressed beyond the ratio, a
    name outside the folder, a repeated name, a symbolic link or any entry that is neither a
    file nor a folder."""
    if len(infos) > limits.max_files:
        raise _refuse(label, f"{len(infos)} entries, more than the {limits.max_files} an FMU "
                      "may hold (limit max_files)")
    total = 0
    seen: set[str] = set()
    for info in infos:
        parts = _check_name(label, info.filename)
        key = "/".join(parts)
        if key in seen:
            raise _refuse(label, f"entry {info.filename!r} appears twice")
        seen.add(key)
        kind = _file_type(info)
        if kind == stat.S_IFLNK:
            raise _refuse(label, f"entry {info.filename!r} is a symbolic link (an FMU holds "
                          "plain files only)")
        if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
            raise _refuse(label, f"entry {info.filename!r} is not a plain file or folder")
        total += info.file_size
        if total > limits.max_total_size:
            raise _refuse(label, f"its entries expand to more than {_size(limits.max_total_size)}"
                          f" (at least {_size(total)}; limit max_total_size)")
        if info.file_size > limits.ratio_floor and \
                info.file_size > limits.max_ratio * max(info.compress_size, 1):
            ratio = info.file_size / max(info.compress_size, 1)
            raise _refuse(label, f"entry {info.filename!r} expands {ratio:.0f} times "
                          f"({_size(info.compress_size)} to {_size(info.file_size)}), more "
                          f"than {limits.max_ratio:g} (limit max_ratio: a zip bomb?)")


def extract_fmu(fmu: Path, into: Path, limits: ArchiveLimits = DEFAULT_LIMITS,
                label: str | None = None) -> None:
    """Extract the archive ``fmu`` into the existing folder ``into`` within ``limits``
    (module docstring). Raises `InputError` naming ``label`` (default: the archive's path) for
    anything that is not a readable zip within the limits; ``into`` may then hold part of the
    content (its owner removes it)."""
    label = label or str(fmu)
    try:
        zf = zipfile.ZipFile(fmu)
    except FileNotFoundError:
        raise InputError(f"{label}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{label}: is a directory, not an FMU") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as err:
        raise InputError(f"{label}: not an FMU (not a zip archive, or truncated: {err})") \
            from None
    with zf:
        infos = zf.infolist()
        check_directory(label, infos, limits)
        written = 0
        root = into.resolve()
        for info in infos:
            target = root.joinpath(*_check_name(label, info.filename))
            try:
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
            except (FileExistsError, NotADirectoryError):
                raise _refuse(label, f"entry {info.filename!r} is both a file and a folder "
                              "of the archive") from None
            written = _copy_entry(zf, info, target, written, limits, label)


def _copy_entry(zf: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, written: int,
                limits: ArchiveLimits, label: str) -> int:
    """Copy one entry in chunks, counting the bytes against the total limit and the entry's
    declared size; returns the bytes written so far."""
    own = 0
    try:
        with zf.open(info) as src, open(target, "xb") as dst:
            while True:
                chunk = src.read(CHUNK)
                if not chunk:
                    break
                own += len(chunk)
                written += len(chunk)
                if own > info.file_size or written > limits.max_total_size:
                    raise _refuse(label, f"entry {info.filename!r} expands beyond its "
                                  f"declared size or the {_size(limits.max_total_size)} "
                                  "limit (limit max_total_size)")
                dst.write(chunk)
    except (zipfile.BadZipFile, zlib.error, EOFError, ValueError) as err:
        raise InputError(f"{label}: entry {info.filename!r} cannot be read (truncated or "
                         f"corrupt archive: {err})") from None
    except NotImplementedError as err:
        raise InputError(f"{label}: entry {info.filename!r}: {err}") from None
    except RuntimeError as err:             # encrypted entries
        raise InputError(f"{label}: entry {info.filename!r}: {err}") from None
    except (FileExistsError, IsADirectoryError, NotADirectoryError):
        raise _refuse(label, f"entry {info.filename!r} is both a file and a folder of the "
                      "archive") from None
    return written


def read_model_description(directory: Path, label: str):
    """FMPy's ``ModelDescription`` of an extracted FMU, validated against the FMI schema. A
    missing file, a DOCTYPE (entities are never expanded) or an invalid description is an
    `InputError`."""
    return describe(directory, label)[0]


def describe(directory: Path, label: str, validate: bool = True) -> tuple[Any, tuple[str, ...]]:
    """``(model description, problems)`` of an extracted FMU. With ``validate`` (FMPy's
    default) a description that fails FMPy's validation (the FMI schema, then FMPy's checks:
    undefined units, illegal variabilities...) is an `InputError` listing the problems;
    without it the description is read as it is and the problems are returned, for the
    caller to print as warnings. A missing file or a DOCTYPE (entities are never expanded) is
    an `InputError` either way, and so is a description FMPy cannot read at all."""
    from fmpy import read_model_description as fmpy_read
    xml = directory / "modelDescription.xml"
    if not xml.is_file():
        raise InputError(f"{label}: not an FMU (no modelDescription.xml)")
    with open(xml, "rb") as fh:
        head = fh.read(64 * 1024)
    if b"<!DOCTYPE" in head or b"<!ENTITY" in head:
        raise InputError(f"{label}: modelDescription.xml declares a DOCTYPE or entities, "
                         "which an FMI model description never needs; refused")
    try:
        return fmpy_read(str(directory)), ()
    except Exception as err:   # FMPy raises plain exceptions for malformed descriptions
        problems = _validation_problems(err)
        if validate:
            hint = (" (--no-validate simulates it anyway, with these as warnings)"
                    if str(err).lstrip().startswith("Failed to validate") else "")
            raise InputError(f"{label}: invalid modelDescription.xml: "
                             f"{'; '.join(problems[:5]) or type(err).__name__}{hint}") from None
    try:
        return fmpy_read(str(directory), validate=False), tuple(problems)
    except Exception as err:
        text = str(err).strip().splitlines()
        raise InputError(f"{label}: unreadable modelDescription.xml: "
                         f"{'; '.join(text[:5]) or type(err).__name__}") from None


def _validation_problems(err: Exception) -> list[str]:
    """The problems of FMPy's validation error, one per line without FMPy's heading and list
    marks."""
    lines = [ln.strip() for ln in str(err).strip().splitlines() if ln.strip()]
    if lines and lines[0].startswith("Failed to validate"):
        lines = lines[1:]
    return [ln[2:] if ln.startswith("- ") else ln for ln in lines] or [type(err).__name__]


@contextmanager
def temporary_folder(prefix: str) -> Iterator[Path]:
    """A new folder in the system's temporary directory, removed with everything in it when
    the ``with`` block ends, however it ends (exception, SIGINT/SIGTERM turned into
    exceptions by the command line)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def open_fmu(fmu: str | os.PathLike[str] | bytes, limits: ArchiveLimits = DEFAULT_LIMITS,
             label: str | None = None, validate: bool = True) -> Iterator[OpenedFmu]:
    """``with open_fmu(path) as f:`` the FMU extracted within ``limits`` into a temporary
    folder (``f.directory``) with its model description (``f.model_description``); the folder
    is removed when the block ends. ``fmu`` may also be the archive's bytes (a sweep's FMU
    shipped to a worker; ``label`` names it in messages). ``validate=False``: a description
    that fails FMPy's validation is read anyway, its problems in ``f.problems`` (`describe`)."""
    if isinstance(fmu, bytes):
        label = label or "FMU"
    else:
        label = label or str(fmu)
        if not Path(fmu).exists():
            raise InputError(f"{label}: no such file")
    with temporary_folder("mdae_fmu_") as tmp:
        if isinstance(fmu, bytes):
            path = tmp / "model.fmu"
            path.write_bytes(fmu)
        else:
            path = Path(fmu)
        content = tmp / "content"
        content.mkdir()
        extract_fmu(path, content, limits, label)
        md, problems = describe(content, label, validate)
        yield OpenedFmu(path=Path(label) if isinstance(fmu, bytes) else path,
                        directory=content, model_description=md, problems=problems)


__all__ = ["ArchiveLimits", "DEFAULT_LIMITS", "OpenedFmu", "check_directory", "extract_fmu",
           "read_model_description", "describe", "open_fmu", "temporary_folder"]
