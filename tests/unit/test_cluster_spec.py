import pytest

import dtf as tf
from dtf.train.cluster_spec import ClusterSpec, parse_address

DENSE = {"worker": ["w0:2222", "w1:2222", "w2:2222"], "ps": ["ps0:2222", "ps1:2222"]}
SPARSE = {"worker": {1: "w1:2222", 3: "w3:2222"}, "ps": ["ps0:2222"]}


def test_exported_as_tf_train():
    assert tf.train.ClusterSpec is ClusterSpec


def test_dense_queries():
    c = ClusterSpec(DENSE)
    assert c.jobs == ["ps", "worker"]
    assert c.num_tasks("worker") == 3
    assert c.task_indices("ps") == [0, 1]
    assert c.task_address("worker", 2) == "w2:2222"
    assert c.job_tasks("ps") == ["ps0:2222", "ps1:2222"]
    assert c.as_dict() == DENSE
    assert isinstance(c.as_dict()["worker"], list)


def test_sparse_queries():
    c = ClusterSpec(SPARSE)
    assert c.num_tasks("worker") == 2
    assert c.task_indices("worker") == [1, 3]
    assert c.job_tasks("worker") == [None, "w1:2222", None, "w3:2222"]
    assert c.as_dict() == {"worker": {1: "w1:2222", 3: "w3:2222"}, "ps": ["ps0:2222"]}
    with pytest.raises(ValueError, match="No task with index 0 in job 'worker'"):
        c.task_address("worker", 0)


def test_sparse_dict_that_is_dense_prints_as_list():
    c = ClusterSpec({"worker": {1: "b:1", 0: "a:1"}})
    assert c.as_dict() == {"worker": ["a:1", "b:1"]}


def test_string_task_indices_are_converted():
    assert ClusterSpec({"w": {"2": "a:1"}}).task_indices("w") == [2]


def test_empty_job_and_empty_cluster():
    c = ClusterSpec({"worker": []})
    assert c.num_tasks("worker") == 0
    assert c.job_tasks("worker") == []
    assert c.as_dict() == {"worker": {}}
    assert bool(c)
    assert not ClusterSpec({})
    assert ClusterSpec({}).jobs == []


def test_unknown_job_and_task_errors():
    c = ClusterSpec(DENSE)
    for method in (c.num_tasks, c.task_indices, c.job_tasks):
        with pytest.raises(ValueError, match="No such job in cluster: 'chief'"):
            method("chief")
    with pytest.raises(ValueError, match="No such job in cluster: 'chief'"):
        c.task_address("chief", 0)
    with pytest.raises(ValueError, match="No task with index 5 in job 'worker'"):
        c.task_address("worker", 5)


@pytest.mark.parametrize("bad", [
    "worker|w0:2222", ["w0:2222"], 3, None,
])
def test_bad_cluster_type(bad):
    with pytest.raises(TypeError, match="`cluster` must be a dictionary"):
        ClusterSpec(bad)


def test_bad_job_value_type():
    with pytest.raises(TypeError, match="The tasks for job 'worker' must be a list or a dictionary"):
        ClusterSpec({"worker": "w0:2222"})


def test_bad_address_and_job_name_types():
    with pytest.raises(TypeError, match="Task address 2222 must be bytes or unicode"):
        ClusterSpec({"worker": [2222]})
    with pytest.raises(TypeError, match="Job name 3 must be bytes or unicode"):
        ClusterSpec({3: ["a:1"]})
    with pytest.raises(TypeError, match="must be an integer"):
        ClusterSpec({"worker": {1.5: "a:1"}})


def test_negative_task_index():
    with pytest.raises(ValueError, match="non-negative"):
        ClusterSpec({"worker": {-1: "a:1"}})


def test_bytes_are_decoded():
    c = ClusterSpec({b"worker": [b"w0:1"]})
    assert c.task_address("worker", 0) == "w0:1"


def test_copy_from_cluster_spec_and_cluster_def():
    c = ClusterSpec(SPARSE)
    assert ClusterSpec(c) == c
    cdef = c.as_cluster_def()
    assert cdef == {"job": [{"name": "ps", "tasks": {0: "ps0:2222"}},
                            {"name": "worker", "tasks": {1: "w1:2222", 3: "w3:2222"}}]}
    assert ClusterSpec(cdef) == c


def test_cluster_def_is_a_copy():
    c = ClusterSpec(DENSE)
    c.as_cluster_def()["job"][0]["tasks"][0] = "evil:1"
    c.as_dict()["ps"].append("evil:2")
    assert c.job_tasks("ps") == ["ps0:2222", "ps1:2222"]


def test_input_is_copied():
    src = {"worker": ["a:1"]}
    c = ClusterSpec(src)
    src["worker"].append("b:1")
    assert c.num_tasks("worker") == 1


def test_equality_and_hash():
    a = ClusterSpec(DENSE)
    b = ClusterSpec({"ps": ["ps0:2222", "ps1:2222"],
                     "worker": {0: "w0:2222", 1: "w1:2222", 2: "w2:2222"}})
    assert a == b and not (a != b)
    assert hash(a) == hash(b)
    assert a != ClusterSpec({"ps": ["ps0:2222"]})
    # TF compares the {job: {index: address}} mapping.
    assert a == {"ps": {0: "ps0:2222", 1: "ps1:2222"},
                 "worker": {0: "w0:2222", 1: "w1:2222", 2: "w2:2222"}}
    assert a != 3


def test_immutable():
    c = ClusterSpec(DENSE)
    with pytest.raises(AttributeError):
        c.foo = 1
    with pytest.raises(AttributeError):
        c._cluster_spec = {}


def test_repr():
    c = ClusterSpec({"worker": ["w0:1"], "ps": {2: "p:1"}})
    assert repr(c) == "ClusterSpec({'ps': {2: 'p:1'}, 'worker': ['w0:1']})"


def test_from_flags_string():
    c = ClusterSpec.from_flags_string("worker|w0:2222;w1:2222,ps|ps0:2222")
    assert c.as_dict() == {"worker": ["w0:2222", "w1:2222"], "ps": ["ps0:2222"]}
    assert ClusterSpec.from_flags_string(" local|localhost:0 ") == ClusterSpec(
        {"local": ["localhost:0"]})


@pytest.mark.parametrize("flags, match", [
    ("worker", "Invalid job specification 'worker'"),
    ("|w0:1", "Invalid job specification"),
    ("worker|w0", "Invalid address 'w0'"),
    ("worker|w0:1,worker|w1:1", "Job 'worker' appears twice"),
])
def test_from_flags_string_errors(flags, match):
    with pytest.raises(ValueError, match=match):
        ClusterSpec.from_flags_string(flags)


def test_parse_address():
    assert parse_address("localhost:2222") == ("localhost", 2222)
    assert parse_address("10.0.0.1:0") == ("10.0.0.1", 0)
    assert parse_address("[::1]:65535") == ("[::1]", 65535)


@pytest.mark.parametrize("bad", ["localhost", "localhost:", ":2222", "host:abc", "host:-1"])
def test_parse_address_bad(bad):
    with pytest.raises(ValueError, match=f"Invalid address '{bad}'"):
        parse_address(bad)


def test_parse_address_port_out_of_range():
    with pytest.raises(ValueError, match="port 70000 is out of range"):
        parse_address("h:70000")
    with pytest.raises(TypeError):
        parse_address(2222)
