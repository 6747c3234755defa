"""space_to_depth, depth_to_space, space_to_batch(_nd) and batch_to_space(_nd), written
as the pads, reshapes and transposes that define them, so their gradients and kernels are
those ops' (the block sizes must be known when the graph is built)."""
from __future__ import annotations

import numbers

import numpy as np

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from . import array_ops as A
from .common import const_value, convert

__all__ = ["space_to_depth", "depth_to_space", "space_to_batch_nd", "batch_to_space_nd",
           "space_to_batch", "batch_to_space"]


def _dims(t, what):
    """Each dimension of ``t``: an int when static, else a scalar tensor."""
    static = t.shape.as_tuple_or_none()
    if static is None:
        raise ValueError(f"{what} needs an input of known rank")
    dynamic = A.shape(t) if None in static else None
    return [dynamic[i] if d is None else d for i, d in enumerate(static)]


def _shape(dims):
    if all(isinstance(d, numbers.Integral) for d in dims):
        return list(dims)
    return A.stack([convert(d, dtype=dtypes.int32) for d in dims])


def _div(d, b, what, axis):
    """d // b; a static d must divide (a dynamic one is checked by the reshape at run time)."""
    if isinstance(d, numbers.Integral) and d % b:
        raise ValueError(f"{what}: dimension {axis} of size {d} is not divisible by block size {b}")
    return d // b


def _block_ints(block, what):
    v = block if not isinstance(block, _ops.Tensor) else const_value(block)
    if v is None:
        raise NotImplementedError(f"{what} needs a block size known when the graph is built")
    out = [int(b) for b in np.asarray(v).reshape(-1)]
    if any(b < 1 for b in out):
        raise ValueError(f"{what}: block sizes must be >= 1, got {out}")
    return out


def _nhwc(x, data_format, fn):
    """Applies ``fn`` (written for NHWC) to an NHWC or NCHW tensor."""
    if data_format == "NHWC":
        return fn(x)
    if data_format != "NCHW":
        raise ValueError(f"data_format must be NHWC or NCHW, got {data_format!r}")
    return A.transpose(fn(A.transpose(x, [0, 2, 3, 1])), [0, 3, 1, 2])


def _depth_shuffle(input, block_size, name, data_format, what, op_name, to_depth):
    """Both directions are one 6-D reshape, a swap of its axes 2 and 3, and a reshape:
    [b, h/bs, bs, w/bs, bs, c] <-> [b, h/bs, w/bs, bs, bs, c] (space_to_depth reads the
    first as the input and writes the second as the output; depth_to_space the reverse)."""
    bs = _block_ints(block_size, what)[0]
    if bs < 2:
        raise ValueError(f"{what}: block_size must be > 1, got {bs}")

    def nhwc(x):
        b, h, w, c = _dims(x, what)
        if to_depth:
            h2, w2 = _div(h, bs, what, 1), _div(w, bs, what, 2)
            blocks, out = [b, h2, bs, w2, bs, c], [b, h2, w2, bs * bs * c]
        else:
            c2 = _div(c, bs * bs, what, 3)
            blocks, out = [b, h, w, bs, bs, c2], [b, h * bs, w * bs, c2]
        return A.reshape(A.transpose(A.reshape(x, _shape(blocks)), [0, 1, 3, 2, 4, 5]), _shape(out))

    with _ops.name_scope(name, op_name, [input]):
        return _nhwc(_rank4(convert(input, "input"), what), data_format, nhwc)


def space_to_depth(input, block_size, name=None, data_format="NHWC"):  # noqa: A002
    """Moves each block_size x block_size spatial block into the depth dimension."""
    return _depth_shuffle(input, block_size, name, data_format, "space_to_depth", "SpaceToDepth", True)


def depth_to_space(input, block_size, name=None, data_format="NHWC"):  # noqa: A002
    """The inverse of space_to_depth: depth is spread into block_size x block_size blocks."""
    return _depth_shuffle(input, block_size, name, data_format, "depth_to_space", "DepthToSpace", False)


def _rank4(x, what):
    if x.shape.ndims not in (None, 4):
        raise ValueError(f"{what}: input must be 4-dimensional, got rank {x.shape.ndims}")
    return x


def _blocked_input(input, block_shape, what):
    """(input tensor, block sizes, its dims) after checking it has 1 + len(block) dims."""
    x = convert(input, "input")
    block = _block_ints(block_shape, what)
    dims = _dims(x, what)
    if len(dims) < len(block) + 1:
        raise ValueError(f"{what}: input rank {len(dims)} is less than 1 + {len(block)} block dims")
    return x, block, dims


