"""ApplyMomentum written into its arrays (dtf.kernels.cpu.state.apply_momentum) against the
generic numpy update: the same values bit for bit over several steps, Nesterov too, arrays
that something else holds (a fetched value, a view, a read-only array) never written, and
the generic path's checks for what the fast path does not take."""
import numpy as np
import pytest

import dtf as tf
from dtf.framework import dtypes, errors
from dtf.framework.graph_def import NodeDef
from dtf.kernels import registry
from dtf.kernels.cpu.state import UPDATES, _apply_factory
from dtf.state.resources import VariableResource

RNG = np.random.default_rng(17)


def _node(dtype, nesterov):
    return NodeDef("momentum", "ApplyMomentum", [], [], "", {
        "T": dtypes.as_dtype(dtype), "use_locking": False, "use_nesterov": nesterov}, [])


def _refs(values):
    refs = []
    for name, value in zip(("var", "accum"), values):
        ref = VariableResource(name, dtypes.as_dtype(value.dtype), value.shape)
        ref.value = value.copy()
        refs.append(ref)
    return refs


def _kernels(dtype, nesterov):
    node = _node(dtype, nesterov)
    return (registry.lookup("ApplyMomentum", "CPU", node.dtype_key).factory(node),
            _apply_factory(UPDATES["ApplyMomentum"])(node))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nesterov", [False, True])
def test_in_place_gives_the_generic_values_bit_for_bit(dtype, nesterov):
    fast, slow = _kernels(dtype, nesterov)
    start = [RNG.normal(size=(37, 11)).astype(dtype), np.zeros((37, 11), dtype)]
    fast_refs, slow_refs = _refs(start), _refs(start)
    for _ in range(4):
        grad = RNG.normal(size=(37, 11)).astype(dtype)
        lr, momentum = np.asarray(0.05, dtype), np.asarray(0.9, dtype)
        before = [id(r.value) for r in fast_refs]  # ids: holding the arrays would share them
        out = fast(None, *fast_refs, lr, grad, momentum)
        slow(None, *slow_refs, lr, grad, momentum)
        assert [id(r.value) for r in fast_refs] == before  # written where they were
        assert out is fast_refs[0].value and out.dtype == dtype
        del out  # (held, the next step could not write the array in place)
        for f, s in zip(fast_refs, slow_refs):
            np.testing.assert_array_equal(f.value, s.value)


def test_arrays_held_elsewhere_are_never_written():
    fast, _ = _kernels(np.float32, False)
    refs = _refs([np.ones(20, np.float32), np.zeros(20, np.float32)])
    held = refs[0].value  # a reader keeps it
    base = np.zeros(40, np.float32)
    refs[1].value = base[:20]  # a view of another array (as of a received frame)
    fast(None, *refs, np.float32(0.5), np.ones(20, np.float32), np.float32(0.9))
    assert not base.any() and refs[1].value.base is not base
    np.testing.assert_array_equal(held, np.ones(20, np.float32))
    np.testing.assert_array_equal(refs[0].value, np.full(20, 0.5, np.float32))
    frozen = np.zeros(20, np.float32)
    frozen.flags.writeable = False
    refs[1].value = frozen
    fast(None, *refs, np.float32(0.5), np.ones(20, np.float32), np.float32(0.9))
    assert not frozen.any() and refs[1].value is not frozen


def test_a_bad_gradient_shape_is_named_as_before():
    fast, _ = _kernels(np.float32, False)
    refs = _refs([np.zeros((2, 2), np.float32)] * 2)
    with pytest.raises(errors.InvalidArgumentError, match="same shape"):
        fast(None, *refs, np.float32(0.5), np.zeros(3, np.float32), np.float32(0.9))


@pytest.mark.parametrize("nesterov", [False, True])
def test_training_with_momentum_keeps_fetched_values(nesterov):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 12])
        w = tf.Variable(tf.random_normal([12, 5], seed=5))
        loss = tf.reduce_sum(tf.square(tf.matmul(x, w)))
        train = tf.train.MomentumOptimizer(1e-3, 0.9, use_nesterov=nesterov).minimize(loss)
        init = tf.global_variables_initializer()
    xv = RNG.normal(size=(8, 12)).astype(np.float32)
    with tf.Session(graph=g) as sess:
        sess.run(init)
        w0 = sess.run(w)
        held = sess.run(w)
        for _ in range(3):
            sess.run(train, {x: xv})
        np.testing.assert_array_equal(held, w0)  # the fetched value is a snapshot
        got = sess.run(w)
    want, accum = w0.astype(np.float32), np.zeros_like(w0)
    for _ in range(3):
        grad = (2 * xv.T @ (xv @ want)).astype(np.float32)
        accum = accum * np.float32(0.9) + grad
        step = grad * np.float32(1e-3) + accum * np.float32(0.9) * np.float32(1e-3) if nesterov \
            else np.float32(1e-3) * accum
        want = want - step
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
