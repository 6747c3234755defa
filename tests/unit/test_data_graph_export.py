"""tf.data pipelines in TF's GraphDef form: dtf writes one node per dataset stage with TF
1.15's op types and attrs (as real TF writes them, checked against TF in
test_tf_imports_dtf_graphs.py), and reads such nodes back into a pipeline that iterates
the same elements."""
from __future__ import annotations

import numpy as np
import pytest

import dtf as tf
from dtf.framework import graph_io

Dataset = tf.data.Dataset


def _drain(sess, fetches, limit=1000):
    out = []
    for _ in range(limit):
        try:
            out.append(sess.run(fetches))
        except tf.errors.OutOfRangeError:
            return out
    raise AssertionError("the iterator did not end")


def _flat(values):
    if isinstance(values, (list, tuple)):
        return [leaf for v in values for leaf in _flat(v)]
    return [np.asarray(values).tolist()]


def _same(a, b):
    assert [_flat(x) for x in a] == [_flat(x) for x in b]


def _pipeline():
    p = tf.placeholder(tf.float32, [None, 2], name="p")
    with tf.name_scope("input"):
        ds = Dataset.from_tensor_slices((p, tf.constant([1, 2, 3])))
        ds = ds.concatenate(Dataset.from_tensors((tf.constant([7.0, 8.0]), 4)))
        ds = ds.shuffle(10, seed=3).repeat(2).batch(3).prefetch(1).unbatch().take(7).skip(1)
        ds = Dataset.zip((ds, Dataset.range(100).shard(3, 1)))
        ds = ds.padded_batch(2, (([4], []), []), padding_values=((-1.0, 0), np.int64(0)))
    return p, ds


FEED = np.array([[1, 2], [3, 4], [5, 6]], np.float32)


def test_stages_export_as_tf_nodes_and_import_back_to_the_same_elements():
    with tf.Graph().as_default() as g:
        p, ds = _pipeline()
        it = tf.data.make_initializable_iterator(ds)
        nxt = it.get_next()
        with tf.Session() as sess:
            sess.run(it.initializer, {p: FEED})
            want = _drain(sess, nxt)
        gd = g.as_graph_def()
    nodes = {n.name: n for n in gd.node}
    assert [n.op for n in gd.node if n.op.endswith("Dataset") or "DatasetV" in n.op] == [
        "TensorSliceDataset", "TensorDataset", "ConcatenateDataset", "ShuffleDataset",
        "RepeatDataset", "BatchDatasetV2", "PrefetchDataset", "UnbatchDataset", "TakeDataset",
        "SkipDataset", "RangeDataset", "ShardDataset", "ZipDataset", "PaddedBatchDatasetV2"]
    make = nodes["MakeIterator"]
    assert make.op == "MakeIterator"
    assert list(make.input) == ["input/PaddedBatchDatasetV2", "Iterator"]
    batch = nodes["input/BatchDatasetV2"]
    assert list(batch.input) == ["input/RepeatDataset",
                                 "input/batch_size", "input/drop_remainder"]
    attrs = {k: graph_io.attr_python(v) for k, v in batch.attr.items()}
    assert attrs["output_types"] == [tf.float32, tf.int32]
    assert attrs["output_shapes"] == [[None, 2], [None]]
    shuffle = nodes["input/ShuffleDataset"]
    assert list(shuffle.input)[2:] == ["input/seed", "input/seed2"]
    assert graph_io.attr_python(shuffle.attr["reshuffle_each_iteration"]) is True
    assert nodes["input/TensorSliceDataset"].attr["Toutput_types"].list.type == [1, 3]

    with tf.Graph().as_default() as g2:
        tf.import_graph_def(gd, name="imp")
        init = g2.get_operation_by_name("imp/MakeIterator")
        got_nxt = [g2.get_tensor_by_name(f"imp/IteratorGetNext:{i}") for i in range(3)]
        with tf.Session() as sess:
            sess.run(init, {"imp/p:0": FEED})
            got = _drain(sess, got_nxt)
        # and out again: the re-export has the same stages
        again = [n.op for n in g2.as_graph_def().node if "Dataset" in n.op]
    _same(got, want)
    assert again == [n.op for n in gd.node if "Dataset" in n.op]


