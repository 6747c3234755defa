"""String ops of input code, with TF's op names and attributes: StringSplit / StringSplitV2
(to SparseTensors), StringToNumber, StringJoin, ReduceJoin, Substr, StringStrip,
StringLength and RegexReplace. Host-only; their numpy definitions are in
dtf/kernels/reference/strings.py. Public under tf.strings (dtf/strings.py) and TF 1.x's
top-level names (tf.string_split, tf.string_to_number, tf.string_join, tf.reduce_join,
tf.substr, tf.string_strip, tf.regex_replace).
"""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, register_op
from dtf.framework.tensor_shape import TensorShape, broadcast_shapes, unknown_shape
from .common import const_value, convert
from .sparse_ops import SparseTensor

__all__ = ["string_split", "string_to_number", "string_join", "reduce_join", "substr",
           "string_strip", "regex_replace"]


def _split_infer(inputs, attrs):
    return [(dtypes.int64, TensorShape([None, 2])), (dtypes.string, TensorShape([None])),
            (dtypes.int64, TensorShape([2]))]


def _same_shape(dtype):
    return lambda inputs, attrs: [(dtype or inputs[0].dtype, inputs[0].shape)]


def _reduce_join_infer(inputs, attrs):
    x, axes = inputs
    shape, ax = x.shape.as_tuple_or_none(), const_value(axes)
    if shape is None or ax is None:
        return [(dtypes.string, unknown_shape())]
    rank = len(shape)
    ax = {int(a) % rank for a in ax.reshape(-1)} if rank else set()
    keep = attrs.get("keep_dims", False)
    dims = [1 if i in ax else d for i, d in enumerate(shape) if keep or i not in ax]
    return [(dtypes.string, TensorShape(dims))]


register_op("StringSplit")(_split_infer)
register_op("StringSplitV2")(_split_infer)
register_op("StringToNumber")(lambda inputs, attrs: [(attrs["out_type"], inputs[0].shape)])
@register_op("StringJoin")
def _string_join_infer(inputs, attrs):
    shape = TensorShape([])
    for x in inputs:
        shape = broadcast_shapes(shape, x.shape)
    return [(dtypes.string, shape)]


@register_op("Substr")
def _substr_infer(inputs, attrs):
    shape = broadcast_shapes(broadcast_shapes(inputs[0].shape, inputs[1].shape), inputs[2].shape)
    return [(dtypes.string, shape)]



register_op("ReduceJoin")(_reduce_join_infer)
register_op("StringStrip")(_same_shape(dtypes.string))
register_op("StringLength")(_same_shape(dtypes.int32))
register_op("RegexReplace")(_same_shape(dtypes.string))
for _op in ("StringSplit", "StringSplitV2", "StringToNumber", "StringJoin", "ReduceJoin",
            "Substr", "StringStrip", "StringLength", "RegexReplace"):
    NotDifferentiable(_op)


def _strings(x, name="input"):
    t = convert(x, name, dtype=dtypes.string)
    return t


def _sparse(op):
    return SparseTensor(op.outputs[0], op.outputs[1], op.outputs[2])


def string_split(source, delimiter=" ", skip_empty=True):  # noqa: D401 - TF's name
    """Splits each string of the vector ``source`` at every character of ``delimiter``
    (each character when it is empty) into a SparseTensor of tokens; empty tokens are
    dropped unless ``skip_empty=False``."""
    with _ops.name_scope(None, "StringSplit", [source]) as scope:
        source = _strings(source, "source")
        if source.shape.ndims not in (None, 1):
            raise ValueError(f"source must be a vector of strings, got shape {source.shape}")
        delimiter = _strings(delimiter, "delimiter")
        return _sparse(_ops.make_op("StringSplit", [source, delimiter],
                                    {"skip_empty": bool(skip_empty)}, name=scope))


def strings_split(input=None, sep=None, maxsplit=-1, result_type="SparseTensor",  # noqa: A002
                  source=None, name=None):
    """tf.strings.split: Python's str.split on each string of a vector (``sep`` None:
    runs of whitespace), at most ``maxsplit`` times, as a SparseTensor of tokens."""
    if input is not None and source is not None:
        raise ValueError("Cannot specify both 'input' and 'source'")
    input = source if input is None else input  # noqa: A001
    if result_type != "SparseTensor":
        raise ValueError(f"strings.split(result_type={result_type!r}): dtf has no "
                         "RaggedTensor; use result_type='SparseTensor'")
    with _ops.name_scope(name, "StringSplit", [input]) as scope:
        input = _strings(input)  # noqa: A001
        if input.shape.ndims not in (None, 1):
            raise ValueError(f"input must be a vector of strings, got shape {input.shape}")
        sep = _strings("" if sep is None else sep, "sep")
        return _sparse(_ops.make_op("StringSplitV2", [input, sep], {"maxsplit": int(maxsplit)},
                                    name=scope))


