"""FIFOQueue and ConditionalAccumulator: graph construction, TF's semantics, and blocking
kernels that honour the step's deadline."""
import threading
import time

import numpy as np
import pytest

import dtf as tf
from dtf.ops.data_flow_ops import ConditionalAccumulator, FIFOQueue

SHORT = tf.RunOptions(timeout_in_ms=200)


class _ObservedCondition(threading.Condition):
    """A resource's condition that tells when a kernel first waits on it."""

    def __init__(self):
        super().__init__()
        self.waiting = threading.Event()

    def wait(self, timeout=None):
        self.waiting.set()
        return super().wait(timeout)


def _observe(sess, handle_op, create):
    """The event set once a kernel of ``sess`` blocks on the resource ``handle_op`` makes
    (``create``, a fetch that makes it, runs first). A test that starts a thread to block
    waits for it instead of sleeping: the blocking path is then the one exercised."""
    sess.run(create)
    res = sess._backend._state.resources.lookup("", handle_op.name)
    res.cond = _ObservedCondition()
    return res.cond.waiting


# -- queues ----------------------------------------------------------------------------
def test_queue_op_names_dtypes_and_static_shapes():
    q = FIFOQueue(10, [tf.float32, tf.int32], shapes=[[2], []], name="q")
    assert q.queue_ref.op.type == "FIFOQueueV2" and q.name == "q"
    assert q.enqueue(([1.0, 2.0], 3)).name == "q_enqueue"
    a, b = q.dequeue()
    assert a.op.name == "q_Dequeue" and a.op.type == "QueueDequeueV2"
    assert a.shape.as_list() == [2] and b.shape.as_list() == [] and b.dtype == tf.int32
    many = q.dequeue_many(4)
    assert many[0].shape.as_list() == [4, 2] and many[1].shape.as_list() == [4]
    assert q.size().op.name == "q_Size" and q.close().name == "q_Close"
    assert FIFOQueue(-1, tf.int64, shapes=()).shapes[0].as_list() == []


def test_enqueue_checks_shapes_and_count_at_graph_construction():
    q = FIFOQueue(10, [tf.float32], shapes=[[2]])
    with pytest.raises(ValueError):
        q.enqueue([[1.0, 2.0, 3.0]])
    with pytest.raises(ValueError):
        q.enqueue([1.0, 2.0])  # two components for a one-component queue
    with pytest.raises(ValueError):
        FIFOQueue(10, [tf.float32], shapes=[[None]])


def test_fifo_order_enqueue_many_dequeue_many_and_size():
    q = FIFOQueue(10, [tf.float32, tf.int32], shapes=[[2], []])
    enq = q.enqueue(([1.0, 2.0], 1))
    enq_many = q.enqueue_many(([[3.0, 4.0], [5.0, 6.0]], [2, 3]))
    with tf.Session() as s:
        s.run(enq)
        s.run(enq_many)
        assert s.run(q.size()) == 3
        x, y = s.run(q.dequeue())
        np.testing.assert_array_equal(x, [1.0, 2.0])
        assert y == 1
        xs, ys = s.run(q.dequeue_many(2))
        np.testing.assert_array_equal(xs, [[3.0, 4.0], [5.0, 6.0]])
        np.testing.assert_array_equal(ys, [2, 3])
        assert s.run(q.size()) == 0


def test_runtime_shape_mismatch_is_invalid_argument():
    q = FIFOQueue(10, tf.float32, shapes=[[2]])
    x = tf.placeholder(tf.float32)
    enq = q.enqueue(x)
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Shape mismatch"):
            s.run(enq, {x: [1.0, 2.0, 3.0]})


def test_dequeue_on_empty_queue_times_out_with_deadline_exceeded():
    q = FIFOQueue(10, tf.float32)
    start = time.monotonic()
    with tf.Session() as s:
        with pytest.raises(tf.errors.DeadlineExceededError, match="dequeue"):
            s.run(q.dequeue(), options=SHORT)
    assert time.monotonic() - start < 5


def test_dequeue_timeout_attr_bounds_the_wait():
    q = FIFOQueue(10, tf.float32)
    with tf.Session() as s:
        with pytest.raises(tf.errors.DeadlineExceededError):
            s.run(q.dequeue(timeout_ms=100))


def test_enqueue_on_full_queue_blocks_until_deadline():
    q = FIFOQueue(1, tf.float32)
    enq = q.enqueue(1.0)
    with tf.Session() as s:
        s.run(enq)
        with pytest.raises(tf.errors.DeadlineExceededError):
            s.run(enq, options=SHORT)


def test_blocked_dequeue_wakes_when_another_thread_enqueues():
    q = FIFOQueue(10, tf.int32)
    deq = q.dequeue()
    enq = q.enqueue(7)
    with tf.Session() as s:
        blocked = _observe(s, q.queue_ref.op, q.size())
        got = []
        t = threading.Thread(target=lambda: got.append(s.run(deq)))
        t.start()
        assert blocked.wait(10)
        s.run(enq)
        t.join(5)
        assert got == [7]


def test_close_fails_enqueue_and_drains_then_out_of_range():
    q = FIFOQueue(10, tf.float32)
    enq = q.enqueue(1.0)
    deq = q.dequeue()
    with tf.Session() as s:
        s.run(enq)
        s.run(q.close())
        with pytest.raises(tf.errors.CancelledError, match="is closed"):
            s.run(enq)
        assert s.run(deq) == 1.0  # what is left can still be dequeued
        with pytest.raises(tf.errors.OutOfRangeError, match="insufficient elements"):
            s.run(deq)


