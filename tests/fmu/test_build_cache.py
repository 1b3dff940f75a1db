"""The cache of compiled shared libraries (mdae_fmu/fmu/build_cache.py, MDAE_FMU_BUILD_CACHE):
a hit runs no compiler and gives the bytes gcc wrote; any change of a source, header, flag
or compiler is a miss; failed builds are not kept; `prune` drops the least recently used."""

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


@pytest.mark.parametrize("change", ["header", "source", "flag", "per-file flag", "compiler"])
def test_any_input_change_is_a_miss(tmp_path, counting_cc, monkeypatch, change):
    log, cache = counting_cc
    compile_shared_library(_sources(tmp_path / "one"), ["a.c"], tmp_path / "one.so")
    kw: dict = {}
    src = _sources(tmp_path / "two", k=3 if change == "header" else 2,
                   body=SOURCE + "/* edited */\n" if change == "source" else SOURCE)
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
