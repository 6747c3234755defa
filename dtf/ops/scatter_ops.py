"""Row updates of variables: tf.scatter_update/add/sub/mul/div/min/max, and the sparse
forms of the training updates (TF's SparseApply* ops), which touch only the rows a
gradient's IndexedSlices name.

Like the Apply ops these take the variable as a ref input, so the graph colocates them with
it: on a parameter server only the rows and their indices travel, never the table.
Kernels live in dtf/kernels/cpu/scatter.py, references in dtf/kernels/reference/sparse.py.
"""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, register_op
from .common import convert, fmt_shape
from .state_ops import APPLY_ARG_DTYPES, APPLY_OPS, _as_ref

__all__ = ["scatter_update", "scatter_add", "scatter_sub", "scatter_mul", "scatter_div",
           "scatter_min", "scatter_max", "scatter_nd_update", "scatter_nd_add", "scatter_nd_sub"]

# op type -> (python name, default use_locking): TF's defaults (only update locks).
SCATTER_OPS = {
    "ScatterUpdate": ("scatter_update", True), "ScatterAdd": ("scatter_add", False),
    "ScatterSub": ("scatter_sub", False), "ScatterMul": ("scatter_mul", False),
    "ScatterDiv": ("scatter_div", False), "ScatterMin": ("scatter_min", False),
    "ScatterMax": ("scatter_max", False),
}
SCATTER_ND_OPS = {"ScatterNdUpdate": ("scatter_nd_update", True),
                  "ScatterNdAdd": ("scatter_nd_add", False),
                  "ScatterNdSub": ("scatter_nd_sub", False)}


def _scatter_infer(inputs, attrs):
    ref, indices, updates = inputs
    if ref.shape.ndims is not None and indices.shape.ndims is not None \
            and updates.shape.ndims not in (None, 0):
        want = indices.shape.concatenate(ref.shape[1:])
        if not want.is_compatible_with(updates.shape):
            raise ValueError(f"Shapes must be equal rank, or updates.shape = indices.shape + "
                             f"params.shape[1:] or updates.shape = [], got updates.shape "
                             f"{fmt_shape(updates.shape)}, indices.shape "
                             f"{fmt_shape(indices.shape)}, params.shape {fmt_shape(ref.shape)} "
                             f"for '{attrs.get('_op_name', '')}'")
    return [(ref.dtype, ref.shape)]


def _make_scatter(op_type, default_locking):
    def fn(ref, indices, updates, use_locking=default_locking, name=None):
        ref = _as_ref(ref, op_type)
        with _ops.name_scope(name, op_type, [ref, indices, updates]) as scope:
            indices = convert(indices, "indices", hint=dtypes.int32)
            if indices.dtype not in (dtypes.int32, dtypes.int64):
                raise TypeError(f"Value passed to parameter 'indices' has DataType "
                                f"{indices.dtype.name} not in list of allowed values: int32, int64")
            updates = convert(updates, "updates", dtype=ref.dtype)
            return _ops.make_tensor(op_type, [ref, indices, updates],
                                    {"T": ref.dtype, "Tindices": indices.dtype,
                                     "use_locking": bool(use_locking)}, name=scope)

    fn.__name__ = {**SCATTER_OPS, **SCATTER_ND_OPS}[op_type][0]
    fn.__doc__ = (f"The {op_type} op: ref[indices, ...] takes ``updates`` row by row "
                  "(combined as the op's name says); returns the updated variable.")
    return fn


_g = globals()
for _op, (_fn, _locking) in SCATTER_OPS.items():
    register_op(_op, stateful=True, ref_inputs=(0,))(_scatter_infer)
    _g[_fn] = _make_scatter(_op, _locking)
    NotDifferentiable(_op)


# -- by n-dimensional index ----------------------------------------------------------------


