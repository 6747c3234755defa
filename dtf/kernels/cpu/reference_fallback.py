"""Registers the numpy reference of every op as its CPU fallback kernel."""
from dtf.kernels.reference import REFERENCE
from dtf.kernels.registry import register_kernel


def _factory_for(fn):
    def factory(node):
        attrs = node.attrs
        return lambda ctx, *xs: fn(attrs, *xs)

    return factory


for _op_type, _fn in REFERENCE.items():
    register_kernel(_op_type, "CPU", label="numpy reference", fallback=True)(_factory_for(_fn))