def test_reinitializable_and_feedable_iterators_travel_through_a_meta_graph(tmp_path):
    with tf.Graph().as_default():
        train = Dataset.range(10).batch(4)
        valid = Dataset.from_tensor_slices(np.array([-1, -2, -3], np.int64)).batch(2)
        it = tf.data.Iterator.from_structure(train.output_types, train.output_shapes)
        x = it.get_next(name="x")
        init_train, init_valid = it.make_initializer(train), it.make_initializer(valid)
        assert (init_train.name, init_valid.name) == ("make_initializer", "make_initializer_1")
        handle = tf.placeholder(tf.string, [], name="handle")
        feedable = tf.data.Iterator.from_string_handle(handle, train.output_types, train.output_shapes)
        y = tf.identity(feedable.get_next(), name="y")
        h = it.string_handle(name="h")
        tf.train.export_meta_graph(str(tmp_path / "m.meta"))
    with tf.Graph().as_default() as g:
        tf.train.import_meta_graph(str(tmp_path / "m.meta"))
        with tf.Session() as sess:
            sess.run("make_initializer")
            assert _drain(sess, "x:0")[0].tolist() == [0, 1, 2, 3]
            sess.run("make_initializer_1")
            assert sess.run("x:0").tolist() == [-1, -2]
            text = sess.run("h:0")
            assert sess.run("y:0", {"handle:0": text}).tolist() == [-3]
        assert g.get_operation_by_name("make_initializer").type == "MakeIterator"
        # and as write_graph's text and binary files, read back
        for as_text in (True, False):
            path = tf.train.write_graph(g, str(tmp_path), f"g{as_text:d}", as_text=as_text)
            with tf.Graph().as_default():
                if as_text:
                    from dtf.framework import graph_pb as pb
                    from dtf.framework import prototext

                    gd = prototext.from_text(pb.GraphDef, open(path).read())
                else:
                    gd = tf.GraphDef.FromString(open(path, "rb").read())
                tf.import_graph_def(gd, name="")
                with tf.Session() as sess:
                    sess.run("make_initializer")
                    assert sess.run("x:0").tolist() == [0, 1, 2, 3]


def test_file_readers_export_with_their_static_arguments(tmp_path):
    path = str(tmp_path / "r.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        for i in range(5):
            w.write(f"rec{i}".encode())
    lines = tmp_path / "l.txt"
    lines.write_text("a\nbb\nccc\n")
    with tf.Graph().as_default() as g:
        ds = Dataset.zip((tf.data.TFRecordDataset([path]).take(3),
                          tf.data.TextLineDataset(str(lines)))).cache()
        it = tf.data.make_initializable_iterator(ds)
        nxt = it.get_next()
        with tf.Session() as sess:
            sess.run(it.initializer)
            want = _drain(sess, nxt)
        gd = g.as_graph_def()
    rec = next(n for n in gd.node if n.op == "TFRecordDataset")
    assert len(rec.input) == 3  # filenames, compression_type, buffer_size
    with tf.Graph().as_default() as g2:
        tf.import_graph_def(gd, name="")
        with tf.Session() as sess:
            sess.run("MakeIterator")
            got = _drain(sess, ["IteratorGetNext:0", "IteratorGetNext:1"])
    _same(got, want)
    assert [x[1] for x in got] == [b"a", b"bb", b"ccc"]


def test_unexportable_pipelines_and_unreadable_nodes_say_why():
    with tf.Graph().as_default() as g:
        ds = Dataset.from_generator(lambda: iter([1, 2]), tf.int64)
        tf.data.make_initializable_iterator(ds)
        with pytest.raises(TypeError, match=r"MakeIterator.*from_generator"):
            g.as_graph_def()
        # a picture of the graph (TensorBoard) still comes out
        assert any(n.op == "MakeIterator" for n in graph_io.graph_def(g, skip_unencodable=True).node)

    with tf.Graph().as_default() as g:
        n = tf.placeholder(tf.int64, [], name="n")
        tf.data.make_initializable_iterator(Dataset.range(n).batch(2))
        gd = g.as_graph_def()
    drop = next(x for x in gd.node if x.name == "drop_remainder")
    drop.op = "Identity"  # a runtime drop_remainder: dtf needs it when building the graph
    drop.input.append("n")
    del drop.attr["value"]
    drop.attr["T"].type = 9
    del drop.attr["dtype"]
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"BatchDatasetV2.*drop_remainder must be a constant"):
            tf.import_graph_def(gd)


