"""Array ops: placeholders, identity, shape manipulation, slicing, gathering."""
from __future__ import annotations

import builtins

import numpy as np

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import register_op
from dtf.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from .common import const_value, convert, fmt_shape, same_as_input, shape_from_tensor

__all__ = ["placeholder", "placeholder_with_default", "identity", "shape", "size", "rank",
           "reshape", "fill", "zeros", "ones", "zeros_like", "ones_like", "broadcast_to",
           "transpose", "invert_permutation", "concat", "stack", "unstack", "split", "slice",
           "strided_slice", "gather", "one_hot", "expand_dims", "squeeze", "tile", "pad",
           "range", "stop_gradient", "reverse", "reverse_v2", "boolean_mask", "sequence_mask",
           "unsorted_segment_sum"]


def _apply(op_type, name, args, attrs, default_name=None):
    """Converts ``args`` (value, arg name, dtype hint) inside the op's name scope, as TF's op
    helper does (so a converted constant is named e.g. ``ExpandDims/dim``), then makes the
    op; ``attrs`` maps the converted inputs to the attr dict. Returns the Operation."""
    with _ops.name_scope(name, default_name or op_type, [a[0] for a in args]) as scope:
        inputs = [convert(v, n, hint=h) for v, n, h in args]
        return _ops.make_op(op_type, inputs, attrs(*inputs), name=scope)


def _fmt_all(inputs):
    return ", ".join(fmt_shape(t.shape) for t in inputs)


def _who(op_type, attrs):
    """How shape errors name the op, as TF does: 'scope/name' (op: 'Type')."""
    return f"'{attrs.get('_op_name', op_type)}' (op: '{op_type}')"


def _norm_axis(axis, ndim, who, inputs):
    """Python index of ``axis`` in [-ndim, ndim); ValueError naming the op otherwise."""
    axis = int(axis)
    if axis < -ndim or axis >= ndim:
        raise ValueError(f"Expected axis in the range [{-ndim}, {ndim}), but got {axis} for "
                         f"{who} with input shapes: {_fmt_all(inputs)}.")
    return axis % ndim


def _const_vector(t):
    """Entries of a 1-D int tensor known statically (None where unknown), or None."""
    v = const_value(t)
    if v is not None:
        return [int(d) for d in np.asarray(v).reshape(-1)]
    if t.op.type == "Pack" and t.op.get_attr("axis") == 0:
        return [None if const_value(i) is None else int(const_value(i)) for i in t.op.inputs]
    n = t.shape.as_tuple_or_none()
    return [None] * n[0] if n is not None and len(n) == 1 and n[0] is not None else None


def _scalar_value(t):
    v = const_value(t)
    return None if v is None else int(np.asarray(v).reshape(-1)[0])


@register_op("Placeholder")
def _placeholder_infer(inputs, attrs):
    shape = attrs.get("shape")
    return [(attrs["dtype"], unknown_shape() if shape is None else TensorShape(shape))]


def placeholder(dtype, shape=None, name=None):
    """A tensor that must be fed in ``Session.run``'s feed_dict."""
    dtype = dtypes.as_dtype(dtype)
    shape = None if shape is None else as_shape(shape).as_tuple_or_none()
    return _ops.make_tensor("Placeholder", [], {"dtype": dtype, "shape": None if shape is None else list(shape)},
                            name=name or "Placeholder")


@register_op("PlaceholderWithDefault")
def _placeholder_with_default_infer(inputs, attrs):
    return [(inputs[0].dtype, TensorShape(attrs["shape"]) if attrs.get("shape") is not None
             else unknown_shape())]


def placeholder_with_default(input, shape, name=None):  # noqa: A002 - TF's signature
    """Passes ``input`` through unless a value is fed."""
    input = convert(input, "input")
    shape = as_shape(shape)
    if not shape.is_compatible_with(input.shape):
        raise ValueError(f"Shapes {input.shape} and {shape} are incompatible")
    dims = shape.as_tuple_or_none()
    return _ops.make_tensor("PlaceholderWithDefault", [input],
                            {"dtype": input.dtype, "shape": None if dims is None else list(dims)},
                            name=name or "PlaceholderWithDefault")


register_op("Identity", forwards_ref=True)(same_as_input)


