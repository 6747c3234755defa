"""Graphs with tf.cond / tf.case / tf.while_loop (and their gradients) as GraphDefs: TF's
functional If/While over FunctionDefs in the GraphDef's library, read back by dtf's own
import_graph_def / import_meta_graph with the same values. (That real TensorFlow runs the
same GraphDefs is tests/unit/test_tf_imports_dtf_graphs.py.)"""
from __future__ import annotations

import numpy as np
import pytest

import dtf as tf
from dtf.framework import graph_pb as pb
from dtf.framework.function_def import (FunctionLibrary, add_function, output_index,
                                        output_names)


@pytest.fixture(autouse=True)
def _fresh_graph():
    with tf.Graph().as_default():
        yield


# -- the FunctionDef machinery ----------------------------------------------------------------
def test_output_names_are_tf_op_def_argument_names():
    assert output_names("MatMul", {}, 1) == ["product:0"]
    assert output_names("Split", {"num_split": 3}, 3) == ["output:0", "output:1", "output:2"]
    assert output_names("Unique", {}, 2) == ["y:0", "idx:0"]
    assert output_names("If", {"Tout": [tf.float32, tf.int32]}, 2) == ["output:0", "output:1"]
    assert output_index("Unique", {}, "idx", 0) == 1
    assert output_index("Split", {"num_split": 3}, "output", 2) == 2
    assert output_names("_Arg", {}, 1) == ["output:0"]  # an op TF lacks: one list argument
    with pytest.raises(ValueError, match="Unique has no output argument 'z'"):
        output_index("Unique", {}, "z", 0)
    with pytest.raises(ValueError, match="gives 1 outputs"):
        output_names("MatMul", {}, 2)


def test_a_function_of_node_dicts_names_tensors_tf_s_way():
    x = tf.placeholder(tf.float32, [2, 2], name="x")
    y = tf.matmul(x, x, name="mm")
    a, b = tf.split(y, 2, name="sp")
    nodes = [_node_dict(op) for op in tf.get_default_graph().get_operations()]
    library = FunctionLibrary()
    name = add_function(library, "my fn", nodes, [("x", tf.float32)], [b.name])
    fdef = library.get(name)
    assert name == "my_fn"
    assert [a.name for a in fdef.signature.input_arg] == ["x"]
    assert {n.name: list(n.input) for n in fdef.node_def}["mm"] == ["x", "x"]
    assert fdef.ret["output_0"] == "sp:output:1"
    assert "x" not in {n.name for n in fdef.node_def}  # the placeholder is the argument
    with pytest.raises(ValueError, match="defined twice"):
        other = pb.FunctionDef.FromString(fdef.SerializeToString())
        other.signature.description = "changed"
        library.add(other)
    with pytest.raises(KeyError, match="not in the GraphDef's library"):
        library.get("missing")


def _node_dict(op):
    from dtf.framework.graph_def import node_def_of

    return node_def_of(op).to_dict()


# -- round trips through dtf ------------------------------------------------------------------
def _round_trip(fetches, feeds_list, init=True):
    """Runs ``fetches`` here and after exporting and importing the graph; same values."""
    graph = tf.get_default_graph()
    gd = pb.GraphDef.FromString(graph.as_graph_def().SerializeToString())
    names = [t.name for t in fetches]
    with tf.Session() as sess:
        if init:
            sess.run(tf.global_variables_initializer())
        want = [sess.run(names, f) for f in feeds_list]
    with tf.Graph().as_default():
        tf.import_graph_def(gd, name="")
        with tf.Session() as sess:
            if init:
                sess.run("init")
            got = [sess.run(names, f) for f in feeds_list]
    for w, g in zip(want, got):
        for a, b, n in zip(w, g, names):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6, err_msg=n)
    return gd


