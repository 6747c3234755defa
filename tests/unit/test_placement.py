"""Placement (dtf/placement.py): pure function from pruned NodeDefs to full device names."""
import pytest

import dtf as tf
from dtf.framework import errors
from dtf.framework.graph_def import NodeDef, node_def_of
from dtf.placement import ClusterView, full_name, place, task_of
from dtf.framework.graph_walk import needed_nodes

CLUSTER = ClusterView({"ps": {0, 1}, "worker": {0, 1, 2}}, "worker", 1)

PS0, PS1 = full_name("ps", 0), full_name("ps", 1)
W0, W1, W2 = (full_name("worker", i) for i in range(3))


def graph_nodes(graph, fetches=(), targets=()):
    """The NodeDefs a step over ``graph`` needs, as the master sees them."""
    by_name = {op.name: node_def_of(op) for op in graph.get_operations()}
    names = [f if isinstance(f, str) else f.name for f in fetches]
    tnames = [t if isinstance(t, str) else t.name for t in targets]
    return needed_nodes(by_name.__getitem__, names, (), tnames)


def all_nodes(graph):
    return [node_def_of(op) for op in graph.get_operations()]


def const(name, device="", **attrs):
    return NodeDef(name, "Const", [], [], device, dict(attrs, dtype=tf.float32), [tf.float32])


def test_names():
    assert full_name("ps", 1) == "/job:ps/replica:0/task:1/device:CPU:0"
    assert full_name("w", 0, "GPU", 2) == "/job:w/replica:0/task:0/device:GPU:2"
    assert task_of(full_name("w", 3, "GPU", 1)) == "/job:w/replica:0/task:3"


def test_no_device_runs_on_the_sessions_task_cpu0():
    assert place([const("a")], CLUSTER) == {"a": W1}
    other = ClusterView({"ps": {0}, "worker": {0, 1, 2}}, "ps", 0)
    assert place([const("a")], other) == {"a": PS0}


@pytest.mark.parametrize("device, expected", [
    ("/job:ps", PS0),                          # job only -> task 0
    ("/job:ps/task:1", PS1),
    ("/task:2", W2),                           # task only -> the session's job
    ("/device:CPU:0", W1),                     # device only -> the session's task
    ("/cpu:0", W1),
    ("/job:worker/replica:0/task:0/device:CPU:0", W0),
    ("/job:ps/task:1/cpu:0", PS1),
])
def test_partial_devices_are_completed_field_by_field(device, expected):
    assert place([const("a", device)], CLUSTER) == {"a": expected}


def test_nested_device_scopes_merge():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps"):
            tf.constant(1.0, name="a")
            with tf.device("/task:1"):
                tf.constant(1.0, name="b")
                with tf.device("/device:CPU:0"):
                    tf.constant(1.0, name="c")
            with tf.device("/job:worker/task:2"):
                tf.constant(1.0, name="d")
            with tf.device(None):
                tf.constant(1.0, name="e")
    got = place(all_nodes(g), CLUSTER)
    assert got == {"a": PS0, "b": PS1, "c": PS1, "d": W2, "e": W1}


def test_colocation_overrides_the_colocated_nodes_own_device():
    nodes = [NodeDef("v", "VariableV2", [], [], "/job:ps/task:1", {"dtype": tf.float32}, [tf.float32]),
             NodeDef("v/read", "Identity", ["v:0"], [], "/job:worker/task:0",
                     {"T": tf.float32, "_class": ["loc:@v"]}, [tf.float32]),
             NodeDef("v/slot", "VariableV2", [], [], "", {"dtype": tf.float32, "_class": ["loc:@v"]},
                     [tf.float32])]
    assert place(nodes, CLUSTER) == {"v": PS1, "v/read": PS1, "v/slot": PS1}


def test_colocation_with_a_node_placed_later_still_shares_its_device():
    """``_class`` is no edge: the colocated node may come first in the order."""
    nodes = [NodeDef("v/slot", "VariableV2", [], [], "/job:ps/task:0",
                     {"dtype": tf.float32, "_class": ["loc:@v"]}, [tf.float32]),
             NodeDef("v", "VariableV2", [], [], "/job:ps/task:1", {"dtype": tf.float32}, [tf.float32])]
    assert place(nodes, CLUSTER) == {"v": PS1, "v/slot": PS1}


def test_colocation_with_a_pruned_node_falls_back_to_the_nodes_own_device():
    nodes = [const("c", "/job:ps/task:1", _class=["loc:@not_needed"])]
    assert place(nodes, CLUSTER) == {"c": PS1}