def identity(input, name=None):  # noqa: A002
    """Returns a tensor with the same value as ``input``."""
    if hasattr(input, "_as_graph_element") and not isinstance(input, _ops.Tensor) and hasattr(input, "value"):
        input = input.value()
    input = convert(input, "input")
    return _ops.make_tensor("Identity", [input], {"T": input.dtype}, name=name or "Identity")


# -- shape ops used by every gradient ------------------------------------------------------
@register_op("Shape")
def _shape_infer(inputs, attrs):
    nd = inputs[0].shape.ndims
    return [(attrs.get("out_type", dtypes.int32), TensorShape([nd]))]


def _static_or_op(op_type, input, name, out_type, static):
    """TF's shape/size/rank: a constant when the static shape decides it, else the op."""
    with _ops.name_scope(name, op_type, [input]) as scope:
        input = convert(input, "input")
        value = static(input.shape)
        if value is not None:
            from .constant_op import constant

            return constant(value, dtype=out_type, name=scope)
        attrs = {"T": input.dtype} if op_type == "Rank" else {"T": input.dtype, "out_type": out_type}
        return _ops.make_tensor(op_type, [input], attrs, name=scope)


def shape(input, name=None, out_type=dtypes.int32):  # noqa: A002
    """The shape of ``input`` as a 1-D int tensor."""
    return _static_or_op("Shape", input, name, dtypes.as_dtype(out_type),
                         lambda s: s.as_list() if s.is_fully_defined() else None)


def _static_size(s):
    if s.is_fully_defined():
        return s.num_elements()
    return 0 if s.ndims and 0 in s.as_tuple_or_none() else None


def size(input, name=None, out_type=dtypes.int32):  # noqa: A002
    """The number of elements of ``input``."""
    return _static_or_op("Size", input, name, dtypes.as_dtype(out_type), _static_size)


def rank(input, name=None):  # noqa: A002
    """The number of dimensions of ``input``."""
    return _static_or_op("Rank", input, name, dtypes.int32, lambda s: s.ndims)


register_op("Size")(lambda inputs, attrs: [(attrs["out_type"], TensorShape([]))])
register_op("Rank")(lambda inputs, attrs: [(dtypes.int32, TensorShape([]))])


@register_op("Reshape")
def _reshape_infer(inputs, attrs):
    x, s = inputs
    target = shape_from_tensor(s)
    if target.ndims is None:
        return [(x.dtype, target)]
    dims = list(target.as_tuple_or_none())
    known_in = x.shape.num_elements()
    # A -1 in a constant shape shows up as None here; resolve it when the input is known.
    cv = const_value(s)
    if cv is not None:
        cv = [int(d) for d in cv.reshape(-1)]
        if cv.count(-1) > 1:
            raise ValueError(f"Cannot reshape a tensor with more than one -1 dimension: {cv}")
        if known_in is not None:
            known = 1
            for d in cv:
                if d != -1:
                    known *= d
            if -1 in cv:
                if known == 0 or known_in % known:
                    raise ValueError(f"Cannot reshape a tensor with {known_in} elements to shape "
                                     f"{cv} (the other dimensions do not divide it)")
                dims[cv.index(-1)] = known_in // known
            elif known != known_in:
                raise ValueError(f"Cannot reshape a tensor with {known_in} elements to shape "
                                 f"{cv} ({known} elements) for {_who('Reshape', attrs)} "
                                 f"with input shapes: {fmt_shape(x.shape)}, [{len(cv)}].")
    return [(x.dtype, TensorShape(dims))]


def reshape(tensor, shape, name=None):
    """Reshapes ``tensor``; one dimension of ``shape`` may be -1."""
    return _apply("Reshape", name, [(tensor, "tensor", None), (shape, "shape", dtypes.int32)],
                  lambda t, s: {"T": t.dtype, "Tshape": s.dtype}).outputs[0]


@register_op("BroadcastGradientArgs")
def _bga_infer(inputs, attrs):
    return [(inputs[0].dtype, TensorShape([None])), (inputs[0].dtype, TensorShape([None]))]


def broadcast_gradient_args(s0, s1, name=None):
    """Reduction axes for the gradients of a broadcasting binary op."""
    op = _ops.make_op("BroadcastGradientArgs", [s0, s1], {"T": s0.dtype},
                      name=name or "BroadcastGradientArgs")
    return op.outputs[0], op.outputs[1]