def test_cond_case_and_while_with_gradients_round_trip():
    x = tf.placeholder(tf.float32, [3], name="x")
    w = tf.Variable([1.0, -2.0, 0.5], name="w")
    tf.global_variables_initializer()  # named "init"
    s = tf.reduce_sum(x)
    picked = tf.case([(s < 0, lambda: -x * w), (s < 10, lambda: x * x * w)],
                     default=lambda: tf.sin(x), name="picked")

    def body(i, a):
        return i + 1, tf.cond(tf.equal(i % 2, 0), lambda: a * w, lambda: tf.tanh(a) + x)

    _, looped = tf.while_loop(lambda i, a: i < 5, body, [tf.constant(0), x], name="loop")
    loss = tf.reduce_sum(picked) + tf.reduce_sum(looped * looped)
    gx, gw = tf.gradients(loss, [x, w])
    gd = _round_trip([picked, looped, gx, gw], [{"x:0": [0.5, 1.0, 2.0]}, {"x:0": [-3.0, 1.0, 0.5]},
                                                {"x:0": [5.0, 6.0, 7.0]}])
    ops = {n.op for n in gd.node}
    assert {"If", "While"} <= ops and "_WhileGrad" not in ops
    called = {n.attr[k].func.name for n in gd.node for k in ("then_branch", "else_branch", "cond", "body")
              if k in n.attr}
    assert called <= {f.signature.name for f in gd.library.function}


def test_gradients_of_loops_nested_in_a_cond_and_a_loop_round_trip():
    x = tf.placeholder(tf.float32, [3], name="x")
    p = tf.placeholder(tf.bool, [], name="p")
    w = tf.constant([0.5, -1.0, 2.0])

    def loop(a):
        return tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, tf.sin(a * w) + x), [0, a])[1]

    c = tf.cond(p, lambda: loop(x * 2.0), lambda: x * x)

    def outer_body(j, a):
        inner = tf.while_loop(lambda i, b: i < 2, lambda i, b: (i + 1, tf.tanh(b * a + w)), [0, a])[1]
        return j + 1, inner * 0.5 + x

    _, nested = tf.while_loop(lambda j, a: j < 3, outer_body, [0, x])
    gx = tf.gradients(tf.reduce_sum(c * c) + tf.reduce_sum(nested), x)[0]
    _round_trip([c, nested, gx], [{"x:0": [0.5, 1.0, 2.0], "p:0": True},
                                  {"x:0": [0.5, 1.0, 2.0], "p:0": False}], init=False)


def test_a_loop_that_never_runs_gives_zero_gradients_after_import():
    x = tf.placeholder(tf.float32, [2], name="x")
    n = tf.placeholder(tf.int32, [], name="n")
    w = tf.constant([2.0, 3.0], name="w")
    _, y = tf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * w + x), [0, x])
    g = tf.gradients(tf.reduce_sum(y), [x])[0]
    _round_trip([y, g], [{"x:0": [1.0, 2.0], "n:0": 0}, {"x:0": [1.0, 2.0], "n:0": 3}], init=False)


def test_batch_norm_with_a_tensor_training_flag_round_trips_its_updates():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    training = tf.placeholder(tf.bool, [], name="training")
    y = tf.layers.batch_normalization(x, training=training, name="bn")
    tf.global_variables_initializer()
    gd = tf.get_default_graph().as_graph_def()
    feed = {"x:0": [[1.0, 2.0], [3.0, 5.0]], "training:0": True}
    with tf.Graph().as_default():
        tf.import_graph_def(gd, name="")
        update = tf.get_default_graph().get_operation_by_name("bn/cond_2")
        with tf.Session() as sess:
            sess.run("init")
            sess.run(update.outputs[0], feed)
            mean = sess.run("bn/moving_mean:0")
            sess.run(update.outputs[0], dict(feed, **{"training:0": False}))
            assert np.allclose(sess.run("bn/moving_mean:0"), mean)  # not training: no update
    np.testing.assert_allclose(mean, 0.01 * np.array([2.0, 3.5]), rtol=1e-5)


def test_a_restored_meta_graph_with_a_while_loop_trains_on(tmp_path):
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    w = tf.get_variable("w", [2, 2], initializer=tf.constant_initializer([[0.5, -0.2], [0.1, 0.3]]))

    def body(i, h):
        return i + 1, tf.tanh(tf.matmul(h, w) + x)

    _, h = tf.while_loop(lambda i, h: i < 3, body, [tf.constant(0), x], name="rnn")
    loss = tf.reduce_mean(tf.square(h - 1.0), name="loss")
    train = tf.train.GradientDescentOptimizer(0.3).minimize(loss, name="train")
    feed = {"x:0": np.asarray([[0.1, 0.2], [0.3, -0.4]], np.float32)}
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "model"))
        want = []
        for _ in range(3):
            sess.run(train, feed)
            want.append(sess.run(loss, feed))
    with tf.Graph().as_default():
        saver = tf.train.import_meta_graph(path + ".meta")
        train = tf.get_default_graph().get_operation_by_name("train")
        with tf.Session() as sess:
            saver.restore(sess, path)
            got = []
            for _ in range(3):
                sess.run(train, feed)
                got.append(sess.run("loss:0", feed))
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert got[-1] < got[0]


