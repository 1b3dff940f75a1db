"""`heap.release_free_heap`: after the import of a large text the C heap's free
pages go back to the operating system (docs/performance.md, "stop 39, memory"); the model is
the same with or without the release, and small texts do not pay for it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mdae_fmu import heap
from mdae_fmu.importers import flat_modelica as F

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from gen_chain import loop_chain_model  # noqa: E402


def _rss_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


def test_release_only_from_the_threshold_on_and_same_model(monkeypatch):
    text = loop_chain_model(20)
    calls: list[int] = []
    monkeypatch.setattr(F, "release_free_heap", lambda: calls.append(1))
    monkeypatch.setattr(F, "TRIM_MIN_CHARS", len(text) + 1)
    below = F.parse_modelica(text, "c.mo")
    assert calls == []
    monkeypatch.setattr(F, "TRIM_MIN_CHARS", len(text))
    at = F.parse_modelica(text, "c.mo")
    assert calls == [1]
    assert at == below


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_freed_heap_goes_back_to_the_system():
    if not heap.has_release():          # (a Linux without glibc: nothing to release with)
        pytest.skip("no malloc_trim in this C library")
    # 80 MB of 2 kB blocks (above the small-object allocator: the C heap), one in 8 kept so
    # the heap cannot shrink from its top: the freed runs are in its middle
    size = 2000
    blocks = [b"x" * size for _ in range(40_000)]
    kept = blocks[::8]
    del blocks
    before = _rss_kib()
    heap.release_free_heap()
    after = _rss_kib()
    assert before - after > 30_000, (before, after)
    assert len(kept) == 5000