def test_optimizer_slots_and_updates_share_their_variables_device():
    g = tf.Graph()
    with g.as_default():
        setter = tf.train.replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:0")
        with tf.device(setter):
            w = tf.Variable(tf.ones([2]), name="w")
            b = tf.Variable(tf.ones([2]), name="b")
            extra = tf.Variable(tf.ones([2]), name="extra")  # shifts round-robin for the slots
            loss = tf.reduce_sum(w * b * extra)
            train = tf.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
    got = place(all_nodes(g), CLUSTER)
    for var in ("w", "b", "extra"):
        for suffix in ("/read", "/Assign", "/Momentum", "/Momentum/read", "/Momentum/Assign",
                       "/Momentum/Initializer/zeros"):
            assert got[var + suffix] == got[var], var + suffix
        assert got[f"Momentum/update_{var}/ApplyMomentum"] == got[var]
    assert got["w"] == PS0 and got["b"] == PS1 and got["extra"] == PS0
    assert got["Momentum"] == W0 and got["mul"] == W0


def test_replica_device_setter_round_robins_variables_over_two_ps_tasks():
    g = tf.Graph()
    with g.as_default():
        with tf.device(tf.train.replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:2")):
            vs = [tf.Variable(float(i), name=f"v{i}") for i in range(4)]
            total = tf.add_n(vs, name="total")
    got = place(graph_nodes(g, [total]), CLUSTER)
    assert [got[f"v{i}"] for i in range(4)] == [PS0, PS1, PS0, PS1]
    assert [got[f"v{i}/read"] for i in range(4)] == [PS0, PS1, PS0, PS1]
    assert got["total"] == W2


def test_job_not_in_cluster_names_it_and_lists_the_jobs():
    with pytest.raises(errors.InvalidArgumentError) as e:
        place([const("x", "/job:chief/task:0")], CLUSTER)
    msg = e.value.message
    assert "'x'" in msg and "chief" in msg and "ps, worker" in msg


def test_task_not_in_cluster_names_it_and_lists_tasks_and_jobs():
    with pytest.raises(errors.InvalidArgumentError) as e:
        place([const("x", "/job:ps/task:5")], CLUSTER)
    msg = e.value.message
    assert "'x'" in msg and "task 5" in msg and "0, 1" in msg and "ps, worker" in msg


def test_bad_device_of_a_colocation_root_is_reported():
    nodes = [const("root", "/job:nope"), const("c", "/job:ps", _class=["loc:@root"])]
    with pytest.raises(errors.InvalidArgumentError, match="nope"):
        place(nodes, CLUSTER)


def test_device_filters_excluding_a_needed_device_is_invalid_argument():
    nodes = [const("a", "/job:worker/task:1"), const("p", "/job:ps/task:1")]
    assert place(nodes, CLUSTER, device_filters=("/job:worker/task:1", "/job:ps")) == {"a": W1, "p": PS1}
    with pytest.raises(errors.InvalidArgumentError, match=r"'p'.*/job:ps/replica:0/task:1.*device_filters"):
        place(nodes, CLUSTER, device_filters=("/job:worker/task:1", "/job:ps/task:0"))


def test_gpu_request_without_gpus_needs_soft_placement():
    nodes = [const("g", "/job:ps/task:0/device:GPU:0")]
    with pytest.raises(errors.InvalidArgumentError, match="allow_soft_placement"):
        place(nodes, CLUSTER)
    assert place(nodes, CLUSTER, allow_soft_placement=True) == {"g": PS0}


def test_gpu_request_on_a_task_with_a_gpu():
    view = ClusterView({"worker": {0}}, "worker", 0, gpus={("worker", 0): 2})
    nodes = [NodeDef("m", "MatMul", [], [], "/gpu:1", {"T": tf.float32}, [tf.float32])]
    got = place(nodes, view, allow_soft_placement=True)
    assert got["m"] in (full_name("worker", 0, "GPU", 1), full_name("worker", 0))
    with pytest.raises(errors.InvalidArgumentError, match="GPU"):
        place([NodeDef("m", "MatMul", [], [], "/gpu:2", {"T": tf.float32}, [tf.float32])], view)


def test_unknown_device_type_is_invalid_unless_soft():
    nodes = [const("t", "/device:TPU:0")]
    with pytest.raises(errors.InvalidArgumentError, match="TPU"):
        place(nodes, CLUSTER)
    assert place(nodes, CLUSTER, allow_soft_placement=True) == {"t": W1}


def test_chained_colocation_in_any_order_shares_one_device():
    nodes = [const("c", "", _class=["loc:@b"]), const("b", "/job:ps/task:0", _class=["loc:@a"]),
             const("a", "/job:ps/task:1")]
    got = place(nodes, CLUSTER)
    assert got["c"] == got["b"] == got["a"] == PS1
