"""What a golden case is and how one runs; imports neither dtf nor TensorFlow.

A case is ``fn(tf)`` that builds its graph in the default graph and returns either
- a dict ``{name: tensor_or_op_or_value}`` (with an optional second item, a feed dict:
  ``return fetches, feeds``), fetched once after the global and local variable
  initializers ran, or
- a callable ``run(sess) -> {name: value}`` for programs that need several runs (metrics'
  update ops, training steps); initializers have run before it is called.

Values are anything numpy can turn into an array (strings included), so a case can record
an error class's name, a shape or a variable's name as well as numbers. Inputs come from
``np.random.RandomState`` with a fixed seed, never from random ops, whose streams differ.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

CASES: dict[str, "Case"] = {}


@dataclass(frozen=True)
class Case:
    name: str          # "<module>.<function>", the key prefix in data/<module>.npz
    module: str
    fn: Callable
    rtol: float = 1e-5
    atol: float = 1e-6
    skip_keys: tuple = field(default=())


def case(fn=None, *, rtol=1e-5, atol=1e-6):
    """Registers a golden case; ``@case`` or ``@case(rtol=..., atol=...)``."""
    def register(f):
        module = f.__module__.rsplit(".", 1)[-1]
        name = f"{module}.{f.__name__}"
        if name in CASES:
            raise ValueError(f"golden case {name} is defined twice")
        CASES[name] = Case(name, module, f, rtol, atol)
        return f
    return register(fn) if fn is not None else register


def load_all():
    """Imports every cases_*.py beside this file; returns the registry."""
    from tests import goldens
    for info in pkgutil.iter_modules(goldens.__path__):
        if info.name.startswith("cases_"):
            importlib.import_module(f"tests.goldens.{info.name}")
    return CASES


def run_case(tf, c: Case) -> dict[str, np.ndarray]:
    """Runs one case in a fresh graph and session of ``tf``; returns its named values."""
    graph = tf.Graph()
    with graph.as_default():
        built = c.fn(tf)
        feeds = None
        if isinstance(built, tuple):
            built, feeds = built
        init = [tf.global_variables_initializer(), tf.local_variables_initializer()]
        with tf.Session(graph=graph) as sess:
            sess.run(init)
            if callable(built):
                values = built(sess)
            else:
                names = sorted(built)
                got = sess.run([built[n] for n in names], feeds)
                values = dict(zip(names, got))
    return {k: _as_array(v) for k, v in values.items()}


def _as_array(value):
    arr = np.asarray(value)
    if arr.dtype == object:      # bytes from a string tensor
        arr = np.asarray([v.decode() if isinstance(v, bytes) else v for v in arr.ravel()],
                         dtype=str).reshape(arr.shape)
    elif arr.dtype.kind == "S":
        arr = arr.astype(str)
    return arr


def data_path(module: str) -> str:
    import os
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", f"{module}.npz")
