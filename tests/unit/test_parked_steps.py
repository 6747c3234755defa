"""Steps run in pieces (as a server's I/O thread runs them): a kernel that would wait for
another step (a queue, an accumulator) parks the step instead of blocking, the resource
wakes it, and deadlines and hand-overs to a thread are reported to the caller."""
from __future__ import annotations

import time

import numpy as np
import pytest

import dtf as tf
from dtf.framework import errors
from dtf.framework.graph_def import node_def_of
from dtf.runtime.executor import ExecState, Executor, StepContext
from dtf.runtime.rendezvous import StepRendezvous

DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"


class Harness:
    """One graph's executor and shared state; ``step(...)`` builds a step's context."""

    def __init__(self, graph):
        self.executor = Executor("CPU", DEVICE)
        self.executor.add_nodes([node_def_of(op) for op in graph.get_operations()])
        self.state = ExecState()
        self.step_ids = iter(range(1, 1000))

    def context(self, deadline=None):
        sid = next(self.step_ids)
        return StepContext(self.state, sid, StepRendezvous(sid), deadline, DEVICE)

    def start(self, fetches=(), targets=(), deadline=None):
        plan = self.executor.plan(tuple(t.name for t in fetches), (), tuple(o.name for o in targets))
        return plan.start(self.context(deadline), [])

    def run(self, targets):
        plan = self.executor.plan((), (), tuple(o.name for o in targets))
        return plan.run(self.context(), [])


def queue_graph(capacity=10):
    g = tf.Graph()
    with g.as_default():
        q = tf.FIFOQueue(capacity, tf.float32, shapes=[[]], shared_name="q")
        ops = {"deq": q.dequeue(), "enq": q.enqueue([3.0]),
               "enq_many": q.enqueue_many([[1.0, 2.0]]), "deq_timeout": q.dequeue(timeout_ms=0)}
    return g, ops


def test_a_dequeue_parks_and_the_enqueue_of_another_step_resumes_it():
    g, ops = queue_graph()
    h = Harness(g)
    run = h.start([ops["deq"]])
    woken = []
    assert run.advance(on_ready=lambda: woken.append(1)) is False
    assert woken == [] and run.wake_at is None and not run.needs_thread
    h.run([ops["enq"]])
    assert woken == [1]
    assert run.advance(on_ready=lambda: woken.append(2)) is True
    assert run.outputs() == [np.float32(3.0)]


def test_only_the_kernels_that_may_block_run_alone_and_the_rest_runs_in_blocks():
    """A plan with a dequeue schedules the steps around it in blocks: the dequeue is a unit
    of its own (retried alone once it parks), what does not wait for it runs before it
    parks, and what waits for it runs once another step has enqueued."""
    g = tf.Graph()
    with g.as_default():
        q = tf.FIFOQueue(10, tf.float32, shapes=[[]], shared_name="q")
        v = tf.Variable(0.0, name="v")
        bumped = tf.assign_add(v, tf.constant(1.0) * 2.0 + 1.0)
        x = q.dequeue()
        y = tf.sqrt(x * 2.0 + 1.0) - 1.0
        enq = q.enqueue([4.0])
        init = v.initializer
    h = Harness(g)
    h.run([init])
    plan = h.executor.plan((y.name, bumped.name), (), ())
    units = plan.dataflow[0]
    assert len(units) < len(plan.steps)
    for unit in units:
        if any(st.node.op == "QueueDequeueV2" for st in unit):
            assert len(unit) == 1
    run = plan.start(h.context(), [])
    assert run.advance(on_ready=lambda: None) is False
    read = h.executor.plan((v.value().name,), (), ())
    assert read.run(h.context(), [])[0] == 3.0  # the update ran before the step parked
    h.run([enq])
    assert run.advance(on_ready=lambda: None) is True
    assert run.outputs() == [2.0, 3.0]


def test_a_parked_kernel_fails_at_its_own_timeout():
    g, ops = queue_graph()
    h = Harness(g)
    run = h.start([ops["deq_timeout"]])
    with pytest.raises(errors.DeadlineExceededError, match="dequeue"):
        run.advance(on_ready=lambda: None)


def test_a_parked_step_asks_to_be_woken_at_its_deadline_and_then_fails():
    g, ops = queue_graph()
    h = Harness(g)
    deadline = time.monotonic() + 0.05
    run = h.start([ops["deq"]], deadline=deadline)
    assert run.advance(on_ready=lambda: None) is False
    assert run.wake_at == pytest.approx(deadline)
    time.sleep(0.06)
    with pytest.raises(errors.DeadlineExceededError):
        run.advance(on_ready=lambda: None)


def test_an_enqueue_that_can_only_go_in_piece_by_piece_is_handed_to_a_thread():
    g, ops = queue_graph(capacity=1)
    h = Harness(g)
    run = h.start(targets=[ops["enq_many"]])
    assert run.advance(on_ready=lambda: None) is False
    assert run.needs_thread
    h.run([ops["enq"]])  # room for one: had the two-element enqueue put anything in, it is full
    assert h.executor.plan((ops["deq"].name,), (), ()).run(h.context(), []) == [np.float32(3.0)]


def test_the_same_plan_still_blocks_on_a_thread_when_run_whole():
    g, ops = queue_graph()
    h = Harness(g)
    h.run([ops["enq"]])
    assert h.executor.plan((ops["deq"].name,), (), ()).run(h.context(), []) == [np.float32(3.0)]


