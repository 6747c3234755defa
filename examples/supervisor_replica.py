"""Distributed training under tf.train.Supervisor, in the shape of TF1's classic
``mnist_replica.py`` (on the 8x8 digits, so it needs no download).

One process per task; each starts its own tf.train.Server:

    python examples/supervisor_replica.py --ps_hosts=localhost:2222 \
        --worker_hosts=localhost:2223,localhost:2224 --job_name=ps --task_index=0
    python examples/supervisor_replica.py ... --job_name=worker --task_index=0 --train_dir=/tmp/sv
    python examples/supervisor_replica.py ... --job_name=worker --task_index=1

Worker 0 is the chief: its Supervisor initializes the model (or restores the newest
checkpoint in --train_dir) and saves a checkpoint every --save_model_secs; the other
workers wait until the model is ready. With --sync_replicas the gradients of the
replicas are aggregated by tf.train.SyncReplicasOptimizer.
"""
import argparse
import os
import sys
import time

import numpy as np

import dtf as tf

HERE = os.path.dirname(os.path.abspath(__file__))
IMAGE_PIXELS = 8


def load_digits():
    data = np.load(os.path.join(HERE, "data", "digits.npz"))
    images = data["images"].astype(np.float32) / 16.0
    labels = np.eye(10, dtype=np.float32)[data["labels"]]
    return images, labels


def main(flags):
    cluster = tf.train.ClusterSpec({"ps": flags.ps_hosts.split(","),
                                    "worker": flags.worker_hosts.split(",")})
    server = tf.train.Server(cluster, job_name=flags.job_name, task_index=flags.task_index)
    if flags.job_name == "ps":
        print(f"ps {flags.task_index} serving on {server.target}", flush=True)
        server.join()
        return 0

    num_workers = len(cluster.job_tasks("worker"))
    is_chief = flags.task_index == 0
    images, labels = load_digits()
    rng = np.random.RandomState(flags.task_index)

    worker_device = f"/job:worker/task:{flags.task_index}/cpu:0"
    with tf.device(tf.train.replica_device_setter(worker_device=worker_device,
                                                  ps_device="/job:ps/cpu:0", cluster=cluster)):
        global_step = tf.Variable(0, name="global_step", trainable=False)

        hid_w = tf.Variable(tf.truncated_normal([IMAGE_PIXELS * IMAGE_PIXELS, flags.hidden_units],
                                                stddev=1.0 / IMAGE_PIXELS, seed=1), name="hid_w")
        hid_b = tf.Variable(tf.zeros([flags.hidden_units]), name="hid_b")
        sm_w = tf.Variable(tf.truncated_normal([flags.hidden_units, 10],
                                               stddev=1.0 / np.sqrt(flags.hidden_units), seed=2),
                           name="sm_w")
        sm_b = tf.Variable(tf.zeros([10]), name="sm_b")

        x = tf.placeholder(tf.float32, [None, IMAGE_PIXELS * IMAGE_PIXELS])
        y_ = tf.placeholder(tf.float32, [None, 10])
        hid = tf.nn.relu(tf.nn.xw_plus_b(x, hid_w, hid_b))
        y = tf.nn.softmax(tf.nn.xw_plus_b(hid, sm_w, sm_b))
        cross_entropy = -tf.reduce_sum(y_ * tf.log(tf.clip_by_value(y, 1e-10, 1.0)))

        opt = tf.train.AdamOptimizer(flags.learning_rate)
        if flags.sync_replicas:
            opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=num_workers,
                                                 total_num_replicas=num_workers,
                                                 name="mnist_sync_replicas")
        train_step = opt.minimize(cross_entropy, global_step=global_step)

        if flags.sync_replicas:
            local_init_op = opt.chief_init_op if is_chief else opt.local_step_init_op
            ready_for_local_init_op = opt.ready_for_local_init_op
            chief_queue_runner = opt.get_chief_queue_runner()
            sync_init_op = opt.get_init_tokens_op()

        init_op = tf.global_variables_initializer()
        if flags.sync_replicas:
            sv = tf.train.Supervisor(is_chief=is_chief, logdir=flags.train_dir, init_op=init_op,
                                     local_init_op=local_init_op,
                                     ready_for_local_init_op=ready_for_local_init_op,
                                     recovery_wait_secs=1, global_step=global_step,
                                     save_model_secs=flags.save_model_secs)
        else:
            sv = tf.train.Supervisor(is_chief=is_chief, logdir=flags.train_dir, init_op=init_op,
                                     recovery_wait_secs=1, global_step=global_step,
                                     save_model_secs=flags.save_model_secs)

        sess_config = tf.ConfigProto(allow_soft_placement=True, log_device_placement=False,
                                     device_filters=["/job:ps", f"/job:worker/task:{flags.task_index}"])
        if is_chief:
            print(f"Worker {flags.task_index}: Initializing session...", flush=True)
        else:
            print(f"Worker {flags.task_index}: Waiting for session to be initialized...", flush=True)
        sess = sv.prepare_or_wait_for_session(server.target, config=sess_config)
        print(f"Worker {flags.task_index}: Session initialization complete.", flush=True)
        first_step = sess.run(global_step)
        print(f"Worker {flags.task_index}: starting at global step {first_step}", flush=True)

        if flags.sync_replicas and is_chief:
            sess.run(sync_init_op)
            sv.start_queue_runners(sess, [chief_queue_runner])

        local_step = 0
        while True:
            idx = rng.randint(0, len(images), flags.batch_size)
            _, step = sess.run([train_step, global_step], feed_dict={x: images[idx], y_: labels[idx]})
            local_step += 1
            if flags.step_delay:
                time.sleep(flags.step_delay)
            if step >= flags.train_steps:
                break
        print(f"Worker {flags.task_index}: training done after {local_step} local steps, "
              f"global step {step}", flush=True)
        xent = sess.run(cross_entropy, feed_dict={x: images, y_: labels})
        print(f"Worker {flags.task_index}: cross entropy per example {xent / len(images):.4f}",
              flush=True)
        sv.stop()  # joins the checkpoint thread first: two saves at once would race
        if is_chief:
            sv.saver.save(sess, sv.save_path, global_step=global_step)
        sess.close()
    return 0


def parse_flags(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ps_hosts", required=True, help="Comma-separated list of hostname:port pairs")
    p.add_argument("--worker_hosts", required=True, help="Comma-separated list of hostname:port pairs")
    p.add_argument("--job_name", required=True, help="One of 'ps', 'worker'")
    p.add_argument("--task_index", type=int, default=0, help="Index of task within the job")
    p.add_argument("--train_dir", default=None, help="The chief's logdir (checkpoints, events)")
    p.add_argument("--hidden_units", type=int, default=32)
    p.add_argument("--train_steps", type=int, default=200, help="Global steps to train to")
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--learning_rate", type=float, default=0.01)
    p.add_argument("--sync_replicas", action="store_true")
    p.add_argument("--save_model_secs", type=float, default=600)
    p.add_argument("--step_delay", type=float, default=0.0, help="Seconds to sleep after each step")
    return p.parse_args(argv)


if __name__ == "__main__":
    import logging

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    sys.exit(main(parse_flags(sys.argv[1:])))
