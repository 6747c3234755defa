"""dtf's TensorArray ops as TF's dense tensor ops, for export.

dtf's TensorArray is a dense buffer whose row i is element i (dtf/ops/tensor_array_ops.py),
with value semantics: each write returns a new buffer. TF's own TensorArray ops keep a
resource and TF's TensorList ops a variant, neither of which a dense buffer maps onto
without retyping every loop variable. The same dense semantics are plain TF ops instead,
so exported graphs (dynamic_rnn, map_fn, scan, foldl and their gradients) need no variant
tensors and re-import into dtf as ordinary ops:

- New: zeros of ``[size] + element_shape`` when that shape is known, else ``[size]`` (a
  buffer whose rows are sized by the first write, as dtf's kernel does).
- Write/Scatter: TensorScatterUpdate of the buffer after sizing its rows: a buffer holding
  ``size`` values (not sized yet, or rows of one value) is reshaped to ``[size, 1, ...]``
  and broadcast to the written rows' shape.
- A ``dynamic_size`` array is padded with zero rows up to the highest index written.
- Read: GatherV2 on axis 0. The gradient ops: the gradient cut to the buffer's rows times a
  mask of the rows not written (WriteGrad, ScatterGrad), or ScatterNd of it (ReadGrad).
  (A gradient reaching a buffer not sized yet flows only into TensorArrayNew, which has
  none, so its rows' shape does not matter there.)

The price is a copy of the buffer per write (TF's TensorList sets an element in place).
"""
from __future__ import annotations

from dtf.framework import dtypes as _dtypes

from .control_flow_export import _Builder, _data_and_controls

_INT32 = _dtypes.int32
_BOOL = _dtypes.bool


def _out(d, op_type, inputs, attrs, out_dtypes, controls):
    """The exported node that keeps the original node's name (and so its outputs)."""
    return {"name": d["name"], "op": op_type, "input": list(inputs) + controls,
            "device": d.get("device", ""), "attr": attrs,
            "output_dtypes": [_dtypes.as_dtype(t).name for t in out_dtypes]}


def _builder(d, ctx):
    return _Builder(f"{d['name']}/export", d.get("device", ""), ctx)


def _int_op(b, op_type, name, inputs, attrs=None):
    return b.op(op_type, name, inputs, dict({"T": _INT32}, **(attrs or {})), [_INT32])[0]


