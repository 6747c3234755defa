"""MatMul and BatchMatMulV2 on CUDA: a tiled kernel staging TILE x TILE blocks of both
operands in shared memory. Transposed operands are read transposed while staging, so
they are never materialised.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32, float64

from dtf.kernels.registry import register_kernel
from . import device as D

TILE = 4 if D.SIMULATED else 16  # the simulator runs TILE * TILE Python threads per block


def _tiled_kernel(nb_type):
    @cuda.jit
    def kernel(a, b, out, ta, tb):
        sa = cuda.shared.array((TILE, TILE), nb_type)
        sb = cuda.shared.array((TILE, TILE), nb_type)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        row = cuda.blockIdx.y * TILE + ty
        col = cuda.blockIdx.x * TILE + tx
        m = out.shape[0]
        n = out.shape[1]
        depth = a.shape[0] if ta else a.shape[1]
        acc = nb_type(0)
        for t in range((depth + TILE - 1) // TILE):
            k = t * TILE + tx
            if row < m and k < depth:
                sa[ty, tx] = a[k, row] if ta else a[row, k]
            else:
                sa[ty, tx] = 0
            k = t * TILE + ty
            if col < n and k < depth:
                sb[ty, tx] = b[col, k] if tb else b[k, col]
            else:
                sb[ty, tx] = 0
            cuda.syncthreads()
            for j in range(TILE):
                acc += sa[ty, j] * sb[j, tx]
            cuda.syncthreads()
        if row < m and col < n:
            out[row, col] = acc

    return kernel


_KERNELS = {np.dtype(np.float32): _tiled_kernel(float32), np.dtype(np.float64): _tiled_kernel(float64)}


def matmul2d(a, b, ta=False, tb=False, out=None):
    """``op(a) @ op(b)`` of 2-d device arrays into ``out`` (allocated when None)."""
    m, k = (a.shape[1], a.shape[0]) if ta else a.shape
    k2, n = (b.shape[1], b.shape[0]) if tb else b.shape
    if k != k2:
        raise ValueError(f"Matrix size-incompatible: In[0]: {list(a.shape)}, In[1]: {list(b.shape)}")
    if out is None:
        out = D.empty((m, n), a.dtype)
    if m and n:
        blocks = ((n + TILE - 1) // TILE, (m + TILE - 1) // TILE)
        _KERNELS[np.dtype(a.dtype)][blocks, (TILE, TILE)](a, b, out, ta, tb)
    return out


@register_kernel("MatMul", "GPU", dtypes=("float32", "float64"), label="cuda tiled")
def mat_mul(node):
    ta = bool(node.attrs.get("transpose_a", False))
    tb = bool(node.attrs.get("transpose_b", False))

    def compute(ctx, a, b):
        a, b = D.to_device(a), D.to_device(b)
        if len(a.shape) != 2 or len(b.shape) != 2:
            raise ValueError(f"In[0] and In[1] must be matrices: {list(a.shape)}, {list(b.shape)}")
        return matmul2d(a, b, ta, tb)

    return compute


@register_kernel("BatchMatMulV2", "GPU", dtypes=("float32", "float64"), label="cuda tiled")
def batch_mat_mul(node):
    """One tiled launch per matrix of the batch; both batch shapes must be equal (the
    broadcasting form runs on CPU under soft placement)."""
    ta = bool(node.attrs.get("adj_x", False))
    tb = bool(node.attrs.get("adj_y", False))

    def compute(ctx, x, y):
        x, y = D.to_device(x), D.to_device(y)
        xs, ys = tuple(x.shape), tuple(y.shape)
        if len(xs) < 2 or xs[:-2] != ys[:-2]:
            raise NotImplementedError(f"BatchMatMulV2 on GPU needs equal batch shapes, got "
                                      f"{list(xs)} and {list(ys)}")
        batch = xs[:-2]
        count = int(np.prod(batch, dtype=np.int64))
        x3 = x.reshape(count, *xs[-2:])
        y3 = y.reshape(count, *ys[-2:])
        m = xs[-1] if ta else xs[-2]
        n = ys[-2] if tb else ys[-1]
        out = D.empty((count, m, n), x.dtype)
        for i in range(count):
            matmul2d(x3[i], y3[i], ta, tb, out[i])
        return out.reshape(*batch, m, n)

    return compute