@register_op("Fill")
def _fill_infer(inputs, attrs):
    return [(inputs[1].dtype, shape_from_tensor(inputs[0]))]


def fill(dims, value, name=None):
    """A tensor of shape ``dims`` filled with ``value``."""
    dims = convert(dims, "dims", hint=dtypes.int32)
    value = convert(value, "value")
    return _ops.make_tensor("Fill", [dims, value], {"T": value.dtype, "index_type": dims.dtype},
                            name=name or "Fill")


@register_op("ZerosLike")
def _zeros_like_infer(inputs, attrs):
    return [(inputs[0].dtype, inputs[0].shape)]


@register_op("OnesLike")
def _ones_like_infer(inputs, attrs):
    return [(inputs[0].dtype, inputs[0].shape)]


def zeros_like(tensor, dtype=None, name=None, optimize=True):
    """A tensor of zeros with the shape (and, unless given, dtype) of ``tensor``."""
    with _ops.name_scope(name, "zeros_like", [tensor]) as scope:
        tensor = convert(tensor, "tensor")
        if dtype is not None and dtypes.as_dtype(dtype) != tensor.dtype:
            return zeros(shape(tensor) if not optimize else _shape_arg(tensor), dtype=dtype, name=scope)
        if optimize and tensor.shape.is_fully_defined():
            return zeros(tensor.shape.as_list(), dtype=tensor.dtype, name=scope)
        return _ops.make_tensor("ZerosLike", [tensor], {"T": tensor.dtype}, name=scope)


def _shape_arg(tensor):
    return tensor.shape.as_list() if tensor.shape.is_fully_defined() else shape(tensor)


def ones_like(tensor, dtype=None, name=None, optimize=True):
    """A tensor of ones with the shape (and, unless given, dtype) of ``tensor`` (TF builds
    it with ``ones`` over the static or dynamic shape, not with OnesLike)."""
    with _ops.name_scope(name, "ones_like", [tensor]) as scope:
        tensor = convert(tensor, "tensor")
        dims = _shape_arg(tensor) if optimize else shape(tensor)
        ret = ones(dims, dtype=dtype or tensor.dtype, name=scope)
        ret.set_shape(tensor.shape)
        return ret


_SMALL_CONSTANT = 1000  # TF writes smaller filled tensors as constants, larger ones as Fill


def _filled(one, shape_, dtype, name, default_name):
    from .constant_op import constant

    dtype = dtypes.as_dtype(dtype)
    value = builtins.bool(one) if dtype.is_bool else ("" if dtype == dtypes.string else one)
    with _ops.name_scope(name, default_name, [shape_]) as scope:
        if not isinstance(shape_, _ops.Tensor):
            try:
                dims = as_shape(shape_).as_list()
                if np.prod(dims, dtype=np.int64) < _SMALL_CONSTANT:
                    return constant(value, dtype=dtype, shape=dims, name=scope)
                shape_ = constant(dims, dtype=dtypes.int64 if max(dims) >= 2 ** 31 else dtypes.int32)
            except (TypeError, ValueError):
                shape_ = convert(shape_, "shape", dtype=dtypes.int32)
        if shape_.shape.ndims == 0:
            shape_ = reshape(shape_, [-1])
        return fill(shape_, constant(value, dtype=dtype), name=scope)


def zeros(shape, dtype=dtypes.float32, name=None):  # noqa: A002 - TF's signature
    return _filled(0, shape, dtype, name, "zeros")


def ones(shape, dtype=dtypes.float32, name=None):
    return _filled(1, shape, dtype, name, "ones")


@register_op("BroadcastTo")
def _broadcast_to_infer(inputs, attrs):
    return [(inputs[0].dtype, shape_from_tensor(inputs[1]))]


def broadcast_to(input, shape, name=None):  # noqa: A002
    """Broadcasts ``input`` to ``shape`` (numpy rules)."""
    input = convert(input, "input")
    shape = convert(shape, "shape", hint=dtypes.int32)
    return _ops.make_tensor("BroadcastTo", [input, shape], {"T": input.dtype, "Tidx": shape.dtype},
                            name=name or "BroadcastTo")


