import pytest

import dtf as tf
from dtf.framework.device_spec import DeviceSpec, canonical, merge_device


@pytest.mark.parametrize("spec, expected", [
    ("", ""),
    ("/gpu:0", "/device:GPU:0"),
    ("/cpu:0", "/device:CPU:0"),
    ("/CPU:1", "/device:CPU:1"),
    ("/cpu", "/device:CPU:*"),
    ("/gpu:*", "/device:GPU:*"),
    ("/job:worker/task:1/device:GPU:0", "/job:worker/task:1/device:GPU:0"),
    ("/job:worker/task:1/cpu:0", "/job:worker/task:1/device:CPU:0"),
    ("/job:ps/replica:0/task:3/device:CPU:*", "/job:ps/replica:0/task:3/device:CPU:*"),
    ("/task:2/job:ps", "/job:ps/task:2"),
    ("job:ps//task:0/", "/job:ps/task:0"),
    ("/device:TPU:3", "/device:TPU:3"),
])
def test_from_string_to_string(spec, expected):
    d = DeviceSpec.from_string(spec)
    assert d.to_string() == expected
    assert str(d) == expected
    assert DeviceSpec.from_string(expected) == d
    assert canonical(spec) == expected


def test_fields():
    d = DeviceSpec.from_string("/job:ps/replica:0/task:3/device:GPU:2")
    assert (d.job, d.replica, d.task, d.device_type, d.device_index) == ("ps", 0, 3, "GPU", 2)
    any_cpu = DeviceSpec.from_string("/cpu:*")
    assert (any_cpu.device_type, any_cpu.device_index) == ("CPU", None)
    assert DeviceSpec.from_string("").job is None


def test_constructor_normalises_like_tf():
    d = DeviceSpec(job="worker", replica="1", task="2", device_type="cpu", device_index="0")
    assert d.to_string() == "/job:worker/replica:1/task:2/device:CPU:0"
    assert DeviceSpec(device_type="gpu").to_string() == "/device:GPU:*"
    assert DeviceSpec(device_type="GPU", device_index="*").device_index is None
    assert DeviceSpec(job=0).job == "0"


@pytest.mark.parametrize("bad, match", [
    ("/foo:1", "Unknown attribute: 'foo' in '/foo:1'"),
    ("/JOB:ps", "Unknown attribute: 'JOB'"),
    ("/device:GPU", "Unknown attribute: 'device'"),
    ("/job:a:b", "Unknown attribute: 'job'"),
    ("/cpu:0/gpu:0", "Cannot specify multiple device types"),
    ("/device:CPU:0/device:GPU:1", "Cannot specify multiple device types"),
    ("/device:GPU:x", "invalid literal for int"),
    ("/task:x", "invalid literal"),
])
def test_bad_strings(bad, match):
    with pytest.raises(ValueError, match=match):
        DeviceSpec.from_string(bad)


def test_merge_field_by_field():
    base = DeviceSpec.from_string("/job:worker/task:1/device:GPU:1")
    assert base.make_merged_spec(DeviceSpec(task=3)).to_string() == "/job:worker/task:3/device:GPU:1"
    assert base.make_merged_spec(DeviceSpec(job="ps")).to_string() == "/job:ps/task:1/device:GPU:1"
    # As in TF, an unset index keeps the other spec's index even when the type changes.
    assert base.make_merged_spec(DeviceSpec(device_type="CPU")).to_string() == \
        "/job:worker/task:1/device:CPU:1"
    assert base.make_merged_spec(DeviceSpec()).to_string() == base.to_string()
    assert DeviceSpec().make_merged_spec(base) == base
    assert merge_device("/job:worker", "/task:1") == "/job:worker/task:1"
    assert merge_device("", DeviceSpec(device_type="CPU", device_index=0)) == "/device:CPU:0"


def test_merge_from_and_parse_from_string_return_new_specs():
    base = DeviceSpec.from_string("/job:worker/task:1")
    merged = base.merge_from(DeviceSpec.from_string("/cpu:0"))
    assert merged.to_string() == "/job:worker/task:1/device:CPU:0"
    assert base.to_string() == "/job:worker/task:1"
    # TF1's parse_from_string overwrote every field, unset ones included.
    assert base.parse_from_string("/task:2").to_string() == "/task:2"


def test_replace():
    d = DeviceSpec.from_string("/job:ps/task:0/cpu:0")
    assert d.replace(task=2).to_string() == "/job:ps/task:2/device:CPU:0"
    assert d.replace(device_type=None).to_string() == "/job:ps/task:0"
    assert d.to_string() == "/job:ps/task:0/device:CPU:0"


