"""Diagonals and bands (diag, diag_part, matrix_diag, matrix_diag_part, matrix_set_diag,
matrix_band_part, eye, trace), linspace, meshgrid, reverse_sequence and roll, with TF's
gradients."""
from __future__ import annotations

import numbers

import numpy as np

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, RegisterGradient, register_op
from dtf.framework.tensor_shape import TensorShape, unknown_shape
from . import array_ops as A
from .array_ops import _apply, _scalar_value, _shape_error, _who
from .common import convert, same_as_input
from .shape_checks import rank_error

__all__ = ["diag", "diag_part", "matrix_diag", "matrix_diag_part", "matrix_set_diag",
           "matrix_band_part", "eye", "trace", "linspace", "lin_space", "meshgrid",
           "reverse_sequence", "roll"]


def _at_least(t, rank, op_type, attrs, inputs):
    """Static dims of ``t`` after checking it has at least ``rank`` dims; None if unknown."""
    dims = t.shape.as_tuple_or_none()
    if dims is not None and len(dims) < rank:
        raise rank_error(op_type, attrs, inputs, rank, len(dims), at_least=True)
    return dims


@register_op("Diag")
def _diag_infer(inputs, attrs):
    dims = _at_least(inputs[0], 1, "Diag", attrs, inputs)
    return [(inputs[0].dtype, unknown_shape() if dims is None else TensorShape(dims + dims))]


@register_op("DiagPart")
def _diag_part_infer(inputs, attrs):
    dims = inputs[0].shape.as_tuple_or_none()
    if dims is None:
        return [(inputs[0].dtype, unknown_shape())]
    k = len(dims) // 2
    if len(dims) % 2 or not dims or not TensorShape(dims[:k]).is_compatible_with(TensorShape(dims[k:])):
        raise _shape_error(_who("DiagPart", attrs), inputs, "Input must have even rank and the shape "
                           "[D1..Dk, D1..Dk]")
    return [(inputs[0].dtype, TensorShape(dims[:k]).merge_with(TensorShape(dims[k:])))]


@register_op("MatrixDiag")
def _matrix_diag_infer(inputs, attrs):
    dims = _at_least(inputs[0], 1, "MatrixDiag", attrs, inputs)
    return [(inputs[0].dtype, unknown_shape() if dims is None else TensorShape(dims + dims[-1:]))]


@register_op("MatrixDiagPart")
def _matrix_diag_part_infer(inputs, attrs):
    dims = _at_least(inputs[0], 2, "MatrixDiagPart", attrs, inputs)
    if dims is None:
        return [(inputs[0].dtype, unknown_shape())]
    m, n = dims[-2:]
    return [(inputs[0].dtype, TensorShape(dims[:-2] + (None if None in (m, n) else min(m, n),)))]


@register_op("MatrixSetDiag")
def _matrix_set_diag_infer(inputs, attrs):
    x, d = inputs
    dims, ddims = _at_least(x, 2, "MatrixSetDiag", attrs, inputs), d.shape.as_tuple_or_none()
    if dims is not None and ddims is not None:
        m, n = dims[-2:]
        want = TensorShape(dims[:-2] + (None if None in (m, n) else min(m, n),))
        if not want.is_compatible_with(d.shape):
            raise _shape_error(_who("MatrixSetDiag", attrs), inputs, f"diagonal must have shape "
                               f"{want.as_tuple_or_none()}")
    return [(x.dtype, x.shape)]


@register_op("MatrixBandPart")
def _matrix_band_part_infer(inputs, attrs):
    _at_least(inputs[0], 2, "MatrixBandPart", attrs, inputs)
    return same_as_input(inputs, attrs)


def _unary(op_type, arg):
    def fn(value, name=None):
        return _apply(op_type, name, [(value, arg, None)], lambda x: {"T": x.dtype}).outputs[0]
    fn.__name__ = op_type
    return fn


_diag, _diag_part = _unary("Diag", "diagonal"), _unary("DiagPart", "input")
_matrix_diag, _matrix_diag_part = _unary("MatrixDiag", "diagonal"), _unary("MatrixDiagPart", "input")


def diag(diagonal, name=None):
    """A tensor of rank 2k with ``diagonal`` (rank k) on its diagonal and zeros elsewhere."""
    return _diag(diagonal, name)


