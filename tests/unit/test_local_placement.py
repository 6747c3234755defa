"""A plain local tf.Session refuses ops pinned to a job, replica or task it does not have,
as TensorFlow does (checked against TF 2.21's tf.compat.v1: soft placement does not help)."""
import pytest

import dtf as tf

# The devices are this process's: the CPU, and a GPU where one is (or the CUDA simulator
# runs, as in the GPU tier of the same test run).
TF_MESSAGE = ("Cannot assign a device for operation {name}: {{{{node {name}}}}} was explicitly "
              "assigned to {device} but available devices are [ {devices} ]. Make sure the "
              "device specification refers to a valid device.")


@pytest.mark.parametrize("device", ["/job:nowhere/task:0", "/job:ps/task:7", "/job:localhost/task:3",
                                    "/replica:1"])
@pytest.mark.parametrize("soft", [False, True])
def test_ops_pinned_to_a_missing_task_fail_like_tf(device, soft):
    with tf.device(device):
        x = tf.add(tf.constant(2.0, name="two"), 1.0, name="add")
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=soft)) as sess:
        devices = [d.name for d in sess.list_devices()]
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            sess.run(x)
    assert devices[0] == "/job:localhost/replica:0/task:0/device:CPU:0"
    assert e.value.message == TF_MESSAGE.format(name="two", device=device, devices=", ".join(devices))


def test_the_whole_graph_is_checked_and_own_devices_run():
    with tf.device("/job:localhost/replica:0/task:0/device:CPU:0"):
        ok = tf.constant(1.0) + 1
    sess = tf.Session()
    assert sess.run(ok) == 2.0
    with tf.device("/job:worker/task:0"):
        tf.constant(0.0, name="elsewhere")
    # TF places the whole graph: an unrelated node on a missing job fails every run after.
    for _ in range(2):
        with pytest.raises(tf.errors.InvalidArgumentError, match="operation elsewhere: "):
            sess.run(ok)
    sess.close()
