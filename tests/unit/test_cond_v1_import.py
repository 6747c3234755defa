"""TF1 graphs with control flow v1 (Switch/Merge conds, Enter/Exit loop frames) imported
as dtf If and While ops (dtf/ops/cond_v1_import.py, while_v1_import.py), checked
against the values real TF computed for the fixtures of tests/fixtures/tf/make_fixtures.py
(cond_v1_graph, cond_v1_assign, bn_v1_frozen, while_v1_graph)."""
import os

import numpy as np
import pytest

import dtf as tf
from dtf.framework import graph_pb as pb

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "tf")


def _graph_def(name):
    gd = pb.GraphDef()
    with open(os.path.join(FIXTURES, name), "rb") as f:
        gd.ParseFromString(f.read())
    return gd


def test_fixtures_hold_v1_control_flow():
    for name in ("cond_v1_graph.pb", "bn_v1_frozen.pb"):
        ops = {n.op for n in _graph_def(name).node}
        assert {"Switch", "Merge"} <= ops and "If" not in ops


@pytest.mark.parametrize("p,q", [(False, False), (False, True), (True, False), (True, True)])
def test_conds_compute_what_tf_computed(p, q):
    """A two-output cond, a cond nested in a branch, and a Merge's value_index."""
    io = np.load(os.path.join(FIXTURES, "cond_v1_io.npz"))
    with tf.Graph().as_default():
        outs = tf.import_graph_def(_graph_def("cond_v1_graph.pb"),
                                   return_elements=["a:0", "b:0", "nested:0", "which:0"])
        with tf.Session() as sess:
            values = sess.run(outs, {"import/x:0": io["x"], "import/p:0": p, "import/q:0": q})
    for key, value in zip(("a", "b", "nested", "which"), values):
        np.testing.assert_allclose(value, io[f"{key}_{int(p)}{int(q)}"], rtol=1e-6)


def test_conds_become_if_ops_and_merges_keep_their_names():
    with tf.Graph().as_default() as g:
        tf.import_graph_def(_graph_def("cond_v1_graph.pb"), name="")
        types = {op.type for op in g.get_operations()}
        assert "Switch" not in types and "Merge" not in types
        ifs = [op for op in g.get_operations() if op.type == "If"]
        assert len(ifs) == 3  # pair and outer share predicate p but stay two conds
        merge = g.get_operation_by_name("outer/Merge")
        assert merge.type == "IdentityN" and merge.outputs[1].dtype == tf.int32
        # the nested cond and the branch ops live in the If's branch bodies
        with pytest.raises(KeyError):
            g.get_operation_by_name("outer/inner/Max")


