"""Reference semantics of the matrix decompositions over batches: Qr, SelfAdjointEigV2
(ascending eigenvalues) and Svd (descending singular values; V, not V^T, as TF returns).
The signs of eigen- and singular vectors and of Q's columns are LAPACK's, which may differ
from TF's (Eigen's) by a sign per column; the products they reconstruct agree."""
from __future__ import annotations

import numpy as np

from .table import reference


def _empty(dtype):
    return np.zeros([0], dtype)


@reference("Qr", host=True)
def _qr(attrs, x):
    q, r = np.linalg.qr(x, mode="complete" if attrs.get("full_matrices") else "reduced")
    return q.astype(x.dtype), r.astype(x.dtype)


@reference("SelfAdjointEigV2", host=True)
def _self_adjoint_eig(attrs, x):
    # TF reads the lower triangle, as numpy's eigh does by default
    if attrs.get("compute_v", True):
        e, v = np.linalg.eigh(x)
        return e.astype(x.dtype), v.astype(x.dtype)
    return np.linalg.eigvalsh(x).astype(x.dtype), _empty(x.dtype)


@reference("Svd", host=True)
def _svd(attrs, x):
    if not attrs.get("compute_uv", True):
        return np.linalg.svd(x, compute_uv=False).astype(x.dtype), _empty(x.dtype), _empty(x.dtype)
    u, s, vh = np.linalg.svd(x, full_matrices=bool(attrs.get("full_matrices")))
    return s.astype(x.dtype), u.astype(x.dtype), np.swapaxes(vh, -1, -2).astype(x.dtype)
