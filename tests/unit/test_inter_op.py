"""Inter-op parallelism (ConfigProto.inter_op_parallelism_threads) in a local session."""
import random
import threading

import numpy as np
import pytest

import dtf as tf
from dtf.client.local import inter_op_threads
from dtf.kernels.cpu import jit_loading
from dtf.runtime import parallel

WARM_RUNS = 2 * parallel.PROFILE_RUNS + 1  # past profiling and the parallel trial


@pytest.fixture
def every_step_heavy(monkeypatch):
    """Every step counts as heavy and parallel always wins its trial, so that small graphs
    exercise the parallel path."""
    monkeypatch.setattr(parallel, "HEAVY_SECONDS", 0.0)
    monkeypatch.setattr(parallel, "MIN_GAIN", float("inf"))


def session(graph, threads):
    return tf.Session(graph=graph, config=tf.ConfigProto(inter_op_parallelism_threads=threads))


def plans(sess):
    return list(sess._backend._executor._plans.values())


def pool_threads():
    return [t for t in threading.enumerate() if t.name.startswith("dtf-inter-op")]


def random_dag(rng, n_ops):
    """Fetches of a random DAG of stateless ops over a few variables (over constants, the
    plan would fold the ops into constants, leaving nothing to run in parallel)."""
    values = [tf.Variable(rng.standard_normal((4, 4)).astype(np.float32), name=f"v{i}")
              for i in range(4)]
    unary = [tf.tanh, tf.nn.relu, tf.sigmoid, lambda x: x * 0.5, tf.transpose]
    binary = [tf.add, tf.multiply, tf.matmul, tf.subtract, tf.maximum]
    for _ in range(n_ops):
        if rng.random() < 0.4:
            values.append(rng.choice(unary)(values[rng.integers(len(values))]))
        else:
            a, b = rng.integers(len(values), size=2)
            values.append(rng.choice(binary)(values[a], values[b]))
    fetches = [values[i] for i in rng.choice(len(values), size=4, replace=False)]
    return fetches + [tf.reduce_sum(values[-1])]


@pytest.mark.parametrize("seed", range(6))
def test_random_dags_match_sequential(every_step_heavy, seed):
    g = tf.Graph()
    with g.as_default():
        fetches = random_dag(np.random.default_rng(seed), 40)
        init = tf.global_variables_initializer()
    results = {}
    for threads in (1, 2):
        with session(g, threads) as sess:
            sess.run(init)
            runs = [sess.run(fetches) for _ in range(WARM_RUNS + 2)]
            if threads == 2:
                assert plans(sess)[-1].inter_op.heavy is not None  # it ran in parallel
            results[threads] = runs
    for seq, par in zip(results[1], results[2]):
        for a, b in zip(seq, par):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("bad_first", [True, False])  # the failing step on either thread
def test_error_from_a_parallel_step_names_the_op(every_step_heavy, bad_first):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, None])
        w = tf.constant(np.ones((3, 2), np.float32))
        if bad_first:
            bad = tf.matmul(tf.transpose(x), w, name="bad")
        good = tf.matmul(x, w, name="good")
        if not bad_first:
            bad = tf.matmul(tf.transpose(x), w, name="bad")
    with session(g, 2) as sess:
        square = np.ones((3, 3), np.float32)
        for _ in range(WARM_RUNS):
            sess.run([good, bad], {x: square})
        with pytest.raises(tf.errors.InvalidArgumentError, match='MatMul "bad"'):
            sess.run([good, bad], {x: np.ones((4, 3), np.float32)})
        # The session still works after the failed step.
        np.testing.assert_array_equal(sess.run(good, {x: square}), square @ np.ones((3, 2)))