def test_an_accumulator_take_parks_until_enough_gradients_arrived():
    g = tf.Graph()
    with g.as_default():
        acc = tf.ConditionalAccumulator(tf.float32, shape=[2], shared_name="acc")
        take = acc.take_grad(2)
        push = acc.apply_grad(tf.constant([2.0, 4.0]), local_step=0)
    h = Harness(g)
    run = h.start([take])
    woken = []
    assert run.advance(on_ready=lambda: woken.append(1)) is False
    h.run([push])
    assert woken == []  # one of two: the take would only park again, so it is not resumed
    h.run([push])
    assert woken == [1]
    assert run.advance(on_ready=lambda: None) is True
    np.testing.assert_allclose(run.outputs()[0], [2.0, 4.0])


def test_a_resume_that_finds_its_kernel_still_waiting_parks_again():
    # The resume is a hint, not a promise: another step may take what the kernel waited
    # for between the notification and the retry.
    g = tf.Graph()
    with g.as_default():
        q = tf.FIFOQueue(10, tf.float32, shapes=[[]], shared_name="q")
        deq, other_deq, enq = q.dequeue(), q.dequeue(), q.enqueue([5.0])
    h = Harness(g)
    run = h.start([deq])
    woken = []
    assert run.advance(on_ready=lambda: woken.append(1)) is False
    h.run([enq])
    assert woken == [1]
    taken = h.executor.plan((other_deq.name,), (), ()).run(h.context(), [])
    assert taken == [np.float32(5.0)]  # taken before the parked step retries
    assert run.advance(on_ready=lambda: woken.append(2)) is False
    h.run([enq])
    assert woken == [1, 2]
    assert run.advance(on_ready=lambda: None) is True
    assert run.outputs() == [np.float32(5.0)]


def test_a_resume_retries_only_the_kernels_whose_resource_changed():
    g = tf.Graph()
    with g.as_default():
        first = tf.FIFOQueue(10, tf.float32, shapes=[[]], shared_name="first")
        second = tf.FIFOQueue(10, tf.float32, shapes=[[]], shared_name="second")
        both = [first.dequeue(), second.dequeue()]
        feed_first, feed_second = first.enqueue([1.0]), second.enqueue([2.0])
    h = Harness(g)
    run = h.start(both)
    woken = []
    assert run.advance(on_ready=lambda: woken.append(1)) is False
    second_queue = h.state.resources.lookup("", "second")
    assert len(second_queue.waiters) == 1
    h.run([feed_first])
    assert woken == [1]
    assert run.advance(on_ready=lambda: woken.append(2)) is False
    # The second dequeue was not retried: a retry would have registered its wake-up again.
    assert len(second_queue.waiters) == 1
    h.run([feed_second])
    assert run.advance(on_ready=lambda: None) is True
    assert run.outputs() == [np.float32(1.0), np.float32(2.0)]


def test_an_aborted_step_retries_its_blocked_kernels_and_fails():
    g, ops = queue_graph()
    h = Harness(g)
    run = h.start([ops["deq"]])
    assert run.advance(on_ready=lambda: None) is False
    run.ctx.rendezvous.abort(errors.CancelledError(None, None, "another partition failed"))
    with pytest.raises(errors.CancelledError, match="another partition failed"):
        run.advance(on_ready=lambda: None)


def test_a_parked_kernel_that_times_out_takes_back_its_wake_up():
    g = tf.Graph()
    with g.as_default():
        q = tf.FIFOQueue(10, tf.float32, shapes=[[]], shared_name="q")
        deq = q.dequeue(timeout_ms=20)
    h = Harness(g)
    for _ in range(3):  # a client polling an empty queue
        run = h.start([deq])
        assert run.advance(on_ready=lambda: None) is False
        time.sleep(0.03)
        with pytest.raises(errors.DeadlineExceededError):
            run.advance(on_ready=lambda: None)
    assert h.state.resources.lookup("", "q").waiters == []


def test_a_failed_step_takes_back_the_wake_ups_of_its_parked_kernels():
    g, ops = queue_graph()
    h = Harness(g)
    run = h.start([ops["deq"]])
    assert run.advance(on_ready=lambda: None) is False
    queue = h.state.resources.lookup("", "q")
    assert len(queue.waiters) == 1
    run.ctx.rendezvous.abort(errors.CancelledError(None, None, "another partition failed"))
    with pytest.raises(errors.CancelledError):
        run.advance(on_ready=lambda: None)
    assert queue.waiters == []


@pytest.mark.parametrize("server_thread", [False, True])
def test_steps_make_inf_and_nan_without_warnings_on_any_thread(server_thread):
    """TF's kernels never warn. Server threads set numpy to ignore float errors for good
    and skip the per-step error-state context; other threads (a local session's) keep
    theirs and leave the caller's error state as it was."""
    import threading
    import warnings

    from dtf.runtime.executor import ignore_float_errors_on_this_thread

    g, ops = queue_graph()
    with g.as_default():  # a dequeue makes the plan one that can also run in pieces
        zero = ops["deq"] - 3.0
        ratio = tf.constant(1.0) / zero
        log = tf.log(zero - 1.0)
    h = Harness(g)
    for _ in range(2):  # a 3.0 for each of the two steps
        h.run([ops["enq"]])
    out = {}

    def steps():
        if server_thread:
            ignore_float_errors_on_this_thread()
        before = np.geterr()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            plan = h.executor.plan((ratio.name, log.name), (), ())
            assert plan.dataflow is not None
            out["run"] = plan.run(h.context(), [])
            run = plan.start(h.context(), [])
            assert run.advance(on_ready=lambda: None) is True
            out["advance"] = run.outputs()
        out["errors_kept"] = np.geterr() == before

    thread = threading.Thread(target=steps)
    thread.start()
    thread.join(30)
    for values in (out["run"], out["advance"]):
        assert np.isinf(values[0]) and np.isnan(values[1])
    assert out["errors_kept"]
    assert np.geterr()["divide"] == "warn"  # this thread's state never changed
