"""Stage display of long commands (``mdae-fmu analyze`` and ``export``) on a terminal.

A `Progress` is called with the name of each stage (import, structure, modes, code generation,
gcc units); it prints ``mdae-fmu COMMAND [  12.3 s] stage`` on stderr once the command has run
for more than ``delay`` seconds (small models stay silent) and only when stderr is a terminal,
so that piped or captured output never contains it.
"""

from __future__ import annotations

import sys
import time


class Progress:
    """Stage messages on ``stream`` (default stderr); ``enabled``: None = only when the stream
    is a terminal, True / False to force."""

    def __init__(self, command: str = "export", stream=None, delay: float = 2.0,
                 enabled: bool | None = None):
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.command = command
        self.delay = delay
        self.enabled = enabled
        self.t0 = time.monotonic()
        self.last = ""

    def __call__(self, message: str) -> None:
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.t0
        if elapsed >= self.delay and message != self.last:
            self.last = message
            print(f"mdae-fmu {self.command} [{elapsed:6.1f} s] {message}", file=self.stream,
                  flush=True)


def as_progress(progress, command: str) -> Progress:
    """A `Progress` from the ``progress`` argument of the API functions: a `Progress` as is,
    None / True for the default (terminal only), False for silence."""
    if isinstance(progress, Progress):
        return progress
    if progress is False:
        return Progress(command, enabled=False)
    return Progress(command)