def test_step_stats_in_parallel_mode(every_step_heavy):
    g = tf.Graph()
    with g.as_default():
        # A variable: ops over a constant would be folded into the plan and never run.
        a = tf.Variable(np.ones((8, 8), np.float32), name="a")
        left = tf.tanh(a, name="left")
        right = tf.sigmoid(a, name="right")
        total = tf.add(left, right, name="total")
        init = tf.global_variables_initializer()
    with session(g, 2) as sess:
        sess.run(init)
        for _ in range(WARM_RUNS):
            sess.run([left, right, total])
        meta = tf.RunMetadata()
        # Fetched, left and right are not fused into total: two independent steps.
        sess.run([left, right, total], options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
        assert plans(sess)[-1].inter_op is not None
    names = {s.node_name for d in meta.step_stats.dev_stats for s in d.node_stats}
    assert {"a", "left", "right", "total"} <= names
    shapes = {s.node_name: s.output_shapes for d in meta.step_stats.dev_stats for s in d.node_stats}
    assert shapes["total"] == [[8, 8]]


def test_reads_after_a_control_dependency_see_the_assignment(every_step_heavy):
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(1.0)
        w = tf.Variable(10.0)
        assign = tf.assign_add(v, 1.0)
        other = tf.assign_add(w, 1.0)
        with tf.control_dependencies([assign]):
            after = v * 2.0
        init = tf.global_variables_initializer()
    with session(g, 2) as sess:
        sess.run(init)
        for k in range(WARM_RUNS):
            got, _ = sess.run([after, other])
            assert got == 2.0 * (k + 2)
        assert sess.run(w) == 10.0 + WARM_RUNS


def _two_layer_training():
    """Gradient descent on x @ w1 @ w2: the update of w2 and the product that takes w2 to
    the hidden layer's gradient both wait only on the output's gradient."""
    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((8, 5)).astype(np.float32))
    w1 = tf.Variable(rng.standard_normal((5, 6)).astype(np.float32), name="w1")
    w2 = tf.Variable(rng.standard_normal((6, 3)).astype(np.float32), name="w2")
    loss = tf.reduce_sum(tf.square(tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2)))
    train = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
    return loss, train, [w1, w2]


def _reachable(consumers, start):
    seen, todo = set(), [start]
    while todo:
        for c in consumers[todo.pop()]:
            if c not in seen:
                seen.add(c)
                todo.append(c)
    return seen


def test_parallel_schedule_orders_reads_and_updates_of_a_variable(every_step_heavy):
    g = tf.Graph()
    with g.as_default():
        loss, train, _ = _two_layer_training()
        init = tf.global_variables_initializer()
    with session(g, 2) as sess:
        sess.run(init)
        sess.run([loss, train])
        plan = plans(sess)[-1]
    policy = plan.inter_op_policy
    touching = {}  # variable slot -> [(step index, updates)]
    for i, st in enumerate(plan.steps):
        if st.nout and st.out in plan.variable_slots:
            continue
        for pos, slot in enumerate(st.ins):
            if slot in plan.variable_slots:
                touching.setdefault(plan.variable_slots[slot], []).append(
                    (i, not parallel._only_reads(st, pos)))
    updates = 0
    for steps in touching.values():
        for a, (i, i_updates) in enumerate(steps):
            for j, j_updates in steps[a + 1:]:
                if i_updates or j_updates:
                    assert j in _reachable(policy.consumers, i), (
                        f"{plan.steps[j].node.name} may run before {plan.steps[i].node.name}")
            updates += i_updates
    # Each weight's update; w2 is read twice before its own (forward, and backward to the
    # hidden layer), w1 once (no gradient goes to x).
    assert updates == 2 and sorted(map(len, touching.values())) == [2, 3]


@pytest.mark.parametrize("threads", [2, 3])
def test_parallel_training_gives_the_sequential_numbers(every_step_heavy, threads):
    """The parallel schedule keeps the sequential order between a variable's reads and its
    updates, so which thread comes first never changes a step's result."""
    results = {}
    for n in (1, threads):
        g = tf.Graph()
        with g.as_default():
            loss, train, weights = _two_layer_training()
            init = tf.global_variables_initializer()
        with session(g, n) as sess:
            sess.run(init)
            losses = [sess.run([loss, train])[0] for _ in range(WARM_RUNS + 6)]
            if n > 1:
                assert plans(sess)[-1].inter_op.heavy is not None  # it ran in parallel
            results[n] = losses, sess.run(weights)
    np.testing.assert_array_equal(results[threads][0], results[1][0])
    for par, seq in zip(results[threads][1], results[1][1]):
        np.testing.assert_array_equal(par, seq)

def test_no_thread_left_after_close(every_step_heavy):
    before = len(pool_threads())
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [4, 4])  # over a constant the ops would be folded
        both = [tf.tanh(a), tf.sigmoid(a), tf.exp(a)]
    sess = session(g, 3)
    for _ in range(WARM_RUNS):
        sess.run(both, {a: np.ones((4, 4), np.float32)})
    assert len(pool_threads()) == before + 2
    sess.close()
    assert len(pool_threads()) == before


def test_cheap_steps_stay_sequential_and_start_no_thread():
    before = len(pool_threads())
    g = tf.Graph()
    with g.as_default():
        y = tf.constant(2) + tf.constant(3) * 300
    with session(g, 2) as sess:
        for _ in range(WARM_RUNS):
            assert sess.run(y) == 902
        assert plans(sess)[-1].inter_op is None
        assert len(pool_threads()) == before