# -- layout: transpose, concat, stack, unstack, split --------------------------------------
def _shape_error(who, inputs, rule):
    return ValueError(f"{rule} for {who} with input shapes: {_fmt_all(inputs)}.")


def _merge_dims(a, b, i, who, inputs):
    if a is not None and b is not None and a != b:
        raise _shape_error(who, inputs, f"Dimension {i} in both shapes must be equal, but are {a} and {b}")
    return a if a is not None else b


@register_op("Transpose")
def _transpose_infer(inputs, attrs):
    x, perm = inputs
    p, nd = _const_vector(perm), x.shape.ndims
    if p is None or None in p:
        return [(x.dtype, unknown_shape(nd if nd is not None else (None if p is None else len(p))))]
    if nd is None:
        return [(x.dtype, unknown_shape(len(p)))]
    if sorted(p) != list(builtins.range(nd)):
        raise _shape_error(_who("Transpose", attrs), inputs, f"perm {p} is not a permutation of [0, {nd})")
    dims = x.shape.as_tuple_or_none()
    return [(x.dtype, TensorShape([dims[i] for i in p]))]


def transpose(a, perm=None, name="transpose", conjugate=False):
    """Permutes the dimensions of ``a``; ``perm`` defaults to reversing them."""
    with _ops.name_scope(name, "transpose", [a]) as scope:
        a = convert(a, "a")
        if perm is None:
            nd = a.shape.ndims
            if nd is not None:
                perm = np.arange(nd - 1, -1, -1, dtype=np.int32)
            else:
                r = rank(a)
                perm = (r - 1) - range(0, r, 1)
        perm = convert(perm, "perm", hint=dtypes.int32)
        return _ops.make_tensor("Transpose", [a, perm], {"T": a.dtype, "Tperm": perm.dtype}, name=scope)


register_op("InvertPermutation")(same_as_input)


def invert_permutation(x, name=None):
    """The inverse of the permutation ``x``."""
    return _apply("InvertPermutation", name, [(x, "x", dtypes.int32)], lambda t: {"T": t.dtype}).outputs[0]


@register_op("ConcatV2")
def _concat_infer(inputs, attrs):
    values, axis = inputs[:-1], _scalar_value(inputs[-1])
    ranks = [v.shape.ndims for v in values if v.shape.ndims is not None]
    if any(r != ranks[0] for r in ranks):
        raise _shape_error(_who("ConcatV2", attrs), inputs, f"Shape must be rank {ranks[0]} but is rank "
                           f"{next(r for r in ranks if r != ranks[0])}")
    if not ranks:
        return [(values[0].dtype, unknown_shape())]
    nd = ranks[0]
    if axis is None:
        return [(values[0].dtype, unknown_shape(nd))]
    a = _norm_axis(axis, nd, _who("ConcatV2", attrs), inputs)
    dims, total = [None] * nd, 0
    for v in values:
        vd = v.shape.as_tuple_or_none()
        if vd is None:
            total = None
            continue
        for i in builtins.range(nd):
            if i != a:
                dims[i] = _merge_dims(dims[i], vd[i], i, _who("ConcatV2", attrs), inputs)
        total = None if total is None or vd[a] is None else total + vd[a]
    dims[a] = total
    return [(values[0].dtype, TensorShape(dims))]


def _convert_list(values, op_type, arg):
    from .common import convert_same

    return convert_same(list(values), op_type, names=[f"{arg}_{i}" for i in builtins.range(len(values))])


def concat(values, axis, name="concat"):
    """Concatenates tensors along ``axis`` (ranks must match, other dims must agree)."""
    if not isinstance(values, (list, tuple)):
        values = [values]
    if len(values) == 1:
        with _ops.name_scope(name) as scope:
            convert(axis, "concat_dim", dtype=dtypes.int32).shape.assert_has_rank(0)
            return identity(values[0], name=scope)
    with _ops.name_scope(name, "ConcatV2", list(values)) as scope:
        values = _convert_list(values, "ConcatV2", "values")
        axis = convert(axis, "axis", hint=dtypes.int32)
        return _ops.make_tensor("ConcatV2", values + [axis], {"T": values[0].dtype, "N": len(values),
                                                              "Tidx": axis.dtype}, name=scope)