def diag_part(input, name=None):  # noqa: A002
    """The diagonal of a tensor of shape [D1..Dk, D1..Dk]; the inverse of ``diag``."""
    return _diag_part(input, name)


def _scalar_k(fn, k):
    """k as a Python int; a band of diagonals (a pair) or a k unknown until run time is
    refused."""
    from .common import const_value
    v = const_value(k) if isinstance(k, _ops.Tensor) else k
    if v is None or np.ndim(v) != 0:
        raise NotImplementedError(f"{fn} takes one diagonal, a constant integer k; got k={k!r}")
    return int(v)


def _shifted(x, k):
    """The part of the matrices of ``x`` whose main diagonal is their k-th diagonal."""
    return x[..., :, k:] if k >= 0 else x[..., -k:, :]


def matrix_diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1, padding_value=0):
    """Batched matrices with ``diagonal`` (its last dimension) on their k-th diagonal and
    ``padding_value`` elsewhere; each side defaults to the smallest that holds the diagonal
    (both: a square)."""
    k = _scalar_k("matrix_diag", k)
    plain = num_rows == -1 and num_cols == -1 and not isinstance(padding_value, _ops.Tensor) \
        and padding_value == 0
    if k == 0 and plain:
        return _matrix_diag(diagonal, name)
    with _ops.name_scope(name, "MatrixDiag", [diagonal]) as scope:
        diagonal = convert(diagonal, "diagonal")
        n = diagonal.shape.as_tuple_or_none()[-1] if diagonal.shape.ndims else None
        if n is None:
            raise NotImplementedError("matrix_diag with k, num_rows or num_cols needs a diagonal of "
                                      "static length")
        rows_min, cols_min = n + max(-k, 0), n + max(k, 0)
        if num_rows == -1 and num_cols == -1:
            rows = cols = max(rows_min, cols_min)
        else:
            rows = rows_min if num_rows == -1 else int(num_rows)
            cols = cols_min if num_cols == -1 else int(num_cols)
        if rows < rows_min or cols < cols_min:
            raise ValueError(f"matrix_diag: a diagonal of length {n} at k={k} needs at least "
                             f"{rows_min} rows and {cols_min} columns, got {rows} x {cols}")
        nd = diagonal.shape.ndims
        top, left = max(-k, 0), max(k, 0)
        pads = [[0, 0]] * (nd - 1) + [[top, rows - top - n], [left, cols - left - n]]
        out = A.pad(_matrix_diag(diagonal), pads)
        if isinstance(padding_value, _ops.Tensor) or padding_value != 0:
            on_diagonal = A.pad(_matrix_diag(A.ones_like(diagonal, dtype=dtypes.bool)), pads)
            from .math_ops import where_v2
            fill = convert(padding_value, "padding_value", dtype=diagonal.dtype)
            out = where_v2(on_diagonal, out, fill)
        return A.identity(out, name=scope)


def matrix_diag_part(input, name="diag_part", k=0, padding_value=0):  # noqa: A002
    """The k-th diagonals of a batch of matrices (the last two dimensions)."""
    k = _scalar_k("matrix_diag_part", k)
    if k == 0:
        return _matrix_diag_part(input, name)
    with _ops.name_scope(name, "MatrixDiagPart", [input]) as scope:
        return _matrix_diag_part(_shifted(convert(input, "input"), k), scope)


def matrix_set_diag(input, diagonal, name="set_diag", k=0):  # noqa: A002
    """``input`` with the k-th diagonal of each matrix replaced by ``diagonal``."""
    k = _scalar_k("matrix_set_diag", k)
    if k == 0:
        return _apply("MatrixSetDiag", name, [(input, "input", None), (diagonal, "diagonal", None)],
                      lambda x, d: {"T": x.dtype}).outputs[0]
    with _ops.name_scope(name, "MatrixSetDiag", [input, diagonal]) as scope:
        x = convert(input, "input")
        kept = x[..., :, :k] if k > 0 else x[..., :-k, :]
        changed = matrix_set_diag(_shifted(x, k), diagonal)
        return A.concat([kept, changed], -1 if k > 0 else -2, name=scope)


