"""What W6 could reach in Python on this machine: ``python -m bench.train_floor
[--mode async|sync] [--workers 2] [--steps 20000]``.

One ps process and N worker processes (forked) exchange per step the four messages a dtf
between-graph step does (the worker's RunGraph, the variables, the gradients, the ps's
reply with the global step), encoded and decoded with dtf's own codec (dtf.wire.codec), over
Unix stream sockets with a length prefix and blocking reads; the ps applies gradient
descent in place with numpy and each worker runs bench.train_worker's MLP forward and
backward in numpy. No master, executor, rendezvous, deadlines or failure handling: what is
left is what any Python runtime pays for the step's messages and kernels. It prints the
global steps/s and the CPU each process spends per step, beside which W6's own figures
(bench.train_threads) show what dtf's runtime adds.
"""
from __future__ import annotations

import os

# Before numpy loads OpenBLAS: one thread per product, as dtf's kernels run products this
# small (dtf.kernels.cpu.blas). With one thread per core, the three processes' BLAS threads
# fight for the two cores and the workers' MLP takes 7 ms a step instead of 60 us.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import struct  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from bench.train_worker import BATCH, LEARNING_RATE  # noqa: E402
from dtf.wire import codec  # noqa: E402

SHAPES = [(64, 128), (128,), (128, 10), (10,)]  # bench.train_worker's MLP 64-128-10
MAX_FRAMES = 8
_PREFIX = struct.Struct(f"<I{MAX_FRAMES}Q")  # frame count, then each frame's length
# A RunGraph header of the size and shape dtf sends (the step's fetch, its handle, the
# task that takes the early tensors and the rendezvous keys).
_KEYS = [f"/job:ps/replica:0/task:0;1;/job:worker/replica:0/task:0;w{i}/read:0;0"
         for i in range(len(SHAPES))]
RUN_GRAPH = {"method": "RunGraph", "handle": "3f2a9c1e0d-4", "incarnation": 1234567891,
             "fetches": ["global_step/AssignAdd:0"], "task_partitions": 1, "timeout_ms": 0,
             "early": "/job:worker/replica:0/task:0", "fold": "/job:worker/replica:0/task:0"}


def send(sock, frames):
    bufs = [f if type(f) is bytes else memoryview(f).cast("B") for f in frames]
    lengths = [len(b) for b in bufs] + [0] * (MAX_FRAMES - len(bufs))
    sock.sendmsg([_PREFIX.pack(len(bufs), *lengths), *bufs])


def _read(sock, n):
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            raise EOFError
        got += k
    return buf


def receive(sock) -> dict:
    count, *lengths = _PREFIX.unpack(_read(sock, _PREFIX.size))
    return codec.decode([_read(sock, n) for n in lengths[:count]])


def serve_ps(socks, steps, sync=False):
    """Runs the ps until the global step reaches ``steps``; its CPU seconds. ``sync``: the
    gradients of every worker are summed and applied once all have come, and each worker's
    reply waits for that (SyncReplicasOptimizer's aggregation, without its queue runner's
    messages or its tokens)."""
    rng = np.random.default_rng(0)
    variables = [(rng.standard_normal(s) * 0.1).astype(np.float32) for s in SHAPES]
    sums = [np.zeros_like(v) for v in variables]
    lr = np.float32(LEARNING_RATE)
    poller = select.poll()
    by_fd = {}
    for s in socks:
        poller.register(s, select.POLLIN)
        by_fd[s.fileno()] = s
    global_step, waiting = 0, []
    cpu0 = time.process_time()
    while global_step < steps:
        for fd, _ in poller.poll():
            sock = by_fd[fd]
            msg = receive(sock)
            if msg.get("method") == "RunGraph":
                send(sock, codec.encode({"step_id": msg["step_id"], "keys": _KEYS,
                                         "tensors": variables}, True))
                continue
            # The gradients.
            if not sync:
                for v, g in zip(variables, msg["tensors"]):
                    np.subtract(v, np.multiply(g, lr), out=v)
                global_step += 1
                waiting = [sock]
            else:
                for total, g in zip(sums, msg["tensors"]):
                    np.add(total, g, out=total)
                waiting.append(sock)
                if len(waiting) < len(socks):
                    continue
                scale = np.float32(LEARNING_RATE / len(socks))
                for v, total in zip(variables, sums):
                    np.subtract(v, np.multiply(total, scale), out=v)
                    total.fill(0)
                global_step += 1
            reply = codec.encode({"outputs": {RUN_GRAPH["fetches"][0]: np.int64(global_step)}},
                                 True)
            for waiter in waiting:
                send(waiter, reply)
            waiting = []
    cpu = time.process_time() - cpu0
    for s in socks:
        s.shutdown(socket.SHUT_RDWR)
    return cpu


