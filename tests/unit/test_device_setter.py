import logging

import pytest

import dtf as tf
from dtf.framework.tensor_shape import TensorShape
from dtf.train.device_setter import STANDARD_PS_OPS, _RoundRobinStrategy

CLUSTER = {"ps": ["ps0:2222", "ps1:2222"], "worker": ["w0:2222", "w1:2222", "w2:2222"]}


class FakeOp:
    """What a device function sees: type, the device merged so far, attrs, outputs."""

    def __init__(self, op_type="VariableV2", device="", attrs=None, outputs=(), name="op"):
        self.type = op_type
        self.device = device
        self.attrs = dict(attrs or {})
        self.outputs = list(outputs)
        self.name = name

    def get_attr(self, name):
        return self.attrs[name]


class FakeTensor:
    def __init__(self, shape, dtype):
        self.shape = TensorShape(shape)
        self.dtype = dtype


def var(shape=(2, 3), dtype=tf.float32, device="", op_type="VariableV2"):
    return FakeOp(op_type, device, {"shape": list(shape), "dtype": dtype})


def test_exports():
    assert tf.train.replica_device_setter is not None
    assert tf.train.GreedyLoadBalancingStrategy is not None
    assert tf.train.byte_size_load_fn is not None


def test_standard_ps_ops():
    for op_type in ("Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable",
                    "MutableHashTableV2", "MutableHashTableOfTensors",
                    "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
                    "MutableDenseHashTableV2", "VarHandleOp",
                    "BoostedTreesEnsembleResourceHandleOp"):
        assert op_type in STANDARD_PS_OPS


@pytest.mark.parametrize("kwargs", [
    {},
    {"ps_tasks": 0},
    {"cluster": {"worker": ["w0:1"]}},
    {"cluster": tf.train.ClusterSpec({"worker": ["w0:1"]})},
    {"cluster": CLUSTER, "ps_device": "/job:param"},
    {"cluster": {"ps": [], "worker": ["w0:1"]}},
])
def test_none_without_ps(kwargs):
    assert tf.train.replica_device_setter(**kwargs) is None


def test_round_robin_over_cluster_ps_tasks():
    fn = tf.train.replica_device_setter(cluster=CLUSTER)
    assert [fn(var()) for _ in range(5)] == [
        "/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]
    assert fn(FakeOp("MatMul")) == "/job:worker"
    assert fn(var(op_type="VarHandleOp")) == "/job:ps/task:1"


def test_cluster_overrides_ps_tasks_and_accepts_cluster_def():
    cdef = tf.train.ClusterSpec(CLUSTER).as_cluster_def()
    fn = tf.train.replica_device_setter(ps_tasks=7, cluster=cdef)
    assert [fn(var()) for _ in range(3)] == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]


def test_ps_tasks_without_cluster():
    fn = tf.train.replica_device_setter(ps_tasks=3)
    assert [fn(var()) for _ in range(4)] == [
        "/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:2", "/job:ps/task:0"]


def test_custom_devices():
    fn = tf.train.replica_device_setter(ps_tasks=2, ps_device="/job:ps/cpu:0",
                                        worker_device="/job:worker/task:1/cpu:0")
    assert fn(var()) == "/job:ps/task:0/device:CPU:0"
    assert fn(FakeOp("Add")) == "/job:worker/task:1/device:CPU:0"


def test_merge_keeps_fields_set_by_inner_scopes():
    fn = tf.train.replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:1")
    assert fn(FakeOp("Add", device="/device:GPU:0")) == "/job:worker/task:1/device:GPU:0"
    assert fn(FakeOp("Add", device="/task:3")) == "/job:worker/task:3"
    assert fn(var(device="/device:CPU:0")) == "/job:ps/task:0/device:CPU:0"
    # A task set by the op itself wins over the strategy's choice.
    assert fn(var(device="/task:5")) == "/job:ps/task:5"


def test_ps_task_only_chosen_for_the_ps_job():
    fn = tf.train.replica_device_setter(ps_tasks=2)
    # The op is pinned to another job: its device is kept, no ps task is consumed.
    assert fn(var(device="/job:worker")) == "/job:worker"
    assert fn(var()) == "/job:ps/task:0"
    assert fn(var(device="/job:ps")) == "/job:ps/task:1"


def test_ps_device_without_job_takes_no_task():
    fn = tf.train.replica_device_setter(ps_tasks=2, ps_device="/cpu:0")
    assert fn(var()) == "/device:CPU:0"


def test_empty_ps_device_puts_everything_on_worker():
    fn = tf.train.replica_device_setter(ps_tasks=2, ps_device="")
    assert fn(var()) == "/job:worker"


