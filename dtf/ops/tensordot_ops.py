"""tensordot and einsum, as compositions of transpose, reshape, reduce_sum and matmul (as
TF's Python tensordot is), so their gradients and kernels come from those ops."""
from __future__ import annotations

import numbers
import string

import numpy as np

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from . import array_ops as A
from .common import convert
from .linalg_ops import matmul

__all__ = ["tensordot", "einsum"]


def _dims(t):
    """Each dimension of ``t`` as an int when static, else a scalar int32 tensor."""
    static = t.shape.as_tuple_or_none()
    if static is None:
        raise ValueError(f"tensordot/einsum need operands of known rank; {t.name} has unknown rank")
    dynamic = None
    out = []
    for i, d in enumerate(static):
        if d is None:
            dynamic = A.shape(t) if dynamic is None else dynamic
            d = dynamic[i]
        out.append(d)
    return out


def _prod(dims):
    if all(isinstance(d, numbers.Integral) for d in dims):
        return int(np.prod(dims, dtype=np.int64))
    from .reduction_ops import reduce_prod
    return reduce_prod(A.stack([convert(d, dtype=dtypes.int32) for d in dims]))


def _shape_arg(dims):
    if all(isinstance(d, numbers.Integral) for d in dims):
        return list(dims)
    return A.stack([convert(d, dtype=dtypes.int32) for d in dims])


def _transpose_if_needed(t, perm):
    return t if list(perm) == list(range(len(perm))) else A.transpose(t, perm)


# -- tensordot -----------------------------------------------------------------------------
def _tensordot_axes(a_rank, b_rank, axes):
    if isinstance(axes, numbers.Integral):
        if axes < 0 or axes > min(a_rank, b_rank):
            raise ValueError(f"'axes' must be at most the rank of a and b ({a_rank}, {b_rank}) and "
                             f"non-negative, got {axes}")
        return list(range(a_rank - axes, a_rank)), list(range(axes))
    if isinstance(axes, _ops.Tensor):
        raise NotImplementedError("tensordot with axes given as a tensor is not supported; pass "
                                  "an int or a pair of lists")
    if len(axes) != 2:
        raise ValueError(f"'axes' must be an integer or have length 2, got {axes}")
    a_axes, b_axes = ([int(v)] if np.ndim(v) == 0 else [int(i) for i in v] for v in axes)
    if len(a_axes) != len(b_axes):
        raise ValueError(f"Different number of contraction axes 'a' and 'b', {len(a_axes)} != "
                         f"{len(b_axes)}.")
    return [x % a_rank for x in a_axes], [x % b_rank for x in b_axes]


def tensordot(a, b, axes, name=None):
    """Sums the products of ``a`` and ``b`` over ``axes`` (an int N: the last N of a with
    the first N of b; or a pair of axis lists)."""
    with _ops.name_scope(name, "Tensordot", [a, b, axes]) as scope:
        a = convert(a, "a")
        b = convert(b, "b", dtype=None if isinstance(b, _ops.Tensor) else a.dtype)
        a_dims, b_dims = _dims(a), _dims(b)
        a_axes, b_axes = _tensordot_axes(len(a_dims), len(b_dims), axes)
        for i, j in zip(a_axes, b_axes):
            da, db = a_dims[i], b_dims[j]
            if isinstance(da, numbers.Integral) and isinstance(db, numbers.Integral) and da != db:
                raise ValueError(f"Dimensions must be equal, but are {da} and {db} for tensordot "
                                 f"axes {a_axes} and {b_axes} of shapes {a.shape} and {b.shape}")
        a_free = [i for i in range(len(a_dims)) if i not in a_axes]
        b_free = [i for i in range(len(b_dims)) if i not in b_axes]
        a2 = A.reshape(_transpose_if_needed(a, a_free + a_axes),
                       _shape_arg([_prod([a_dims[i] for i in a_free]), _prod([a_dims[i] for i in a_axes])]))
        b2 = A.reshape(_transpose_if_needed(b, b_axes + b_free),
                       _shape_arg([_prod([b_dims[i] for i in b_axes]), _prod([b_dims[i] for i in b_free])]))
        out = matmul(a2, b2)
        return A.reshape(out, _shape_arg([a_dims[i] for i in a_free] + [b_dims[i] for i in b_free]),
                         name=scope)


# -- einsum --------------------------------------------------------------------------------
def _parse(equation, operands):
    """Input subscripts per operand and the output subscripts, with '...' replaced by
    digits (subscripts are letters; the operands' ranks must be known). An operand whose
    '...' covers fewer dimensions takes the last digits: broadcasting aligns on the right."""
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->")
    else:
        lhs, out = eq, None
    inputs = lhs.split(",")
    if len(inputs) != len(operands):
        raise ValueError(f"einsum equation '{equation}' has {len(inputs)} inputs but {len(operands)} "
                         "operands were given")
    for s in inputs + ([out] if out is not None else []):
        bad = set(s.replace("...", "")) - set(string.ascii_letters)
        if bad:
            raise ValueError(f"einsum equation '{equation}': unsupported subscript characters "
                             f"{sorted(bad)} (use letters and '...')")
    ellipsis_rank = 0
    for s, t in zip(inputs, operands):
        if "..." in s:
            nd = t.shape.ndims
            if nd is None:
                raise ValueError(f"einsum with '...' needs operands of known rank: {t.name}")
            ellipsis_rank = max(ellipsis_rank, nd - len(s.replace("...", "")))
    ell = string.digits[:ellipsis_rank]
    expanded = []
    for s, t in zip(inputs, operands):
        if "..." in s:
            k = t.shape.ndims - len(s.replace("...", ""))
            s = s.replace("...", ell[ellipsis_rank - k:])
        expanded.append(s)
    if out is None:
        letters = "".join(expanded)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c.isalpha()))
    else:
        out = out.replace("...", ell)
    for s, t in zip(expanded, operands):
        if t.shape.ndims is not None and t.shape.ndims != len(s):
            raise ValueError(f"einsum '{equation}': operand {t.name} has rank {t.shape.ndims} but "
                             f"subscripts '{s}'")
    if len(set(out)) != len(out) or set(out) - set("".join(expanded)):
        raise ValueError(f"einsum '{equation}': output subscripts '{out}' must be distinct and "
                         "appear in the inputs")
    return expanded, out


