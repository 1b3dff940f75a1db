"""The cyclic garbage collector paused while a command builds its data.

An import allocates millions of small objects, and analysis and code generation millions more
(syntax trees, sympy symbols, the plan, the C text) that live to the end of the command. Each
full collection of CPython's cyclic collector scans all of them, their number grows with the
model, and it frees next to nothing (the pipeline's data are not cyclic): about a fifth of the
import's time and a quarter of an export's at 10^5 equations (docs/performance.md, "stop 39,
export"). Reference counting still frees everything else at once; cyclic garbage made inside
the block is collected after it, by the next automatic collection.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run the block with the cyclic collector off, then restore its previous state (so
    nested pauses are harmless)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


__all__ = ["gc_paused"]
