"""Between-graph training that reads sharded TFRecord files of the 8x8 digits on each
worker: with ``tf.data`` (``--input=data``: list_files -> shard by worker -> interleave
TFRecordDataset -> parse -> shuffle -> batch -> prefetch) or the TF1 classic way
(``--input=queues``: string_input_producer -> TFRecordReader -> parse -> shuffle_batch
under queue runners). Each worker reads only its own files; variables live on the ps.

    python examples/tfrecord_digits.py --ps_hosts=localhost:2222 \
        --worker_hosts=localhost:2223,localhost:2224 --job_name=ps --task_index=0
    python examples/tfrecord_digits.py ... --job_name=worker --task_index=0 [--input=queues]
    python examples/tfrecord_digits.py ... --job_name=worker --task_index=1 [--input=queues]

The shards are written to --data_dir first if they are not there (every task writes the
same bytes, each file renamed into place whole). Training runs --num_epochs over the
worker's shards; each worker prints how many examples it read.
"""
import argparse
import glob
import os
import sys

import dtf as tf
import between_graph_async
from mlp_digits import load_digits

NUM_SHARDS = 4


def write_shards(data_dir):
    """The training digits as NUM_SHARDS TFRecord files of Examples (image: 64 floats,
    label: int64)."""
    os.makedirs(data_dir, exist_ok=True)
    (x, y), _ = load_digits()
    for shard in range(NUM_SHARDS):
        path = os.path.join(data_dir, f"digits-{shard:05d}-of-{NUM_SHARDS:05d}.tfrecord")
        if os.path.exists(path):
            continue
        tmp = f"{path}.tmp{os.getpid()}"
        with tf.python_io.TFRecordWriter(tmp) as w:
            for image, label in zip(x[shard::NUM_SHARDS], y[shard::NUM_SHARDS]):
                w.write(tf.train.Example(features=tf.train.Features(feature={
                    "image": tf.train.Feature(float_list=tf.train.FloatList(value=image.tolist())),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(label)])),
                })).SerializeToString())
        os.replace(tmp, path)
    return os.path.join(data_dir, "digits-*.tfrecord")


def parse(serialized):
    f = tf.parse_single_example(serialized, {"image": tf.FixedLenFeature([64], tf.float32),
                                             "label": tf.FixedLenFeature([], tf.int64)})
    return f["image"], f["label"]


def input_with_datasets(pattern, flags, task_index, num_workers):
    files = tf.data.Dataset.list_files(pattern, shuffle=False).shard(num_workers, task_index)
    ds = (files.interleave(tf.data.TFRecordDataset, cycle_length=2)
          .map(parse, num_parallel_calls=2)
          .shuffle(1000, seed=task_index)
          .repeat(flags.num_epochs)
          .batch(flags.batch_size)
          .prefetch(2))
    return ds.make_one_shot_iterator().get_next()


def input_with_queues(pattern, flags, task_index, num_workers):
    mine = sorted(glob.glob(pattern))[task_index::num_workers]
    files = tf.train.string_input_producer(mine, num_epochs=flags.num_epochs, seed=task_index)
    _, serialized = tf.TFRecordReader().read(files)
    image, label = parse(serialized)
    return tf.train.shuffle_batch([image, label], flags.batch_size, capacity=1000,
                                  min_after_dequeue=200, num_threads=2, seed=task_index,
                                  allow_smaller_final_batch=True)


def build_model(images, labels):
    with tf.variable_scope("hidden"):
        h = tf.layers.dense(images, 64, activation=tf.nn.relu)
    logits = tf.layers.dense(h, 10, name="logits")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=global_step)
    return train_op, loss, accuracy, global_step


def train(flags, cluster, task_index, master):
    pattern = write_shards(flags.data_dir)
    num_workers = cluster.num_tasks("worker")
    make_input = input_with_datasets if flags.input == "data" else input_with_queues
    # The input pipeline stays on this worker, local epoch counter included (under
    # replica_device_setter every variable would go to the ps, shared by all workers).
    with tf.device(f"/job:worker/task:{task_index}"):
        images, labels = make_input(pattern, flags, task_index, num_workers)
    with tf.device(tf.train.replica_device_setter(
            worker_device=f"/job:worker/task:{task_index}", cluster=cluster)):
        train_op, loss, accuracy, global_step = build_model(images, labels)
        batch_size = tf.shape(labels)[0]
    seen, loss_value, acc = 0, None, None
    with tf.train.MonitoredTrainingSession(master=master, is_chief=task_index == 0,
                                           checkpoint_dir=flags.checkpoint_dir) as sess:
        while not sess.should_stop():
            _, loss_value, acc, n = sess.run([train_op, loss, accuracy, batch_size])
            seen += int(n)
    print(f"worker {task_index} ({flags.input}) read {seen} examples: loss {loss_value:.3f}, "
          f"batch accuracy {acc:.2f}", flush=True)


def main(flags):
    return between_graph_async.main(flags, train_fn=train)


def parse_flags(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ps_hosts", default="", help="Comma-separated list of hostname:port pairs")
    p.add_argument("--worker_hosts", default="", help="Comma-separated list of hostname:port pairs")
    p.add_argument("--job_name", default="", help="One of 'ps', 'worker'")
    p.add_argument("--task_index", type=int, default=0, help="Index of task within the job")
    p.add_argument("--input", choices=("data", "queues"), default="data")
    p.add_argument("--data_dir", default="/tmp/digits_tfrecords")
    p.add_argument("--checkpoint_dir", default=None)
    p.add_argument("--num_epochs", type=int, default=3)
    p.add_argument("--batch_size", type=int, default=32)
    flags = p.parse_args(argv)
    if not os.environ.get("TF_CONFIG") and not (flags.ps_hosts and flags.worker_hosts and flags.job_name):
        p.error("give --ps_hosts, --worker_hosts and --job_name, or set TF_CONFIG")
    return flags


if __name__ == "__main__":
    sys.exit(main(parse_flags(sys.argv[1:])))