def _rows(b, buf, n_vec, row_shape, dt, grow_to=None):
    """``buf`` with rows of ``row_shape``: sized from ``[n]`` (or rows of one value) by a
    reshape to ``[n, 1, ...]`` and a broadcast."""
    axis = b.const("axis", 0, _INT32)
    n = _int_op(b, "Reshape", "count", [n_vec, b.const("scalar", [], _INT32)], {"Tshape": _INT32})
    size = _int_op(b, "Size", "buffer_size", [buf], {"T": dt, "out_type": _INT32})
    per_row = _int_op(b, "Prod", "row_size", [row_shape, axis], {"Tidx": _INT32, "keep_dims": False})
    rows_sized = b.op("Equal", "rows_sized", [size, _int_op(b, "Mul", "full_size", [n, per_row])],
                      {"T": _INT32}, [_BOOL])[0]
    ones = _int_op(b, "OnesLike", "ones", [row_shape])
    # dims = row_shape if rows_sized else ones, as arithmetic (TF's Select takes a scalar
    # condition over vectors; dtf's wants equal shapes)
    sized = b.op("Cast", "sized_flag", [rows_sized], {"SrcT": _BOOL, "DstT": _INT32, "Truncate": False},
                 [_INT32])[0]
    extra = _int_op(b, "Mul", "extra", [sized, _int_op(b, "Sub", "row_extra", [row_shape, ones])])
    dims = _int_op(b, "Add", "dims", [ones, extra])
    as_rows = b.op("Reshape", "as_rows", [buf, _int_op(b, "ConcatV2", "as_rows_shape", [n_vec, dims, axis],
                                                     {"N": 2, "Tidx": _INT32})],
                   {"T": dt, "Tshape": _INT32}, [dt])[0]
    full = _int_op(b, "ConcatV2", "full_shape", [n_vec, row_shape, axis], {"N": 2, "Tidx": _INT32})
    sized = b.op("BroadcastTo", "sized", [as_rows, full], {"T": dt, "Tidx": _INT32}, [dt])[0]
    if grow_to is None:
        return sized
    # a dynamic_size array grows to hold the highest index written, with rows of zeros
    grow = _int_op(b, "Sub", "grow", [_int_op(b, "Maximum", "new_size", [n, grow_to]), n])
    first = _int_op(b, "Reshape", "first_padding", [
        _int_op(b, "ConcatV2", "first_pair", [b.const("no_padding", [0], _INT32),
                                              _int_op(b, "Reshape", "grow_vec", [grow, b.const("grow_dim", [1], _INT32)],
                                                      {"Tshape": _INT32}), axis], {"N": 2, "Tidx": _INT32}),
        b.const("pair_shape", [1, 2], _INT32)], {"Tshape": _INT32})
    rank = _int_op(b, "Reshape", "row_rank", [_int_op(b, "Size", "row_rank_size", [row_shape],
                                                      {"out_type": _INT32}), b.const("rank_dim", [1], _INT32)],
                   {"Tshape": _INT32})
    rest = _int_op(b, "Fill", "rest_padding", [
        _int_op(b, "ConcatV2", "rest_shape", [rank, b.const("two", [2], _INT32), axis], {"N": 2, "Tidx": _INT32}),
        b.const("zero_padding", 0, _INT32)], {"index_type": _INT32})
    paddings = _int_op(b, "ConcatV2", "paddings", [first, rest, axis], {"N": 2, "Tidx": _INT32})
    return b.op("Pad", "grown", [sized, paddings], {"T": dt, "Tpaddings": _INT32}, [dt])[0]


def _first_dim(b, shape, name):
    return _int_op(b, "Slice", name, [shape, b.const(f"{name}_begin", [0], _INT32),
                                      b.const(f"{name}_size", [1], _INT32)], {"Index": _INT32})


def export_new(d, ctx):
    (size,), controls = _data_and_controls(d)
    dt = _dtypes.as_dtype(d["attr"]["dtype"])
    shape = d["attr"].get("element_shape")
    known = shape is not None and all(s is not None for s in shape)
    b = _builder(d, ctx)
    n_vec = _int_op(b, "Reshape", "n", [size, b.const("one_dim", [1], _INT32)], {"Tshape": _INT32})
    dims = n_vec
    if known and shape:
        dims = _int_op(b, "ConcatV2", "shape", [n_vec, b.const("element_shape", list(shape), _INT32),
                                               b.const("axis", 0, _INT32)], {"N": 2, "Tidx": _INT32})
    zero = b.const("zero", 0, dt)
    return b.nodes + [_out(d, "Fill", [dims, zero], {"T": dt, "index_type": _INT32}, [dt], controls)]


def export_write(d, ctx):
    (buf, index, value), controls = _data_and_controls(d)
    dt = _dtypes.as_dtype(d["output_dtypes"][0])
    b = _builder(d, ctx)
    n_vec = _first_dim(b, _int_op(b, "Shape", "buffer_shape", [buf], {"T": dt, "out_type": _INT32}), "n")
    row_shape = _int_op(b, "Shape", "row_shape", [value], {"T": dt, "out_type": _INT32})
    grow_to = None
    if d["attr"].get("dynamic_size"):
        grow_to = _int_op(b, "Add", "needed", [index, b.const("one", 1, _INT32)])
    sized = _rows(b, buf, n_vec, row_shape, dt, grow_to)
    where = _int_op(b, "Reshape", "where", [index, b.const("where_shape", [1, 1], _INT32)], {"Tshape": _INT32})
    update = b.op("ExpandDims", "update", [value, b.const("update_axis", 0, _INT32)],
                  {"T": dt, "Tdim": _INT32}, [dt])[0]
    return b.nodes + [_out(d, "TensorScatterUpdate", [sized, where, update],
                           {"T": dt, "Tindices": _INT32}, [dt], controls)]


