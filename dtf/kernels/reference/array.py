"""Reference semantics: array ops."""
from __future__ import annotations

import numpy as np

from dtf.framework import errors

from .table import REFERENCE, reference  # noqa: F401


@reference("Shape")
def _shape(attrs, x):
    return np.asarray(x.shape, dtype=attrs.get("out_type").as_numpy_dtype if attrs.get("out_type") else np.int32)


@reference("Reshape")
def _reshape(attrs, x, shape):
    dims = [int(d) for d in np.asarray(shape).reshape(-1)]
    try:
        return x.reshape(dims)
    except ValueError:
        raise ValueError(f"Input to reshape is a tensor with {x.size} values, but the requested "
                         f"shape has {int(np.prod([d for d in dims if d >= 0]))}"
                         f" (requested shape {dims}, input shape {list(x.shape)})") from None


@reference("BroadcastGradientArgs")
def _bga(attrs, s0, s1):
    s0 = [int(d) for d in s0]
    s1 = [int(d) for d in s1]
    n = max(len(s0), len(s1))
    a = [1] * (n - len(s0)) + s0
    b = [1] * (n - len(s1)) + s1
    r0, r1 = [], []
    for i, (p, q) in enumerate(zip(a, b)):
        if p == q:
            if p == 1:
                r0.append(i)
                r1.append(i)
            continue
        if p == 1:
            r0.append(i)
        elif q == 1:
            r1.append(i)
        else:
            raise ValueError(f"Incompatible shapes: {s0} vs. {s1}")
    return np.asarray(r0, np.int32), np.asarray(r1, np.int32)


@reference("Fill")
def _fill(attrs, dims, value):
    if np.ndim(value) != 0:
        raise ValueError(f"value must be a scalar, got shape {list(np.shape(value))}")
    return np.full([int(d) for d in np.asarray(dims).reshape(-1)], value, dtype=value.dtype)


@reference("ZerosLike")
def _zeros_like(attrs, x):
    return np.zeros_like(x)


@reference("OnesLike")
def _ones_like(attrs, x):
    return np.ones_like(x)


@reference("BroadcastTo")
def _broadcast_to(attrs, x, shape):
    return np.broadcast_to(x, [int(d) for d in np.asarray(shape).reshape(-1)]).copy()


# -- layout: transpose, concat, stack, split, reverse, tile, pad ---------------------------
def _ints(v):
    return [int(d) for d in np.asarray(v).reshape(-1)]


def _axis(a, ndim, what="axis"):
    a = int(a)
    if a < -ndim or a >= ndim:
        raise ValueError(f"Expected {what} in the range [{-ndim}, {ndim}), but got {a}")
    return a % ndim


@reference("Transpose")
def _transpose(attrs, x, perm):
    perm = _ints(perm)
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"transpose expects a permutation of [0, {x.ndim}), got {perm}")
    return np.transpose(x, perm).copy()


@reference("InvertPermutation")
def _invert_permutation(attrs, p):
    p = np.asarray(p)
    if sorted(p.tolist()) != list(range(p.size)):
        raise ValueError(f"invert_permutation expects a permutation of [0, {p.size}), got {p.tolist()}")
    return np.argsort(p).astype(p.dtype)


@reference("ConcatV2")
def _concat(attrs, *args):
    xs, axis = args[:-1], args[-1]
    ranks = {x.ndim for x in xs}
    if len(ranks) != 1:
        raise ValueError(f"ConcatOp: inputs must have the same rank, got shapes {[list(x.shape) for x in xs]}")
    return np.concatenate(xs, axis=_axis(axis, xs[0].ndim))


@reference("Pack")
def _pack(attrs, *xs):
    shapes = {x.shape for x in xs}
    if len(shapes) != 1:
        raise ValueError(f"Shapes of all inputs must match: {[list(x.shape) for x in xs]}")
    return np.stack(xs, axis=_axis(attrs.get("axis", 0), xs[0].ndim + 1))


