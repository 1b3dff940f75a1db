"""Giving the C heap's free memory back to the operating system between the large stages.

CPython's small objects live in its own arenas; everything larger (lists, dicts, numpy arrays,
the buffers of long strings) comes from the C library's `malloc`. A stage that frees such
blocks in the middle of the heap leaves the pages resident: `free` keeps them for later
allocations of the same kind, and the next stage mostly allocates small objects. glibc's
``malloc_trim`` returns those pages. Called once after the import of a large file, and in
the per-mode analysis of a large mode once after its block-triangular form and once at its end
(docs/performance.md, "stop 39, memory" and "stop 40, memory").
"""

from __future__ import annotations

import functools
import sys
from typing import Any


@functools.cache
def _malloc_trim() -> Any:
    """glibc's ``malloc_trim``, or None where the C library has none (macOS, Windows, musl)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None


def has_release() -> bool:
    """Whether `release_free_heap` can release anything on this platform."""
    return _malloc_trim() is not None


def release_free_heap() -> None:
    """Give the free pages of the C heap back to the operating system (module docstring);
    a few milliseconds for a heap of 10^5 equations' objects. Nothing is done where the C
    library has no such call."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


__all__ = ["has_release", "release_free_heap"]