def run_worker(sock, index, report):
    rng = np.random.default_rng(index)
    x = rng.standard_normal((BATCH, SHAPES[0][0])).astype(np.float32)
    labels = rng.integers(0, SHAPES[2][1], BATCH)
    steps, kernel_s = 0, 0.0
    cpu0 = time.process_time()
    try:
        while True:
            send(sock, codec.encode(dict(RUN_GRAPH, step_id=steps), True))
            w0, b0, w1, b1 = receive(sock)["tensors"]
            t = time.thread_time()
            h = np.maximum(x @ w0 + b0, 0)
            logits = h @ w1 + b1
            e = np.exp(logits - logits.max(1, keepdims=True))
            g = e / e.sum(1, keepdims=True)
            g[np.arange(BATCH), labels] -= 1
            g /= BATCH
            gh = (g @ w1.T) * (h > 0)
            grads = [x.T @ gh, gh.sum(0), h.T @ g, g.sum(0)]
            kernel_s += time.thread_time() - t
            send(sock, codec.encode({"method": "Tensor", "step_id": steps, "keys": _KEYS,
                                     "tensors": grads}, True))
            receive(sock)
            steps += 1
    except (EOFError, OSError):
        pass  # the ps is done and shut the socket
    finally:  # always, so that the parent never waits for a report that cannot come
        cpu = time.process_time() - cpu0
        report.sendall(struct.pack("<Qdd", steps, cpu, kernel_s))


def run(workers, steps, sync=False):
    pairs = [socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(workers)]
    reports = [socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(workers)]
    pids = []
    for i, ((ps_end, worker_end), (ours, theirs)) in enumerate(zip(pairs, reports)):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                ps_end.close()
                run_worker(worker_end, i, theirs)
                code = 0
            finally:
                os._exit(code)
        worker_end.close()
        pids.append(pid)
    try:
        start = time.perf_counter()
        ps_cpu = serve_ps([p for p, _ in pairs], steps, sync)
        wall = time.perf_counter() - start
        results = [struct.unpack("<Qdd", _read(ours, 24)) for ours, _ in reports]
    except BaseException:
        for pid in pids:  # only the workers this run forked
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        raise
    finally:
        for pid in pids:
            os.waitpid(pid, 0)
    return steps / wall, ps_cpu / steps, results


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--steps", type=int, default=20000)
    p.add_argument("--mode", choices=("async", "sync"), default="async")
    p.add_argument("--json", action="store_true", help="print one JSON line (what bench reads)")
    args = p.parse_args(argv)
    steps_s, ps_cpu, results = run(args.workers, args.steps, args.mode == "sync")
    if args.json:
        print(json.dumps({"steps_s": steps_s, "ps_cpu_s": ps_cpu}))
        return
    print(f"floor, {args.mode}, 1 ps + {args.workers} workers: {steps_s:.0f} global steps/s; "
          f"ps {ps_cpu * 1e6:.0f} us CPU per global step")
    for i, (n, cpu, kernel_s) in enumerate(results):
        per = max(n, 1)  # a worker the other outran may have no step of its own
        print(f"worker {i}: {n} steps, {cpu / per * 1e6:.0f} us CPU per own step "
              f"({kernel_s / per * 1e6:.0f} us of it the MLP in numpy)")


if __name__ == "__main__":
    sys.exit(main())