@reference("Unpack")
def _unpack(attrs, x):
    a = _axis(attrs.get("axis", 0), x.ndim)
    if x.shape[a] != attrs["num"]:
        raise ValueError(f"Input shape axis {a} must equal {attrs['num']}, got shape {list(x.shape)}")
    return tuple(np.take(x, i, axis=a) for i in range(attrs["num"]))


@reference("Split")
def _split(attrs, axis, x):
    a = _axis(axis, x.ndim)
    n = attrs["num_split"]
    if x.shape[a] % n:
        raise ValueError(f"Number of ways to split should evenly divide the split dimension, but "
                         f"got split_dim {a} (size = {x.shape[a]}) and num_split {n}")
    return tuple(np.split(x, n, axis=a))


@reference("SplitV")
def _split_v(attrs, x, size_splits, axis):
    a = _axis(axis, x.ndim)
    sizes = _ints(size_splits)
    if sizes.count(-1) > 1:
        raise ValueError(f"There can only be one -1 in the input size_splits, got {sizes}")
    if -1 in sizes:
        sizes[sizes.index(-1)] = x.shape[a] - (sum(sizes) + 1)
    if sum(sizes) != x.shape[a] or min(sizes, default=0) < 0:
        raise ValueError(f"Determined shape must either match input shape along split_dim exactly "
                         f"if fully specified, or be less than the size of the input along split_dim "
                         f"if not fully specified. Got: {sum(sizes)} vs {x.shape[a]} ({sizes})")
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=a))


@reference("ReverseV2")
def _reverse(attrs, x, axis):
    return np.flip(x, axis=tuple(_axis(a, x.ndim) for a in _ints(axis))).copy()


@reference("Tile")
def _tile(attrs, x, multiples):
    m = _ints(multiples)
    if len(m) != x.ndim:
        raise ValueError(f"Expected multiples argument to be a vector of length {x.ndim} but got length {len(m)}")
    return np.tile(x, m) if x.ndim else x.copy()


def pad_widths(x, paddings):
    """Validated [rank, 2] pad widths (shared by the CPU reference and the CUDA kernels)."""
    p = np.asarray(paddings).reshape(-1, 2) if np.size(paddings) else np.zeros((0, 2), int)
    if p.shape[0] != x.ndim or (p < 0).any():
        raise ValueError(f"The first dimension of paddings must be the rank of inputs {x.ndim} and "
                         f"all paddings non-negative, got {np.asarray(paddings).tolist()}")
    return [(int(b), int(a)) for b, a in p]


def _pad_constant(x, pads, value):
    """``x`` inside a block of ``value``: what np.pad(mode="constant") gives, at a seventh
    of its cost on small tensors (26 us against 3.5 on [128, 64]; the gradient of every
    tf.slice is a Pad, four in a word2vec step)."""
    x = np.asarray(x)
    out = np.full([d + b + a for d, (b, a) in zip(x.shape, pads)], value, dtype=x.dtype)
    out[tuple(slice(b, b + d) for d, (b, _) in zip(x.shape, pads))] = x
    return out


@reference("Pad")
def _pad(attrs, x, paddings):
    return _pad_constant(x, pad_widths(x, paddings), 0)


@reference("PadV2")
def _pad_v2(attrs, x, paddings, value):
    if np.ndim(value) != 0:
        return np.pad(x, pad_widths(x, paddings), constant_values=value)  # numpy's error
    return _pad_constant(x, pad_widths(x, paddings), value)


def mirror_padding(attrs, x, paddings):
    """Validated pad widths and numpy's mode name for MirrorPad (REFLECT may not reach the
    edge row itself, SYMMETRIC may)."""
    mode = attrs["mode"]
    pads = pad_widths(x, paddings)
    offset = 1 if mode == "REFLECT" else 0
    for d, (b, a) in zip(x.shape, pads):
        if max(b, a) > d - offset:
            raise ValueError(f"paddings must be no greater than the dimension size{' minus 1' * offset}: "
                             f"{b}, {a} for dimension of size {d} in {mode} mode")
    return pads, mode.lower()


@reference("MirrorPad")
def _mirror_pad(attrs, x, paddings):
    pads, mode = mirror_padding(attrs, x, paddings)
    return np.pad(x, pads, mode=mode)


