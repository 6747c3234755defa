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


def _loaded_fast(node):
    from dtf.kernels.cpu import jit_loading

    jit_loading.start()
    assert jit_loading.wait(120), "Numba's loops did not load"
    return registry.lookup("ApplyAdam", "CPU", node.dtype_key).factory(node)


def _step_scalars(dtype, step):
    return [np.asarray(x, dtype) for x in (0.9 ** step, 0.999 ** step, 1e-2, 0.9, 0.999, 1e-8)]


@pytest.mark.parametrize("nesterov", [False, True])
def test_adam_writes_in_place_what_nothing_else_holds(nesterov):
    node = _node(np.float32, nesterov)
    fast, slow = _loaded_fast(node), _apply_factory(UPDATES["ApplyAdam"])(node)
    start = [RNG.normal(size=(64, 33)).astype(np.float32), np.zeros((64, 33), np.float32),
             np.zeros((64, 33), np.float32)]
    fast_refs, slow_refs = _refs(start), _refs(start)
    for step in range(1, 4):
        grad = RNG.normal(size=(64, 33)).astype(np.float32)
        before = [id(r.value) for r in fast_refs]  # ids: holding the arrays would share them
        fast(None, *fast_refs, *_step_scalars(np.float32, step), grad)
        slow(None, *slow_refs, *_step_scalars(np.float32, step), grad)
        assert [id(r.value) for r in fast_refs] == before
        for f, s in zip(fast_refs, slow_refs):
            np.testing.assert_allclose(f.value, s.value, rtol=1e-5, atol=1e-6)


def test_adam_never_writes_into_a_view_or_a_read_only_array():
    node = _node(np.float32, False)
    fast = _loaded_fast(node)
    base = RNG.normal(size=(8, 5)).astype(np.float32)
    base_copy = base.copy()
    frozen = np.zeros(20, np.float32)
    frozen.flags.writeable = False
    refs = _refs([np.zeros(20, np.float32)] * 3)
    refs[0].value = base[:4].reshape(-1)  # a view of another array (as of a received frame)
    refs[1].value = frozen
    fast(None, *refs, *_step_scalars(np.float32, 1), np.ones(20, np.float32))
    np.testing.assert_array_equal(base, base_copy)
    assert not frozen.any()
    assert refs[0].value.base is not base and refs[1].value is not frozen


def test_a_training_step_lets_adam_update_in_place_and_fetched_values_stay(monkeypatch):
    import dtf as tf
    from dtf.kernels.cpu import in_place

    chosen = []
    unshared = in_place.unshared
    monkeypatch.setattr(in_place, "unshared", lambda arrays: chosen.append(unshared(arrays))
                        or chosen[-1])
    _loaded_fast(_node(np.float32, False))
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 48])
        w = tf.Variable(tf.random_normal([48, 32], seed=3))
        loss = tf.reduce_sum(tf.square(tf.matmul(x, w)))
        train = tf.train.AdamOptimizer(1e-2).minimize(loss)
        init = tf.global_variables_initializer()
    feed = {x: RNG.normal(size=(16, 48)).astype(np.float32)}
    with tf.Session(graph=g) as sess:
        sess.run(init)
        sess.run(train, feed)
        held = sess.run(w)
        kept = held.copy()
        del chosen[:]
        for _ in range(3):
            sess.run(train, feed)
        np.testing.assert_array_equal(held, kept)  # the fetched value is a snapshot
        del held  # now only the variable holds its array
        del chosen[:]
        for _ in range(3):
            sess.run(train, feed)
        assert chosen and all(chosen)  # the matmuls' reads no longer hold w to the end
