"""GraphDef in TF's protobuf wire format: dtf graphs out (as_graph_def, node_def,
write_graph, freezing) and TF's graphs in (import_graph_def), checked against a frozen
graph and outputs recorded by real TF (tests/fixtures/tf/make_fixtures.py)."""
import json
import os

import numpy as np
import pytest

import dtf as tf
from dtf.framework import graph_pb
from tests.tf_subprocess import run_tf

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "tf")


def _tf_frozen():
    with open(os.path.join(FIXTURES, "frozen.pb"), "rb") as f:
        gd = tf.GraphDef()
        gd.ParseFromString(f.read())
    return gd, np.load(os.path.join(FIXTURES, "frozen_io.npz"))


def test_tf_frozen_graph_imports_and_computes_what_tf_computed():
    gd, io = _tf_frozen()
    probs, label = tf.import_graph_def(gd, return_elements=["probs:0", "label:0"])
    assert probs.name == "import/probs:0" and label.dtype == tf.int64
    graph = tf.get_default_graph()
    assert graph.get_operation_by_name("import/Conv2D").get_attr("padding") == "SAME"
    with tf.Session() as sess:
        p, l = sess.run([probs, label], {"import/images:0": io["images"]})
    np.testing.assert_allclose(p, io["probs"], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(l, io["label"])


def test_input_map_and_return_operations():
    gd, io = _tf_frozen()
    images = tf.constant(io["images"])
    probs, op = tf.import_graph_def(gd, input_map={"images:0": images},
                                    return_elements=["probs:0", "label"], name="net")
    assert isinstance(op, tf.Operation) and op.name == "net/label"
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(probs), io["probs"], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="not found in graph_def"):
        tf.import_graph_def(gd, input_map={"nope:0": images})
    with pytest.raises(ValueError, match="not found in graph_def"):
        tf.import_graph_def(gd, return_elements=["missing:0"])


def test_unknown_op_type_names_the_node():
    gd = graph_pb.GraphDef()
    gd.node.add(name="weird", op="NoSuchTFOp")
    with pytest.raises(ValueError, match="node 'weird' has op type 'NoSuchTFOp'"):
        tf.import_graph_def(gd)
    gd = graph_pb.GraphDef()
    gd.node.add(name="y", op="Identity", input=["ghost"])
    with pytest.raises(ValueError, match="node 'y': input 'ghost'"):
        tf.import_graph_def(gd)


def test_nodes_in_any_order_and_control_inputs():
    a = tf.constant(2.0, name="a")
    b = tf.multiply(a, 3.0, name="b")
    with tf.control_dependencies([b]):
        c = tf.identity(a, name="c")
    gd = tf.get_default_graph().as_graph_def()
    reversed_gd = graph_pb.GraphDef(node=list(reversed(gd.node)))
    with tf.Graph().as_default():
        (c2,) = tf.import_graph_def(reversed_gd, return_elements=["c:0"], name="")
        assert c2.name == "c:0" and [op.name for op in c2.op.control_inputs] == ["b"]
        with tf.Session() as sess:
            assert sess.run(c2) == 2.0


def test_node_def_and_graph_def_protos():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    with tf.device("/job:worker/task:1"):
        s = tf.reduce_sum(x, axis=1, keepdims=True, name="s")
    nd = s.op.node_def
    axis = s.op.inputs[1].op.name
    assert (nd.name, nd.op, list(nd.input)) == ("s", "Sum", ["x", axis])
    assert nd.device == "/job:worker/task:1"
    assert nd.attr["keep_dims"].b is True and nd.attr["T"].type == 1  # DT_FLOAT
    gd = tf.get_default_graph().as_graph_def()
    again = tf.GraphDef.FromString(gd.SerializeToString())
    assert [n.name for n in again.node] == ["x", axis, "s"]
    shape = again.node[0].attr["shape"].shape
    assert [d.size for d in shape.dim] == [-1, 3]


