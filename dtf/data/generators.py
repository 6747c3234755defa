"""Python generators behind ``Dataset.from_generator``, registered in this process (in
the registry tf.py_func uses: keys unique across processes and runs).

The spec names a generator by key; the iterator kernel finds it here. A kernel running in
another process (a worker task) finds nothing and says so: the callable cannot travel.
"""
from __future__ import annotations

import os

from dtf.ops import script_ops


def register(generator) -> str:
    return script_ops._register(generator)


def lookup(key: str):
    gen = script_ops.lookup(key)
    if gen is None:
        raise RuntimeError(
            f"Dataset.from_generator: the generator ({key}) was defined in another process "
            f"than this iterator's ({os.getpid()}). A Python generator runs only in the "
            "process that built the graph: place the iterator on the client's own task, or "
            "read the data with a file dataset instead.")
    return gen
