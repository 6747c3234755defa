"""Stateful resources (variables) held in named containers.

A variable's value is replaced on every assignment, so readers that already hold the
previous array (a fetch, a send in flight, a value read earlier in the step) keep a
consistent snapshot. The one exception is ApplyAdam (dtf/kernels/cpu/adam_fast.py), which
writes the variable's and its slots' arrays in place when nothing but the variables
holds them, as TensorFlow's kernel always does: a reader that starts during such an
update may see part of it, as in TensorFlow. Updates hold the variables' locks, so
concurrent writers (asynchronous training) never tear a tensor.
"""
from __future__ import annotations

import threading

import numpy as np

from dtf.framework import errors


class VariableResource:
    __slots__ = ("name", "dtype", "shape", "value", "lock")

    def __init__(self, name, dtype, shape):
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.value = None
        self.lock = threading.Lock()

    def read(self):
        v = self.value
        if v is None:
            raise errors.FailedPreconditionError(
                None, None, f"Attempting to use uninitialized value {self.name}")
        return v

    @property
    def initialized(self):
        return self.value is not None


class ResourceManager:
    """container name -> resource name -> resource. The default container is ''."""

    def __init__(self):
        self._containers: dict[str, dict[str, object]] = {}
        self._lock = threading.Lock()
        # Bumped by every clear: handle kernels keep the resource they found last while it
        # is unchanged (dtf/kernels/cpu/data_flow.py, _resource_kernel).
        self.generation = 0

    def variable(self, container: str, name: str, dtype, shape) -> VariableResource:
        c = self._containers.get(container)
        if c is not None:
            r = c.get(name)
            if r is not None:
                return r
        with self._lock:
            c = self._containers.setdefault(container, {})
            r = c.get(name)
            if r is None:
                r = c[name] = VariableResource(name, dtype, shape)
            return r

    def lookup(self, container: str, name: str, kind=None):
        r = self._containers.get(container, {}).get(name)
        if r is None:
            raise errors.NotFoundError(None, None, f"Resource {container}/{name} does not exist.")
        return r

    def get_or_create(self, container: str, name: str, make):
        # Every step of a queue pipeline looks its queues and readers up, from several
        # threads at once: an existing resource is found without the lock, as a variable is.
        c = self._containers.get(container)
        if c is not None:
            r = c.get(name)
            if r is not None:
                return r
        with self._lock:
            c = self._containers.setdefault(container, {})
            r = c.get(name)
            if r is None:
                r = c[name] = make()
            return r

    def clear(self, containers=None):
        """Drops the named containers (all when None), as ``Session.reset`` does."""
        with self._lock:
            self.generation += 1
            if containers is None:
                self._containers.clear()
            else:
                for name in containers:
                    self._containers.pop(name, None)

    def containers(self):
        return {k: len(v) for k, v in self._containers.items()}

    def variables(self):
        for c, items in self._containers.items():
            for name, r in items.items():
                if isinstance(r, VariableResource):
                    yield c, name, r


def as_array(value, dtype) -> np.ndarray:
    """Converts ``value`` to a numpy array of the DType ``dtype`` (strings -> bytes objects)."""
    if dtype.name == "string":
        arr = np.asarray(value, dtype=object)
        if arr.dtype != object:
            arr = arr.astype(object)
        flat = arr.reshape(-1)
        for i, v in enumerate(flat):
            if isinstance(v, str):
                flat[i] = v.encode()
        return arr
    return np.asarray(value, dtype=dtype.as_numpy_dtype)