@register_op("Pack")
def _pack_infer(inputs, attrs):
    merged = inputs[0].shape
    for t in inputs[1:]:
        if not merged.is_compatible_with(t.shape):
            raise _shape_error(_who("Pack", attrs), inputs, f"Shapes {fmt_shape(merged)} and {fmt_shape(t.shape)} "
                               "must be equal; from merging shape 0 with other shapes")
        merged = merged.merge_with(t.shape)
    if merged.ndims is None:
        return [(inputs[0].dtype, unknown_shape())]
    dims = list(merged.as_tuple_or_none())
    dims.insert(_norm_axis(attrs["axis"], len(dims) + 1, _who("Pack", attrs), inputs), len(inputs))
    return [(inputs[0].dtype, TensorShape(dims))]


def _has_tensors(values):
    return any(isinstance(v, _ops.Tensor) or _ops._is_convertible_obj(v) for v in _ops._flatten(values))


def stack(values, axis=0, name="stack"):
    """Stacks rank-R tensors into one rank-(R+1) tensor along a new ``axis``."""
    if axis == 0:
        try:  # a constant list becomes a Const, a list with tensors is autopacked
            return _ops.convert_to_tensor(values, name=name)
        except (TypeError, ValueError):
            pass
    first = convert(values[0], name)
    nd = first.shape.ndims
    if nd is not None and not -nd - 1 <= axis < nd + 1:
        raise ValueError(f"axis = {axis} not in [{-nd - 1}, {nd + 1})")
    with _ops.name_scope(name, "Pack", list(values)) as scope:
        values = _convert_list([first] + list(values[1:]), "Pack", "values")
        return _ops.make_tensor("Pack", values, {"T": values[0].dtype, "N": len(values), "axis": axis},
                                name=scope)


def _is_tensor_like(v):
    return isinstance(v, _ops.Tensor) or _ops._is_convertible_obj(v)


def _autopacking(list_of_values, dtype, name):
    """Packs a (nested) list holding tensors into one tensor with Pack ops, as TF's
    conversion of such lists does; plain entries become constants named by position.
    Tensors must share the first tensor's dtype unless ``dtype`` asks for a cast."""
    inferred = next(convert(v).dtype for v in _ops._flatten(list_of_values) if _is_tensor_like(v))
    dtype = inferred if dtype is None else dtypes.as_dtype(dtype)
    return _autopack(list_of_values, dtype, dtype != inferred, name)


def _autopack(values, dtype, cast_tensors, name):
    from .constant_op import constant
    from .math_ops import cast

    with _ops.name_scope(name) as scope:
        elems = []
        for i, v in enumerate(values):
            if isinstance(v, (list, tuple)) and _has_tensors(v):
                v = _autopack(v, dtype, cast_tensors, str(i))
            elif _is_tensor_like(v):
                v = convert(v)
                if v.dtype != dtype and not cast_tensors:
                    raise TypeError(f"Cannot convert a list containing a tensor of dtype {v.dtype.name} "
                                    f"to {dtype.name} (Tensor is: {v!r})")
                v = cast(v, dtype)
            else:
                v = constant(v, dtype=dtype, name=str(i))
            elems.append(v)
        return _ops.make_tensor("Pack", elems, {"T": dtype, "N": len(elems), "axis": 0}, name=scope)


@register_op("Unpack")
def _unpack_infer(inputs, attrs):
    x, num = inputs[0], attrs["num"]
    if x.shape.ndims is None:
        return [(x.dtype, unknown_shape())] * num
    dims = list(x.shape.as_tuple_or_none())
    a = _norm_axis(attrs["axis"], len(dims), _who("Unpack", attrs), inputs)
    if dims[a] is not None and dims[a] != num:
        raise _shape_error(_who("Unpack", attrs), inputs, f"Dimension must be {num} but is {dims[a]}")
    del dims[a]
    return [(x.dtype, TensorShape(dims))] * num


def unstack(value, num=None, axis=0, name="unstack"):
    """Splits ``value`` along ``axis`` into a list of rank-(R-1) tensors."""
    value = convert(value, "value")
    if num is None:
        nd = value.shape.ndims
        if nd is None:
            raise ValueError(f"Cannot infer num from shape {value.shape}")
        if not -nd <= axis < nd:
            raise ValueError(f"axis = {axis} not in [{-nd}, {nd})")
        num = value.shape.as_tuple_or_none()[axis]
        if num is None:
            raise ValueError(f"Cannot infer num from shape {value.shape}")
    return _apply("Unpack", name, [(value, "value", None)],
                  lambda v: {"T": v.dtype, "num": num, "axis": axis}).outputs


