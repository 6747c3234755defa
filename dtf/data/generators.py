"""Python generators behind ``Dataset.from_generator``, registered in this process.

The spec names a generator by key; the iterator kernel finds it here. A kernel running in
another process (a worker task) finds nothing and says so: the callable cannot travel.
"""
from __future__ import annotations

import itertools
import os
import threading

_GENERATORS: dict = {}
_lock = threading.Lock()
_ids = itertools.count()


def register(generator) -> str:
    with _lock:
        key = f"{os.getpid()}:{next(_ids)}"
        _GENERATORS[key] = generator
    return key


def lookup(key: str):
    gen = _GENERATORS.get(key)
    if gen is None:
        raise RuntimeError(
            f"Dataset.from_generator: the generator (key {key}) was defined in process "
            f"{key.split(':')[0]}, but this iterator runs in process {os.getpid()}. A Python "
            "generator runs only in the process that built the graph: place the iterator on "
            "the client's own task, or read the data with a file dataset instead.")
    return gen
