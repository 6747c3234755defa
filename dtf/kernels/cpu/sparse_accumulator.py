"""CPU kernels of the SparseConditionalAccumulator (dtf/ops/sparse_accumulator_ops.py).

The resource is the dense accumulator's (condition, waiters, count, global step, and so
its num_accumulated / set_global_step / wait-ready kernels) with the sum held as sorted
rows: ``idx`` (int64), ``vals`` (rows) and ``counts`` (how many gradients carried each
row). Rows are merged by TF's two-pointer walk, which assumes each side sorted: for the
sorted, distinct indices TF expects it sums equal rows; for others it gives what TF gives.
"""
from __future__ import annotations

import numpy as np

from dtf.framework import errors
from dtf.kernels.registry import register_kernel
from .data_flow import _FLOATS, AccumulatorResource, _resource_kernel, as_array


def _merge_plan(a, b):
    """For each entry of the merge of index lists ``a`` and ``b``: its position in a and
    in b (-1 where that side has none)."""
    from_a, from_b = [], []
    i = j = 0
    na, nb = len(a), len(b)
    while i < na and j < nb:
        x, y = a[i], b[j]
        if x < y:
            from_a.append(i), from_b.append(-1)
            i += 1
        elif x > y:
            from_a.append(-1), from_b.append(j)
            j += 1
        else:
            from_a.append(i), from_b.append(j)
            i += 1
            j += 1
    from_a += list(range(i, na)) + [-1] * (nb - j)
    from_b += [-1] * (na - i) + list(range(j, nb))
    return np.asarray(from_a, np.int64), np.asarray(from_b, np.int64)


class SparseAccumulatorResource(AccumulatorResource):
    def __init__(self, attrs, name):
        super().__init__(attrs, name)
        self.idx = self.vals = self.counts = None

    def _fail(self, node, message):
        raise errors.InvalidArgumentError(node.name, None, message)

    def _validate(self, indices, values, grad_shape, has_known_shape, node):
        """TF's checks, in its order and words (the shape attr's None dims are unknown)."""
        shape = self.shape
        if indices.ndim != 1:
            self._fail(node, f"Shape mismatch: gradient indices must be a vector, got shape "
                       f"{list(indices.shape)}")
        if values.ndim < 1 or values.shape[0] != indices.shape[0]:
            self._fail(node, f"Shape mismatch: {indices.shape[0]} gradient indices for "
                       f"gradient values of shape {list(values.shape)}")
        if has_known_shape and shape is not None:
            if len(shape) > grad_shape.size:
                self._fail(node, f"Shape mismatch: expected shape rank at least {len(shape)}, "
                           f"got {grad_shape.size}")
            for i, d in enumerate(shape):
                if d is not None and d != grad_shape[i]:
                    self._fail(node, f"Shape mismatch: expected shape dim {i} to be {d}, got "
                               f"{int(grad_shape[i])}")
        if shape and shape[0] is not None:
            over = np.flatnonzero((indices >= shape[0]) | (indices < 0))
            if over.size:
                k = int(over[0])
                self._fail(node, f"Shape mismatch: index of slice {k} exceeded limits of shape;"
                           f" index is {int(indices[k])} exceeded {shape[0]}")
        if self.vals is not None:
            want = list(self.vals.shape)
            if len(want) != values.ndim:
                self._fail(node, f"Shape mismatch: expected values rank {len(want)}, got "
                           f"{values.ndim}")
        elif shape is not None and len(shape) > 1:
            want = [None] + list(shape[1:])
        else:
            return
        for i in range(1, min(len(want), values.ndim)):
            if want[i] is not None and want[i] != values.shape[i]:
                self._fail(node, f"Shape mismatch: expected values dim {i} to be {want[i]}, "
                           f"got {values.shape[i]}")

    def apply_sparse(self, local_step, indices, values, grad_shape, has_known_shape, node):
        indices = np.asarray(indices, np.int64)
        values = as_array(values, self.dtype)
        grad_shape = np.asarray(grad_shape, np.int64).reshape(-1)
        with self.cond:
            self._validate(indices, values, grad_shape, has_known_shape, node)
            if local_step < self.global_step:
                return  # stale: computed from variables older than the current step
            if self.vals is None:
                self.idx, self.vals = indices.copy(), values.copy()
                self.counts = np.ones(len(indices), np.int64)
            else:
                from_a, from_b = _merge_plan(self.idx.tolist(), indices.tolist())
                a, b = from_a >= 0, from_b >= 0
                idx = np.empty(len(from_a), np.int64)
                idx[b] = indices[from_b[b]]
                idx[a] = self.idx[from_a[a]]
                vals = np.zeros((len(from_a),) + values.shape[1:], values.dtype)
                vals[a] = self.vals[from_a[a]]
                vals[b] += values[from_b[b]]
                counts = b.astype(np.int64)
                counts[a] += self.counts[from_a[a]]
                self.idx, self.vals, self.counts = idx, vals, counts
            self.count += 1
            self._notify()

    def take_sparse(self, ctx, n, node):
        with self.cond:
            self.wait(ctx, n, node)
            idx, vals = self.idx, self.vals
            if self.mean:
                scale = self.counts.reshape((-1,) + (1,) * (vals.ndim - 1))
                vals = (vals / scale).astype(vals.dtype, copy=False)
            first = self.shape[0] if self.shape else None
            shape = np.asarray([-1 if first is None else first] + list(vals.shape[1:]),
                               np.int64)
            self.idx = self.vals = self.counts = None
            self.count = 0
            self.global_step += 1
            return idx, vals, shape


register_kernel("SparseConditionalAccumulator", "CPU", dtypes=_FLOATS)(
    _resource_kernel(SparseAccumulatorResource))


@register_kernel("SparseAccumulatorApplyGradient", "CPU", dtypes=_FLOATS)
def sparse_accumulator_apply(node):
    known = bool(node.attrs.get("has_known_shape", False))
    return lambda ctx, acc, local_step, indices, values, shape: acc.apply_sparse(
        int(local_step), indices, values, shape, known, node)


@register_kernel("SparseAccumulatorTakeGradient", "CPU", dtypes=_FLOATS, blocking=True)
def sparse_accumulator_take(node):
    return lambda ctx, acc, n: acc.take_sparse(ctx, int(n), node)
