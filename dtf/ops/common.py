"""Helpers shared by op families: input conversion with TF's dtype rules, and the
common shape-inference functions."""
from __future__ import annotations

import numpy as np

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.tensor_shape import TensorShape, as_shape, broadcast_shapes, unknown_shape


def convert(x, name="x", dtype=None, hint=None):
    return _ops.convert_to_tensor(x, dtype=dtype, name=name, preferred_dtype=hint)


def convert_same(values, op_type, names=("x", "y"), dtype=None):
    """Converts inputs to one dtype like TF's op helper: the first Tensor fixes the type
    and the others convert to it; a Tensor of another dtype is a TypeError."""
    target = dtype
    if target is None:
        for v in values:
            if isinstance(v, _ops.Tensor):
                target = v.dtype
                break
            if _ops._is_convertible_obj(v):
                target = _ops.convert_to_tensor(v).dtype
                break
    out = []
    for v, n in zip(values, names):
        try:
            t = _ops.convert_to_tensor(v, dtype=target, name=n) if target is not None else _ops.convert_to_tensor(v, name=n)
        except ValueError as e:
            if isinstance(v, _ops.Tensor):
                raise TypeError(f"Input '{n}' of '{op_type}' Op has type {v.dtype.name} that does "
                                f"not match type {dtypes.as_dtype(target).name} of argument "
                                f"'{names[0]}'.") from None
            raise TypeError(str(e)) from None
        if target is None:
            target = t.dtype
        out.append(t)
    return out


def same_as_input(inputs, attrs):
    """Output 0 has input 0's dtype and shape (unary elementwise ops)."""
    return [(inputs[0].dtype, inputs[0].shape)]


def broadcast_infer(inputs, attrs):
    """Binary elementwise op with numpy broadcasting; raises ValueError on a sure mismatch."""
    x, y = inputs
    try:
        shape = broadcast_shapes(x.shape, y.shape)
    except ValueError as e:
        raise ValueError(f"{e} for '{attrs.get('_op_name', '')}' with input shapes: "
                         f"{_fmt(x.shape)}, {_fmt(y.shape)}.") from None
    return [(x.dtype, shape)]


def bool_broadcast_infer(inputs, attrs):
    (_, shape), = broadcast_infer(inputs, attrs)
    return [(dtypes.bool, shape)]


def _fmt(shape: TensorShape) -> str:
    if shape.ndims is None:
        return "?"
    return "[" + ",".join("?" if d is None else str(d) for d in shape.as_tuple_or_none()) + "]"


fmt_shape = _fmt


def const_value(t, _depth=0):
    """The numpy value of a tensor known when the graph is built (for static shape
    inference): a Const, or a small int op over such values (``_EVALUATED``). Why the ops:
    TF's shape inference evaluates these constant subgraphs too (EvaluateConstantTensor),
    so ``tf.slice(x, [0, 0], tf.stack([tf.shape(y)[0], -1]))`` has a static shape; without
    it nce_loss's slices were [?, 128], every shape after them partly unknown, and each
    gradient asked its input's shape with a Shape op at run time (13 in a word2vec step)."""
    if not isinstance(t, _ops.Tensor):
        return None
    op = t.op
    if op.type == "Const":
        return op.get_attr("value")
    if op.type not in _EVALUATED or _depth > 8 or len(op.outputs) != 1:
        return None
    values = []
    for i in op.inputs:
        v = const_value(i, _depth + 1)
        if v is None:
            return None
        values.append(v)
    if not values or not all(np.asarray(v).dtype.kind in "iu" for v in values):
        return None
    try:
        out = _EVALUATED[op.type](op._attrs, *[np.asarray(v) for v in values])
    except (IndexError, ValueError, TypeError):  # bad arguments: the op's error comes at run time
        return None
    if out is None:
        return None
    out = np.asarray(out)
    return out if out.dtype.kind in "iu" and out.size <= _EVALUATED_MAX else None


def _strided_slice_1d(attrs, x, begin, end, strides):
    """x[begin:end:strides] of a 1-D x (a shape) with begin/end/shrink masks, as TF; None
    for any other form (more axes, ellipsis, new axes): left to run time."""
    if (x.ndim != 1 or begin.shape != (1,) or end.shape != (1,) or strides.shape != (1,)
            or attrs.get("ellipsis_mask", 0) or attrs.get("new_axis_mask", 0)):
        return None
    b, e, st = int(begin[0]), int(end[0]), int(strides[0])
    if attrs.get("shrink_axis_mask", 0) & 1:
        if not -len(x) <= b < len(x):
            return None
        return x[b]
    if st == 0:
        return None
    b = None if attrs.get("begin_mask", 0) & 1 else b
    e = None if attrs.get("end_mask", 0) & 1 else e
    return x[b:e:st]


# Ops const_value evaluates over int constants (shape arithmetic): numpy here, since the ops
# layer does not reach the kernels; and the largest result it keeps.
_EVALUATED = {
    "StridedSlice": _strided_slice_1d,
    "Pack": lambda attrs, *xs: np.stack(xs, axis=int(attrs.get("axis", 0))),
    "ConcatV2": lambda attrs, *xs: np.concatenate(xs[:-1], axis=int(xs[-1])),
    "Identity": lambda attrs, x: x,
}
_EVALUATED_MAX = 64


def shape_from_tensor(t, rank_hint=None) -> TensorShape:
    """Static shape described by a 1-D shape tensor (Const, Pack of consts, or Shape)."""
    v = const_value(t)
    if v is not None:
        return TensorShape([None if int(d) < 0 else int(d) for d in v.reshape(-1)])
    if isinstance(t, _ops.Tensor) and t.op.type == "Shape":
        return t.op.inputs[0].shape
    if isinstance(t, _ops.Tensor) and t.op.type == "Pack":
        dims = []
        for i in t.op.inputs:
            cv = const_value(i)
            dims.append(None if cv is None or int(cv) < 0 else int(cv))
        return TensorShape(dims)
    if isinstance(t, _ops.Tensor) and t.shape.ndims == 1 and t.shape.as_tuple_or_none()[0] is not None:
        return unknown_shape(t.shape.as_tuple_or_none()[0])
    return unknown_shape(rank_hint)


__all__ = ["convert", "convert_same", "same_as_input", "broadcast_infer", "bool_broadcast_infer",
           "fmt_shape", "const_value", "shape_from_tensor", "as_shape"]