def export_scatter(d, ctx):
    (buf, indices, value), controls = _data_and_controls(d)
    dt = _dtypes.as_dtype(d["output_dtypes"][0])
    b = _builder(d, ctx)
    n_vec = _first_dim(b, _int_op(b, "Shape", "buffer_shape", [buf], {"T": dt, "out_type": _INT32}), "n")
    value_shape = _int_op(b, "Shape", "value_shape", [value], {"T": dt, "out_type": _INT32})
    row_shape = _int_op(b, "Slice", "row_shape", [value_shape, b.const("rows_begin", [1], _INT32),
                                                 b.const("rows_size", [-1], _INT32)], {"Index": _INT32})
    grow_to = None
    if d["attr"].get("dynamic_size"):
        flat = _int_op(b, "Reshape", "flat_indices", [indices, b.const("flat", [-1], _INT32)],
                       {"Tshape": _INT32})
        top = _int_op(b, "Max", "top", [flat, b.const("top_axis", 0, _INT32)],
                      {"Tidx": _INT32, "keep_dims": False})
        grow_to = _int_op(b, "Add", "needed", [top, b.const("one", 1, _INT32)])
    sized = _rows(b, buf, n_vec, row_shape, dt, grow_to)
    where = _int_op(b, "Reshape", "where", [indices, b.const("where_shape", [-1, 1], _INT32)],
                    {"Tshape": _INT32})
    return b.nodes + [_out(d, "TensorScatterUpdate", [sized, where, value],
                           {"T": dt, "Tindices": _INT32}, [dt], controls)]


def export_read(d, ctx):
    (buf, index), controls = _data_and_controls(d)
    dt = _dtypes.as_dtype(d["output_dtypes"][0])
    b = _builder(d, ctx)
    axis = b.const("axis", 0, _INT32)
    return b.nodes + [_out(d, "GatherV2", [buf, index, axis], {"Tparams": dt, "Tindices": _INT32,
                                                               "Taxis": _INT32, "batch_dims": 0},
                           [dt], controls)]


def _zeroed_rows(b, grad, buf, rows, ctx):
    """``grad`` cut to the rows of ``buf`` (the buffer before the write, smaller when the
    array grew), with the rows written (``rows``, 1-D) zeroed; rows past its end are not
    in it."""
    dt = _dtype(ctx, grad)
    axis = b.const("axis_rows", 0, _INT32)
    n_vec = _first_dim(b, _int_op(b, "Shape", "buffer_shape", [buf], {"T": _dtype(ctx, buf),
                                                                      "out_type": _INT32}), "n")
    grad_shape = _int_op(b, "Shape", "grad_shape", [grad], {"T": dt, "out_type": _INT32})
    tail = _int_op(b, "Slice", "grad_rows", [grad_shape, b.const("tail_begin", [1], _INT32),
                                            b.const("tail_size", [-1], _INT32)], {"Index": _INT32})
    minus = _int_op(b, "Fill", "whole", [_int_op(b, "Reshape", "tail_rank", [
        _int_op(b, "Size", "tail_size_of", [tail], {"out_type": _INT32}), b.const("rank_dim", [1], _INT32)],
        {"Tshape": _INT32}), b.const("all", -1, _INT32)], {"index_type": _INT32})
    cut = b.op("Slice", "cut", [grad, _int_op(b, "ZerosLike", "begin", [grad_shape]),
                                _int_op(b, "ConcatV2", "cut_size", [n_vec, minus, axis], {"N": 2, "Tidx": _INT32})],
               {"T": dt, "Index": _INT32}, [dt])[0]
    n = _int_op(b, "Reshape", "count", [n_vec, b.const("scalar", [], _INT32)], {"Tshape": _INT32})
    positions = b.op("Range", "positions", [b.const("start", 0, _INT32), n, b.const("delta", 1, _INT32)],
                     {"Tidx": _INT32}, [_INT32])[0]
    hit = b.op("Equal", "hit", [_int_op(b, "ExpandDims", "positions_col", [positions, b.const("col", 1, _INT32)],
                                        {"Tdim": _INT32}),
                                _int_op(b, "ExpandDims", "rows_row", [rows, b.const("row", 0, _INT32)],
                                        {"Tdim": _INT32})], {"T": _INT32}, [_BOOL])[0]
    written = b.op("Any", "written", [hit, b.const("hit_axis", 1, _INT32)], {"Tidx": _INT32, "keep_dims": False},
                   [_BOOL])[0]
    keep = b.op("Cast", "keep", [b.op("LogicalNot", "kept", [written], {}, [_BOOL])[0]],
                {"SrcT": _BOOL, "DstT": dt, "Truncate": False}, [dt])[0]
    mask_shape = _int_op(b, "ConcatV2", "mask_shape", [n_vec, _int_op(b, "OnesLike", "ones", [tail]), axis],
                         {"N": 2, "Tidx": _INT32})
    mask = b.op("Reshape", "mask", [keep, mask_shape], {"T": dt, "Tshape": _INT32}, [dt])[0]
    return b.op("Mul", "d_buffer", [cut, mask], {"T": dt}, [dt])[0]