@register_op("Split")
def _split_infer(inputs, attrs):
    axis, x = inputs
    n, a, nd = attrs["num_split"], _scalar_value(axis), x.shape.ndims
    if nd is None or a is None:
        return [(x.dtype, unknown_shape(nd))] * n
    dims = list(x.shape.as_tuple_or_none())
    a = _norm_axis(a, nd, _who("Split", attrs), inputs)
    if dims[a] is not None:
        if dims[a] % n:
            raise _shape_error(_who("Split", attrs), inputs, f"Dimension size must be evenly divisible by {n} but is {dims[a]}")
        dims[a] //= n
    return [(x.dtype, TensorShape(dims))] * n


@register_op("SplitV")
def _split_v_infer(inputs, attrs):
    x, sizes, axis = inputs
    n, a, nd, sv = attrs["num_split"], _scalar_value(axis), x.shape.ndims, _const_vector(sizes)
    if nd is None or a is None:
        return [(x.dtype, unknown_shape(nd))] * n
    dims = list(x.shape.as_tuple_or_none())
    a = _norm_axis(a, nd, _who("SplitV", attrs), inputs)
    sv = sv if sv is not None else [None] * n
    if len(sv) != n:
        raise _shape_error(_who("SplitV", attrs), inputs, f"Length of size_splits should be {n}, got {len(sv)}")
    known = [s for s in sv if s is not None and s != -1]
    if sv.count(-1) == 1 and len(known) == n - 1 and dims[a] is not None:
        sv = [dims[a] - sum(known) if s == -1 else s for s in sv]
    if None not in sv and -1 not in sv and dims[a] is not None and sum(sv) != dims[a]:
        raise _shape_error(_who("SplitV", attrs), inputs, f"Determined shape must match input shape along split_dim "
                           f"exactly if fully specified. Got: {sum(sv)} vs {dims[a]}")
    return [(x.dtype, TensorShape(dims[:a] + [None if s == -1 else s] + dims[a + 1:])) for s in sv]


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """Splits ``value`` along ``axis`` into equal parts (an int) or given sizes (a list)."""
    size_splits = _ops.convert_to_tensor(num_or_size_splits)
    if isinstance(num_or_size_splits, (int, np.integer)) and not isinstance(num_or_size_splits, bool):
        return _apply("Split", name, [(axis, "split_dim", dtypes.int32), (value, "value", None)],
                      lambda a, v: {"T": v.dtype, "num_split": int(num_or_size_splits)}).outputs
    if size_splits.shape.ndims == 0:
        raise ValueError("Rank-0 tensors are not supported as the num_or_size_splits argument to "
                         f"split. Argument provided: {num_or_size_splits}")
    if num is None:
        num = size_splits.shape.as_tuple_or_none()[0] if size_splits.shape.ndims else None
        if num is None:
            raise ValueError(f"Cannot infer num from shape {num_or_size_splits}")
    return _apply("SplitV", name, [(value, "value", None), (size_splits, "size_splits", None),
                                   (axis, "axis", dtypes.int32)],
                  lambda v, s, a: {"T": v.dtype, "Tlen": s.dtype, "num_split": num}).outputs


# -- shape-only ops ------------------------------------------------------------------------
@register_op("ExpandDims")
def _expand_dims_infer(inputs, attrs):
    x, dim = inputs
    a, nd = _scalar_value(dim), x.shape.ndims
    if nd is None:
        return [(x.dtype, unknown_shape())]
    if a is None:
        return [(x.dtype, unknown_shape(nd + 1))]
    dims = list(x.shape.as_tuple_or_none())
    dims.insert(_norm_axis(a, nd + 1, _who("ExpandDims", attrs), inputs), 1)
    return [(x.dtype, TensorShape(dims))]


def expand_dims(input, axis=None, name=None, dim=None):  # noqa: A002
    """Inserts a dimension of size 1 at ``axis``."""
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("Must specify an axis argument to tf.expand_dims()")
    return _apply("ExpandDims", name, [(input, "input", None), (axis, "dim", dtypes.int32)],
                  lambda x, d: {"T": x.dtype, "Tdim": d.dtype}).outputs[0]


