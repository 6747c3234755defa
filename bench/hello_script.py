"""The cold-start script of W1, the same code under either implementation:
``python -m bench.hello_script --impl dtf|tf``.

Two in-process servers on free ports; the Hello string fetched from task 1 through the
master of task 0; the seeds' 238 split over the two tasks. What ``dtf hello`` does.
"""
from __future__ import annotations

import argparse
import socket
import sys

GREETING = "Hello, distributed TensorFlow!"


def _free_ports(n: int) -> list:
    """``n`` different free 127.0.0.1 ports: bound side by side, so the kernel cannot hand
    one out twice (one at a time, a closed port can come back)."""
    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def hello(tf):
    addresses = [f"127.0.0.1:{port}" for port in _free_ports(2)]
    cluster = tf.train.ClusterSpec({"local": addresses})
    servers = [tf.train.Server(cluster, job_name="local", task_index=i) for i in range(2)]
    with tf.Graph().as_default():
        with tf.device("/job:local/task:1"):
            greeting = tf.constant(GREETING)
        with tf.Session(servers[0].target) as sess:
            text = sess.run(greeting)
    with tf.Graph().as_default():
        x = tf.constant(2)
        with tf.device("/job:local/task:1"):
            y2 = x - 66
        with tf.device("/job:local/task:0"):
            y1 = x + 300
            y = y1 + y2
        with tf.Session(servers[0].target) as sess:
            result = sess.run(y)
    for s in servers:
        if hasattr(s, "stop"):
            s.stop()
    return text, result


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--impl", choices=("dtf", "tf"), required=True)
    args = p.parse_args(argv)
    from bench.impl import load

    text, result = hello(load(args.impl))
    print(text.decode() if isinstance(text, bytes) else text, int(result), flush=True)
    if int(result) != 238:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
