"""Session-wide test setup.

FMPy 0.3.32 routes every FMU's log messages through one native proxy (fmpy/logging) that
remembers the Python logger of the *last* callbacks struct it was given. Tests create many FMU
instances with their own loggers; once such a struct is garbage collected, an FMU that logs
through FMPy's default callbacks calls freed memory and the test process crashes. Keep every
struct handed to the proxy alive for the session (mdae_fmu.simulate passes its own logger for
the same reason)."""

import fmpy.logging as _fmpy_logging

_original_add_logger_proxy = _fmpy_logging.addLoggerProxy
_callbacks_kept_alive = []


def _add_logger_proxy_keeping_callbacks(ref):
    _callbacks_kept_alive.append(getattr(ref, "_obj", ref))
    _original_add_logger_proxy(ref)


_fmpy_logging.addLoggerProxy = _add_logger_proxy_keeping_callbacks
