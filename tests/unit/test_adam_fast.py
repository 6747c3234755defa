"""ApplyAdam's one-pass Numba kernel (dtf.kernels.cpu.adam_fast) against the numpy update:
values over several steps, Nesterov, values read earlier never change, and bad shapes."""
import numpy as np
import pytest

from dtf.framework import dtypes, errors
from dtf.framework.graph_def import NodeDef
from dtf.kernels import registry
from dtf.kernels.cpu.state import UPDATES, _apply_factory
from dtf.state.resources import VariableResource

RNG = np.random.default_rng(7)


def _node(dtype, nesterov):
    return NodeDef("adam", "ApplyAdam", [], [], "", {"T": dtypes.as_dtype(dtype),
                                                      "use_locking": False,
                                                      "use_nesterov": nesterov}, [])


def _refs(values):
    refs = []
    for name, value in zip(("var", "m", "v"), values):
        ref = VariableResource(name, dtypes.as_dtype(value.dtype), value.shape)
        ref.value = value.copy()
        refs.append(ref)
    return refs


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nesterov", [False, True])
def test_adam_matches_numpy_update_over_steps(dtype, nesterov):
    node = _node(dtype, nesterov)
    kdef = registry.lookup("ApplyAdam", "CPU", node.dtype_key)
    assert kdef.label == "numba one pass"
    fast, slow = kdef.factory(node), _apply_factory(UPDATES["ApplyAdam"])(node)
    start = [RNG.normal(size=(37, 11)).astype(dtype), np.zeros((37, 11), dtype),
             np.zeros((37, 11), dtype)]
    fast_refs, slow_refs = _refs(start), _refs(start)
    held = []
    for step in range(1, 5):
        grad = RNG.normal(size=(37, 11)).astype(dtype)
        scalars = [np.asarray(x, dtype) for x in (0.9 ** step, 0.999 ** step, 1e-2, 0.9, 0.999, 1e-8)]
        out = fast(None, *fast_refs, *scalars, grad)
        slow(None, *slow_refs, *scalars, grad)
        assert out is fast_refs[0].value and out.dtype == dtype
        for f, s in zip(fast_refs, slow_refs):
            np.testing.assert_allclose(f.value, s.value, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                       atol=1e-6 if dtype == np.float32 else 1e-14)
        if step == 2:
            held = [r.value for r in fast_refs]  # a reader keeps these: never reused
            kept = [h.copy() for h in held]
    for h, k in zip(held, kept):
        np.testing.assert_array_equal(h, k)


def test_adam_shape_mismatch():
    node = _node(np.float32, False)
    fast = registry.lookup("ApplyAdam", "CPU", node.dtype_key).factory(node)
    refs = _refs([np.zeros((2, 2), np.float32)] * 3)
    scalars = [np.float32(0.5)] * 6
    with pytest.raises(errors.InvalidArgumentError, match="same shape"):
        fast(None, *refs, *scalars, np.zeros(3, np.float32))
