"""Giving the C heap's free memory back to the operating system between the large stages.

CPython's small objects live in its own arenas; everything larger (lists, dicts, numpy arrays,
the buffers of long strings) comes from the C library's `malloc`. A stage that frees such
blocks in the middle of the heap leaves the pages resident: `free` keeps them for later
allocations of the same kind, and the next stage mostly allocates small objects. glibc's
``malloc_trim`` returns those pages. Called once after the import of a large file, and in
the per-mode analysis of a large mode once after its block-triangular form and once at its end
(docs/performance.md, "stop 39, memory" and "stop 40, memory"). Large blocks are mapped on
their own once a large model is read (`map_large_blocks`, "stop 41, memory"), so that the
arrays a stage frees leave the resident memory at once.
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


#: glibc's ``mallopt`` parameter M_MMAP_THRESHOLD, and the size from which a block is mapped
#: on its own (`map_large_blocks`).
_M_MMAP_THRESHOLD = -3
LARGE_BLOCK = 1 << 20


@functools.cache
def _mallopt() -> Any:
    """glibc's ``mallopt``, or None where the C library has none."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    try:
        return ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None


def map_large_blocks() -> None:
    """From now on, every block of `LARGE_BLOCK` bytes or more (numpy arrays, the tables of
    large lists and dicts) is mapped on its own and unmapped when freed. glibc otherwise raises
    its threshold for that up to 32 MiB as such blocks are freed, after which the arrays of a
    stage on 10^6 equations (8 to 30 MB each) stay in the heap once freed and the resident
    memory keeps the highest level any stage reached (at 10^6 equations about 200 MB more at
    the peak of ``analyze``, docs/performance.md "stop 41, memory"). Called once a large model
    is being read; nothing is done where the C library has no such call."""
    set_option = _mallopt()
    if set_option is not None:
        set_option(_M_MMAP_THRESHOLD, LARGE_BLOCK)


def release_free_heap() -> None:
    """Give the free pages of the C heap back to the operating system (module docstring);
    a few milliseconds for a heap of 10^5 equations' objects. Nothing is done where the C
    library has no such call."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


__all__ = ["LARGE_BLOCK", "has_release", "map_large_blocks", "release_free_heap"]
