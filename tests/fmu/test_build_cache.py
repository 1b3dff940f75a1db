"""The caches of compiled code (mdae_fmu/fmu/build_cache.py). Shared libraries
(MDAE_FMU_BUILD_CACHE): a hit runs no compiler and gives the bytes gcc wrote; any change of a
source, header (also one outside the source directory), flag or compiler is a miss; failed
builds are not kept; `prune` drops the least recently used. Objects of the generic wrapper
(MDAE_FMU_OBJECT_CACHE): compiled once for every library that has them, a damaged entry is
rebuilt, the variable turns the cache off."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from mdae_fmu.fmu import build_cache
from mdae_fmu.fmu.build import BuildError, compile_shared_library

SOURCE = "#include \"k.h\"\nint twice(int x) { return K * x; }\n"


@pytest.fixture
def counting_cc(tmp_path, monkeypatch):
    """CC = a wrapper of gcc that appends each compile (-c) and link (-shared) to a log; the
    cache in a fresh directory. Returns (log path, cache directory)."""
    log = tmp_path / "cc.log"
    cc = tmp_path / "cc"
    cc.write_text('#!/bin/sh\nfor a in "$@"; do case "$a" in -c|-shared) echo "$a" >> '
                  f'"{log}";; esac; done\nexec gcc "$@"\n')
    cc.chmod(0o755)
    cache = tmp_path / "cache"
    monkeypatch.setenv("CC", str(cc))
    monkeypatch.setenv(build_cache.CACHE_ENV, str(cache))
    monkeypatch.setenv(build_cache.OBJECT_ENV, "off")
    return log, cache


def _sources(d: Path, k: int = 2, body: str = SOURCE) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "a.c").write_text(body)
    (d / "k.h").write_text(f"#define K {k}\n")
    return d


def _calls(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def test_hit_runs_no_compiler_and_gives_the_same_bytes(tmp_path, counting_cc):
    log, cache = counting_cc
    first = compile_shared_library(_sources(tmp_path / "one"), ["a.c"], tmp_path / "one.so")
    assert _calls(log) == ["-c", "-shared"]
    progress = []
    second = compile_shared_library(_sources(tmp_path / "two"), ["a.c"], tmp_path / "two.so",
                                    progress=lambda k, n: progress.append((k, n)))
    assert _calls(log) == ["-c", "-shared"]            # nothing compiled the second time
    assert second.read_bytes() == first.read_bytes()
    assert progress == [(1, 1)]
    assert len(list(cache.glob("*.so"))) == 1


def test_a_header_outside_the_sources_is_part_of_the_key(tmp_path, counting_cc):
    """The library key once hashed the source directory and FMPy's headers only: a header
    found through another include path (SUNDIALS's, libc's) could change and the old
    library was served. Now the preprocessed text of every unit is hashed."""
    log, cache = counting_cc
    system = tmp_path / "system"
    system.mkdir()
    body = "#include <dep.h>\nint twice(int x) { return DEP * x; }\n"
    flags = (f"-I{system}",)
    (system / "dep.h").write_text("#define DEP 2\n")
    first = compile_shared_library(_sources(tmp_path / "one", body=body), ["a.c"],
                                   tmp_path / "one.so", extra_flags=flags)
    (system / "dep.h").write_text("#define DEP 3\n")          # only this input changes
    second = compile_shared_library(_sources(tmp_path / "two", body=body), ["a.c"],
                                    tmp_path / "two.so", extra_flags=flags)
    assert _calls(log) == ["-c", "-shared"] * 2
    assert first.read_bytes() != second.read_bytes()
    assert len(list(cache.glob("*.so"))) == 2


@pytest.mark.parametrize("change", ["header", "source", "flag", "per-file flag", "compiler"])
def test_any_input_change_is_a_miss(tmp_path, counting_cc, monkeypatch, change):
    log, cache = counting_cc
    compile_shared_library(_sources(tmp_path / "one"), ["a.c"], tmp_path / "one.so")
    kw: dict = {}
    src = _sources(tmp_path / "two", k=3 if change == "header" else 2,
                   body=SOURCE + "int edited(void) { return 1; }\n" if change == "source"
                   else SOURCE)
    if change == "flag":
        kw["extra_flags"] = ("-DUNUSED=1",)
    if change == "per-file flag":
        kw["per_file_flags"] = {"a.c": ("-O1",)}
    if change == "compiler":
        other = tmp_path / "cc2"
        shutil.copy(os.environ["CC"], other)
        monkeypatch.setenv("CC", str(other))
    compile_shared_library(src, ["a.c"], tmp_path / "two.so", **kw)
    assert _calls(log) == ["-c", "-shared"] * 2
    assert len(list(cache.glob("*.so"))) == 2


def _preprocessor_runs(cc_log: Path) -> int:
    return _calls(cc_log).count("-E")


@pytest.fixture
def logging_cc(counting_cc, tmp_path, monkeypatch):
    """`counting_cc` whose log also has each preprocessor run (-E)."""
    log, cache = counting_cc
    cc = tmp_path / "cc"
    cc.write_text('#!/bin/sh\nfor a in "$@"; do case "$a" in -c|-shared|-E) echo "$a" >> '
                  f'"{log}";; esac; done\nexec gcc "$@"\n')
    return log, cache


def test_a_unit_is_preprocessed_once_per_process(tmp_path, logging_cc):
    """The key of a unit whose text, flags, compiler and included files did not change is
    remembered: the second build (another source directory, as every export has) runs no
    preprocessor, and a hit still gives the same bytes."""
    log, _ = logging_cc
    first = compile_shared_library(_sources(tmp_path / "one"), ["a.c"], tmp_path / "one.so")
    assert _calls(log) == ["-E", "-c", "-shared"]
    second = compile_shared_library(_sources(tmp_path / "two"), ["a.c"], tmp_path / "two.so")
    assert _calls(log) == ["-E", "-c", "-shared"]
    assert second.read_bytes() == first.read_bytes()
    # the included header edited (same size, at once): preprocessed and compiled again
    third = compile_shared_library(_sources(tmp_path / "three", k=3), ["a.c"],
                                   tmp_path / "three.so")
    assert _calls(log) == ["-E", "-c", "-shared"] * 2
    assert third.read_bytes() != first.read_bytes()


def test_a_new_header_beside_the_unit_is_a_miss(tmp_path, logging_cc):
    """A header that appears in the source directory and shadows a system header (``-I.``
    is searched first) changes the preprocessed text although no file the first
    preprocessing read changed: the remembered key is not used."""
    log, cache = logging_cc
    body = ("#include <assert.h>\n#ifndef SHADOW\n#define SHADOW 2\n#endif\n"
            "int twice(int x) { return SHADOW * x; }\n")
    first = compile_shared_library(_sources(tmp_path / "one", body=body), ["a.c"],
                                   tmp_path / "one.so")
    two = _sources(tmp_path / "two", body=body)
    (two / "assert.h").write_text("#define SHADOW 3\n")
    second = compile_shared_library(two, ["a.c"], tmp_path / "two.so")
    assert _preprocessor_runs(log) == 2
    assert first.read_bytes() != second.read_bytes()
    assert len(list(cache.glob("*.so"))) == 2


def test_failed_build_is_not_kept(tmp_path, counting_cc):
    log, cache = counting_cc
    src = _sources(tmp_path / "bad", body="int broken(void) { return undeclared; }\n")
    for _ in range(2):                                   # the second try compiles again
        with pytest.raises(BuildError, match="undeclared"):
            compile_shared_library(src, ["a.c"], tmp_path / "bad.so")
    assert _calls(log) == ["-c", "-c"]
    assert list(cache.iterdir()) == []


def test_no_cache_without_the_variable(tmp_path, counting_cc, monkeypatch):
    log, cache = counting_cc
    monkeypatch.setenv(build_cache.CACHE_ENV, "")
    for name in ("one", "two"):
        compile_shared_library(_sources(tmp_path / name), ["a.c"], tmp_path / f"{name}.so")
    assert _calls(log) == ["-c", "-shared"] * 2
    assert not cache.exists()


def test_prune_drops_least_recently_used_first(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    for age, name in enumerate(["newest", "middle", "oldest"]):
        p = cache / f"{name}.so"
        p.write_bytes(b"x" * 100)
        os.utime(p, (1e9 - age * 10, 1e9 - age * 10))
    dead = cache / ".abc.tmp"                              # a writer that died long ago
    dead.write_bytes(b"partial")
    os.utime(dead, (1e9, 1e9))
    assert build_cache.prune(cache, 250) == 1
    assert sorted(p.name for p in cache.iterdir()) == ["middle.so", "newest.so"]
    assert build_cache.prune(cache, 250) == 0
    assert build_cache.prune(cache, 0) == 2
    assert list(cache.iterdir()) == []


WRAPPER = "int wrapper_twice(int x) { return 2 * x; }\n"


def _model_sources(d: Path, k: int) -> Path:
    """A library of the generic unit mdae_runtime.c and a model unit a.c (constant k)."""
    _sources(d, k)
    (d / "mdae_runtime.c").write_text(WRAPPER)
    return d


@pytest.fixture
def object_cache(tmp_path, counting_cc, monkeypatch):
    log, _ = counting_cc
    objects = tmp_path / "objects"
    monkeypatch.setenv(build_cache.CACHE_ENV, "")
    monkeypatch.setenv(build_cache.OBJECT_ENV, str(objects))
    return log, objects


def test_generic_unit_compiled_once_for_every_model(tmp_path, object_cache):
    log, objects = object_cache
    units = ["a.c", "mdae_runtime.c"]
    one = compile_shared_library(_model_sources(tmp_path / "one", 2), units, tmp_path / "1.so")
    assert _calls(log) == ["-c", "-c", "-shared"]
    assert len(list(objects.glob("*.o"))) == 1                 # the model's unit is not kept
    two = compile_shared_library(_model_sources(tmp_path / "two", 3), units, tmp_path / "2.so")
    assert _calls(log) == ["-c", "-c", "-shared", "-c", "-shared"]  # a.c only
    again = compile_shared_library(_model_sources(tmp_path / "three", 2), units,
                                   tmp_path / "3.so")
    assert again.read_bytes() == one.read_bytes() != two.read_bytes()


def test_damaged_object_entry_is_rebuilt(tmp_path, object_cache):
    log, objects = object_cache
    units = ["a.c", "mdae_runtime.c"]
    first = compile_shared_library(_model_sources(tmp_path / "one", 2), units, tmp_path / "1.so")
    (entry,) = objects.glob("*.o")
    data = bytearray(entry.read_bytes())
    data[-5] ^= 0x40                                   # one bit of the object flipped
    entry.write_bytes(bytes(data))
    second = compile_shared_library(_model_sources(tmp_path / "two", 2), units,
                                    tmp_path / "2.so")
    assert _calls(log) == ["-c", "-c", "-shared"] * 2   # the wrapper compiled again
    assert second.read_bytes() == first.read_bytes()
    (entry,) = objects.glob("*.o")
    assert entry.read_bytes() != bytes(data)           # and stored whole


@pytest.mark.parametrize("value", ["0", "off", ""])
def test_object_cache_off_with_the_variable(tmp_path, object_cache, monkeypatch, value):
    log, objects = object_cache
    monkeypatch.setenv(build_cache.OBJECT_ENV, value)
    for name in ("one", "two"):
        compile_shared_library(_model_sources(tmp_path / name, 2), ["a.c", "mdae_runtime.c"],
                               tmp_path / f"{name}.so")
    assert _calls(log) == ["-c", "-c", "-shared"] * 2
    assert not objects.exists()
