"""Partitioning (dtf/partition.py): placed NodeDefs -> per-device NodeDef lists with
_Send/_Recv pairs, after ``localize`` copies constants and NoOps next to their consumers."""
import collections
import contextlib

import numpy as np
import pytest

import dtf as tf
from dtf.framework.graph_def import NodeDef, node_def_of
from dtf.partition import localize, partition
from dtf.placement import ClusterView, full_name, place, task_of
from dtf.runtime import service as service_mod
from dtf.framework.graph_walk import needed_nodes, split_tensor_name
from dtf.wire import inprocess

CLUSTER = ClusterView({"ps": {0, 1}, "worker": {0}}, "worker", 0)
PS0, PS1, W0 = full_name("ps", 0), full_name("ps", 1), full_name("worker", 0)
TRANSFER_OPS = ("_Send", "_Recv")


def _name(x):
    return x if isinstance(x, str) else x.name


def plan(graph, fetches=(), targets=(), feeds=(), cluster=CLUSTER):
    """What the master does for one (fetches, feeds, targets): prune, place, partition."""
    by_name = {op.name: node_def_of(op) for op in graph.get_operations()}
    targets = [_name(x) for x in list(targets) + [f for f in fetches if isinstance(f, tf.Operation)]]
    fetches = [_name(f) for f in fetches if not isinstance(f, tf.Operation)]
    feeds = [_name(f) for f in feeds]
    nodes = needed_nodes(by_name.__getitem__, fetches, feeds, targets)
    placement = place(nodes, cluster)
    keep = {split_tensor_name(f)[0] for f in fetches} | set(targets)
    parts = partition(nodes, placement, feeds, keep)
    check_invariants(nodes, placement, parts, set(feeds))
    return nodes, placement, parts


def check_invariants(nodes, placement, parts, fed):
    """What holds for every partitioning: devices, send/recv pairing, each original node at
    most once (absent only when localize replaced it by copies), topological order."""
    sends = {n.attrs["key"]: (dev, n) for dev, ns in parts.items() for n in ns if n.op == "_Send"}
    recvs = collections.Counter(n.attrs["key"] for ns in parts.values() for n in ns if n.op == "_Recv")
    assert len(sends) == sum(1 for ns in parts.values() for n in ns if n.op == "_Send"), "duplicate send keys"
    assert set(sends) == set(recvs) and all(c == 1 for c in recvs.values())
    for dev, ns in parts.items():
        for n in ns:
            assert n.device == dev, n.name
            if n.op == "_Recv":
                src, dst, _ = n.attrs["key"].split(";")
                assert dst == dev and sends[n.attrs["key"]][0] == src != dst
                assert n.attrs["send_task"] == task_of(src)
            if n.op == "_Send":
                assert n.attrs["recv_task"] == task_of(n.attrs["key"].split(";")[1])
    for ns in parts.values():
        assert len({n.name for n in ns}) == len(ns), "duplicate names in one partition"
    seen = collections.Counter(n.name for ns in parts.values() for n in ns)
    originals = {n.name: n for n in nodes}
    assert all(seen[name] <= 1 for name in originals), "an original node in two partitions"
    for name, n in originals.items():
        if name not in seen:
            assert n.op in ("Const", "NoOp") and any(s.startswith(f"{name}/_copy_on_") for s in seen), name
    for dev, ns in parts.items():
        defined = set()
        for n in ns:
            for t in n.inputs:
                assert t in fed or split_tensor_name(t)[0] in defined, (dev, n.name, t)
            for c in n.control_inputs:
                assert c in defined, (dev, n.name, c)
            defined.add(n.name)


def ops_of(parts, dev, op):
    return [n for n in parts.get(dev, []) if n.op == op]


def by_name(parts):
    return {n.name: n for ns in parts.values() for n in ns}


def transfers(parts):
    """{(src task, dst task, tensor)} of every send (control transfers carry '^op')."""
    out = set()
    for ns in parts.values():
        for n in ns:
            if n.op == "_Send":
                src, dst, tensor = n.attrs["key"].split(";")
                out.add((task_of(src), task_of(dst), tensor))
    return out


def test_cross_device_data_edge_is_one_send_and_one_recv_with_the_same_key():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable([1.0, 2.0], name="v")
        with tf.device("/job:worker/task:0"):
            y = tf.multiply(v, tf.constant(3.0, name="three"), name="y")
    _, _, parts = plan(g, [y])
    (send,) = ops_of(parts, PS0, "_Send")
    (recv,) = ops_of(parts, W0, "_Recv")
    assert send.attrs["key"] == recv.attrs["key"] == f"{PS0};{W0};v/read:0"
    assert send.inputs == ["v/read:0"] and recv.output_dtypes == [tf.float32]
    assert by_name(parts)["y"].inputs[0] == f"{recv.name}:0"


