"""Fusion of elementwise chains (dtf.runtime.fusion): which groups fuse, that fused
results equal the unfused graph's, and that compiled kernels are reused across processes.

Arrays stay small: the size threshold is lowered per test. Kernels go to the default
cache directory, which is keyed by the generated source, so reruns load them instead of
compiling; only the cross-process test starts from an empty one.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dtf as tf
import dtf.framework.sendrecv_ops  # noqa: F401  (registers _Send for the cross-device plan)
from dtf.framework import errors
from dtf.framework.graph_def import NodeDef, node_def_of
from dtf.runtime import fusion
from dtf.kernels.cpu import fused
from dtf.runtime.executor import build_plan

N = 1000
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def small_threshold(monkeypatch):
    monkeypatch.setattr(fusion, "MIN_ELEMENTS", 64)
    monkeypatch.setattr(fusion, "ENABLED", True)


def _plan(fetches, feeds=(), extra=()):
    graph = tf.get_default_graph()
    by_name = {n.name: n for n in extra}

    def lookup(name):
        return by_name.get(name) or node_def_of(graph._nodes_by_name[name])

    targets = tuple(n.name for n in extra)
    return build_plan(lookup, tuple(t.name for t in fetches), tuple(t.name for t in feeds), targets)


def _ops(plan):
    return [step[4].op for step in plan.constants + plan.steps]  # constants never run


def _fused_steps(plan):
    return [step[0] for step in plan.steps if isinstance(step[0], fusion.FusedStep)]


def _pattern(dtype=tf.float32):
    a = tf.placeholder(dtype, [None], name="a")
    b = tf.placeholder(dtype, [None], name="b")
    c = tf.placeholder(dtype, [], name="c")
    return a, b, c, tf.nn.relu(a * b + c) * 0.5


def _run_both(fetches, feed):
    """The fetches with fusion on, then off (a fresh session builds a fresh plan)."""
    results = []
    for enabled in (True, False):
        fusion.ENABLED = enabled
        with tf.Session() as sess:
            results.append(sess.run(fetches, feed))
    fusion.ENABLED = True
    return results


def test_chain_fuses_into_one_step_and_matches_numpy():
    a, b, c, y = _pattern()
    plan = _plan([y], [a, b, c])
    assert _ops(plan) == ["Const", "Fused(Mul,Add,Relu,Mul)"]
    assert plan.steps[-1][4].name == y.op.name
    rng = np.random.default_rng(0)
    feed = {a: rng.standard_normal(N).astype(np.float32), b: rng.standard_normal(N).astype(np.float32),
            c: np.float32(0.25)}
    got, unfused = _run_both(y, feed)
    expect = np.maximum(feed[a] * feed[b] + feed[c], np.float32(0)) * np.float32(0.5)
    assert got.dtype == np.float32 and got.shape == (N,)
    np.testing.assert_array_equal(got, expect)
    np.testing.assert_array_equal(got, unfused)


def test_fused_kernel_runs_only_when_it_pays():
    a, b, c, y = _pattern()
    with tf.Session() as sess:
        small = sess.run(y, {a: [1.0, -2.0], b: [3.0, 1.0], c: 0.5})
        step, = _fused_steps(sess._backend._executor.plan((y.name,), (a.name, b.name, c.name), ()))
        assert step._kernels == {}  # two elements: the unfused kernels ran
        np.testing.assert_allclose(small, [1.75, 0.0])
        sess.run(y, {a: np.ones(N), b: np.ones(N), c: 1.0})
        assert list(step._kernels) == ["aass"]  # a, b: arrays; c, 0.5: scalars


def test_an_output_buffer_is_reused_only_once_nothing_refers_to_it():
    a, b, c, y = _pattern()
    feed = {a: np.ones(N, np.float32), b: np.ones(N, np.float32), c: 1.0}
    with tf.Session() as sess:
        first = sess.run(y, feed)
        view = sess.run(y, feed)[:3]
        third = sess.run(y, feed)
        assert not np.shares_memory(first, third) and not np.shares_memory(view, third)
        address = third.ctypes.data
        del third
        assert sess.run(y, feed).ctypes.data == address
    np.testing.assert_array_equal(first, np.ones(N, np.float32))


def _all_templates(x, y, bias):
    """One tree using every template once, on data where each term is finite."""
    unary = [tf.negative, tf.abs, tf.square, tf.sqrt, tf.rsqrt, tf.reciprocal, tf.nn.relu,
             tf.nn.relu6]
    binary = [tf.add, tf.subtract, tf.multiply, tf.realdiv, tf.maximum, tf.minimum,
              tf.squared_difference]
    terms = [f(x) for f in unary] + [f(x, y) for f in binary] + [tf.nn.bias_add(x, bias)]
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return total


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_every_template_matches_the_unfused_kernels(dtype):
    x = tf.placeholder(dtype, [None, 8])
    y = tf.placeholder(dtype, [None, 8])
    bias = tf.placeholder(dtype, [8])
    out = _all_templates(x, y, bias)
    plan = _plan([out], [x, y, bias])
    assert len(plan.steps) == 1 and plan.steps[0][4].op.startswith("Fused(Neg,")
    assert set(fused.TEMPLATES) <= set(plan.steps[0][4].op[6:-1].split(","))
    rng = np.random.default_rng(1)
    np_dt = dtype.as_numpy_dtype
    feed = {x: rng.uniform(0.5, 2.0, (N // 8, 8)).astype(np_dt),
            y: rng.uniform(-2.0, 2.0, (N // 8, 8)).astype(np_dt), bias: rng.uniform(-2.0, 2.0, 8).astype(np_dt)}
    got, unfused = _run_both(out, feed)
    assert got.dtype == np_dt and got.shape == (N // 8, 8)
    tol = 1e-6 if dtype == tf.float32 else 1e-14  # a few ulp of terms summed in one order
    np.testing.assert_allclose(got, unfused, rtol=tol, atol=tol * 10)


def test_nan_inf_and_zero_division_follow_numpy():
    x = tf.placeholder(tf.float32, [None])
    y = tf.placeholder(tf.float32, [None])
    outs = [tf.nn.relu(tf.maximum(x, y)) - tf.minimum(x, y) / y, tf.sqrt(x) * tf.log(y)]
    assert len(_fused_steps(_plan(outs, [x, y]))) == 2
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0, 1.0, 2.0], np.float32)
    feed = {x: np.tile(special, N // 8), y: np.repeat(special, N // 8)}
    got, unfused = _run_both(outs, feed)
    for g, u in zip(got, unfused):
        np.testing.assert_array_equal(g, u)


def test_ineligible_groups_stay_unfused():
    a, b, c, y = _pattern()
    t = a * b
    fetched_inner = tf.nn.relu(t + 1.0)
    assert "Mul" in _ops(_plan([fetched_inner, t], [a, b]))
    assert _ops(_plan([fetched_inner, t], [a, b]))[-1] == "Fused(Add,Relu)"
    two_users = tf.square(t) + tf.abs(t)
    assert _ops(_plan([two_users], [a, b])) == ["Mul", "Fused(Square,Abs,Add)"]
    i = tf.placeholder(tf.int32, [None])
    assert sorted(_ops(_plan([tf.abs(i * i + 1)], [i]))) == ["Abs", "Add", "Const", "Mul"]
    h = tf.placeholder(tf.float16, [None])
    assert "Fused" not in "".join(_ops(_plan([tf.abs(h * h)], [h])))
    # Transcendental functions stay kernels of their own (numpy's are vectorized).
    assert _ops(_plan([tf.exp(t) + 1.0], [a, b]))[-2:] == ["Exp", "Add"]


def test_a_consumer_on_another_device_keeps_the_intermediate():
    a = tf.placeholder(tf.float32, [None])
    t = tf.square(a)
    y = tf.nn.relu(t * 2.0)
    send = NodeDef("send_t", "_Send", [t.name], attrs={"key": "t", "recv_task": "other"})
    assert sorted(_ops(_plan([y], [a], extra=[send]))) == ["Const", "Fused(Mul,Relu)", "Square", "_Send"]
    with tf.device("/job:localhost/replica:0/task:0/device:CPU:1"):
        z = tf.nn.relu(t + 1.0)
    assert sorted(_ops(_plan([z], [a]))) == ["Const", "Fused(Add,Relu)", "Square"]


def test_rows_broadcast_in_the_kernel():
    m = tf.placeholder(tf.float32, [None, 2, 4])
    v = tf.placeholder(tf.float32, [2, 4])
    w = tf.placeholder(tf.float32, [2, 4])
    y = tf.nn.relu(m * v + w) - 1.0
    rng = np.random.default_rng(3)
    feed = {m: rng.standard_normal((N, 2, 4)).astype(np.float32),
            v: rng.standard_normal((2, 4)).astype(np.float32), w: rng.standard_normal((2, 4)).astype(np.float32)}
    with tf.Session() as sess:
        got = sess.run(y, feed)
        step, = _fused_steps(sess._backend._executor.plan((y.name,), (m.name, v.name, w.name), ()))
    assert list(step._kernels) == ["arrs"]
    np.testing.assert_array_equal(got, np.maximum(feed[m] * feed[v] + feed[w], 0) - 1)


def test_broadcasting_beyond_scalars_and_rows_runs_unfused():
    m = tf.placeholder(tf.float32, [None, 4])
    v = tf.placeholder(tf.float32, [None, 1])
    y = tf.nn.relu(m * v + 1.0)
    feed = {m: np.arange(N * 4, dtype=np.float32).reshape(N, 4) - 2000,
            v: np.linspace(-1, 1, N, dtype=np.float32)[:, None]}
    with tf.Session() as sess:
        got = sess.run(y, feed)
        step, = _fused_steps(sess._backend._executor.plan((y.name,), (m.name, v.name), ()))
    assert step._kernels == {}
    np.testing.assert_array_equal(got, np.maximum(feed[m] * feed[v] + 1, 0))


def test_gradients_through_a_fused_chain():
    a, b, c, y = _pattern()
    loss = tf.reduce_sum(y)
    ga, gc = tf.gradients(loss, [a, c])
    rng = np.random.default_rng(2)
    feed = {a: rng.standard_normal(N).astype(np.float32), b: rng.standard_normal(N).astype(np.float32),
            c: np.float32(0.1)}
    (fa, fc), (ua, uc) = _run_both([ga, gc], feed)
    active = (feed[a] * feed[b] + feed[c]) > 0
    np.testing.assert_allclose(fa, 0.5 * feed[b] * active, rtol=1e-6)
    np.testing.assert_array_equal(fa, ua)
    np.testing.assert_allclose(fc, uc, rtol=1e-5)


def test_errors_name_the_failing_op():
    a, b, c, y = _pattern()
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError) as info:
            sess.run(y, {a: np.ones(N, np.float32), b: np.ones(N + 1, np.float32), c: 0.0})
    assert info.value.message.startswith('Mul "mul": ')


def test_generated_source_comes_from_templates_only():
    text = fused.source("float32", "as", (("Mul", (0, 1)), ("Relu", (2,))))
    assert "t0 = x0[i] * s1" in text and "out[i] = t1" in text
    assert "parallel=False" in fused.source("float32", "as", (("Neg", (0,)),), parallel=False)
    rows = fused.source("float32", "ar", (("Add", (0, 1)),))
    assert "cols = x1.shape[0]" in rows and "t0 = x0[i] + x1[c]" in rows
    in_place = fused.source("float32", "ro", (("Add", (1, 0)),), parallel=False)
    assert "def kernel(out, x0):" in in_place and "t0 = out[i] + x0[c]" in in_place
    for bad in [(("Mul; import os", (0, 1)),), (("Mul", (0, 5)),), (("Mul", ("x0", 1)),),
                (("Relu", (0, 1)),)]:
        with pytest.raises((KeyError, ValueError)):
            fused.source("float32", "as", bad)
    with pytest.raises(ValueError):
        fused.source("float32", "a;", (("Neg", (0,)),))
    with pytest.raises(KeyError):
        fused.source("object", "a", (("Neg", (0,)),))


_CHILD = textwrap.dedent("""
    import json, time
    import numpy as np
    import dtf as tf
    from dtf.runtime import fusion
    from dtf.kernels.cpu import fused
    fusion.MIN_ELEMENTS = 64
    x = tf.placeholder(tf.float32, [None])
    y = tf.tanh(x * x + 1.0)
    with tf.Session() as sess:
        start = time.perf_counter()
        sess.run(y, {x: np.ones(1000, np.float32)})
        first = time.perf_counter() - start
    hits = sum(sum(k.stats.cache_hits.values()) for k in fused._loaded.values())
    misses = sum(sum(k.stats.cache_misses.values()) for k in fused._loaded.values())
    print(json.dumps({"hits": hits, "misses": misses, "first": first}))
""")


def test_second_process_loads_the_kernel_from_disk(tmp_path):
    env = dict(os.environ, DTF_CACHE_DIR=str(tmp_path), PYTHONPATH=ROOT, DTF_JIT_BACKGROUND="0")

    def child():
        done = subprocess.run([sys.executable, "-c", _CHILD], env=env, cwd=ROOT, capture_output=True,
                              text=True, timeout=90, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])

    first, second = child(), child()
    assert (first["hits"], first["misses"]) == (0, 1)
    assert (second["hits"], second["misses"]) == (1, 0)
    assert len(list((tmp_path / "fused").glob("dtf_fused_*.py"))) == 1
