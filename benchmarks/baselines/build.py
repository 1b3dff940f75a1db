"""Build the hand-written FMI 2.0 ME baseline FMUs (VanDerPol, BouncingBall, ClutchBasic).

Each model lives in ``benchmarks/baselines/<Model>/`` as ``model.c`` + ``config.h`` +
``modelDescription.xml`` and shares the generic wrapper ``fmi2_me_wrapper.c`` (layering of
the Reference-FMUs). The model identifier and GUID are read
from the XML and compiled in, so the two cannot drift apart.

Usage as a library::

    from benchmarks.baselines.build import build_baseline
    fmu = build_baseline("BouncingBall", out_dir)                      # normal build
    bad = build_baseline("BouncingBall", out_dir, defines=["BUG_VALUES_FLAG"])  # fault

and from the shell: ``python benchmarks/baselines/build.py [-o DIR] [MODEL ...]``.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

HERE = Path(__file__).resolve().parent
MODELS = ("VanDerPol", "BouncingBall", "ClutchBasic")
PLATFORM = "linux64"

# fault-injection macros known to the wrapper and the models (see the C file headers)
KNOWN_BUGS = frozenset({
    "BUG_STALE_CACHE", "BUG_NEEDED_FOREVER", "BUG_NOMINALS_FLAG", "BUG_LEAK", "BUG_ACCEPT_NAN",
    "BUG_VALUES_FLAG", "BUG_ZERO_INDICATOR", "BUG_NEXT_EVENT_STALE", "BUG_FMUSTATE_PARTIAL",
    "BUG_OVERRUN", "BUG_RESTART_W2",
})


class BuildError(RuntimeError):
    """The C compiler failed on a baseline model."""


@dataclass(frozen=True)
class Header:
    """The identity of a model read from its modelDescription.xml."""
    model_name: str
    model_identifier: str
    guid: str


def fmi_headers_dir() -> Path:
    """Directory of the FMI 2.0 C headers shipped with FMPy (unprefixed function names)."""
    import fmpy
    return Path(fmpy.__file__).resolve().parent / "c-code"


def read_header(xml_path: Path) -> Header:
    """Model name, ME model identifier and GUID of a modelDescription.xml (parsed with no
    entity resolution and no network)."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    root = etree.parse(str(xml_path), parser).getroot()
    me = root.find("ModelExchange")
    if me is None:
        raise BuildError(f"{xml_path}: no <ModelExchange> element")
    return Header(root.get("modelName"), me.get("modelIdentifier"), root.get("guid"))


def _c_string(text: str) -> str:
    if any(c in text for c in '"\\\n') or not text.isprintable():
        raise BuildError(f"refusing to embed {text!r} in C source")
    return f'"{text}"'


def build_baseline(name: str, out_dir: str | Path, defines: tuple[str, ...] | list[str] = (),
                   debug: bool = False, suffix: str | None = None) -> Path:
    """Compile baseline ``name`` and package it as ``out_dir/<name>[_suffix].fmu``.

    ``defines``: fault-injection macros (``KNOWN_BUGS``) for negative tests. ``debug``:
    ``-O0 -g`` (for valgrind) instead of ``-O2``. The FMU is rebuilt only when its sources,
    flags or defines changed (a content hash is stored next to it)."""
    if name not in MODELS:
        raise ValueError(f"unknown baseline {name!r}; known: {', '.join(MODELS)}")
    unknown = set(defines) - KNOWN_BUGS
    if unknown:
        raise ValueError(f"unknown fault macro(s): {sorted(unknown)}")
    model_dir = HERE / name
    xml = model_dir / "modelDescription.xml"
    head = read_header(xml)
    if head.model_identifier != name:
        raise BuildError(f"{xml}: modelIdentifier {head.model_identifier!r} != {name!r}")

    sources = [HERE / "fmi2_me_wrapper.c", model_dir / "model.c"]
    flags = ["-std=c99", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror",
             "-fvisibility=hidden", "-static-libgcc"]
    flags += ["-O0", "-g"] if debug else ["-O2"]
    flags += [f"-I{fmi_headers_dir()}", f"-I{model_dir}", f"-I{HERE}",
              f"-DMODEL_GUID={_c_string(head.guid)}"]
    flags += [f"-D{d}" for d in sorted(defines)]

    digest = hashlib.sha256()
    for p in sources + [model_dir / "config.h", HERE / "model.h", xml]:
        digest.update(p.read_bytes())
    digest.update("\0".join(flags).encode())

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    fmu = out_dir / f"{name}{'_' + suffix if suffix else ''}.fmu"
    stamp = fmu.with_suffix(".sha256")
    if fmu.exists() and stamp.exists() and stamp.read_text() == digest.hexdigest():
        return fmu

    with tempfile.TemporaryDirectory(prefix="baseline_") as tmp:
        so = Path(tmp) / f"{name}.so"
        cmd = ["gcc", *flags, *map(str, sources), "-o", str(so), "-lm"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise BuildError(f"gcc failed for {name}:\n{proc.stderr}")
        partial = fmu.with_suffix(".fmu.part")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
            z.write(xml, "modelDescription.xml")
            z.write(so, f"binaries/{PLATFORM}/{name}.so")
            for p in sources + [model_dir / "config.h", HERE / "model.h"]:
                z.write(p, f"sources/{p.name}")
        shutil.move(partial, fmu)
    stamp.write_text(digest.hexdigest())
    return fmu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=list(MODELS))
    ap.add_argument("-o", "--out", default=str(HERE / "out"))
    ap.add_argument("-D", dest="defines", action="append", default=[],
                    help="fault-injection macro (tests only)")
    ap.add_argument("--debug", action="store_true")
    args = ap.parse_args(argv)
    for m in args.models:
        print(build_baseline(m, args.out, defines=args.defines, debug=args.debug))
    return 0


if __name__ == "__main__":
    sys.exit(main())
