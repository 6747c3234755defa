"""The reference table: ``REFERENCE[op_type](attrs, *inputs) -> array | tuple``.

Each entry is also the op's CPU fallback kernel (registered with it), so an op needs no
second registration to run. The table loads by op type: reading an entry imports the
module that ``dtf.framework.registry_index`` names for it; iterating it imports them all.
"""
from __future__ import annotations

import importlib

from dtf.framework.op_registry import defining_module, load_indexed
from dtf.kernels.registry import register_kernel


def _fallback_factory(fn):
    def factory(node):
        attrs = node.attrs
        return lambda ctx, *xs: fn(attrs, *xs)

    factory.__name__ = getattr(fn, "__name__", "reference")
    return factory


class _Table(dict):
    """A dict that imports the defining module of a missing op type before it misses."""

    _all = False

    def define(self, op_type, fn, host=False):
        if dict.__contains__(self, op_type):
            raise KeyError(f"reference for {op_type} defined twice")
        dict.__setitem__(self, op_type, fn)
        register_kernel(op_type, "CPU", label="numpy reference", fallback=True, host=host)(
            _fallback_factory(fn))
        MODULES[op_type] = defining_module()

    __setitem__ = define

    def _load(self, op_type):
        from dtf.framework import registry_index

        return load_indexed(registry_index.REFERENCE, op_type) and dict.__contains__(self, op_type)

    def __missing__(self, op_type):
        if self._load(op_type):
            return dict.__getitem__(self, op_type)
        raise KeyError(op_type)

    def __contains__(self, op_type):
        return dict.__contains__(self, op_type) or self._load(op_type)

    def get(self, op_type, default=None):
        try:
            return self[op_type]
        except KeyError:
            return default

    def load_all(self):
        if not self._all:
            from dtf.framework import registry_index

            for mod in registry_index.REFERENCE_MODULES:
                importlib.import_module(mod)
            self._all = True

    def __iter__(self):
        self.load_all()
        return dict.__iter__(self)

    def __len__(self):
        self.load_all()
        return dict.__len__(self)

    def keys(self):
        self.load_all()
        return dict.keys(self)

    def items(self):
        self.load_all()
        return dict.items(self)

    def values(self):
        self.load_all()
        return dict.values(self)


REFERENCE: dict = _Table()
MODULES: dict = {}  # op type -> the module that defined its reference


def reference(op_type, host=False):
    """Decorator registering the numpy definition of ``op_type``; ``host=True``: on a GPU
    device the op runs on the host (it has no CUDA kernel)."""

    def deco(fn):
        REFERENCE.define(op_type, fn, host)
        return fn

    return deco