def matrix_band_part(input, num_lower, num_upper, name=None):  # noqa: A002
    """Keeps ``num_lower`` sub- and ``num_upper`` super-diagonals of each matrix (negative:
    all of them) and zeroes the rest."""
    return _apply("MatrixBandPart", name, [(input, "input", None), (num_lower, "num_lower", dtypes.int64),
                                           (num_upper, "num_upper", dtypes.int64)],
                  lambda x, lo, up: {"T": x.dtype, "Tindex": lo.dtype}).outputs[0]


def eye(num_rows, num_columns=None, batch_shape=None, dtype=dtypes.float32, name=None):
    """An identity matrix (or a batch of them), as TF builds it: matrix_diag of ones, or
    ones set on the diagonal of a zero matrix when it is not square."""
    with _ops.name_scope(name, "eye", [num_rows, num_columns, batch_shape]):
        is_square = num_columns is None
        batch_shape = [] if batch_shape is None else batch_shape
        num_columns = num_rows if num_columns is None else num_columns
        dynamic = any(isinstance(v, _ops.Tensor) for v in (num_rows, num_columns, batch_shape))
        if not dynamic:
            for v, arg in ((num_rows, "num_rows"), (num_columns, "num_columns")):
                if not isinstance(v, numbers.Integral) or v < 0:
                    raise TypeError(f"Argument `{arg}` must be a non-negative integer, got {v!r}")
            is_square = is_square or num_rows == num_columns
            diag_shape = list(batch_shape) + [min(num_rows, num_columns)]
            shape = list(batch_shape) + [num_rows, num_columns]
        else:
            from .math_ops import minimum
            batch = convert(batch_shape, "shape", dtype=dtypes.int32)
            diag_shape = A.concat([batch, [minimum(num_rows, num_columns)]], 0)
            shape = A.concat([batch, [num_rows, num_columns]], 0)
        ones = A.ones(diag_shape, dtype=dtype)
        if is_square:
            return matrix_diag(ones)
        return matrix_set_diag(A.zeros(shape, dtype=dtype), ones)


def trace(x, name=None):
    """The sum of the main diagonal of each matrix in ``x`` (the last two dimensions)."""
    from .reduction_ops import reduce_sum

    with _ops.name_scope(name, "Trace", [x]) as scope:
        x = convert(x, "x")
        return reduce_sum(matrix_diag_part(x), [-1], name=scope)


# -- linspace ------------------------------------------------------------------------------
@register_op("LinSpace")
def _lin_space_infer(inputs, attrs):
    start, stop, num = inputs
    for t, arg in ((start, "start"), (stop, "stop"), (num, "num")):
        if t.shape.ndims not in (None, 0):
            raise _shape_error(_who("LinSpace", attrs), inputs,
                               f"{arg} must be a scalar, got rank {t.shape.ndims}")
    return [(start.dtype, TensorShape([_scalar_value(num)]))]


NotDifferentiable("LinSpace")


def linspace(start, stop, num, name=None):
    """``num`` evenly spaced values from ``start`` to ``stop`` inclusive."""
    with _ops.name_scope(name, "LinSpace", [start, stop, num]) as scope:
        start = convert(start, "start")
        if start.dtype not in (dtypes.float32, dtypes.float64):
            raise TypeError(f"Value passed to parameter 'start' has DataType {start.dtype.name} not in "
                            "list of allowed values: float32, float64")
        stop = convert(stop, "stop", dtype=start.dtype)
        num = convert(num, "num", hint=dtypes.int32)
        return _ops.make_tensor("LinSpace", [start, stop, num], {"T": start.dtype, "Tidx": num.dtype},
                                name=scope)


lin_space = linspace


def meshgrid(*args, **kwargs):
    """N-d coordinate grids from 1-d ``args``; ``indexing`` is 'xy' (Cartesian, the default:
    the first two outputs are transposed) or 'ij' (matrix)."""
    indexing = kwargs.pop("indexing", "xy")
    name = kwargs.pop("name", "meshgrid")
    if kwargs:
        raise TypeError(f"'{list(kwargs)[0]}' is an invalid keyword argument for this function")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Argument `indexing` parameter must be either 'xy' or 'ij', got '{indexing}'")
    with _ops.name_scope(name, "meshgrid", args):
        ndim = len(args)
        s0 = (1,) * ndim
        if not ndim:
            return []
        output = [A.reshape(A.stack(x), s0[:i] + (-1,) + s0[i + 1:]) for i, x in enumerate(args)]
        shapes = [A.size(x) for x in args]
        dtype = convert(args[0]).dtype.base_dtype
        if indexing == "xy" and ndim > 1:
            output[0] = A.reshape(output[0], (1, -1) + (1,) * (ndim - 2))
            output[1] = A.reshape(output[1], (-1, 1) + (1,) * (ndim - 2))
            shapes[0], shapes[1] = shapes[1], shapes[0]
        ones = A.ones(A.stack(shapes), dtype)
        return [x * ones for x in output]