def test_parallel_that_loses_its_trial_goes_back_to_sequential(monkeypatch):
    monkeypatch.setattr(parallel, "HEAVY_SECONDS", 0.0)
    monkeypatch.setattr(parallel, "MIN_GAIN", 0.0)  # nothing beats this
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [4, 4])  # over a constant the ops would be folded
        both = [tf.tanh(a), tf.sigmoid(a)]
    feed = {a: np.ones((4, 4), np.float32)}
    with session(g, 2) as sess:
        for _ in range(parallel.PROFILE_RUNS):
            sess.run(both, feed)
        assert plans(sess)[-1].inter_op.heavy is not None  # on trial
        for _ in range(parallel.PROFILE_RUNS):
            sess.run(both, feed)
        assert plans(sess)[-1].inter_op is None


def test_plans_measure_again_when_kernels_change_speed(monkeypatch):
    # Numba's loops loading (or a direct convolution compiling) changes which policy wins:
    # a plan settled on sequential is profiled again, and so is one still profiling.
    monkeypatch.setattr(parallel, "HEAVY_SECONDS", 0.0)
    monkeypatch.setattr(parallel, "MIN_GAIN", 0.0)  # every trial is lost
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [4, 4])
        both = [tf.tanh(a), tf.sigmoid(a)]
    feed = {a: np.ones((4, 4), np.float32)}
    with session(g, 2) as sess:
        for _ in range(WARM_RUNS):
            sess.run(both, feed)
        plan = plans(sess)[-1]
        assert plan.inter_op is None  # settled sequential
        jit_loading.kernels_changed()
        assert plan.inter_op is plan.inter_op_policy
        sess.run(both, feed)
        assert plan.inter_op.seq_runs == 1 and plan.inter_op.heavy is None
        for _ in range(parallel.PROFILE_RUNS - 1):
            sess.run(both, feed)
        assert plan.inter_op.heavy is not None  # on trial again
        jit_loading.kernels_changed()  # mid-trial: the trial starts over
        values = sess.run(both, feed)
        assert plan.inter_op.seq_runs == 1 and plan.inter_op.heavy is None
        np.testing.assert_allclose(values[0], np.tanh(np.ones((4, 4))), rtol=1e-6)
        for _ in range(WARM_RUNS):
            sess.run(both, feed)
        assert plan.inter_op is None


@pytest.mark.parametrize("edges, heavy, expected", [
    ([(0, 1), (1, 2)], [True, False, True], False),  # a chain
    ([(0, 1), (0, 2)], [False, True, True], True),  # two branches
    ([(0, 2), (1, 2)], [True, True, False], True),  # two roots
    ([(0, 1)], [True, False], False),  # one heavy step
])
def test_independent_pair(edges, heavy, expected):
    consumers = [[] for _ in heavy]
    pending = [0] * len(heavy)
    for a, b in edges:
        consumers[a].append(b)
        pending[b] += 1
    assert parallel._independent_pair(heavy, consumers, pending) is expected


def test_thread_count_from_config():
    assert inter_op_threads(tf.ConfigProto(inter_op_parallelism_threads=3)) == 3
    assert inter_op_threads(tf.ConfigProto(inter_op_parallelism_threads=-1)) == 1
    assert inter_op_threads(tf.ConfigProto()) >= 1
    tf.ConfigProto(intra_op_parallelism_threads=2)  # accepted


def test_concurrent_runs_of_one_parallel_plan(every_step_heavy):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4])
        total = [tf.tanh(x), tf.sigmoid(x), tf.exp(x)]
    rng = random.Random(0)
    feeds = [np.array([rng.random() for _ in range(4)], np.float32) for _ in range(8)]
    with session(g, 1) as sess:
        want = [sess.run(total, {x: f}) for f in feeds]
    got = [None] * len(feeds)
    with session(g, 2) as sess:
        for _ in range(WARM_RUNS):
            sess.run(total, {x: feeds[0]})

        def run(k):
            for _ in range(20):
                got[k] = sess.run(total, {x: feeds[k]})

        assert plans(sess)[-1].inter_op is not None
        threads = [threading.Thread(target=run, args=(k,)) for k in range(len(feeds))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for a, b in zip(want, got):
        for x_a, x_b in zip(a, b):
            np.testing.assert_array_equal(x_a, x_b)


def test_parallel_fused_kernels_stay_on_the_calling_thread():
    from dtf.runtime.fusion import FusedStep, TailStep

    assert not parallel._may_run_on_pool(FusedStep.__new__(FusedStep))
    assert parallel._may_run_on_pool(TailStep.__new__(TailStep))
    assert parallel._may_run_on_pool(lambda ctx, x: x)