def _take_diagonals(t, subs):
    """Replaces each subscript repeated within one operand ('ii->i', the trace 'ii') by the
    diagonal over its two dimensions; returns (tensor, subscripts without repeats)."""
    from .matrix_ops import matrix_diag_part
    while len(set(subs)) != len(subs):
        c = next(c for c in subs if subs.count(c) > 1)
        p = subs.index(c)
        q = subs.index(c, p + 1)
        rest = [i for i in range(len(subs)) if i not in (p, q)]
        t = matrix_diag_part(_transpose_if_needed(t, rest + [p, q]))
        subs = "".join(subs[i] for i in rest) + c
    return t, subs


def _sum_out(t, subs, keep):
    """Sums ``t`` over the subscripts not in ``keep``; returns (tensor, remaining subs)."""
    from .reduction_ops import reduce_sum
    drop = [i for i, c in enumerate(subs) if c not in keep]
    if not drop:
        return t, subs
    return reduce_sum(t, drop), "".join(c for c in subs if c in keep)


def _contract(a, sa, b, sb, keep):
    """The product of a and b summed over their shared subscripts not in ``keep``, as one
    (batch) matmul; returns (tensor, its subscripts)."""
    batch = [c for c in sa if c in sb and c in keep]
    summed = [c for c in sa if c in sb and c not in keep]
    a_free = [c for c in sa if c not in sb]
    b_free = [c for c in sb if c not in sa]
    da, db = dict(zip(sa, _dims(a))), dict(zip(sb, _dims(b)))
    for c in batch + summed:
        x, y = da[c], db[c]
        static = isinstance(x, numbers.Integral) and isinstance(y, numbers.Integral)
        if static and x != y and (c in summed or 1 not in (x, y)):
            raise ValueError(f"einsum: subscript '{c}' has size {x} in one operand and {y} in another")
    a2 = _transpose_if_needed(a, [sa.index(c) for c in batch + a_free + summed])
    b2 = _transpose_if_needed(b, [sb.index(c) for c in batch + summed + b_free])
    # each side keeps its own batch sizes: BatchMatMulV2 broadcasts a 1 against the other's
    a2 = A.reshape(a2, _shape_arg([da[c] for c in batch] + [_prod([da[c] for c in a_free]),
                                                            _prod([da[c] for c in summed])]))
    b2 = A.reshape(b2, _shape_arg([db[c] for c in batch] + [_prod([db[c] for c in summed]),
                                                            _prod([db[c] for c in b_free])]))
    out = matmul(a2, b2)
    subs = "".join(batch + a_free + b_free)
    bdims = [_broadcast_dim(da[c], db[c], out, i) for i, c in enumerate(batch)]
    return A.reshape(out, _shape_arg(bdims + [da[c] for c in a_free] + [db[c] for c in b_free])), subs


def _broadcast_dim(x, y, out, i):
    """The size of batch dimension i of the product: static when either side decides it."""
    x_static, y_static = isinstance(x, numbers.Integral), isinstance(y, numbers.Integral)
    if x_static and y_static:
        return max(x, y)
    if x_static and x != 1:
        return x
    if y_static and y != 1:
        return y
    return A.shape(out)[i]


def einsum(equation, *inputs, **kwargs):
    """Einstein summation over the ``inputs`` as ``equation`` says: products ('ij,jk->ik',
    'bij,bjk->bik', 'i,j->ij'), transposes and sums ('ij->ji', 'ij->j'), diagonals and traces
    ('ii->i', 'ii') and '...', which broadcasts as numpy's does. Pairs of operands are
    contracted with (batch) matmul, left to right."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"invalid keyword arguments for einsum: {sorted(kwargs)}")
    if not inputs:
        raise ValueError("einsum needs at least one operand")
    with _ops.name_scope(name, "einsum", list(inputs)) as scope:
        operands = [convert(t, f"input_{i}") for i, t in enumerate(inputs)]
        subs, out_subs = _parse(equation, operands)
        operands, subs = map(list, zip(*[_take_diagonals(t, s) for t, s in zip(operands, subs)]))
        t, s = operands[0], subs[0]
        for i in range(1, len(operands)):
            later = set(out_subs).union(*subs[i + 1:])
            t, s = _sum_out(t, s, later | set(subs[i]))
            b, sb = _sum_out(operands[i], subs[i], later | set(s))
            t, s = _contract(t, s, b, sb, later)
        t, s = _sum_out(t, s, set(out_subs))
        return A.identity(_transpose_if_needed(t, [s.index(c) for c in out_subs]), name=scope)