def string_to_number(string_tensor, out_type=dtypes.float32, name=None):
    """Each string parsed as a number of ``out_type`` (float32/64, int32/64)."""
    out_type = dtypes.as_dtype(out_type)
    if out_type not in (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64):
        raise TypeError(f"string_to_number out_type must be float32, float64, int32 or int64, "
                        f"got {out_type.name}")
    with _ops.name_scope(name, "StringToNumber", [string_tensor]) as scope:
        return _ops.make_tensor("StringToNumber", [_strings(string_tensor, "string_tensor")],
                                {"out_type": out_type}, name=scope)


def string_join(inputs, separator="", name=None):
    """The strings of ``inputs`` (tensors of one shape, or scalars) joined elementwise."""
    with _ops.name_scope(name, "StringJoin", list(inputs)) as scope:
        inputs = [_strings(x, f"inputs_{i}") for i, x in enumerate(inputs)]
        if not inputs:
            raise ValueError("string_join needs at least one input")
        return _ops.make_tensor("StringJoin", inputs, {"N": len(inputs),
                                                       "separator": str(separator)}, name=scope)


def reduce_join(inputs, axis=None, keep_dims=None, separator="", name=None,
                reduction_indices=None, keepdims=None):
    """Joins the strings of ``inputs`` along ``axis`` (all axes when None), the first
    listed axis varying fastest, as TF does."""
    from . import array_ops, math_ops

    if axis is not None and reduction_indices is not None:
        raise ValueError("Cannot specify both 'axis' and 'reduction_indices'")
    axis = reduction_indices if axis is None else axis
    keep = bool(keepdims if keepdims is not None else keep_dims)
    with _ops.name_scope(name, "ReduceJoin", [inputs]) as scope:
        inputs = _strings(inputs, "inputs")
        if axis is None:
            rank = inputs.shape.ndims
            axis = list(range(rank - 1, -1, -1)) if rank is not None else math_ops.range(
                array_ops.rank(inputs) - 1, -1, -1)
        axes = convert(axis, "reduction_indices", dtype=dtypes.int32)
        return _ops.make_tensor("ReduceJoin", [inputs, axes], {
            "keep_dims": keep, "separator": str(separator)}, name=scope)


def substr(input, pos, len, name=None, unit="BYTE"):  # noqa: A002 - TF's names
    """``len`` bytes of each string from ``pos`` (negative: from the end); ``pos`` past
    the end is an error, ``len`` past it is cut."""
    if unit != "BYTE":
        raise ValueError(f"substr(unit={unit!r}) is not supported by dtf (only 'BYTE')")
    with _ops.name_scope(name, "Substr", [input, pos, len]) as scope:
        input = _strings(input)  # noqa: A001
        pos = convert(pos, "pos", hint=dtypes.int32)
        length = convert(len, "len", dtype=pos.dtype)
        return _ops.make_tensor("Substr", [input, pos, length], {"T": pos.dtype, "unit": unit},
                                name=scope)


def string_strip(input, name=None):  # noqa: A002
    """Each string without leading and trailing ASCII whitespace."""
    with _ops.name_scope(name, "StringStrip", [input]) as scope:
        return _ops.make_tensor("StringStrip", [_strings(input)], {}, name=scope)


def string_length(input, name=None, unit="BYTE"):  # noqa: A002
    """The length of each string in bytes, or in UTF-8 characters (``unit="UTF8_CHAR"``)."""
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise ValueError(f"unit must be 'BYTE' or 'UTF8_CHAR', got {unit!r}")
    with _ops.name_scope(name, "StringLength", [input]) as scope:
        return _ops.make_tensor("StringLength", [_strings(input)], {"unit": unit}, name=scope)


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    """Each string with matches of the RE2 ``pattern`` replaced by ``rewrite`` (``\\1``:
    a group, ``\\0``: the match), all of them or the first."""
    with _ops.name_scope(name, "RegexReplace", [input, pattern, rewrite]) as scope:
        return _ops.make_tensor("RegexReplace", [
            _strings(input), _strings(pattern, "pattern"), _strings(rewrite, "rewrite")],
            {"replace_global": bool(replace_global)}, name=scope)