def _dtype(ctx, tensor):
    from .control_flow_export import _dtype_of

    return _dtype_of(ctx, tensor)


def export_write_grad(d, ctx):
    (grad, buf, index), controls = _data_and_controls(d)
    dt = _dtypes.as_dtype(d["output_dtypes"][0])
    b = _builder(d, ctx)
    axis = b.const("axis", 0, _INT32)
    d_value = b.op("GatherV2", "d_value", [grad, index, axis], {"Tparams": dt, "Tindices": _INT32,
                                                                "Taxis": _INT32, "batch_dims": 0}, [dt])[0]
    rows = _int_op(b, "Reshape", "rows", [index, b.const("rows_shape", [1], _INT32)], {"Tshape": _INT32})
    d_buf = _zeroed_rows(b, grad, buf, rows, ctx)
    return b.nodes + [_out(d, "IdentityN", [d_buf, d_value], {"T": [dt, dt]}, [dt, dt], controls)]


def export_scatter_grad(d, ctx):
    (grad, buf, indices), controls = _data_and_controls(d)
    dt = _dtypes.as_dtype(d["output_dtypes"][0])
    b = _builder(d, ctx)
    axis = b.const("axis", 0, _INT32)
    flat = _int_op(b, "Reshape", "indices", [indices, b.const("flat", [-1], _INT32)], {"Tshape": _INT32})
    d_value = b.op("GatherV2", "d_value", [grad, flat, axis], {"Tparams": dt, "Tindices": _INT32,
                                                               "Taxis": _INT32, "batch_dims": 0}, [dt])[0]
    d_buf = _zeroed_rows(b, grad, buf, flat, ctx)
    return b.nodes + [_out(d, "IdentityN", [d_buf, d_value], {"T": [dt, dt]}, [dt, dt], controls)]


def export_read_grad(d, ctx):
    (grad, buf, index), controls = _data_and_controls(d)
    dt = _dtypes.as_dtype(d["output_dtypes"][0])
    b = _builder(d, ctx)
    n_vec = _first_dim(b, _int_op(b, "Shape", "buffer_shape", [buf], {"T": _dtype(ctx, buf),
                                                                      "out_type": _INT32}), "n")
    row_shape = _int_op(b, "Shape", "row_shape", [grad], {"T": dt, "out_type": _INT32})
    shape = _int_op(b, "ConcatV2", "shape", [n_vec, row_shape, b.const("axis", 0, _INT32)],
                    {"N": 2, "Tidx": _INT32})
    where = _int_op(b, "Reshape", "where", [index, b.const("where_shape", [1, 1], _INT32)], {"Tshape": _INT32})
    update = b.op("ExpandDims", "update", [grad, b.const("update_axis", 0, _INT32)], {"T": dt, "Tdim": _INT32},
                  [dt])[0]
    return b.nodes + [_out(d, "ScatterNd", [where, update, shape], {"T": dt, "Tindices": _INT32}, [dt],
                           controls)]


__all__ = []
