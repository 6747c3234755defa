"""The machine's raw limits, measured in the same run: ZeroMQ empty round trip (over TCP
on loopback, and over a Unix socket as dtf's tasks on one host use) and 64 MiB TCP
transfer between two processes (default socket settings), and memcpy bandwidth.

``python -m bench.raw --echo ENDPOINT [--echo ENDPOINT]`` is the peer process: a ROUTER
that answers every message with an empty frame.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import numpy as np

from bench.cluster import REPO, free_port, quiet_env, stop_process

MiB = 1 << 20


def echo(endpoints: list):
    import zmq

    sock = zmq.Context.instance().socket(zmq.ROUTER)
    for endpoint in endpoints:
        sock.bind(endpoint)
    print("listening on", *endpoints, flush=True)
    while True:
        ident, *_ = sock.recv_multipart(copy=False)
        sock.send_multipart([ident, b""])


def memcpy_gbs(mib=256, reps=5) -> float:
    src = np.ones(mib * MiB, dtype=np.uint8)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    return mib * MiB / 1e9 / min(_times(lambda: np.copyto(dst, src), reps))


def _times(fn, n):
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def zmq_limits(quick=False) -> dict:
    import zmq

    port = free_port()
    tcp, ipc = f"tcp://127.0.0.1:{port}", f"ipc://@dtf-bench-raw-{port}"
    unix = sys.platform.startswith("linux")  # abstract socket names are Linux's
    peer = subprocess.Popen([sys.executable, "-m", "bench.raw", "--echo", tcp]
                            + (["--echo", ipc] if unix else []),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=REPO,
                            env=quiet_env(), text=True)
    out = {}
    try:
        peer.stdout.readline()
        for name, endpoint in [("zmq_round_trip_us", tcp)] + ([("zmq_ipc_round_trip_us", ipc)] if unix else []):
            sock = zmq.Context.instance().socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(endpoint)

            def round_trip(payload=b""):
                sock.send(payload, copy=False)
                sock.recv()

            for _ in range(200):
                round_trip()
            out[name] = statistics.median(_times(round_trip, 1000 if quick else 3000)) * 1e6
            if endpoint == tcp:
                big = np.ones(64 * MiB, dtype=np.uint8)
                round_trip(big)
                transfer = _times(lambda: round_trip(big), 5 if quick else 10)
                out["zmq_tcp_64mib_gbs"] = 64 * MiB / 1e9 / statistics.median(transfer)
            sock.close(0)
    finally:
        stop_process(peer)
    return {k: out[k] for k in ("zmq_round_trip_us", "zmq_ipc_round_trip_us", "zmq_tcp_64mib_gbs") if k in out}


def sgemm_gflops(n=2048, reps=5) -> float:
    """The machine's single-precision peak as its BLAS reaches it: the best of ``reps``
    n x n x n float32 products (all cores, numpy's BLAS), in 10^9 FLOP/s (2 per multiply-add)."""
    rng = np.random.default_rng(0)
    a, b = (rng.random((n, n), dtype=np.float32) for _ in range(2))
    out = np.empty((n, n), np.float32)
    np.matmul(a, b, out=out)
    return 2 * n ** 3 / 1e9 / min(_times(lambda: np.matmul(a, b, out=out), reps))


def measure(quick=False) -> dict:
    out = zmq_limits(quick)
    out["memcpy_gbs"] = memcpy_gbs()
    out["sgemm_gflops"] = sgemm_gflops()
    return out


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--echo", action="append", required=True)
    echo(p.parse_args().echo)