# -- reverse_sequence ----------------------------------------------------------------------
@register_op("ReverseSequence")
def _reverse_sequence_infer(inputs, attrs):
    x, lengths = inputs
    dims = x.shape.as_tuple_or_none()
    if dims is not None:
        for a in ("seq_dim", "batch_dim"):
            if not -len(dims) <= attrs[a] < len(dims):
                raise _shape_error(_who("ReverseSequence", attrs), inputs,
                                   f"{a} = {attrs[a]} is out of range for rank {len(dims)}")
        if lengths.shape.ndims not in (None, 1):
            raise _shape_error(_who("ReverseSequence", attrs), inputs, "seq_lengths must be 1-dim")
    return same_as_input(inputs, attrs)


def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None, name=None,  # noqa: A002
                     seq_dim=None, batch_dim=None):
    """Reverses the first ``seq_lengths[b]`` entries along ``seq_axis`` of each batch entry b."""
    seq_axis = _either(seq_axis, seq_dim, "seq_axis", "seq_dim")
    batch_axis = _either(batch_axis, batch_dim, "batch_axis", "batch_dim")
    if seq_axis is None:
        raise TypeError("reverse_sequence() missing required argument: 'seq_axis'")
    batch_axis = 0 if batch_axis is None else int(batch_axis)
    return _apply("ReverseSequence", name,
                  [(input, "input", None), (seq_lengths, "seq_lengths", dtypes.int64)],
                  lambda x, s: {"T": x.dtype, "Tlen": s.dtype, "seq_dim": int(seq_axis),
                                "batch_dim": batch_axis}).outputs[0]


def _either(new, old, new_name, old_name):
    if new is not None and old is not None and new != old:
        raise ValueError(f"Cannot specify both '{new_name}' and '{old_name}'")
    return new if new is not None else old


register_op("Roll")(same_as_input)


def roll(input, shift, axis, name=None):  # noqa: A002
    """Shifts the entries of ``input`` by ``shift`` along ``axis`` (both a scalar or lists of
    the same length), wrapping around."""
    return _apply("Roll", name, [(input, "input", None), (shift, "shift", dtypes.int32),
                                 (axis, "axis", dtypes.int32)],
                  lambda x, s, a: {"T": x.dtype, "Tshift": s.dtype, "Taxis": a.dtype}).outputs[0]


# -- gradients (TF's rules) ----------------------------------------------------------------
RegisterGradient("Diag")(lambda op, grad: [diag_part(grad)])
RegisterGradient("DiagPart")(lambda op, grad: [diag(grad)])
RegisterGradient("MatrixDiag")(lambda op, grad: [matrix_diag_part(grad)])


@RegisterGradient("MatrixDiagPart")
def _matrix_diag_part_grad(op, grad):
    dims = op.inputs[0].shape.as_tuple_or_none()
    if dims is not None and None not in dims[-2:] and dims[-1] == dims[-2]:
        return [matrix_diag(grad)]
    return [matrix_set_diag(A.zeros_like(op.inputs[0]), grad)]


@RegisterGradient("MatrixSetDiag")
def _matrix_set_diag_grad(op, grad):
    return [matrix_set_diag(grad, A.zeros_like(op.inputs[1])), matrix_diag_part(grad)]


@RegisterGradient("MatrixBandPart")
def _matrix_band_part_grad(op, grad):
    return [matrix_band_part(grad, op.inputs[1], op.inputs[2]), None, None]


@RegisterGradient("ReverseSequence")
def _reverse_sequence_grad(op, grad):
    return [reverse_sequence(grad, op.inputs[1], seq_axis=op.get_attr("seq_dim"),
                             batch_axis=op.get_attr("batch_dim")), None]


@RegisterGradient("Roll")
def _roll_grad(op, grad):
    from .math_ops import negative

    return [roll(grad, negative(op.inputs[1]), op.inputs[2]), None, None]