def test_no_merge_keeps_existing_device(caplog):
    with caplog.at_level(logging.WARNING):
        fn = tf.train.replica_device_setter(ps_tasks=2, merge_devices=False)
    assert "merge_devices=true" in caplog.text
    assert fn(FakeOp("Add", device="/device:GPU:0")) == "/device:GPU:0"
    assert fn(var(device="/task:4")) == "/task:4"
    assert fn(FakeOp("Add")) == "/job:worker"


def test_custom_ps_ops_and_strategy():
    fn = tf.train.replica_device_setter(ps_tasks=3, ps_ops=["Const"], ps_strategy=lambda op: 2)
    assert fn(FakeOp("Const")) == "/job:ps/task:2"
    assert fn(var()) == "/job:worker"


def test_bad_strategy():
    with pytest.raises(TypeError, match="ps_strategy must be callable"):
        tf.train.replica_device_setter(ps_tasks=1, ps_strategy=3)


def test_bad_cluster():
    with pytest.raises(TypeError):
        tf.train.replica_device_setter(cluster="ps|ps0:1")


def test_round_robin_strategy():
    s = _RoundRobinStrategy(3)
    assert [s(None) for _ in range(7)] == [0, 1, 2, 0, 1, 2, 0]


def test_on_a_graph():
    cluster = tf.train.ClusterSpec(CLUSTER)
    setter = tf.train.replica_device_setter(cluster=cluster, ps_ops=["Placeholder"],
                                            worker_device="/job:worker/task:2")
    with tf.device(setter):
        p0 = tf.placeholder(tf.float32, [2])
        p1 = tf.placeholder(tf.float32, [2])
        s = p0 + p1
        with tf.device("/cpu:0"):
            p2 = tf.placeholder(tf.float32, [2])
            c = tf.constant(1.0)
    assert p0.op.device == "/job:ps/task:0"
    assert p1.op.device == "/job:ps/task:1"
    assert s.op.device == "/job:worker/task:2"
    assert p2.op.device == "/job:ps/task:0/device:CPU:0"
    assert c.op.device == "/job:worker/task:2/device:CPU:0"


def test_on_a_graph_inside_outer_scope():
    setter = tf.train.replica_device_setter(ps_tasks=2, ps_ops=["Placeholder"], worker_device="")
    with tf.device("/job:worker/task:1"):
        with tf.device(setter):
            p = tf.placeholder(tf.float32, [])
            c = tf.constant(1.0)
    assert p.op.device == "/job:ps/task:0"
    # The outer scope fills what the setter left unset.
    assert c.op.device == "/job:worker/task:1"


# -- greedy load balancing -------------------------------------------------------


def test_byte_size_load_fn_from_attrs():
    assert tf.train.byte_size_load_fn(var((2, 3), tf.float32)) == 24
    assert tf.train.byte_size_load_fn(var((10,), tf.float64)) == 80
    assert tf.train.byte_size_load_fn(var((), tf.int32)) == 4
    assert tf.train.byte_size_load_fn(var((2,), "int64")) == 16


def test_byte_size_load_fn_from_single_output():
    op = FakeOp("Const", outputs=[FakeTensor([4, 4], tf.float16)])
    assert tf.train.byte_size_load_fn(op) == 32


def test_byte_size_load_fn_errors():
    with pytest.raises(ValueError, match="must have a single output"):
        tf.train.byte_size_load_fn(FakeOp("Split", name="split", outputs=[
            FakeTensor([1], tf.float32), FakeTensor([1], tf.float32)]))
    with pytest.raises(ValueError, match="not fully defined"):
        tf.train.byte_size_load_fn(var((None, 3)))


def test_byte_size_load_fn_on_graph_op():
    p = tf.placeholder(tf.float32, [3, 5])
    assert tf.train.byte_size_load_fn(p.op) == 60


def test_greedy_strategy_balances_bytes():
    greedy = tf.train.GreedyLoadBalancingStrategy(2, tf.train.byte_size_load_fn)
    fn = tf.train.replica_device_setter(ps_tasks=2, ps_strategy=greedy)
    sizes = [(100,), (10,), (10,), (10,), (100,)]
    assert [fn(var(s)) for s in sizes] == [
        "/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:1", "/job:ps/task:1", "/job:ps/task:1"]


def test_greedy_strategy_ties_go_to_lowest_task():
    greedy = tf.train.GreedyLoadBalancingStrategy(3, lambda op: 1)
    assert [greedy(None) for _ in range(6)] == [0, 1, 2, 0, 1, 2]
    assert all(isinstance(greedy(None), int) for _ in range(3))