@reference("MirrorPadGrad")
def _mirror_pad_grad(attrs, dy, paddings):
    """Folds the padded borders back onto the positions they were copied from."""
    pads = [(int(b), int(a)) for b, a in np.asarray(paddings).reshape(-1, 2)]
    mode = attrs["mode"].lower()
    g = dy
    for axis, (b, a) in enumerate(pads):
        n = g.shape[axis] - b - a
        src = np.pad(np.arange(n), (b, a), mode=mode)
        moved = np.moveaxis(g, axis, 0)
        out = np.zeros((n,) + moved.shape[1:], dtype=g.dtype)
        np.add.at(out, src, moved)
        g = np.moveaxis(out, 0, axis)
    return np.ascontiguousarray(g)


# -- slicing and gathering ---------------------------------------------------------------
@reference("Slice")
def _slice(attrs, x, begin, size):
    begin, size = _ints(begin), _ints(size)
    if len(begin) != x.ndim or len(size) != x.ndim:
        raise ValueError(f"Expected begin and size arguments to be 1-D tensors of size {x.ndim}, "
                         f"but got shapes [{len(begin)}] and [{len(size)}] instead.")
    index = []
    for d, b, s in zip(x.shape, begin, size):
        s = d - b if s == -1 else s
        if b < 0 or s < 0 or b + s > d:
            raise ValueError(f"Expected begin {b} and size {s} to be within [0, {d}] "
                             f"for input shape {list(x.shape)}")
        index.append(slice(b, b + s))
    return x[tuple(index)].copy()


def strided_slice_index(attrs, begin, end, strides):
    """The numpy basic index equivalent to a StridedSlice spec and its five masks."""
    begin, end, strides = _ints(begin), _ints(end), _ints(strides)
    if not len(begin) == len(end) == len(strides):
        raise ValueError(f"Expected begin, end, and strides to be 1D equal size tensors, got "
                         f"{begin}, {end}, {strides}")
    bit = lambda mask, i: (attrs.get(mask, 0) >> i) & 1  # noqa: E731
    if bin(attrs.get("ellipsis_mask", 0)).count("1") > 1:
        raise ValueError("Multiple ellipses in slice spec not allowed")
    index = []
    for i, (b, e, s) in enumerate(zip(begin, end, strides)):
        if bit("ellipsis_mask", i):
            index.append(Ellipsis)
        elif bit("new_axis_mask", i):
            index.append(None)
        elif bit("shrink_axis_mask", i):
            index.append(b)
        elif s == 0:
            raise ValueError("strides[%d] must be non-zero" % i)
        else:
            index.append(slice(None if bit("begin_mask", i) else b, None if bit("end_mask", i) else e, s))
    return tuple(index)


def _basic_index(x_shape, index, fn):
    try:
        return fn()
    except IndexError as e:
        raise ValueError(f"slice index out of bounds for input shape {list(x_shape)}: {e}") from None


@reference("StridedSlice")
def _strided_slice(attrs, x, begin, end, strides):
    index = strided_slice_index(attrs, begin, end, strides)
    # dtype=x.dtype: a scalar picked from a string (object) tensor would otherwise become
    # a numpy bytes array, which drops trailing NUL bytes (a serialized record ends in some).
    return _basic_index(x.shape, index, lambda: np.array(x[index], dtype=x.dtype, copy=True))


@reference("StridedSliceGrad")
def _strided_slice_grad(attrs, shape, begin, end, strides, dy):
    index = strided_slice_index(attrs, begin, end, strides)
    out = np.zeros(_ints(shape), dtype=dy.dtype)

    def scatter():
        out[index] = dy
        return out

    return _basic_index(out.shape, index, scatter)


@reference("GatherV2")
def _gather(attrs, params, indices, axis):
    a = _axis(axis, params.ndim)
    limit = params.shape[a]
    bad = (indices < 0) | (indices >= limit)
    if bad.any():
        pos = tuple(int(i) for i in np.argwhere(bad)[0])
        raise errors.InvalidArgumentError(
            None, None, f"indices{list(pos)} = {int(indices[pos])} is not in [0, {limit})")
    return np.take(params, indices, axis=a)