def test_frozen_dtf_graph_serves_in_a_fresh_graph(tmp_path):
    rs = np.random.RandomState(0)
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(rs.randn(3, 2).astype(np.float32), name="w")
    y = tf.nn.softmax(tf.matmul(x, w) + 0.5, name="y")
    tf.argmax(y, 1, name="label")
    feed = rs.randn(4, 3).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        want = sess.run(y, {x: feed})
        frozen = tf.graph_util.convert_variables_to_constants(
            sess, tf.get_default_graph().as_graph_def(), ["y", "label"])
    assert "VariableV2" not in {n.op for n in frozen.node}
    path = tf.train.write_graph(frozen, str(tmp_path), "frozen.pb", as_text=False)
    with tf.Graph().as_default():
        gd = tf.GraphDef()
        gd.ParseFromString(open(path, "rb").read())
        (y2,) = tf.import_graph_def(gd, return_elements=["y:0"], name="")
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(y2, {"x:0": feed}), want, rtol=1e-6)


def test_extract_sub_graph():
    a = tf.constant(1.0, name="a")
    b = tf.add(a, 1.0, name="b")
    tf.add(a, 2.0, name="unrelated")
    sub = tf.graph_util.extract_sub_graph(tf.get_default_graph().as_graph_def(), ["b"])
    assert [n.name for n in sub.node] == ["a", "b/y", "b"]
    with pytest.raises(AssertionError, match="nope is not in graph"):
        tf.graph_util.extract_sub_graph(sub, ["nope"])
    with pytest.raises(TypeError):
        tf.graph_util.extract_sub_graph(sub, "b")
    del b


def test_write_graph_text_and_binary_read_by_tf(tmp_path):
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    tf.identity(x * tf.constant([2.0, 3.0]) + tf.constant(["s\n\xff"]).shape[0].value, name="y")
    text = tf.train.write_graph(tf.get_default_graph(), str(tmp_path), "g.pbtxt")
    binary = tf.train.write_graph(tf.get_default_graph(), str(tmp_path), "g.pb", as_text=False)
    assert 'op: "Placeholder"' in open(text).read()
    out = run_tf("""
        from google.protobuf import text_format
        a = text_format.Parse(open(sys.argv[1]).read(), tf.GraphDef())
        b = tf.GraphDef(); b.ParseFromString(open(sys.argv[2], "rb").read())
        assert a == b, "text and binary differ"
        y, = tf.import_graph_def(b, return_elements=["y:0"], name="")
        with tf.Session() as sess:
            print(json.dumps(sess.run(y, {"x:0": [[1.0, 1.0]]}).tolist()))
        """, text, binary)
    assert json.loads(out) == [[3.0, 4.0]]


def test_graph_in_tf_event_file_imports_with_devices():
    from dtf.summary import summary_iterator

    (path,) = [os.path.join(FIXTURES, "events", f) for f in os.listdir(os.path.join(FIXTURES, "events"))]
    (event,) = [e for e in summary_iterator(path) if e.WhichOneof("what") == "graph_def"]
    gd = tf.GraphDef.FromString(event.graph_def)
    (total,) = tf.import_graph_def(gd, return_elements=["total:0"], name="")
    assert total.op.device == "/job:worker/task:0"
    for node in gd.node:  # no /job:worker in a local session (as in TF)
        node.device = ""
    with tf.Graph().as_default():
        (total,) = tf.import_graph_def(gd, return_elements=["total:0"], name="local")
        with tf.Session() as sess:
            assert sess.run(total, {"local/x:0": [[1.0, 2.0]]}) == 6.0


def test_file_writer_graph_is_read_by_tf(tmp_path):
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    with tf.device("/job:ps/task:0"):
        tf.reduce_sum(x * 2.0, name="total")
    # an attr no GraphDef can hold is left out of TensorBoard's picture, not fatal
    tf.get_default_graph().create_op("NoOp", [], name="odd", attrs={"py": object()})
    with pytest.raises(TypeError, match="'odd'"):
        tf.get_default_graph().as_graph_def()
    writer = tf.summary.FileWriter(str(tmp_path), graph=tf.get_default_graph())
    writer.close()
    out = run_tf("""
        import glob
        (path,) = glob.glob(sys.argv[1] + "/events.out.tfevents.*")
        graphs = [e.graph_def for e in tf.train.summary_iterator(path) if e.HasField("graph_def")]
        gd = tf.GraphDef.FromString(graphs[0])
        nodes = {n.name: n for n in gd.node}
        print(json.dumps({"device": nodes["total"].device, "T": nodes["total"].attr["T"].type,
                          "odd": list(nodes["odd"].attr)}))
        """, tmp_path)
    assert json.loads(out) == {"device": "/job:ps/task:0", "T": 1, "odd": ["_output_shapes"]}