def _scatter_nd_infer(inputs, attrs):
    ref, indices, updates = inputs
    dims, idims = ref.shape.as_tuple_or_none(), indices.shape.as_tuple_or_none()
    if dims is not None and idims is not None and idims[-1] is not None \
            and updates.shape.ndims is not None:
        want = indices.shape[:-1].concatenate(ref.shape[idims[-1]:])
        if idims[-1] > len(dims) or not want.is_compatible_with(updates.shape):
            raise ValueError(f"Must have updates.shape = indices.shape[:batch_dim] + "
                             f"params_shape[slice_dim:], got updates.shape: "
                             f"{fmt_shape(updates.shape)}, indices.shape: "
                             f"{fmt_shape(indices.shape)}, params_shape: {fmt_shape(ref.shape)} "
                             f"for '{attrs.get('_op_name', '')}'")
    return [(ref.dtype, ref.shape)]


for _op, (_fn, _locking) in SCATTER_ND_OPS.items():
    register_op(_op, stateful=True, ref_inputs=(0,))(_scatter_nd_infer)
    _g[_fn] = _make_scatter(_op, _locking)
    _g[_fn].__doc__ = (f"The {_op} op: ref[indices[i]] (an index into the leading dims) "
                       "takes ``updates[i]``; returns the updated variable.")
    NotDifferentiable(_op)


# -- sparse training updates -------------------------------------------------------------
def sparse_arg_names(dense_op):
    """A SparseApply op's inputs: the dense op's, with ``indices`` right after the gradient
    (TF's signatures)."""
    _, refs, args = APPLY_OPS[dense_op]
    grad = "delta" if "delta" in args else "grad"
    at = args.index(grad) + 1
    return refs, args[:at] + ("indices",) + args[at:]


# SparseApply<X> for every Apply<X> but gradient descent (TF scatter-subtracts instead).
SPARSE_APPLY_OPS = {"Sparse" + op: op for op in APPLY_OPS if op != "ApplyGradientDescent"}


def _make_sparse_apply_infer(op_type, ref_names, arg_names):
    grad_pos = len(ref_names) + arg_names.index("indices") - 1

    def infer(inputs, attrs):
        var, grad = inputs[0], inputs[grad_pos]
        for t in inputs[1:len(ref_names)]:
            if not var.shape.is_compatible_with(t.shape):
                raise ValueError(f"{op_type}: var and {t.op.name} do not have the same shape: "
                                 f"{fmt_shape(var.shape)} vs {fmt_shape(t.shape)}")
        if not var.shape[1:].is_compatible_with(grad.shape[1:]):
            raise ValueError(f"{op_type}: var and grad must match in dimension 1 and up: "
                             f"{fmt_shape(var.shape)} vs {fmt_shape(grad.shape)}")
        return [(var.dtype, var.shape)]

    return infer


for _op, _dense in SPARSE_APPLY_OPS.items():
    _refs, _args = sparse_arg_names(_dense)
    register_op(_op, stateful=True, ref_inputs=tuple(range(len(_refs))))(
        _make_sparse_apply_infer(_op, _refs, _args))
    NotDifferentiable(_op)


def sparse_apply(dense_op, refs, args, use_locking=False, name=None, **attrs):
    """The SparseApply form of ``dense_op``: ``args`` as the dense op takes them, with an
    IndexedSlices gradient whose values and indices become the sparse op's inputs."""
    op_type = "Sparse" + dense_op
    if op_type not in SPARSE_APPLY_OPS:
        raise NotImplementedError(f"{dense_op} has no sparse form; densify the gradient "
                                  "(tf.convert_to_tensor) or scatter the update")
    _, _, dense_args = APPLY_OPS[dense_op]
    refs = [_as_ref(r, op_type) for r in refs]
    dtype = refs[0].dtype
    grad_name = "delta" if "delta" in dense_args else "grad"
    inputs = []
    for value, arg in zip(args, dense_args):
        if arg == grad_name:
            indices = convert(value.indices, "indices")
            inputs += [convert(value.values, arg, dtype=dtype), indices]
        else:
            inputs.append(convert(value, arg, dtype=APPLY_ARG_DTYPES.get((dense_op, arg), dtype)))
    return _ops.make_tensor(op_type, refs + inputs,
                            {"T": dtype, "Tindices": indices.dtype,
                             "use_locking": bool(use_locking), **attrs},
                            name=name or op_type)
