"""tf.logging: TF1's logging helpers over Python's logging (logger "dtf")."""
from __future__ import annotations

import logging as _logging

DEBUG = _logging.DEBUG
INFO = _logging.INFO
WARN = _logging.WARNING
WARNING = _logging.WARNING
ERROR = _logging.ERROR
FATAL = _logging.FATAL

_log = _logging.getLogger("dtf")

__all__ = ["DEBUG", "INFO", "WARN", "WARNING", "ERROR", "FATAL", "set_verbosity",
           "get_verbosity", "debug", "info", "warn", "warning", "error", "fatal", "log"]


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