def test_frozen_batch_norm_under_a_training_placeholder():
    """Two batch norms on one `training` placeholder, the second reading the first."""
    io = np.load(os.path.join(FIXTURES, "bn_v1_io.npz"))
    with tf.Graph().as_default():
        (y,) = tf.import_graph_def(_graph_def("bn_v1_frozen.pb"), return_elements=["y:0"], name="")
        with tf.Session() as sess:
            train = sess.run(y, {"x:0": io["x"], "training:0": True})
            infer = sess.run(y, {"x:0": io["x"]})
    np.testing.assert_allclose(train, io["y_train"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(infer, io["y_infer"], rtol=1e-5, atol=1e-5)


def test_import_meta_graph_with_cond_context():
    io = np.load(os.path.join(FIXTURES, "cond_v1_io.npz"))
    with tf.Graph().as_default():
        tf.train.import_meta_graph(os.path.join(FIXTURES, "cond_v1.meta"))
        with tf.Session() as sess:
            nested, which = sess.run(["nested:0", "which:0"],
                                     {"x:0": io["x"], "p:0": True, "q:0": False})
    np.testing.assert_allclose(nested, io["nested_10"], rtol=1e-6)
    assert which == io["which_10"]


# -- what is refused, naming the node ---------------------------------------------------
def _cond_skeleton():
    gd = pb.GraphDef()
    gd.node.add(name="p", op="Placeholder").attr["dtype"].type = 10  # bool
    gd.node.add(name="x", op="Placeholder").attr["dtype"].type = 1   # float
    sw = gd.node.add(name="sw", op="Switch", input=["x", "p"])
    sw.attr["T"].type = 1
    return gd


def _add(gd, name, op, inputs):
    n = gd.node.add(name=name, op=op, input=inputs)
    n.attr["T"].type = 1
    if op == "Merge":
        n.attr["N"].i = len(inputs)
    return n


def test_merge_of_a_branch_and_the_outer_graph_is_refused():
    gd = _cond_skeleton()
    _add(gd, "t", "Neg", ["sw:1"])
    _add(gd, "m", "Merge", ["x", "t"])
    with tf.Graph().as_default(), pytest.raises(ValueError, match="node 'm' \\(Merge\\) does not join"):
        tf.import_graph_def(gd, name="")


def test_node_reading_both_branches_is_refused():
    gd = _cond_skeleton()
    _add(gd, "bad", "Add", ["sw:0", "sw:1"])
    _add(gd, "m", "Merge", ["sw:0", "bad"])
    with tf.Graph().as_default(), pytest.raises(ValueError, match="node 'bad' \\(Add\\) reads both"):
        tf.import_graph_def(gd, name="")


def test_switch_without_merge_is_refused():
    gd = _cond_skeleton()
    _add(gd, "t", "Neg", ["sw:1"])
    with tf.Graph().as_default(), pytest.raises(ValueError, match="Switch 'sw' has no Merge"):
        tf.import_graph_def(gd, name="")


def test_v1_loop_merge_without_loop_cond_is_refused():
    gd = pb.GraphDef()
    gd.node.add(name="x", op="Placeholder").attr["dtype"].type = 1
    enter = _add(gd, "enter", "Enter", ["x"])
    enter.attr["frame_name"].s = b"loop"
    _add(gd, "merge", "Merge", ["enter", "next"])
    _add(gd, "next", "NextIteration", ["merge"])
    with tf.Graph().as_default(), pytest.raises(ValueError, match="Merge 'merge'.*no LoopCond"):
        tf.import_graph_def(gd, name="")


def test_cycle_without_next_iteration_is_refused():
    gd = _cond_skeleton()
    _add(gd, "a", "Neg", ["b"])
    _add(gd, "b", "Neg", ["a"])
    with tf.Graph().as_default(), pytest.raises(ValueError, match="cycle through node"):
        tf.import_graph_def(gd, name="")


@pytest.mark.parametrize("trips", [0, 1, 4])
def test_v1_while_loops_compute_what_tf_computed(trips):
    """A loop with a cond and a captured tensor in its body, and a loop nested in a loop."""
    io = np.load(os.path.join(FIXTURES, "while_v1_io.npz"))
    gd = _graph_def("while_v1_graph.pb")
    assert {"Enter", "Exit", "NextIteration", "LoopCond"} <= {n.op for n in gd.node}
    with tf.Graph().as_default() as g:
        tf.import_graph_def(gd, name="")
        assert "While" in {op.type for op in g.get_operations()}
        assert g.get_operation_by_name("loop/Exit_1").type == "Identity"
        with tf.Session() as sess:
            acc, count, nested = sess.run(["acc:0", "count:0", "nested:0"],
                                          {"x:0": io["x"], "n:0": trips})
    np.testing.assert_allclose(acc, io[f"acc_{trips}"], rtol=1e-6)
    assert count == io[f"count_{trips}"]
    np.testing.assert_allclose(nested, io[f"nested_{trips}"], rtol=1e-6)


def test_branch_updating_a_variable():
    """TF1 switches the variable's reference into the branch (RefSwitch) to AssignSub it."""
    io = np.load(os.path.join(FIXTURES, "cond_v1_assign_io.npz"))
    gd = _graph_def("cond_v1_assign.pb")
    assert "RefSwitch" in {n.op for n in gd.node}
    with tf.Graph().as_default():
        tf.import_graph_def(gd, name="")
        with tf.Session() as sess:
            sess.run("init")
            ys = [sess.run("y:0", {"x:0": io["x"], "p:0": bool(f)}) for f in io["p"]]
    np.testing.assert_allclose(np.stack(ys), io["y"], rtol=1e-6)


def test_imported_v1_graph_exports_as_functional_control_flow():
    """What dtf rebuilt exports as If/While with FunctionDefs (no Switch/Merge/Enter) and
    imports again to the same values."""
    io = np.load(os.path.join(FIXTURES, "while_v1_io.npz"))
    with tf.Graph().as_default() as g:
        tf.import_graph_def(_graph_def("while_v1_graph.pb"), name="")
        out = g.as_graph_def()
    ops = {n.op for n in out.node}
    assert "While" in ops and not ops & {"Switch", "Merge", "Enter", "Exit", "NextIteration"}
    with tf.Graph().as_default():
        tf.import_graph_def(out, name="")
        with tf.Session() as sess:
            acc, nested = sess.run(["acc:0", "nested:0"], {"x:0": io["x"], "n:0": 4})
    np.testing.assert_allclose(acc, io["acc_4"], rtol=1e-6)
    np.testing.assert_allclose(nested, io["nested_4"], rtol=1e-6)
