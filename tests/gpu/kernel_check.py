"""Runs one GPU kernel outside a graph and compares it with the numpy reference
(REFERENCE[op](attrs, *inputs)).

Floating inputs are handed to kernels as device arrays and integer ones as host arrays, as
inside a GPU partition (``device=`` forces chosen positions onto the device); results are
copied back to compare.
"""
import numpy as np

from dtf.framework import dtypes
from dtf.framework.graph_def import NodeDef
from dtf.kernels import registry
from dtf.kernels.reference import REFERENCE

F32, F64, I32, I64, BOOL = dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64, dtypes.bool
rng = np.random.default_rng(7)


def cuda_device():
    from dtf.kernels.cuda import device

    return device


def run_raw(op, attrs, *inputs, out_dtype=None, device=()):
    """The kernel's raw result: device or host arrays (a tuple for several outputs)."""
    d = cuda_device()
    node = NodeDef(f"test_{op}", op, [], [], "/device:GPU:0", dict(attrs),
                   [out_dtype] if out_dtype is not None else [])
    compute = registry.lookup(op, "GPU", node.dtype_key).factory(node)
    args = [d.to_device(x) if x.dtype.kind == "f" or i in device else x for i, x in enumerate(inputs)]
    return compute(None, *args)


def gpu(op, attrs, *inputs, out_dtype=None, device=()):
    """Runs ``op``'s GPU kernel; returns host arrays (a tuple for several outputs)."""
    d = cuda_device()
    out = run_raw(op, attrs, *inputs, out_dtype=out_dtype, device=device)
    if isinstance(out, tuple):
        return tuple(np.asarray(d.to_host(o)) for o in out)
    return np.asarray(d.to_host(out))


def check(op, attrs, *inputs, rtol=1e-5, atol=1e-6, out_dtype=None, device=()):
    got = gpu(op, attrs, *inputs, out_dtype=out_dtype, device=device)
    want = REFERENCE[op](attrs, *inputs)
    got_t, want_t = (got if isinstance(got, tuple) else (got,)), (want if isinstance(want, tuple) else (want,))
    assert len(got_t) == len(want_t), (op, len(got_t), len(want_t))
    for g, w in zip(got_t, want_t):
        assert g.shape == np.shape(w), (op, g.shape, np.shape(w))
        assert g.dtype == np.asarray(w).dtype, (op, g.dtype, np.asarray(w).dtype)
        np.testing.assert_allclose(g.astype(np.float64), np.asarray(w, np.float64), rtol=rtol, atol=atol,
                                   err_msg=op)
    return got


def rand(*shape, dtype=np.float32, low=-1.0, high=1.0):
    return rng.uniform(low, high, shape).astype(dtype)