def space_to_batch_nd(input, block_shape, paddings, name=None):  # noqa: A002
    """Pads the M spatial dimensions after the batch one, cuts them into blocks of
    ``block_shape`` and moves the position within the block into the batch dimension."""
    with _ops.name_scope(name, "SpaceToBatchND", [input, block_shape, paddings]):
        x, block, dims = _blocked_input(input, block_shape, "space_to_batch_nd")
        m = len(block)
        static = paddings if not isinstance(paddings, _ops.Tensor) else const_value(paddings)
        if static is not None:  # a constant paddings list keeps the shapes static
            static = np.asarray(static, np.int64).reshape(m, 2)
            full = [[0, 0]] + static.tolist() + [[0, 0]] * (len(dims) - 1 - m)
        else:
            paddings = convert(paddings, "paddings", dtype=dtypes.int32)
            full = A.concat([A.zeros([1, 2], dtypes.int32), paddings,
                             A.zeros([len(dims) - 1 - m, 2], dtypes.int32)], 0)
        x = A.pad(x, full)
        dims = _dims(x, "space_to_batch_nd")
        split = [dims[0]]
        for i, b in enumerate(block):
            split += [_div(dims[1 + i], b, "space_to_batch_nd", 1 + i), b]
        rest = dims[1 + m:]
        x = A.reshape(x, _shape(split + rest))
        perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + \
            list(range(1 + 2 * m, 1 + 2 * m + len(rest)))
        x = A.transpose(x, perm)
        batch = dims[0] * int(np.prod(block))
        return A.reshape(x, _shape([batch] + [split[1 + 2 * i] for i in range(m)] + rest))


def batch_to_space_nd(input, block_shape, crops, name=None):  # noqa: A002
    """The inverse of space_to_batch_nd: batch entries become spatial blocks, then ``crops``
    are cut from the start and end of each spatial dimension."""
    with _ops.name_scope(name, "BatchToSpaceND", [input, block_shape, crops]):
        x, block, dims = _blocked_input(input, block_shape, "batch_to_space_nd")
        m = len(block)
        prod = int(np.prod(block))
        batch = _div(dims[0], prod, "batch_to_space_nd", 0)
        spatial, rest = dims[1:1 + m], dims[1 + m:]
        x = A.reshape(x, _shape(block + [batch] + spatial + rest))
        perm = [m]
        for i in range(m):
            perm += [m + 1 + i, i]
        perm += list(range(2 * m + 1, 2 * m + 1 + len(rest)))
        x = A.reshape(A.transpose(x, perm), _shape([batch] + [s * b for s, b in zip(spatial, block)] + rest))
        full = _dims(x, "batch_to_space_nd")
        cv = crops if not isinstance(crops, _ops.Tensor) else const_value(crops)
        if cv is not None and all(isinstance(d, numbers.Integral) for d in full):
            cv = np.asarray(cv, np.int64).reshape(m, 2)
            begin = [0] + cv[:, 0].tolist() + [0] * len(rest)
            size = [full[0]] + [full[1 + i] - int(cv[i, 0]) - int(cv[i, 1]) for i in range(m)] + list(rest)
            return A.slice(x, begin, size)
        crops = convert(crops, "crops", dtype=dtypes.int32)
        begin = A.concat([[0], crops[:, 0], A.zeros([len(rest)], dtypes.int32)], 0)
        size = A.concat([[-1], A.stack([convert(full[1 + i], dtype=dtypes.int32) for i in range(m)])
                         - crops[:, 0] - crops[:, 1], -A.ones([len(rest)], dtypes.int32)], 0)
        return A.slice(x, begin, size)


def _block_size_arg(block_size, block_shape, what):
    if block_size is not None and block_shape is not None and block_size != block_shape:
        raise ValueError(f"{what}: give block_size or block_shape, not both")
    value = block_size if block_size is not None else block_shape
    if value is None:
        raise TypeError(f"{what}() missing required argument: 'block_size'")
    return value


def space_to_batch(input, paddings, block_size=None, name=None, block_shape=None):  # noqa: A002
    """space_to_batch_nd over the two spatial dimensions of a 4-D input, both blocks
    ``block_size``."""
    bs = _block_size_arg(block_size, block_shape, "space_to_batch")
    return space_to_batch_nd(input, [int(bs), int(bs)], paddings, name=name)


def batch_to_space(input, crops, block_size, name=None, block_shape=None):  # noqa: A002
    """batch_to_space_nd over the two spatial dimensions of a 4-D input, both blocks
    ``block_size``."""
    bs = _block_size_arg(block_size, block_shape, "batch_to_space")
    return batch_to_space_nd(input, [int(bs), int(bs)], crops, name=name)