@register_op("Squeeze")
def _squeeze_infer(inputs, attrs):
    x, axes = inputs[0], attrs["squeeze_dims"]
    dims = x.shape.as_tuple_or_none()
    if dims is None:
        return [(x.dtype, unknown_shape())]
    if not axes:
        if None in dims:
            return [(x.dtype, unknown_shape())]
        return [(x.dtype, TensorShape([d for d in dims if d != 1]))]
    drop = {_norm_axis(a, len(dims), _who("Squeeze", attrs), inputs) for a in axes}
    for a in sorted(drop):
        if dims[a] is not None and dims[a] != 1:
            raise _shape_error(_who("Squeeze", attrs), inputs, f"Can not squeeze dim[{a}], expected a dimension of 1, "
                               f"got {dims[a]}")
    return [(x.dtype, TensorShape([d for i, d in enumerate(dims) if i not in drop]))]


def squeeze(input, axis=None, name=None, squeeze_dims=None):  # noqa: A002
    """Removes dimensions of size 1 (all of them, or those in ``axis``)."""
    if axis is not None and squeeze_dims is not None:
        raise ValueError("Cannot specify both 'axis' and 'squeeze_dims'")
    axis = squeeze_dims if axis is None else axis
    axis = [] if axis is None else [int(a) for a in np.atleast_1d(axis)]
    return _apply("Squeeze", name, [(input, "input", None)],
                  lambda x: {"T": x.dtype, "squeeze_dims": axis}).outputs[0]


@register_op("Tile")
def _tile_infer(inputs, attrs):
    x, multiples = inputs
    m, dims = _const_vector(multiples), x.shape.as_tuple_or_none()
    if dims is None:
        return [(x.dtype, unknown_shape(None if m is None else len(m)))]
    m = m if m is not None else [None] * len(dims)
    if len(m) != len(dims):
        raise _shape_error(_who("Tile", attrs), inputs, f"Shape must be rank {len(dims)} but multiples has length {len(m)}")
    return [(x.dtype, TensorShape([None if d is None or k is None else d * k for d, k in zip(dims, m)]))]


def tile(input, multiples, name=None):  # noqa: A002
    """Repeats ``input`` ``multiples[i]`` times along dimension i."""
    return _apply("Tile", name, [(input, "input", None), (multiples, "multiples", dtypes.int32)],
                  lambda x, m: {"T": x.dtype, "Tmultiples": m.dtype}).outputs[0]


def _padded_infer(sign):
    """Shape function of the pad ops (sign +1) and of MirrorPadGrad (sign -1)."""
    def infer(inputs, attrs):
        x, paddings = inputs[:2]
        pv, dims = _const_vector(paddings), x.shape.as_tuple_or_none()
        nd = len(dims) if dims is not None else (None if pv is None else len(pv) // 2)
        if nd is None:
            return [(x.dtype, unknown_shape())]
        if pv is not None and len(pv) != 2 * nd:
            raise _shape_error(_who("Pad", attrs), inputs, f"The first dimension of paddings must be "
                               f"the rank of inputs {nd}, got {len(pv) // 2}")
        pv = pv or [None] * (2 * nd)
        dims = dims or (None,) * nd
        return [(x.dtype, TensorShape([None if None in (d, b, a) else d + sign * (b + a)
                                       for d, b, a in zip(dims, pv[0::2], pv[1::2])]))]
    return infer


for _t in ("Pad", "PadV2", "MirrorPad"):
    register_op(_t)(_padded_infer(1))
register_op("MirrorPadGrad")(_padded_infer(-1))


def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):  # noqa: A002
    """Pads ``tensor`` with ``paddings[i] = [before, after]``: CONSTANT, REFLECT or SYMMETRIC."""
    mode = mode.upper()
    args = [(tensor, "input", None), (paddings, "paddings", dtypes.int32)]
    attrs = lambda x, p, *rest: {"T": x.dtype, "Tpaddings": p.dtype}  # noqa: E731
    if mode == "CONSTANT":
        if not isinstance(constant_values, _ops.Tensor) and np.all(np.asarray(constant_values) == 0):
            return _apply("Pad", name, args, attrs).outputs[0]
        with _ops.name_scope(name, "PadV2", [tensor, paddings, constant_values]) as scope:
            x = convert(tensor, "input")
            p = convert(paddings, "paddings", hint=dtypes.int32)
            c = convert(constant_values, "constant_values", dtype=x.dtype)
            return _ops.make_tensor("PadV2", [x, p, c], attrs(x, p), name=scope)
    if mode not in ("REFLECT", "SYMMETRIC"):
        raise ValueError(f"Unknown padding mode: {mode}")
    return _apply("MirrorPad", name, args, lambda x, p: {**attrs(x, p), "mode": mode}).outputs[0]


