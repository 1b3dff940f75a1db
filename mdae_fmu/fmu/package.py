"""The .fmu archive: modelDescription.xml, binaries/linux64/<id>.so, sources/ (every C file
plus sources/buildDescription.xml in the FMI 2.0.4/3.0 format).

Reproducible: entries sorted by name, fixed timestamps (1980-01-01 00:00), fixed permissions
and compression, so the same model gives a byte-identical archive.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from lxml import etree

FIXED_DATE = (1980, 1, 1, 0, 0, 0)


def build_description(identifier: str, c_files: list[str]) -> bytes:
    """sources/buildDescription.xml: one build configuration, one C99 source file set."""
    root = etree.Element("fmiBuildDescription", fmiVersion="3.0")
    bc = etree.SubElement(root, "BuildConfiguration", modelIdentifier=identifier)
    sfs = etree.SubElement(bc, "SourceFileSet", language="C99")
    for name in sorted(c_files):
        etree.SubElement(sfs, "SourceFile", name=name)
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)


def write_fmu(path: Path, entries: dict[str, bytes]) -> Path:
    """Write ``entries`` (archive name -> bytes) as a deterministic zip at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(entries):
            info = zipfile.ZipInfo(name, date_time=FIXED_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3
            info.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
            zf.writestr(info, entries[name], compresslevel=6)
    tmp.replace(path)
    return path
