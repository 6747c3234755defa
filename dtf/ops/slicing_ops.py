"""Slicing and gathering: Slice, StridedSlice (and ``tensor[...]``), GatherV2, OneHot,
UnsortedSegmentSum, Where and boolean_mask. Part of ``array_ops``, which re-exports it."""
from __future__ import annotations

import builtins
import sys

import numpy as np

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import register_op
from dtf.framework.tensor_shape import TensorShape, unknown_shape
from .array_ops import (_apply, _const_vector, _norm_axis, _scalar_value, _shape_error, _who, concat,
                        ones_like, reshape, shape, squeeze, stack)
from .common import convert, shape_from_tensor


# -- slicing -----------------------------------------------------------------------------
@register_op("Slice")
def _slice_infer(inputs, attrs):
    x, begin, size_ = inputs
    bv, sv, nd = _const_vector(begin), _const_vector(size_), x.shape.ndims
    n = next((len(v) for v in (bv, sv) if v is not None), nd)
    if n is None:
        return [(x.dtype, unknown_shape())]
    if nd is not None and n != nd:
        raise _shape_error(_who("Slice", attrs), inputs, f"Length of begin and size must equal the rank {nd}, got {n}")
    bv, sv = bv or [None] * n, sv or [None] * n
    dims = x.shape.as_tuple_or_none() or (None,) * n
    out = []
    for d, b, s in zip(dims, bv, sv):
        if s == -1:
            s = None if d is None or b is None else d - b
        if None not in (d, b, s) and (b < 0 or s < 0 or b + s > d):
            raise _shape_error(_who("Slice", attrs), inputs, f"Expected begin {b} and size {s} within [0, {d}]")
        out.append(s)
    return [(x.dtype, TensorShape(out))]


def slice(input_, begin, size, name=None):  # noqa: A001 - TF's name
    """Extracts ``size`` elements from ``begin`` in each dimension (size -1: to the end)."""
    return _apply("Slice", name, [(input_, "input", None), (begin, "begin", dtypes.int32),
                                  (size, "size", dtypes.int32)],
                  lambda x, b, s: {"T": x.dtype, "Index": b.dtype}).outputs[0]


_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


def _slice_len(dim, b, e, s, begin_masked, end_masked):
    """Static length of one strided dimension, None when any needed value is unknown."""
    if s is None or dim is None or (b is None and not begin_masked) or (e is None and not end_masked):
        return None
    if s == 0:
        raise ValueError("strides must be non-zero")
    sl = builtins.slice(None if begin_masked else b, None if end_masked else e, s)
    return len(builtins.range(*sl.indices(dim)))


def _strided_shape(inputs, attrs):
    x, begin, end, strides = inputs[:4]
    vals = [_const_vector(t) for t in (begin, end, strides)]
    n = next((len(v) for v in vals if v is not None), None)
    if n is None or x.shape.ndims is None:
        return unknown_shape()
    bv, ev, sv = (v or [None] * n for v in vals)
    bit = lambda mask, i: (attrs.get(mask, 0) >> i) & 1  # noqa: E731
    dims = x.shape.as_tuple_or_none()
    consuming = sum(1 for i in builtins.range(n) if not bit("ellipsis_mask", i) and not bit("new_axis_mask", i))
    out, d = [], 0
    for i in builtins.range(n):
        if bit("ellipsis_mask", i):
            k = max(len(dims) - consuming, 0)
            out.extend(dims[d:d + k])
            d += k
        elif bit("new_axis_mask", i):
            out.append(1)
        elif d >= len(dims):
            raise _shape_error(_who("StridedSlice", attrs), inputs, f"Index out of range using input dim {d}")
        elif not bit("shrink_axis_mask", i):
            out.append(_slice_len(dims[d], bv[i], ev[i], sv[i], bit("begin_mask", i), bit("end_mask", i)))
            d += 1
        else:
            if None not in (dims[d], bv[i]) and not -dims[d] <= bv[i] < dims[d]:
                raise _shape_error(_who("StridedSlice", attrs), inputs, f"slice index {bv[i]} of dimension {d} out of bounds")
            d += 1
    return TensorShape(out + list(dims[d:]))


register_op("StridedSlice")(lambda inputs, attrs: [(inputs[0].dtype, _strided_shape(inputs, attrs))])
register_op("StridedSliceGrad")(lambda inputs, attrs: [(inputs[4].dtype, shape_from_tensor(inputs[0]))])


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, var=None, name=None):
    """Numpy-style basic slicing described by begin/end/strides and five bit masks."""
    if strides is None:
        strides = ones_like(begin)
    masks = dict(zip(_MASKS, (begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask)))
    return _apply("StridedSlice", name, [(input_, "input", None), (begin, "begin", dtypes.int32),
                                         (end, "end", dtypes.int32), (strides, "strides", dtypes.int32)],
                  lambda x, b, e, s: {"T": x.dtype, "Index": b.dtype, **masks}).outputs[0]