register_op("ReverseV2")(same_as_input)


def reverse(tensor, axis, name=None):
    """Reverses ``tensor`` along each dimension in ``axis``."""
    return _apply("ReverseV2", name, [(tensor, "tensor", None), (axis, "axis", dtypes.int32)],
                  lambda x, a: {"T": x.dtype, "Tidx": a.dtype}).outputs[0]


reverse_v2 = reverse


# -- sequences, masks, misc ----------------------------------------------------------------
_RANGE_DTYPES = [dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64]


@register_op("Range")
def _range_infer(inputs, attrs):
    vals = [const_value(t) for t in inputs]
    if any(v is None for v in vals):
        return [(attrs["Tidx"], TensorShape([None]))]
    start, limit, delta = (np.asarray(v).item() for v in vals)
    if delta == 0:
        raise ValueError(f"Requires delta != 0: {delta} for 'Range' (op: 'Range')")
    if (delta > 0 and start > limit) or (delta < 0 and start < limit):
        raise ValueError(f"Requires start <= limit when delta > 0 (or >= when < 0): {start}/{limit} "
                         "for 'Range' (op: 'Range')")
    if attrs["Tidx"].is_integer:
        n = -(-abs(int(limit) - int(start)) // abs(int(delta)))
    else:
        n = int(np.ceil(abs((limit - start) / delta)))
    return [(attrs["Tidx"], TensorShape([n]))]


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001 - TF's name
    """[start, start+delta, ...) up to ``limit``; the dtype widens over int32 < int64 <
    float32 < float64 across the three arguments unless given."""
    from .math_ops import cast

    if limit is None:
        start, limit = 0, start
    with _ops.name_scope(name, "Range", [start, limit, delta]) as scope:
        args = [convert(v, n, dtype=dtype) for v, n in ((start, "start"), (limit, "limit"), (delta, "delta"))]
        if dtype is None:
            widest = max((a.dtype for a in args), key=_RANGE_DTYPES.index)
            args = [cast(a, widest) for a in args]
        return _ops.make_tensor("Range", args, {"Tidx": args[0].dtype}, name=scope)


register_op("StopGradient")(same_as_input)


def stop_gradient(input, name=None):  # noqa: A002
    """Passes ``input`` through; no gradient flows back through it."""
    return _apply("StopGradient", name, [(input, "input", None)], lambda x: {"T": x.dtype}).outputs[0]


def sequence_mask(lengths, maxlen=None, dtype=dtypes.bool, name=None):
    """mask[i, j] = j < lengths[i], for j < maxlen (default: max of lengths)."""
    from . import math_ops, reduction_ops

    with _ops.name_scope(name, "SequenceMask", [lengths, maxlen]):
        lengths = convert(lengths, "lengths", hint=dtypes.int32)
        maxlen = reduction_ops.reduce_max(lengths) if maxlen is None else convert(maxlen, "maxlen",
                                                                                   hint=dtypes.int32)
        row = range(0, maxlen, 1)
        result = math_ops.less(row, math_ops.cast(expand_dims(lengths, -1), maxlen.dtype))
        return result if dtypes.as_dtype(dtype) == dtypes.bool else math_ops.cast(result, dtype)


from .slicing_ops import (  # noqa: E402,F401  (part of this module's surface)
    _MASKS, _slice_helper, _where_indices, boolean_mask, gather, one_hot, slice, strided_slice,
    strided_slice_grad, unsorted_segment_sum,
)
from . import array_grad  # noqa: E402,F401  (registers the gradients)

MATH_API = ["invert_permutation", "unsorted_segment_sum"]  # tf.math's share of this family