def test_tf_training_graph_imports_and_trains_as_tf_trained():
    # ShapeN and ConcatOffset (in TF's conv and concat gradients) are built from dtf ops.
    with open(os.path.join(FIXTURES, "train_graph.pb"), "rb") as f:
        gd = tf.GraphDef.FromString(f.read())
    io = np.load(os.path.join(FIXTURES, "train_io.npz"))
    assert {"ShapeN", "ConcatOffset", "AddV2"} <= {n.op for n in gd.node}
    tf.import_graph_def(gd, name="")
    feed = {"x:0": io["x"], "labels:0": io["labels"]}
    with tf.Session() as sess:
        sess.run("init")
        losses = [sess.run(["train", "loss:0"], feed)[1] for _ in range(5)]
    np.testing.assert_allclose(losses, io["losses"], rtol=1e-4)


def test_add_shapes_records_output_shapes():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    tf.reduce_sum(x, 1, name="s")
    tf.placeholder(tf.float32, name="anything")
    nodes = {n.name: n for n in tf.get_default_graph().as_graph_def(add_shapes=True).node}
    (shape,) = nodes["s"].attr["_output_shapes"].list.shape
    assert [d.size for d in shape.dim] == [-1]
    assert nodes["anything"].attr["_output_shapes"].list.shape[0].unknown_rank
    assert "_output_shapes" not in tf.get_default_graph().as_graph_def().node[0].attr


def test_tf_text_format_graph_parses_as_its_binary_twin():
    from dtf.framework.prototext import from_text

    binary, _ = _tf_frozen()
    with open(os.path.join(FIXTURES, "frozen.pbtxt")) as f:
        text = from_text(tf.GraphDef, f.read())
    assert text == binary
    assert from_text(tf.GraphDef, str(binary)) == binary  # and dtf's own text round-trips


def test_mangled_protobuf_bytes_are_decode_errors_never_another_error():
    from dtf.framework.protowire import DecodeError
    from tests.mangle import mangled

    data = open(os.path.join(FIXTURES, "meta_ckpt", "model-2.meta"), "rb").read()
    for raw in mangled(data, 300, seed=0, max_flips=5):
        try:
            tf.MetaGraphDef.FromString(raw)
        except DecodeError:
            pass


def test_make_tensor_proto_and_make_ndarray():
    proto = tf.make_tensor_proto(3, shape=[2, 2])
    assert proto.dtype == 3 and tf.make_ndarray(proto).tolist() == [[3, 3], [3, 3]]
    assert tf.make_ndarray(tf.make_tensor_proto([1, 2, 3], shape=[2, 2])).tolist() == [[1, 2], [3, 3]]
    assert tf.make_ndarray(tf.make_tensor_proto([1, 2], dtype=tf.float32)).dtype == np.float32
    assert tf.make_ndarray(tf.make_tensor_proto(["a", b"b"])).tolist() == [b"a", b"b"]
    with pytest.raises(TypeError, match="Expected int32"):
        tf.make_tensor_proto(1.5, dtype=tf.int32)
    with pytest.raises(TypeError, match="Expected Tensor's shape"):
        tf.make_tensor_proto([1, 2], shape=[3], verify_shape=True)
    with pytest.raises(NotImplementedError, match="allow_broadcast"):
        tf.make_tensor_proto([1, 2], shape=[4], allow_broadcast=True)
    # TF's encoding for a partly filled value (int_val: 3 only) reads back filled
    sparse = graph_pb.TensorProto(dtype=3, int_val=[3])
    sparse.tensor_shape.dim.add(size=3)
    assert tf.make_ndarray(sparse).tolist() == [3, 3, 3]