def strided_slice_grad(shape, begin, end, strides, dy, name=None, **masks):  # noqa: A002
    """The gradient of StridedSlice: ``dy`` scattered into zeros of ``shape``."""
    return _ops.make_tensor("StridedSliceGrad", [shape, begin, end, strides, dy],
                            {"T": dy.dtype, "Index": begin.dtype, **masks}, name=name or "StridedSliceGrad")


_SLICE_TYPE_ERROR = ("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and scalar "
                     "tf.int32/tf.int64 tensors are valid indices")


def _check_index(idx):
    if isinstance(idx, (int, np.integer)) and not isinstance(idx, builtins.bool):
        return
    if isinstance(idx, _ops.Tensor) and idx.dtype in (dtypes.int32, dtypes.int64) and idx.shape.ndims in (0, None):
        return
    raise TypeError(f"{_SLICE_TYPE_ERROR}, got {idx!r}")


def _slice_spec(key):
    """begin/end/strides lists and the five masks for a Python subscript."""
    begin, end, strides, masks = [], [], [], dict.fromkeys(_MASKS, 0)
    for i, s in enumerate(key):
        if isinstance(s, builtins.slice):
            for bound, out, mask in ((s.start, begin, "begin_mask"), (s.stop, end, "end_mask")):
                if bound is None or (isinstance(bound, int) and bound == sys.maxsize):
                    out.append(0)
                    masks[mask] |= 1 << i
                else:
                    _check_index(bound)
                    out.append(bound)
            strides.append(1 if s.step is None else s.step)
        elif s is Ellipsis or s is None:
            begin.append(0), end.append(0), strides.append(1)
            masks["ellipsis_mask" if s is Ellipsis else "new_axis_mask"] |= 1 << i
        else:
            _check_index(s)
            begin.append(s), end.append(s + 1), strides.append(1)
            masks["shrink_axis_mask"] |= 1 << i
    return begin, end, strides, masks


def _slice_helper(tensor, slice_spec, var=None):
    """``tensor[slice_spec]``: ints, slices with steps, Ellipsis, tf.newaxis and int tensors
    become one StridedSlice; a bool tensor or array becomes ``boolean_mask``."""
    if isinstance(slice_spec, builtins.bool) or (isinstance(slice_spec, _ops.Tensor) and slice_spec.dtype.is_bool) \
            or (isinstance(slice_spec, np.ndarray) and slice_spec.dtype == np.bool_):
        return boolean_mask(tensor, slice_spec)
    if not isinstance(slice_spec, (list, tuple)):
        slice_spec = [slice_spec]
    begin, end, strides, masks = _slice_spec(slice_spec)
    with _ops.name_scope(None, "strided_slice", [tensor] + begin + end + strides) as name:
        if begin:
            packed = [stack(v) for v in (begin, end, strides)]
            if any(p.dtype == dtypes.int64 for p in packed):
                from .math_ops import cast

                packed = [cast(p, dtypes.int64) for p in packed]
        else:
            from .constant_op import constant

            packed = [constant([], dtype=dtypes.int32)] * 3
        return strided_slice(tensor, *packed, name=name, **masks)


# -- gathering -----------------------------------------------------------------------------
@register_op("GatherV2")
def _gather_infer(inputs, attrs):
    params, indices, axis = inputs
    a, pd, idims = _scalar_value(axis), params.shape.as_tuple_or_none(), indices.shape.as_tuple_or_none()
    if pd is None or idims is None:
        return [(params.dtype, unknown_shape())]
    if a is None:
        return [(params.dtype, unknown_shape(len(pd) + len(idims) - 1))]
    a = _norm_axis(a, len(pd), _who("GatherV2", attrs), inputs)
    return [(params.dtype, TensorShape(pd[:a] + idims + pd[a + 1:]))]


def gather(params, indices, validate_indices=None, name=None, axis=None, batch_dims=0):
    """Gathers slices of ``params`` along ``axis`` at ``indices``; an index out of range
    fails at run time with InvalidArgumentError. The first ``batch_dims`` dimensions of
    both are batch dimensions, each batch entry gathering from its own slice."""
    if batch_dims != 0:
        from .scatter_nd_ops import batch_gather
        return batch_gather(params, indices, axis, batch_dims, name)
    axis = 0 if axis is None else axis
    return _apply("GatherV2", name, [(params, "params", None), (indices, "indices", dtypes.int32),
                                     (axis, "axis", dtypes.int32)],
                  lambda p, i, a: {"Tparams": p.dtype, "Tindices": i.dtype, "Taxis": a.dtype,
                                   "batch_dims": 0}).outputs[0]


