import json

import pytest

import dtf as tf
import dtf.distribute
from dtf.distribute.cluster_resolver import (
    ClusterResolver, SimpleClusterResolver, TFConfigClusterResolver)

CLUSTER = {"ps": ["ps0:2222"], "worker": ["w0:2222", "w1:2222"]}


@pytest.fixture
def tf_config(monkeypatch):
    def set_config(config):
        value = config if isinstance(config, str) else json.dumps(config)
        monkeypatch.setenv("TF_CONFIG", value)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    return set_config


def test_module_layout():
    assert dtf.distribute.cluster_resolver.TFConfigClusterResolver is TFConfigClusterResolver
    assert dtf.distribute.cluster_resolver.SimpleClusterResolver is SimpleClusterResolver


def test_reads_cluster_and_task(tf_config):
    tf_config({"cluster": CLUSTER, "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"})
    r = TFConfigClusterResolver()
    assert r.cluster_spec() == tf.train.ClusterSpec(CLUSTER)
    assert r.task_type == "worker"
    assert r.task_id == 1
    assert r.rpc_layer == "grpc"
    assert r.master() == "grpc://w1:2222"
    assert r.master("ps", 0) == "grpc://ps0:2222"
    assert r.master(rpc_layer="zmq") == "zmq://w1:2222"
    assert r.num_accelerators() == {}
    assert r.environment is None


def test_without_rpc_layer_master_is_host_port(tf_config):
    tf_config({"cluster": CLUSTER, "task": {"type": "worker", "index": "0"}})
    r = TFConfigClusterResolver()
    assert r.task_id == 0
    assert r.rpc_layer is None
    assert r.master() == "w0:2222"


def test_arguments_override_tf_config(tf_config):
    tf_config({"cluster": CLUSTER, "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"})
    r = TFConfigClusterResolver(task_type="ps", task_id=0, rpc_layer="zmq", environment="google")
    assert (r.task_type, r.task_id, r.rpc_layer, r.environment) == ("ps", 0, "zmq", "google")
    assert r.master() == "zmq://ps0:2222"
    r.task_type, r.task_id, r.rpc_layer = "worker", 0, None
    assert r.master() == "grpc://w0:2222"


def test_env_is_read_each_time(tf_config):
    r = TFConfigClusterResolver()
    tf_config({"cluster": CLUSTER, "task": {"type": "worker", "index": 0}})
    assert r.task_id == 0
    tf_config({"cluster": CLUSTER, "task": {"type": "worker", "index": 1}})
    assert r.task_id == 1


def test_no_tf_config(tf_config):
    r = TFConfigClusterResolver()
    assert r.cluster_spec() == tf.train.ClusterSpec({})
    assert not r.cluster_spec()
    assert r.task_type is None and r.task_id is None and r.rpc_layer is None
    assert r.master() == ""


def test_single_task_cluster_has_empty_master(tf_config):
    tf_config({"cluster": {"chief": ["c:1"]}, "task": {"type": "chief", "index": 0},
               "rpc_layer": "grpc"})
    assert TFConfigClusterResolver().master() == ""


def test_session_master_wins(tf_config):
    tf_config({"cluster": CLUSTER, "task": {"type": "worker", "index": 1},
               "session_master": "grpc://elsewhere:1"})
    assert TFConfigClusterResolver().master() == "grpc://elsewhere:1"


def test_master_without_task(tf_config):
    tf_config({"cluster": CLUSTER})
    with pytest.raises(ValueError, match="TF_CONFIG names no task"):
        TFConfigClusterResolver().master()
    assert TFConfigClusterResolver(task_type="ps", task_id=0).master() == "ps0:2222"


def test_unknown_task(tf_config):
    tf_config({"cluster": CLUSTER, "task": {"type": "worker", "index": 7}})
    with pytest.raises(ValueError, match="No task with index 7 in job 'worker'"):
        TFConfigClusterResolver().master()
    tf_config({"cluster": CLUSTER, "task": {"type": "chief", "index": 0}})
    with pytest.raises(ValueError, match="No such job in cluster: 'chief'"):
        TFConfigClusterResolver().master()


def test_sparse_cluster(tf_config):
    tf_config({"cluster": {"worker": {"1": "w1:1"}, "ps": ["p:1"]},
               "task": {"type": "worker", "index": 1}})
    r = TFConfigClusterResolver()
    assert r.cluster_spec().task_indices("worker") == [1]
    assert r.master() == "w1:1"


def test_bad_json_names_tf_config_and_position(tf_config):
    tf_config('{"cluster": {"worker": ["w0:1",]}}')
    r = TFConfigClusterResolver()
    with pytest.raises(ValueError, match=r"TF_CONFIG is not valid JSON: .* line 1 column \d+ \(char \d+\)"):
        r.cluster_spec()
    with pytest.raises(ValueError, match="TF_CONFIG"):
        r.task_type


def test_tf_config_not_an_object(tf_config):
    tf_config("[1, 2]")
    with pytest.raises(ValueError, match="TF_CONFIG must be a JSON object"):
        TFConfigClusterResolver().cluster_spec()
    tf_config({"task": "worker"})
    with pytest.raises(ValueError, match="'task' must be an object"):
        TFConfigClusterResolver().task_type


def test_bad_cluster_type_in_tf_config(tf_config):
    tf_config({"cluster": {"worker": "w0:1"}})
    with pytest.raises(TypeError, match="The tasks for job 'worker'"):
        TFConfigClusterResolver().cluster_spec()


def test_blank_tf_config_is_empty(tf_config):
    tf_config("  ")
    assert TFConfigClusterResolver().master() == ""


# -- SimpleClusterResolver --------------------------------------------------------


def test_simple_cluster_resolver():
    spec = tf.train.ClusterSpec(CLUSTER)
    r = SimpleClusterResolver(spec, master="grpc://w0:2222", task_type="worker", task_id=0)
    assert isinstance(r, ClusterResolver)
    assert r.cluster_spec() is spec
    assert r.master() == "grpc://w0:2222"
    assert r.master("ps", 0) == "ps0:2222"
    assert r.master("ps", 0, rpc_layer="grpc") == "grpc://ps0:2222"
    assert (r.task_type, r.task_id, r.rpc_layer, r.environment) == ("worker", 0, None, "")
    assert r.num_accelerators() == {}
    r.task_id = 1
    assert r.task_id == 1


def test_simple_cluster_resolver_rpc_layer_and_accelerators():
    spec = tf.train.ClusterSpec(CLUSTER)
    r = SimpleClusterResolver(spec, master="w1:2222", rpc_layer="grpc",
                              num_accelerators={"GPU": 2})
    assert r.master() == "grpc://w1:2222"
    assert r.num_accelerators() == {"GPU": 2}


def test_simple_cluster_resolver_errors():
    with pytest.raises(TypeError, match="cluster_spec must be a `tf.train.ClusterSpec`"):
        SimpleClusterResolver(CLUSTER)
    with pytest.raises(TypeError, match="master must be a string"):
        SimpleClusterResolver(tf.train.ClusterSpec(CLUSTER), master=None)


def test_base_resolver_is_abstract():
    with pytest.raises(NotImplementedError):
        ClusterResolver().cluster_spec()
    with pytest.raises(NotImplementedError):
        ClusterResolver().master()