def test_two_consumers_on_one_device_share_one_recv():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable([1.0, 2.0], name="v")
        with tf.device("/job:worker/task:0"):
            a = tf.square(v, name="a")
            b = tf.negative(v, name="b")
            s = tf.add(a, b, name="s")
        with tf.device("/job:ps/task:1"):
            c = tf.sqrt(v, name="c")
    _, _, parts = plan(g, [s, c])
    (recv,) = ops_of(parts, W0, "_Recv")
    nodes = by_name(parts)
    assert nodes["a"].inputs == nodes["b"].inputs == [f"{recv.name}:0"]
    assert len(ops_of(parts, PS1, "_Recv")) == 1
    assert len(ops_of(parts, PS0, "_Send")) == 2  # one per destination device


def test_fed_tensors_are_not_edges():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            x = tf.placeholder(tf.float32, [2], name="x")
            h = tf.multiply(x, tf.constant(2.0, name="two"), name="h")
        with tf.device("/job:worker/task:0"):
            y = tf.add(h, x, name="y")
    nodes, _, parts = plan(g, [y], feeds=[h, x])
    assert [n.name for n in nodes] == ["y"]
    assert transfers(parts) == set() and list(parts) == [W0]
    assert by_name(parts)["y"].inputs == ["h:0", "x:0"]
    _, _, parts = plan(g, [y], feeds=[x])
    assert transfers(parts) == {("/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0", "h:0")}


def test_cross_device_control_edge_becomes_a_control_recv():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(1.0, name="v")
            bump = tf.assign_add(v, 1.0, name="bump")
        with tf.device("/job:worker/task:0"):
            z = tf.zeros([2])
            with tf.control_dependencies([bump]):
                y = tf.identity(z, name="y")
    _, _, parts = plan(g, [y])
    (recv,) = ops_of(parts, W0, "_Recv")
    assert recv.attrs["key"] == f"{PS0};{W0};^bump"
    assert by_name(parts)["y"].control_inputs == [recv.name]
    (send,) = ops_of(parts, PS0, "_Send")
    dummy = by_name(parts)[split_tensor_name(send.inputs[0])[0]]
    assert dummy.device == PS0 and dummy.control_inputs == ["bump"]


def test_same_task_different_devices_are_partitions_too():
    cpu, gpu = full_name("worker", 0), full_name("worker", 0, "GPU", 0)
    nodes = [NodeDef("a", "Placeholder", [], [], "", {"dtype": tf.float32}, [tf.float32]),
             NodeDef("b", "Neg", ["a:0"], [], "", {"T": tf.float32}, [tf.float32]),
             NodeDef("c", "Neg", ["b:0"], [], "", {"T": tf.float32}, [tf.float32])]
    placement = {"a": cpu, "b": cpu, "c": gpu}
    parts = partition(nodes, placement, (), {"c"})
    check_invariants(nodes, placement, parts, set())
    (recv,) = ops_of(parts, gpu, "_Recv")
    assert recv.attrs["key"] == f"{cpu};{gpu};b:0" and recv.attrs["send_task"] == task_of(gpu)


def test_partitions_are_topologically_ordered_for_a_diamond_across_three_devices():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            a = tf.Variable(tf.ones([2, 2]), name="a")
        with tf.device("/job:ps/task:1"):
            b = tf.matmul(a, a, name="b")
        with tf.device("/job:worker/task:0"):
            c = tf.matmul(a, b, name="c")
        with tf.device("/job:ps/task:0"):
            d = tf.add(c, b, name="d")
        with tf.device("/job:ps/task:1"):
            e = tf.add(d, a, name="e")
    _, _, parts = plan(g, [e])
    assert set(parts) == {PS0, PS1, W0}
    assert {t[2] for t in transfers(parts)} == {"a/read:0", "b:0", "c:0", "d:0"}
    # a/read goes to both other devices, b to worker and ps0: one send per destination.
    assert sum(1 for t in transfers(parts) if t[2] == "a/read:0") == 2


# ---- localize ----------------------------------------------------------------------------


def two_device_const_graph(control_input=False, also_local=False):
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            if control_input:
                gate = tf.no_op(name="gate")
                with tf.control_dependencies([gate]):
                    k = tf.constant(5.0, name="k")
            else:
                k = tf.constant(5.0, name="k")
            v = tf.Variable(1.0, name="v")
            local = tf.multiply(v, k, name="local")
        with tf.device("/job:worker/task:0"):
            x = tf.placeholder(tf.float32, [], name="x")
            y = tf.multiply(x, k, name="y")
    fetches = [y, local] if also_local else [y]
    return g, fetches