@register_op("UnsortedSegmentSum")
def _unsorted_segment_sum_infer(inputs, attrs):
    data, ids, num = inputs
    dd, nd = data.shape.as_tuple_or_none(), ids.shape.ndims
    if dd is None or nd is None:
        return [(data.dtype, unknown_shape())]
    return [(data.dtype, TensorShape((_scalar_value(num),) + dd[nd:]))]


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """Sums the rows of ``data`` into ``num_segments`` buckets chosen by ``segment_ids``."""
    return _apply("UnsortedSegmentSum", name, [(data, "data", None), (segment_ids, "segment_ids", dtypes.int32),
                                               (num_segments, "num_segments", dtypes.int32)],
                  lambda d, i, n: {"T": d.dtype, "Tindices": i.dtype, "Tnumsegments": n.dtype}).outputs[0]


@register_op("OneHot")
def _one_hot_infer(inputs, attrs):
    indices, depth, on_value, _ = inputs
    axis, dims = attrs["axis"], indices.shape.as_tuple_or_none()
    if dims is None:
        return [(on_value.dtype, unknown_shape())]
    if axis != -1 and not 0 <= axis <= len(dims):
        raise _shape_error(_who("OneHot", attrs), inputs, f"Expected axis to be -1 or between [0, {len(dims) + 1}), got {axis}")
    dims = list(dims)
    dims.insert(len(dims) if axis == -1 else axis, _scalar_value(depth))
    return [(on_value.dtype, TensorShape(dims))]


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """One-hot rows of length ``depth`` (``on_value`` where index == position); the dtype
    comes from on/off values, else ``dtype``, else float32."""
    from .constant_op import constant

    with _ops.name_scope(name, "one_hot", [indices, depth, on_value, off_value]) as scope:
        given = [v for v in (on_value, off_value) if v is not None]
        given_dtypes = [convert(v).dtype for v in given]
        if dtype is not None and any(d != dtypes.as_dtype(dtype) for d in given_dtypes):
            raise TypeError(f"dtype {given_dtypes[0].name} of on_value does not match dtype parameter {dtype}")
        dtype = dtypes.as_dtype(dtype) if dtype is not None else (given_dtypes[0] if given else dtypes.float32)
        on = convert(1 if on_value is None else on_value, "on_value", dtype=dtype)
        off = convert(0 if off_value is None else off_value, "off_value", dtype=dtype)
        indices = convert(indices, "indices", hint=dtypes.int64)
        depth = convert(depth, "depth", dtype=dtypes.int32)
        return _ops.make_tensor("OneHot", [indices, depth, on, off],
                                {"T": dtype, "TI": indices.dtype, "axis": -1 if axis is None else axis},
                                name=scope)


@register_op("Where")
def _where_infer(inputs, attrs):
    return [(dtypes.int64, TensorShape([None, inputs[0].shape.ndims]))]


def _where_indices(condition, name):
    """int64 coordinates of the true elements of ``condition``, shape [num_true, rank]."""
    return _apply("Where", name, [(condition, "input", None)], lambda c: {"T": c.dtype}).outputs[0]


def boolean_mask(tensor, mask, name="boolean_mask", axis=None):
    """The entries of ``tensor`` where ``mask`` (covering dims axis..axis+rank(mask)) is true."""
    from .reduction_ops import reduce_prod

    with _ops.name_scope(name, values=[tensor, mask]):
        tensor = convert(tensor, "tensor")
        mask = convert(mask, "mask", dtype=dtypes.bool)
        nm = mask.shape.ndims
        if nm == 0:
            raise ValueError("mask cannot be scalar.")
        if nm is None:
            raise ValueError("Number of mask dimensions must be specified, even if some dimensions are "
                             "None.  E.g. shape=[None] is ok, but shape=None is not.")
        axis = 0 if axis is None else axis
        ts = tensor.shape
        ts[axis:axis + nm].assert_is_compatible_with(mask.shape)
        full = shape(tensor)
        leading = reduce_prod(full[axis:axis + nm], [0])
        tensor = reshape(tensor, concat([full[:axis], [leading], full[axis + nm:]], 0))
        if ts.ndims is not None:
            tensor.set_shape(ts[:axis].concatenate([ts[axis:axis + nm].num_elements()])
                             .concatenate(ts[axis + nm:]))
        indices = squeeze(_where_indices(reshape(mask, [-1]), None), axis=[1])
        return gather(tensor, indices, axis=axis)