def test_close_wakes_a_blocked_dequeue_with_out_of_range():
    q = FIFOQueue(10, tf.float32)
    deq = q.dequeue()
    close = q.close()
    with tf.Session() as s:
        errs = []

        def consume():
            try:
                s.run(deq)
            except tf.errors.OutOfRangeError as e:
                errs.append(e)

        blocked = _observe(s, q.queue_ref.op, q.size())
        t = threading.Thread(target=consume)
        t.start()
        assert blocked.wait(10)
        s.run(close)
        t.join(5)
        assert not t.is_alive() and len(errs) == 1


def test_close_with_cancel_pending_enqueues_cancels_a_blocked_enqueue():
    q = FIFOQueue(1, tf.float32)
    enq = q.enqueue(1.0)
    with tf.Session() as s:
        s.run(enq)
        errs = []

        def produce():
            try:
                s.run(enq)
            except tf.errors.CancelledError as e:
                errs.append(e)

        blocked = _observe(s, q.queue_ref.op, q.size())
        t = threading.Thread(target=produce)
        t.start()
        assert blocked.wait(10)
        s.run(q.close(cancel_pending_enqueues=True))
        t.join(5)
        assert not t.is_alive() and len(errs) == 1


def test_shared_name_shares_one_queue_between_ops():
    a = FIFOQueue(10, tf.int32, shared_name="shared")
    b = FIFOQueue(10, tf.int32, shared_name="shared")
    with tf.Session() as s:
        s.run(a.enqueue(5))
        assert s.run(b.dequeue()) == 5


def test_queue_ops_are_not_differentiable():
    q = FIFOQueue(10, tf.float32, shapes=[[]])
    x = tf.placeholder(tf.float32, [])
    q.enqueue(x)
    y = q.dequeue()
    assert tf.gradients(y * 2.0, [x]) == [None]


# -- conditional accumulators ------------------------------------------------------------
def test_accumulator_names_and_shapes():
    acc = ConditionalAccumulator(tf.float32, shape=[2], name="acc")
    assert acc.accumulator_ref.op.type == "ConditionalAccumulator" and acc.name == "acc"
    take = acc.take_grad(1)
    assert take.op.type == "AccumulatorTakeGradient" and take.shape.as_list() == [2]
    assert acc.num_accumulated().op.name == "acc_NumAccumulated"
    assert acc.apply_grad([1.0, 2.0]).type == "AccumulatorApplyGradient"
    assert acc.set_global_step(3).type == "AccumulatorSetGlobalStep"
    with pytest.raises(ValueError):
        acc.apply_grad([1.0, 2.0, 3.0])


def test_take_averages_resets_and_advances_the_global_step():
    acc = ConditionalAccumulator(tf.float32, shape=[2])
    g = tf.placeholder(tf.float32, [2])
    step = tf.placeholder(tf.int64, [])
    apply = acc.apply_grad(g, local_step=step)
    take = acc.take_grad(2)
    with tf.Session() as s:
        s.run(apply, {g: [1.0, 2.0], step: 0})
        s.run(apply, {g: [3.0, 6.0], step: 0})
        assert s.run(acc.num_accumulated()) == 2
        np.testing.assert_allclose(s.run(take), [2.0, 4.0])
        assert s.run(acc.num_accumulated()) == 0
        s.run(apply, {g: [9.0, 9.0], step: 0})  # stale: the accumulator is at step 1 now
        assert s.run(acc.num_accumulated()) == 0
        s.run(apply, {g: [1.0, 1.0], step: 1})
        s.run(apply, {g: [3.0, 3.0], step: 5})  # newer than the accumulator: accepted
        np.testing.assert_allclose(s.run(take), [2.0, 2.0])


def test_set_global_step_makes_older_gradients_stale():
    acc = ConditionalAccumulator(tf.float32, shape=[])
    with tf.Session() as s:
        s.run(acc.set_global_step(10))
        s.run(acc.apply_grad(1.0, local_step=9))
        assert s.run(acc.num_accumulated()) == 0
        s.run(acc.apply_grad(1.0, local_step=10))
        assert s.run(acc.num_accumulated()) == 1


def test_take_blocks_until_enough_then_deadline_exceeded():
    acc = ConditionalAccumulator(tf.float32, shape=[])
    take = acc.take_grad(2)
    with tf.Session() as s:
        s.run(acc.apply_grad(1.0))
        with pytest.raises(tf.errors.DeadlineExceededError, match="accumulator"):
            s.run(take, options=SHORT)
        assert s.run(acc.num_accumulated()) == 1  # a timed-out take takes nothing
        blocked = _observe(s, acc.accumulator_ref.op, acc.num_accumulated())
        got = []
        t = threading.Thread(target=lambda: got.append(s.run(take)))
        t.start()
        assert blocked.wait(10)
        s.run(acc.apply_grad(3.0))
        t.join(5)
        assert got == [2.0]


def test_take_requires_a_positive_count_and_matching_shapes():
    acc = ConditionalAccumulator(tf.float32)
    g = tf.placeholder(tf.float32)
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError, match="num_required"):
            s.run(acc.take_grad(0))
        s.run(acc.apply_grad(g), {g: [1.0, 2.0]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="Shape mismatch"):
            s.run(acc.apply_grad(g), {g: [1.0, 2.0, 3.0]})


def test_sum_reduction():
    acc = ConditionalAccumulator(tf.float64, shape=[], reduction_type="SUM")
    with tf.Session() as s:
        s.run(acc.apply_grad(1.5))
        s.run(acc.apply_grad(2.0))
        assert s.run(acc.take_grad(2)) == 3.5
