"""dtf.client.timeline: a traced step as a Chrome trace (what chrome://tracing and Perfetto
read), from a real local session's step stats and from stats shaped like a two-task step."""
from __future__ import annotations

import json

import pytest

import dtf as tf
from dtf.client import timeline
from dtf.client.config import DeviceStepStats, NodeExecStats, StepStats

_PHASES = {"X", "s", "f", "M"}


def check_chrome_trace(text: str) -> list:
    """The events of ``text`` after checking the trace-event format's rules that
    chrome://tracing and Perfetto's JSON importer rely on; returns the event list."""
    trace = json.loads(text)
    assert set(trace) == {"traceEvents"}
    events = trace["traceEvents"]
    assert isinstance(events, list) and events
    named = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    flows: dict = {}
    for e in events:
        assert e["ph"] in _PHASES, e
        assert isinstance(e["pid"], int) and isinstance(e["name"], str)
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name") and isinstance(e["args"]["name"], str)
            continue
        assert e["pid"] in named, f"event on a lane with no name: {e}"
        assert isinstance(e["tid"], int) and isinstance(e["ts"], int) and e["ts"] >= 0
        if e["ph"] == "X":
            assert isinstance(e["dur"], int) and e["dur"] >= 0 and isinstance(e["args"], dict)
        else:
            flows.setdefault(e["id"], []).append(e)
    for flow_id, ends in flows.items():  # each arrow: one start, one end bound to its slice
        assert sorted(x["ph"] for x in ends) == ["f", "s"], ends
        assert next(x for x in ends if x["ph"] == "f")["bp"] == "e"
    return events


def _stats(name, op, start, dur, label_args=""):
    return NodeExecStats(node_name=name, all_start_micros=start, op_end_rel_micros=dur,
                         all_end_rel_micros=dur, timeline_label=f"{name} = {op}({label_args})")


def _two_task_step():
    w = "/job:worker/replica:0/task:0/device:CPU:0"
    ps = "/job:ps/replica:0/task:0/device:CPU:0"
    return StepStats(dev_stats=[
        DeviceStepStats(device=ps, node_stats=[
            _stats("w/read", "Identity", 1000, 5, "w"),
            _stats("w_read_0/_send_to_worker_0_CPU_0", "_Send", 1010, 3, f"w/read:0 @{w}"),
        ]),
        DeviceStepStats(device=w, node_stats=[
            _stats("x", "Const", 1000, 2),
            _stats("w_read_0/_recv_from_ps_0_CPU_0", "_Recv", 1020, 1, f"w/read:0 @{ps}"),
            _stats("mul", "Mul", 1022, 10, "x, w_read_0/_recv_from_ps_0_CPU_0"),
            _stats("slow", "Neg", 1021, 30, "x"),  # overlaps mul: a second row
        ]),
    ])


def test_lanes_per_device_and_arrows_for_transfers():
    events = check_chrome_trace(timeline.Timeline(_two_task_step()).generate_chrome_trace_format())
    lanes = {e["args"]["name"]: e["pid"] for e in events if e.get("name") == "process_name"}
    assert set(lanes) == {"/job:ps/replica:0/task:0/device:CPU:0 Compute",
                          "/job:worker/replica:0/task:0/device:CPU:0 Compute"}
    ops = {e["args"]["name"]: e for e in events if e["ph"] == "X"}
    assert ops["mul"]["name"] == "Mul" and ops["mul"]["args"]["input0"] == "x"
    assert ops["mul"]["pid"] == lanes["/job:worker/replica:0/task:0/device:CPU:0 Compute"]
    assert (ops["mul"]["ts"], ops["mul"]["dur"]) == (1022, 10)
    assert ops["slow"]["tid"] != ops["mul"]["tid"]  # overlapping ops are drawn on two rows
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    transfer = [i for i, e in starts.items() if e["pid"] == ops["w_read_0/_send_to_worker_0_CPU_0"]["pid"]
                and ends[i]["pid"] == ops["mul"]["pid"]]
    assert len(transfer) == 1  # the send on ps -> the recv on the worker
    assert ends[transfer[0]]["ts"] == 1020 and starts[transfer[0]]["name"] == "w/read:0"
    assert starts[transfer[0]]["tid"] == ops["w_read_0/_send_to_worker_0_CPU_0"]["tid"]
    # and the Neg on the second row gets an arrow from x on the first
    assert any(ends[i]["ts"] == 1021 for i in starts)


def test_without_dataflow_only_ops():
    events = check_chrome_trace(timeline.Timeline(_two_task_step()).generate_chrome_trace_format(
        show_dataflow=False))
    assert {e["ph"] for e in events} == {"X", "M"}


def test_show_memory_and_bad_input_are_refused():
    with pytest.raises(NotImplementedError, match="show_memory"):
        timeline.Timeline(_two_task_step()).generate_chrome_trace_format(show_memory=True)
    with pytest.raises(TypeError, match="StepStats"):
        timeline.Timeline(tf.RunMetadata())


def test_a_local_sessions_traced_step():
    a = tf.constant([1.0, 2.0], name="a")
    b = tf.square(a, name="b")
    c = tf.add(a, b, name="c")
    md = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(c, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md)
    events = check_chrome_trace(tf.client.timeline.Timeline(md.step_stats).generate_chrome_trace_format())
    ops = {e["args"]["name"]: e for e in events if e["ph"] == "X"}
    assert {"a", "c"} <= set(ops)  # (b may run fused into c)
    assert ops["c"]["name"] == "Add" and [ops["c"]["args"][k] for k in ("input0", "input1")] == ["a", "b"]


def test_a_traced_step_with_a_loop_and_its_gradient():
    # A while loop's gradient keeps records of its iterations, an output type TF has no
    # DataType for: the step stats describe the other outputs and the trace still renders.
    x = tf.constant([1.0, 2.0], name="x")
    _, y = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * x), [tf.constant(0), x])
    (dx,) = tf.gradients(tf.reduce_sum(y), [x])
    md = tf.RunMetadata()
    with tf.Session() as sess:
        got = sess.run(dx, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md)
    assert got.tolist() == [4.0, 32.0]  # d(x^4)/dx
    nodes = [s for dev in md.step_stats.dev_stats for s in dev.node_stats]
    assert nodes and all(o.tensor_description.dtype > 0 for s in nodes for o in s.output)
    assert any(s.output for s in nodes)
    check_chrome_trace(tf.client.timeline.Timeline(md.step_stats).generate_chrome_trace_format())
