"""Matrix products: MatMul for two matrices, BatchMatMulV2 (broadcast batch dimensions)
when either operand has rank > 2, and their gradients."""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import RegisterGradient, register_op
from dtf.framework.tensor_shape import TensorShape, broadcast_shapes, unknown_shape
from .common import convert_same, fmt_shape

__all__ = ["matmul"]

# TF's MatMul kernels cover these element types (bfloat16/complex do not exist here).
_MATMUL_TYPES = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64)


def _shape_error(msg, op_type, attrs, a, b):
    return ValueError(f"{msg} for '{attrs.get('_op_name', op_type)}' (op: '{op_type}') with "
                      f"input shapes: {fmt_shape(a.shape)}, {fmt_shape(b.shape)}.")


def _check_rank(t, op_type, attrs, a, b, exact):
    nd = t.shape.ndims
    if nd is None:
        return
    if exact and nd != 2:
        raise _shape_error(f"Shape must be rank 2 but is rank {nd}", op_type, attrs, a, b)
    if not exact and nd < 2:
        raise _shape_error(f"Shape must be at least rank 2 but is rank {nd}", op_type, attrs, a, b)


def _matrix_dims(t, transposed):
    """(rows, cols) of the last two dims of ``t`` as used in the product, or (None, None)."""
    if t.shape.ndims is None:
        return None, None
    rows, cols = t.shape.as_tuple_or_none()[-2:]
    return (cols, rows) if transposed else (rows, cols)


def _product_dims(op_type, attrs, a, b, adj_a, adj_b):
    m, k_a = _matrix_dims(a, adj_a)
    k_b, n = _matrix_dims(b, adj_b)
    if k_a is not None and k_b is not None and k_a != k_b:
        raise _shape_error(f"Dimensions must be equal, but are {k_a} and {k_b}", op_type, attrs, a, b)
    return m, n


@register_op("MatMul")
def _matmul_infer(inputs, attrs):
    a, b = inputs
    for t in (a, b):
        _check_rank(t, "MatMul", attrs, a, b, exact=True)
    m, n = _product_dims("MatMul", attrs, a, b, attrs["transpose_a"], attrs["transpose_b"])
    return [(a.dtype, TensorShape([m, n]))]


@register_op("BatchMatMulV2")
def _batch_matmul_infer(inputs, attrs):
    a, b = inputs
    for t in (a, b):
        _check_rank(t, "BatchMatMulV2", attrs, a, b, exact=False)
    m, n = _product_dims("BatchMatMulV2", attrs, a, b, attrs["adj_x"], attrs["adj_y"])
    if a.shape.ndims is None or b.shape.ndims is None:
        return [(a.dtype, unknown_shape())]
    try:
        batch = broadcast_shapes(TensorShape(a.shape.as_tuple_or_none()[:-2]),
                                 TensorShape(b.shape.as_tuple_or_none()[:-2]))
    except ValueError as e:
        raise _shape_error(str(e).split(" for shapes")[0], "BatchMatMulV2", attrs, a, b) from None
    return [(a.dtype, TensorShape(list(batch.as_tuple_or_none()) + [m, n]))]


def _check_dtype(t, arg):
    if t.dtype not in _MATMUL_TYPES:
        allowed = ", ".join(d.name for d in _MATMUL_TYPES)
        raise TypeError(f"Value passed to parameter '{arg}' has DataType {t.dtype.name} not in "
                        f"list of allowed values: {allowed}")


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, name=None):
    """a @ b. Operands of rank > 2 are stacks of matrices with broadcast batch dimensions;
    adjoint equals transpose for the real dtypes supported here."""
    if transpose_a and adjoint_a:
        raise ValueError("Only one of transpose_a and adjoint_a can be True.")
    if transpose_b and adjoint_b:
        raise ValueError("Only one of transpose_b and adjoint_b can be True.")
    adj_a, adj_b = bool(transpose_a or adjoint_a), bool(transpose_b or adjoint_b)
    with _ops.name_scope(name, "MatMul", [a, b]) as scope:
        a, b = convert_same([a, b], "MatMul", names=("a", "b"))
        _check_dtype(a, "a")
        rank_a, rank_b = a.shape.ndims, b.shape.ndims
        if rank_a is None or rank_b is None or rank_a > 2 or rank_b > 2:
            return _ops.make_tensor("BatchMatMulV2", [a, b],
                                    {"T": a.dtype, "adj_x": adj_a, "adj_y": adj_b}, name=scope)
        return _ops.make_tensor("MatMul", [a, b],
                                {"T": a.dtype, "transpose_a": adj_a, "transpose_b": adj_b}, name=scope)


# -- gradients ------------------------------------------------------------------------
# For each (transpose_a, transpose_b): the products giving grad_a and grad_b, each as
# (left, right, transpose left, transpose right) over "g" (incoming gradient), "a", "b".
_GRAD_RULES = {
    (False, False): (("g", "b", False, True), ("a", "g", True, False)),
    (False, True): (("g", "b", False, False), ("g", "a", True, False)),
    (True, False): (("b", "g", False, True), ("a", "g", False, False)),
    (True, True): (("b", "g", True, True), ("g", "a", True, True)),
}


def _matmul_grads(a, b, grad, adj_a, adj_b):
    terms = {"g": grad, "a": a, "b": b}
    return [matmul(terms[x], terms[y], transpose_a=tx, transpose_b=ty)
            for x, y, tx, ty in _GRAD_RULES[(adj_a, adj_b)]]


@RegisterGradient("MatMul")
def _matmul_grad(op, grad):
    a, b = op.inputs
    return _matmul_grads(a, b, grad, op.get_attr("transpose_a"), op.get_attr("transpose_b"))


def _sum_to_shape_of(g, t):
    """Sums ``g`` over the batch dimensions that ``t`` was broadcast along."""
    from . import array_ops, reduction_ops

    if t.shape.is_fully_defined() and g.shape.is_fully_defined() and t.shape == g.shape:
        return g
    st = array_ops.shape(t)
    axes, _ = array_ops.broadcast_gradient_args(st, array_ops.shape(g))
    return array_ops.reshape(reduction_ops.reduce_sum(g, axes), st)


@RegisterGradient("BatchMatMulV2")
def _batch_matmul_grad(op, grad):
    a, b = op.inputs
    ga, gb = _matmul_grads(a, b, grad, op.get_attr("adj_x"), op.get_attr("adj_y"))
    return [_sum_to_shape_of(ga, a), _sum_to_shape_of(gb, b)]
