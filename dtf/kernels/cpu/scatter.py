"""CPU kernels of the row updates (Scatter*, SparseApply*): the reference routines of
dtf/kernels/reference/sparse.py run on the variable's array under its lock.

A sparse update touches a few rows of what may be a large table, so copying the table on
every update (the replace-never-mutate rule of dtf/state/resources.py) would cost what
the sparse gradient saved (a 51 MB table: 16 ms a step instead of well under 1). The array
is therefore updated in place when nothing but the variable and this step's own value
slots hold it; when anything else does (a fetched value, another step, a running kernel's
arguments, a send in flight, a view of it), the update goes to a copy as before, so no
reader ever sees it change. A slot of this step whose consumer has not run yet reads the
updated rows, as if the variable were read at its consumer's turn (dtf's rule for reads).
"""
from __future__ import annotations

import sys

import numpy as np

from dtf.kernels.reference.sparse import scatter_into, scatter_nd_into, sparse_apply_into
from dtf.kernels.registry import register_kernel
from dtf.ops.scatter_ops import SCATTER_ND_OPS, SCATTER_OPS, SPARSE_APPLY_OPS, sparse_arg_names

from .state import UPDATES, _locked

# References to an array held only by its variable, as counted inside _owned_value: the
# variable's slot, the local name and getrefcount's own argument.
_SOLE_OWNER_REFS = 3


def _owned_value(ref, ctx):
    """The variable's array when only the variable (and this step's slots) hold it, else
    a private copy."""
    v = ref.read()
    if v.base is not None or not v.flags.writeable:
        return v.copy()
    own = ctx.values
    in_step = 0 if own is None else sum(1 for x in own if x is v)
    if sys.getrefcount(v) <= _SOLE_OWNER_REFS + in_step:
        return v
    return v.copy()


def _scatter_factory(op_type, scatter=scatter_into):
    def factory(node):
        def compute(ctx, ref, indices, updates):
            with ref.lock:
                var = _owned_value(ref, ctx)
                updates = np.asarray(updates, dtype=var.dtype)
                ref.value = scatter(op_type, var, indices, updates)
                return var

        return compute

    return factory


def _sparse_apply_factory(op_type):
    dense_op = SPARSE_APPLY_OPS[op_type]
    ref_names, arg_names = sparse_arg_names(dense_op)
    n_refs, indices_pos = len(ref_names), arg_names.index("indices")
    update = UPDATES[dense_op]

    def factory(node):
        attrs = node.attrs

        def compute(ctx, *inputs):
            refs, args = inputs[:n_refs], list(inputs[n_refs:])
            with _locked(refs):
                arrays = [_owned_value(r, ctx) for r in refs]
                sparse_apply_into(update, attrs, arrays, args, indices_pos)
                for r, a in zip(refs, arrays):
                    r.value = a
                return arrays[0]

        return compute

    return factory


for _op in SCATTER_OPS:
    register_kernel(_op, "CPU", host=True)(_scatter_factory(_op))
for _op in SCATTER_ND_OPS:
    register_kernel(_op, "CPU", host=True)(_scatter_factory(_op, scatter_nd_into))
for _op in SPARSE_APPLY_OPS:
    register_kernel(_op, "CPU", host=True)(_sparse_apply_factory(_op))