def test_immutable_and_hashable():
    d = DeviceSpec.from_string("/job:ps")
    with pytest.raises(AttributeError):
        d.job = "worker"
    with pytest.raises(AttributeError):
        d.task = 1
    assert hash(d) == hash(DeviceSpec(job="ps"))
    assert len({d, DeviceSpec(job="ps"), DeviceSpec(job="worker")}) == 2
    assert d != "/job:ps"
    assert repr(d) == "DeviceSpec('/job:ps')"


def test_tf_exports():
    assert tf.DeviceSpec is DeviceSpec


# -- tf.device scopes on a Graph ---------------------------------------------------


def test_nested_string_scopes_merge():
    with tf.device("/job:worker"):
        with tf.device("/task:1"):
            a = tf.constant(1.0)
        with tf.device("/job:ps/cpu:0"):
            b = tf.constant(1.0)
        c = tf.constant(1.0)
    d = tf.constant(1.0)
    assert a.op.device == "/job:worker/task:1"
    assert b.op.device == "/job:ps/device:CPU:0"
    assert c.op.device == "/job:worker"
    assert d.op.device == ""


def test_legacy_device_string_is_canonical_on_op():
    with tf.device("/job:worker/task:1/cpu:0"):
        a = tf.constant(1.0)
    assert a.op.device == "/job:worker/task:1/device:CPU:0"
    assert a.device == "/job:worker/task:1/device:CPU:0"


def test_device_spec_object_scope():
    with tf.device(DeviceSpec(job="ps", task=0)):
        with tf.device("/gpu:1"):
            a = tf.constant(1.0)
    assert a.op.device == "/job:ps/task:0/device:GPU:1"


def test_inner_index_unset_keeps_outer_index():
    with tf.device("/device:GPU:1"):
        with tf.device("/device:CPU:*"):
            a = tf.constant(1.0)
    assert a.op.device == "/device:CPU:1"


def test_device_none_resets():
    with tf.device("/job:worker/task:1"):
        with tf.device(None):
            a = tf.constant(1.0)
            with tf.device("/cpu:0"):
                b = tf.constant(1.0)
        c = tf.constant(1.0)
    assert a.op.device == ""
    assert b.op.device == "/device:CPU:0"
    assert c.op.device == "/job:worker/task:1"


def test_empty_string_scope_is_a_no_op():
    with tf.device("/job:worker"):
        with tf.device(""):
            a = tf.constant(1.0)
    assert a.op.device == "/job:worker"


def test_device_function():
    seen = []

    def fn(op):
        seen.append((op.type, op.device))
        return "/job:ps/task:0" if op.type == "Placeholder" else "/job:worker/cpu:0"

    with tf.device(fn):
        p = tf.placeholder(tf.float32, [2])
        with tf.device("/task:3"):
            c = tf.constant(1.0)
    assert p.op.device == "/job:ps/task:0"
    # The inner string scope applies first; the function sees the device merged so far.
    assert ("Const", "/task:3") in seen
    assert c.op.device == "/job:worker/device:CPU:0"


def test_device_function_may_return_spec_or_none():
    with tf.device(lambda op: DeviceSpec(job="ps", task=1)):
        a = tf.constant(1.0)
    with tf.device("/job:worker"):
        with tf.device(lambda op: None):
            b = tf.constant(1.0)
    assert a.op.device == "/job:ps/task:1"
    assert b.op.device == "/job:worker"


def test_device_function_inside_string_scope():
    # An outer string scope fills the fields the function left unset.
    with tf.device("/job:worker/task:2/cpu:0"):
        with tf.device(lambda op: "/job:ps"):
            a = tf.constant(1.0)
    assert a.op.device == "/job:ps/task:2/device:CPU:0"


def test_string_scope_inside_device_function():
    with tf.device(lambda op: "/job:ps/task:0" if not op.device else op.device):
        with tf.device("/job:worker/task:1"):
            a = tf.constant(1.0)
        b = tf.constant(1.0)
    assert a.op.device == "/job:worker/task:1"
    assert b.op.device == "/job:ps/task:0"


def test_graph_device_method_and_set_device():
    g = tf.Graph()
    with g.as_default(), g.device("/job:worker"):
        a = tf.constant(1.0)
    assert a.op.device == "/job:worker"
    a.op._set_device("/job:ps/cpu:0")
    assert a.op.device == "/job:ps/device:CPU:0"


def test_bad_device_string_in_scope():
    with pytest.raises(ValueError, match="Unknown attribute"):
        with tf.device("/bogus:1"):
            pass