def test_const_used_on_another_device_is_copied_there_and_not_sent():
    g, fetches = two_device_const_graph()
    _, _, parts = plan(g, fetches, feeds=["x:0"])
    assert transfers(parts) == set()
    nodes = by_name(parts)
    copy = nodes["y"].inputs[1]
    assert copy == "k/_copy_on_worker_0_CPU_0:0"
    copied = nodes[split_tensor_name(copy)[0]]
    assert copied.device == W0 and copied.op == "Const" and copied.attrs["value"] == 5.0
    assert "k" not in nodes  # no consumer left on ps and not fetched
    assert list(parts) == [W0]


def test_const_copy_keeps_the_original_when_it_is_fetched():
    g, fetches = two_device_const_graph()
    _, _, parts = plan(g, fetches + ["k:0"], feeds=["x:0"])
    nodes = by_name(parts)
    assert nodes["k"].device == PS0 and transfers(parts) == set()
    assert nodes["y"].inputs[1] == "k/_copy_on_worker_0_CPU_0:0"


def test_const_copy_keeps_the_original_when_it_has_a_local_consumer():
    g, fetches = two_device_const_graph(also_local=True)
    _, _, parts = plan(g, fetches, feeds=["x:0"])
    nodes = by_name(parts)
    assert nodes["k"].device == PS0 and nodes["local"].inputs[1] == "k:0"
    assert nodes["y"].inputs[1] == "k/_copy_on_worker_0_CPU_0:0"
    assert transfers(parts) == set()


def test_const_with_a_control_input_is_not_copied():
    g, fetches = two_device_const_graph(control_input=True)
    _, _, parts = plan(g, fetches, feeds=["x:0"])
    assert transfers(parts) == {("/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0", "k:0")}
    assert not any("_copy_on_" in n for n in by_name(parts))


def test_localize_without_anything_to_copy_returns_its_inputs():
    nodes = [NodeDef("a", "Placeholder", [], [], "", {"dtype": tf.float32}, [tf.float32]),
             NodeDef("b", "Neg", ["a:0"], [], "", {"T": tf.float32}, [tf.float32])]
    placement = {"a": PS0, "b": W0}
    assert localize(nodes, placement) == (nodes, placement)


def test_noop_is_copied_only_when_all_its_control_inputs_live_on_the_consumer():
    def nd(name, op, dev, inputs=(), controls=()):
        return NodeDef(name, op, list(inputs), list(controls), dev, {}, [] if op == "NoOp" else [tf.float32])
    nodes = [nd("u0", "AssignAdd", PS0), nd("u1", "AssignAdd", PS1),
             nd("group_ps0", "NoOp", W0, controls=["u0"]), nd("group_mixed", "NoOp", W0, controls=["u0", "u1"]),
             nd("after_ps0", "Identity", PS0, controls=["group_ps0"]),
             nd("after_mixed", "Identity", PS0, controls=["group_mixed"])]
    placement = {n.name: n.device for n in nodes}
    out, new_placement = localize(nodes, placement)
    names = {n.name: n for n in out}
    assert "group_ps0" not in names and new_placement["group_ps0/_copy_on_ps_0_CPU_0"] == PS0
    assert names["after_ps0"].control_inputs == ["group_ps0/_copy_on_ps_0_CPU_0"]
    assert "group_mixed" in names and names["after_mixed"].control_inputs == ["group_mixed"]
    out_kept, _ = localize(nodes, placement, keep={"group_ps0"})
    assert "group_ps0" in {n.name for n in out_kept}


def test_noop_copied_back_next_to_its_const_control_input_keeps_that_const():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            k = tf.constant(1.0, name="k")
            v = tf.Variable(0.0, name="v")
        with tf.device("/job:worker/task:0"):
            grp = tf.group(k, name="grp")  # a NoOp on the worker, all controls on the ps
        with tf.device("/job:ps/task:0"):
            with tf.control_dependencies([grp]):
                bump = tf.assign_add(v, tf.constant(1.0), name="bump")
    plan(g, [bump])  # check_invariants: grp's copy on the ps has control input 'k', dropped


def test_chained_noops_copied_across_devices_keep_what_the_copies_name():
    def noop(name, dev, controls):
        return NodeDef(name, "NoOp", [], list(controls), dev, {}, [])
    nodes = [NodeDef("u", "AssignAdd", [], [], W0, {}, [tf.float32]),
             noop("n1", PS0, ["u"]),            # copied to the worker, where its consumer is
             noop("n2", W0, ["n1"]),            # copied to ps0, where n1 lives: names n1
             NodeDef("x", "Identity", [], ["n2"], PS0, {}, [tf.float32])]
    placement = {n.name: n.device for n in nodes}
    parts = partition(nodes, placement, (), {"x"})
    check_invariants(nodes, placement, parts, set())


# ---- the optimizer step ------------------------------------------------------------------


