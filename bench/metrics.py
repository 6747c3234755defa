"""What each metric id means: workload, label, unit, which direction is better, and the goal
from the project's goals (``goal``: ("max", v) | ("min", v) | ("x_tf", factor) | ("x_numpy", factor)).
``issue_tf`` is the TensorFlow 2.21 figure recorded for this machine when it was quiet."""
from __future__ import annotations

from dataclasses import dataclass

from bench.models import MODELS
from bench.training import CONFIGS, WARMUP, metric_prefix, workload
from bench.workloads import TCP_MIB, TRANSFER_MIB


@dataclass(frozen=True)
class Metric:
    id: str
    workload: str
    label: str
    unit: str
    higher_is_better: bool = False
    goal: tuple | None = None
    issue_tf: float | None = None


def _transfer_metrics():
    for mib in TRANSFER_MIB:
        yield Metric(f"w3.task_to_task_{mib}mib_gbs", "W3", f"task -> task {mib} MiB", "GB/s", True,
                     ("min", 5.0) if mib == 64 else None, 1.78 if mib == 64 else None)
    for mib in TRANSFER_MIB:
        yield Metric(f"w3.task_to_client_{mib}mib_gbs", "W3", f"task -> client {mib} MiB", "GB/s",
                     True, ("min", 1.2) if mib == 64 else None, 0.37 if mib == 64 else None)


def _tcp_transfer_metrics():
    for mib in TCP_MIB:
        yield Metric(f"w3.tcp_task_to_task_{mib}mib_gbs", "W3t", f"TCP only: task -> task {mib} MiB",
                     "GB/s", True, ("min", 2.0) if mib == 64 else None, 1.78 if mib == 64 else None)
    for mib in TCP_MIB:
        yield Metric(f"w3.tcp_task_to_client_{mib}mib_gbs", "W3t", f"TCP only: task -> client {mib} MiB",
                     "GB/s", True, None, 0.37 if mib == 64 else None)


_TRAIN_TF = {("async", 1): 395, ("async", 2): 494, ("sync", 2): 188}


# The raised goals for 1 ps + 2 workers; W5's stay at the first ones.
_TRAIN_GOAL = {("async", 2): 6.0, ("sync", 2): 5.0}


def _training_metrics():
    for mode, workers, warm in CONFIGS:
        prefix = metric_prefix(mode, workers, warm)
        wl = workload(workers, warm)
        what = f"MLP {mode}, 1 ps + {workers} worker{'s' if workers > 1 else ''}"
        if warm:
            what += f", after {WARMUP} steps"
        yield Metric(f"{prefix}.steps_s", wl, f"{what}: global steps/s", "steps/s", True,
                     ("x_tf", _TRAIN_GOAL.get((mode, workers), 2.0)),
                     None if warm else _TRAIN_TF.get((mode, workers)))
        yield Metric(f"{prefix}.examples_s", wl, f"{what}: examples/s", "ex/s", True)


METRICS = [
    Metric("w1.import_s", "W1", "import (whole process)", "s", issue_tf=1.67),
    Metric("w1.hello_s", "W1", "`dtf hello` cold (TF: same work as a script)", "s",
           goal=("max", 0.8), issue_tf=1.68),
    Metric("w1.hello_script_s", "W1", "hello script cold, same code both", "s"),
    Metric("w2.p50_ms", "W2", "cross-task step p50", "ms", goal=("max", 0.4), issue_tf=1.45),
    Metric("w2.p90_ms", "W2", "cross-task step p90", "ms"),
    *_transfer_metrics(),
    *_tcp_transfer_metrics(),
    Metric("w4.p50_ms", "W4", "fed mean over 2 tasks p50", "ms"),
    Metric("w4.p90_ms", "W4", "fed mean over 2 tasks p90", "ms"),
    *_training_metrics(),
    Metric("w7.matmul_ms", "W7", "matmul 1024x1024 f32", "ms", goal=("x_numpy", 1.1), issue_tf=6.4),
    Metric("w7.elementwise_ms", "W7", "relu(a*b+c)*0.5, 10M f32", "ms", goal=("max", 5.0),
           issue_tf=6.3),
    Metric("w7.tiny_step_us", "W7", "tiny step y=x+300 p50", "us", goal=("max", 50.0),
           issue_tf=96),
    Metric("w7.tiny_server_step_us", "W7", "tiny step via local server p50", "us", issue_tf=163),
    Metric("w8.map_batch_el_s", "W8", "tf.data slices->map->batch 128: elements/s", "el/s", True,
           ("x_tf", 1.0)),
    Metric("w8.tfrecord_records_s", "W8", "TFRecord->parse->decode_raw->shuffle->batch: records/s",
           "rec/s", True, ("x_tf", 1.0)),
    Metric("w8.queue_records_s", "W8", "the same with queue runners + shuffle_batch: records/s",
           "rec/s", True, ("x_tf", 1.0)),
    Metric("w8.prefetch_wait_ms", "W8", "TFRecord ... prefetch(2) -> 10 ms model: input wait/step",
           "ms"),
    Metric("w8.queue_wait_ms", "W8", "queue runners -> 10 ms model: input wait/step", "ms"),
    Metric("w9.while_iteration_us", "W9", "while_loop per iteration (scalar add)", "us",
           goal=("x_tf", 1.0)),
    Metric("w9.lstm_step_ms", "W9", "LSTM LM step 2x256, 35 steps, batch 20, vocab 10k", "ms",
           goal=("x_tf", 0.67)),
]


def _model_metrics():
    for wl, label in (("M1", "CNN deep-MNIST step, batch 64, Adam"),
                      ("M2", "MLP 784-1024-1024-10 step, batch 256"),
                      ("M3", "ResNet-style 3 blocks 32x32x16 step, batch 64")):
        prefix = MODELS[wl][3]
        yield Metric(f"{prefix}_ms", wl, label, "ms")
        yield Metric(f"{prefix}_gflops", wl, f"{label}: achieved", "GFLOP/s", True)


METRICS += list(_model_metrics())

RAW = [
    Metric("zmq_round_trip_us", "raw", "ZeroMQ empty round trip", "us"),
    Metric("zmq_ipc_round_trip_us", "raw", "ZeroMQ Unix-socket round trip", "us"),
    Metric("zmq_tcp_64mib_gbs", "raw", "ZeroMQ TCP 64 MiB", "GB/s", True),
    Metric("memcpy_gbs", "raw", "memcpy 256 MiB", "GB/s", True),
    Metric("sgemm_gflops", "raw", "sgemm 2048^3 peak (numpy BLAS, best of 5)", "GFLOP/s", True),
]

BY_ID = {m.id: m for m in METRICS + RAW}
