"""tf.logging: TF1's logging helpers over Python's logging (logger "dtf")."""
from __future__ import annotations

import logging as _logging
import sys as _sys

DEBUG = _logging.DEBUG
INFO = _logging.INFO
WARN = _logging.WARNING
WARNING = _logging.WARNING
ERROR = _logging.ERROR
FATAL = _logging.FATAL

_log = _logging.getLogger("dtf")

__all__ = ["DEBUG", "INFO", "WARN", "WARNING", "ERROR", "FATAL", "set_verbosity",
           "get_verbosity", "debug", "info", "warn", "warning", "error", "fatal", "log",
           "log_every_n", "log_first_n", "log_if", "vlog", "flush", "TaskLevelStatusMessage",
           "get_logger"]


def _ensure_handler():
    if not _logging.getLogger().handlers and not _log.handlers:
        handler = _logging.StreamHandler()
        handler.setFormatter(_logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
        _log.addHandler(handler)


def set_verbosity(level):
    _ensure_handler()
    _log.setLevel(level)


def get_verbosity():
    return _log.getEffectiveLevel()


def log(level, msg, *args, **kwargs):
    _ensure_handler()
    _log.log(level, msg, *args, **kwargs)


def debug(msg, *args, **kwargs):
    log(DEBUG, msg, *args, **kwargs)


def info(msg, *args, **kwargs):
    log(INFO, msg, *args, **kwargs)


def warning(msg, *args, **kwargs):
    log(WARNING, msg, *args, **kwargs)


warn = warning


def error(msg, *args, **kwargs):
    log(ERROR, msg, *args, **kwargs)


def fatal(msg, *args, **kwargs):
    log(FATAL, msg, *args, **kwargs)


def vlog(level, msg, *args, **kwargs):
    """Logs at ``level`` (a plain logging level, as TF's vlog does)."""
    log(level, msg, *args, **kwargs)


def log_if(level, msg, condition, *args):
    """Logs ``msg % args`` only when ``condition`` holds."""
    if condition:
        log(level, msg, *args)


# Calls so far per call site (file, line): log_every_n and log_first_n count per site.
_calls_per_site: dict = {}


def _next_count_at_caller() -> int:
    frame = _sys._getframe(2)
    site = (frame.f_code.co_filename, frame.f_lineno)
    _calls_per_site[site] = _calls_per_site.get(site, -1) + 1
    return _calls_per_site[site]


def log_every_n(level, msg, n, *args):
    """Logs the 1st, (n+1)th, (2n+1)th ... call from the same line."""
    log_if(level, msg, not (_next_count_at_caller() % n), *args)


def log_first_n(level, msg, n, *args):
    """Logs only the first ``n`` calls from the same line."""
    log_if(level, msg, _next_count_at_caller() < n, *args)


def TaskLevelStatusMessage(msg):  # noqa: N802 - TF's name
    """Logs ``msg`` at ERROR level, as TF does."""
    error(msg)


def flush():
    """Flushes the handlers of dtf's logger and the root logger."""
    for handler in _log.handlers + _logging.getLogger().handlers:
        handler.flush()


def get_logger():
    """The Python logger tf.logging writes to (tf.get_logger)."""
    _ensure_handler()
    return _log