def test_write_graph_as_text_and_frozen_graphs_keep_the_functions(tmp_path):
    x = tf.placeholder(tf.float32, [], name="x")
    v = tf.Variable(3.0, name="v")
    y = tf.cond(x > 0, lambda: x * v, lambda: x - v, name="y")
    path = tf.train.write_graph(tf.get_default_graph(), str(tmp_path), "g.pbtxt", as_text=True)
    from dtf.framework.prototext import from_text

    text_gd = from_text(pb.GraphDef, open(path).read())
    assert len(text_gd.library.function) == 2
    with tf.Session() as sess:
        sess.run(v.initializer)
        frozen = tf.graph_util.convert_variables_to_constants(
            sess, tf.get_default_graph().as_graph_def(), ["y"])
        want = sess.run(y, {x: 2.0})
    assert len(frozen.library.function) == 2
    with tf.Graph().as_default():
        tf.import_graph_def(frozen, name="")
        with tf.Session() as sess:
            assert sess.run("y:0", {"x:0": 2.0}) == want == 6.0


def test_a_loop_body_that_assigns_a_variable_says_it_cannot_export():
    v = tf.Variable(0.0, name="v")

    def body(i):
        with tf.control_dependencies([tf.assign_add(v, 1.0)]):
            return i + 1

    tf.while_loop(lambda i: i < 3, body, [tf.constant(0)])
    with pytest.raises(TypeError, match="^While 'while': its body updates the captured variable"):
        tf.get_default_graph().as_graph_def()
    # a picture of the graph (TensorBoard's) still shows it, without the bodies
    from dtf.framework.graph_io import graph_def

    picture = graph_def(tf.get_default_graph(), skip_unencodable=True)
    assert "While" in {n.op for n in picture.node} and not picture.library.function


def test_tensor_arrays_in_loops_round_trip_through_dtf():
    """dynamic_rnn and map_fn keep dtf's own TensorArray ops (TF has none of that name):
    their graphs travel between dtf programs."""
    x = tf.placeholder(tf.float32, [2, 4, 3], name="x")
    with tf.variable_scope("net", initializer=tf.constant_initializer(0.3)):
        out, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicRNNCell(3), x, dtype=tf.float32)
    doubled = tf.map_fn(lambda r: r * 2.0, x[0])
    tf.global_variables_initializer()
    feed = {"x:0": np.random.RandomState(0).randn(2, 4, 3).astype(np.float32)}
    _round_trip([out, doubled], [feed])


def test_initialized_value_exports_as_tf_s_cond_and_reads_back():
    v = tf.Variable([1.0, 2.0], name="v")
    w = tf.Variable(v.initialized_value() * 2.0, name="w")
    tf.global_variables_initializer()
    gd = tf.get_default_graph().as_graph_def()
    ops = {n.name: n.op for n in gd.node}
    assert ops["v/ValueOrInitial"] == "Merge" and "ValueOrInitial" not in ops.values()
    with tf.Graph().as_default():
        tf.import_graph_def(gd, name="")
        assert tf.get_default_graph().get_operation_by_name("v/ValueOrInitial").type == "ValueOrInitial"
        with tf.Session() as sess:
            sess.run("init")
            np.testing.assert_allclose(sess.run(w.name), [2.0, 4.0])


def test_tf1_dataflow_merge_is_refused_by_name():
    gd = pb.GraphDef()
    gd.node.add(name="p", op="Placeholder").attr["dtype"].type = 10
    for name in ("a", "b"):
        n = gd.node.add(name=name, op="Placeholder")
        n.attr["dtype"].type = 1
    m = gd.node.add(name="m", op="Merge", input=["a", "b"])
    m.attr["T"].type = 1
    m.attr["N"].i = 2
    with pytest.raises(ValueError, match="node 'm' \\(Merge\\).*initialized_value"):
        tf.import_graph_def(gd, name="")