def check_segment_ids(data, segment_ids, num_segments):
    """(number of segments, the ids flattened) of an UnsortedSegmentSum, or TF's error."""
    n = int(num_segments)
    ids = np.asarray(segment_ids)
    if data.shape[:ids.ndim] != ids.shape:
        raise ValueError(f"data.shape = {list(data.shape)} does not start with "
                         f"segment_ids.shape = {list(ids.shape)}")
    flat_ids = ids.reshape(-1)
    if (flat_ids >= n).any():  # TF drops negative ids; larger ones are errors
        raise errors.InvalidArgumentError(None, None, f"segment_ids {flat_ids[flat_ids >= n][0]} "
                                          f"is out of range [0, {n})")
    return n, flat_ids


@reference("UnsortedSegmentSum")
def _unsorted_segment_sum(attrs, data, segment_ids, num_segments):
    n, flat_ids = check_segment_ids(data, segment_ids, num_segments)
    flat = data.reshape((flat_ids.size,) + data.shape[np.ndim(segment_ids):])
    out = np.zeros((n,) + flat.shape[1:], dtype=data.dtype)
    keep = flat_ids >= 0
    np.add.at(out, flat_ids[keep], flat[keep])
    return out


@reference("OneHot")
def _one_hot(attrs, indices, depth, on_value, off_value):
    depth = int(depth)
    if depth < 0:
        raise ValueError(f"depth must be non-negative, got: {depth}")
    hot = np.asarray(indices)[..., None] == np.arange(depth)
    out = np.where(hot, on_value, off_value).astype(on_value.dtype)
    axis = attrs.get("axis", -1)
    return out if axis == -1 else np.moveaxis(out, -1, axis).copy()


# -- shape-only ops ----------------------------------------------------------------------
@reference("ExpandDims")
def _expand_dims(attrs, x, axis):
    a = int(np.asarray(axis).reshape(-1)[0])
    if a < -x.ndim - 1 or a > x.ndim:
        raise ValueError(f"Tried to expand dim index {a} for tensor with {x.ndim} dimensions.")
    return np.expand_dims(x, a % (x.ndim + 1)).copy()


@reference("Squeeze")
def _squeeze(attrs, x):
    dims = attrs.get("squeeze_dims") or []
    axes = tuple(_axis(a, x.ndim) for a in dims) if dims else tuple(
        i for i, d in enumerate(x.shape) if d == 1)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"Can not squeeze dim[{a}], expected a dimension of 1, got {x.shape[a]}")
    return np.squeeze(x, axis=axes).copy()


@reference("Size")
def _size(attrs, x):
    return np.asarray(x.size, dtype=attrs["out_type"].as_numpy_dtype)


@reference("Rank")
def _rank(attrs, x):
    return np.asarray(x.ndim, dtype=np.int32)


@reference("StopGradient")
def _stop_gradient(attrs, x):
    return x


@reference("PlaceholderWithDefault")
def _placeholder_with_default(attrs, x):
    return x


@reference("Range")
def _range(attrs, start, limit, delta):
    if delta == 0:
        raise errors.InvalidArgumentError(None, None, f"Requires delta != 0: {delta}")
    if (delta > 0 and start > limit) or (delta < 0 and start < limit):
        rel = "<=" if delta > 0 else ">="
        raise errors.InvalidArgumentError(
            None, None, f"Requires start {rel} limit when delta {'>' if delta > 0 else '<'} 0: {start}/{limit}")
    dt = attrs["Tidx"].as_numpy_dtype
    n = int(np.ceil(abs((float(limit) - float(start)) / float(delta)))) if np.dtype(dt).kind == "f" else \
        -(-abs(int(limit) - int(start)) // abs(int(delta)))
    return (start + np.arange(n) * delta).astype(dt)


@reference("Where")
def _where(attrs, condition):
    return np.argwhere(condition).astype(np.int64)