def mlp(seed=3, pinned=True):
    """A two-layer MLP: variables on the ps, compute on the worker (TF1's classic layout).
    Unpinned, the same graph runs in a plain local Session (which, as TF's, refuses
    devices of jobs it does not have)."""
    def on(device):
        return tf.device(device) if pinned else contextlib.nullcontext()

    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(seed)
        with on("/job:ps/task:0"):
            w1 = tf.Variable(tf.random_normal([4, 8], seed=1), name="w1")
            b1 = tf.Variable(tf.zeros([8]), name="b1")
            w2 = tf.Variable(tf.random_normal([8, 1], seed=2), name="w2")
            gs = tf.train.get_or_create_global_step()
        with on("/job:worker/task:0"):
            x = tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4) / 10.0, name="x")
            t = tf.constant([[1.0], [0.0], [-1.0]], name="t")
            h = tf.nn.relu(tf.matmul(x, w1) + b1)
            loss = tf.reduce_mean(tf.square(tf.matmul(h, w2) - t), name="loss")
            train = tf.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=gs)
        init = tf.global_variables_initializer()
    return g, dict(loss=loss, train=train, gs=gs, init=init)


PS_TASK, W_TASK = task_of(PS0), task_of(W0)


def test_optimizer_step_costs_only_variable_values_and_gradients():
    g, m = mlp()
    original, _, parts = plan(g, [m["train"], m["gs"]])
    moves = transfers(parts)
    to_worker = {t for s, d, t in moves if (s, d) == (PS_TASK, W_TASK)}
    to_ps = {t for s, d, t in moves if (s, d) == (W_TASK, PS_TASK)}
    assert moves == {(PS_TASK, W_TASK, t) for t in to_worker} | {(W_TASK, PS_TASK, t) for t in to_ps}
    assert to_worker == {"w1/read:0", "b1/read:0", "w2/read:0"}
    grads = {n.inputs[2] for n in original if n.op == "ApplyGradientDescent"}
    assert to_ps == grads and len(grads) == 3 and all(t.startswith("gradients/") for t in grads)
    assert not any(t.startswith("^") for t in to_worker | to_ps)  # no control transfers
    assert not any("learning_rate" in t for t in to_ps)
    nodes = by_name(parts)
    assert "GradientDescent/update" not in nodes  # replaced by its copy on the ps
    assert nodes["GradientDescent/update/_copy_on_ps_0_CPU_0"].device == PS0
    lr = [n for n in nodes if n.startswith("GradientDescent/learning_rate")]
    assert lr == ["GradientDescent/learning_rate/_copy_on_ps_0_CPU_0"]


def test_optimizer_update_noop_as_a_target_is_kept_on_its_device():
    g, m = mlp()
    update = g.get_operation_by_name("GradientDescent/update")
    _, _, parts = plan(g, [m["gs"]], targets=[m["train"], update])
    nodes = by_name(parts)
    assert nodes["GradientDescent/update"].device == W0
    assert nodes["GradientDescent/update/_copy_on_ps_0_CPU_0"].device == PS0
    # The worker's update waits for the ps's applies: that costs a control transfer.
    assert any(t.startswith("^") and (s, d) == (PS_TASK, W_TASK) for s, d, t in transfers(parts))


# ---- end to end, in one process ----------------------------------------------------------


@pytest.fixture
def in_process_cluster():
    """A ps and a worker task living in this process, reached by direct calls (no socket)."""
    cluster = {"ps": {0: "127.0.0.1:1"}, "worker": {0: "127.0.0.1:2"}}
    tasks = [service_mod.TaskService(cluster, job, 0, security=None, listen=False) for job in cluster]
    for svc in tasks:
        inprocess.REGISTRY.register(svc.address, svc)
    yield "grpc://127.0.0.1:2", tasks[0]
    for svc in tasks:
        inprocess.REGISTRY.unregister(svc.address, svc)
        svc.stop()


def train_losses(target, steps=4, while_open=lambda: None):
    g, m = mlp(pinned=bool(target))
    with tf.Session(target, graph=g) as sess:
        sess.run(m["init"])
        losses = [sess.run([m["train"], m["loss"]])[1] for _ in range(steps)]
        while_open()
        return losses, sess.run([m["loss"], m["gs"]])


def test_partitioned_training_matches_a_local_session(in_process_cluster):
    target, ps = in_process_cluster
    local, (local_final, local_gs) = train_losses("")
    ps_graphs = []
    dist, (dist_final, dist_gs) = train_losses(
        target, while_open=lambda: ps_graphs.append(ps.worker.status()["graphs"]))
    assert ps_graphs[0] >= 1  # the ps really ran partitions of the step
    assert ps.worker.status()["graphs"] == 0  # and released them when the session closed
    assert local_gs == dist_gs == 4
    np.testing.assert_allclose(dist, local, rtol=1e-6)
    np.testing.assert_allclose(dist_final, local_final, rtol=1e-6)
    assert local[-1] < local[0]  # it does train