def test_functions_and_one_shot_iterators_round_trip():
    """map/filter/flat_map/interleave functions as FunctionDefs of the library (captures as
    other_arguments), a one-shot iterator as a dataset_factory function."""
    with tf.Graph().as_default() as g:
        k = tf.constant(10.0, name="k")
        ds = Dataset.from_tensor_slices(([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [1, 2, 3]))
        ds = ds.map(lambda a, b: (a * k, b + 1)).filter(lambda a, b: b > 2)
        ds = ds.map(lambda a, b: (a, b), num_parallel_calls=2)
        ds = ds.flat_map(lambda a, b: Dataset.from_tensors((a, b)).repeat(2))
        ds = ds.interleave(lambda a, b: Dataset.from_tensors((a + k, b)), cycle_length=2)
        it = tf.data.make_initializable_iterator(ds.batch(2))
        nxt = it.get_next()
        one_shot = tf.data.make_one_shot_iterator(Dataset.range(5).map(lambda x: x * 2)).get_next()
        with tf.Session() as sess:
            sess.run(it.initializer)
            want = _drain(sess, nxt)
            want_one_shot = _drain(sess, one_shot)
        gd = g.as_graph_def()
    ops = {n.name: n.op for n in gd.node}
    assert "OneShotIterator" in ops.values() and "ParallelMapDataset" in ops.values()
    fns = {f.signature.name: f for f in gd.library.function}
    mapped = next(n for n in gd.node if n.op == "MapDataset")
    f = fns[mapped.attr["f"].func.name]
    assert [a.type for a in f.signature.input_arg] == [1, 3, 1]  # the element, then k
    assert mapped.attr["Targuments"].list.type == [1] and mapped.input[1] == "k"
    flat = fns[next(n for n in gd.node if n.op == "FlatMapDataset").attr["f"].func.name]
    assert {n.op for n in flat.node_def} >= {"TensorDataset", "RepeatDataset"}
    assert flat.signature.output_arg[0].type == 21  # a variant: the dataset it builds
    factory = fns[next(n for n in gd.node if n.op == "OneShotIterator")
                  .attr["dataset_factory"].func.name]
    assert not factory.signature.input_arg and "MapDataset" in {n.op for n in factory.node_def}

    with tf.Graph().as_default() as g2:
        tf.import_graph_def(gd, name="")
        with tf.Session() as sess:
            sess.run("MakeIterator")
            got = _drain(sess, ["IteratorGetNext:0", "IteratorGetNext:1"])
            got_one_shot = _drain(sess, "IteratorGetNext_1:0")
    _same(got, want)
    assert [int(x) for x in got_one_shot] == [int(x) for x in want_one_shot] == [0, 2, 4, 6, 8]


def test_a_tf_written_dataset_graph_imports_and_iterates_as_tf_did():
    """tests/fixtures/tf/dataset_graph.pb: TF's own dataset nodes and functions (TF's
    seed ops feeding ShuffleDataset, functions returning datasets through an Identity,
    windows)."""
    import os

    from dtf.framework import graph_pb as pb

    here = os.path.join(os.path.dirname(__file__), "..", "fixtures", "tf")
    with open(os.path.join(here, "dataset_graph.pb"), "rb") as f:
        gd = pb.GraphDef.FromString(f.read())
    io = np.load(os.path.join(here, "dataset_io.npz"))
    with tf.Graph().as_default():
        tf.import_graph_def(gd, name="tf")
        with tf.Session() as sess:
            sess.run("tf/MakeIterator", {"tf/p:0": io["p"]})
            a = [sess.run("tf/a:0") for _ in range(3)]
            sess.run("tf/init_other")
            re = [sess.run("tf/re:0") for _ in range(3)]
            one_shot = [sess.run("tf/one_shot:0") for _ in range(2)]
            shuffled = sess.run("tf/shuffled:0")
            sess.run("tf/MakeIterator_2")  # windows: TF's variant-typed nested datasets
            win = np.concatenate([sess.run("tf/win:0") for _ in range(4)])
            sess.run("tf/MakeIterator_1")  # map_and_batch, then shuffle_and_repeat
            mb = [sess.run("tf/mb:0").tolist() for _ in range(8)]
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run("tf/mb:0")
    np.testing.assert_array_equal(np.stack(a), io["a"])
    np.testing.assert_array_equal(np.stack(re), io["re"])
    np.testing.assert_array_equal(win, io["win"])
    np.testing.assert_array_equal(one_shot[0], io["one_shot_0"])
    np.testing.assert_array_equal(one_shot[1], io["one_shot_1"])
    # dtf's shuffle is not TF's generator: the same elements, in some order
    assert sorted(shuffled.tolist()) == sorted(io["shuffled"].tolist()) == list(range(10))
    assert sorted(x for b in mb for x in b) == sorted(io["mb"].tolist())
    assert sorted(mb) == sorted([[0, 2, 4], [6, 8, 10], [12, 14, 16], [18]] * 2)


def test_window_pipelines_round_trip():
    """Dataset.window's nested datasets are TF's variants: WindowDataset, then functions
    whose arguments are datasets (batched in the body, or returned as they are)."""
    with tf.Graph().as_default() as g:
        pairs = Dataset.from_tensor_slices((tf.range(7), tf.range(7) * 10)).window(3, shift=2)
        a = pairs.flat_map(lambda x, y: Dataset.zip((x.batch(3), y.map(lambda v: v + 1).batch(3))))
        b = Dataset.range(5).window(2, drop_remainder=True).interleave(lambda w: w, cycle_length=2)
        its = [tf.data.make_initializable_iterator(d) for d in (a, b)]
        nexts = [it.get_next() for it in its]
        with tf.Session() as sess:
            sess.run([it.initializer for it in its])
            want = [_drain(sess, n) for n in nexts]
        gd = g.as_graph_def()
    assert [n.op for n in gd.node].count("WindowDataset") == 2
    window = next(n for n in gd.node if n.op == "WindowDataset")
    assert list(window.attr["output_types"].list.type) == [21, 21]  # TF's variant
    with tf.Graph().as_default():
        tf.import_graph_def(gd, name="")
        with tf.Session() as sess:
            sess.run(["MakeIterator", "MakeIterator_1"])
            got = [_drain(sess, ["IteratorGetNext:0", "IteratorGetNext:1"]),
                   _drain(sess, "IteratorGetNext_1:0")]
    _same(got[0], want[0])
    assert [int(x) for x in got[1]] == [int(x) for x in want[1]] == [0, 2, 1, 3]
