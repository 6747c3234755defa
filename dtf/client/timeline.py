"""A step's timings as a Chrome trace, as ``tensorflow.python.client.timeline`` makes it:
``Timeline(run_metadata.step_stats).generate_chrome_trace_format()`` is JSON that
chrome://tracing and Perfetto (ui.perfetto.dev) open.

Each device of each task (a ``DeviceStepStats``) is one process lane ("pid"), named
"<device> Compute"; an op is a complete event ("ph": "X") on the first thread row ("tid")
of its lane where it does not overlap another op. With ``show_dataflow``, an arrow (a flow:
"ph" "s" then "f") joins a tensor's producer to a consumer on another row or lane, and each
``_Send`` to its ``_Recv`` on the other task: the labels "name = _Send(tensor @recv_device)"
and "name = _Recv(tensor @send_device)" name the same transfer from both ends, in TF's
step stats as in dtf's.

Differences from TF's module, on purpose: a flow ends with "f" bound to the enclosing slice
(TF writes "t", which Perfetto does not finish as an arrow), and no empty "Tensors" and
"Allocators" lanes are written, since dtf's step stats carry no allocations: ``show_memory``
is refused rather than drawn empty.
"""
from __future__ import annotations

import json
import re

__all__ = ["Timeline"]

_LABEL = re.compile(r"(.*) = (.*)\((.*)\)")
_TRANSFER = re.compile(r"(.*) @(.*)")


def _parse_label(label: str):
    """(node name, op, [input names]) of a "name = Op(a, b)" label, as TF parses it."""
    match = _LABEL.match(label or "")
    if match is None:
        return "unknown", "unknown", []
    name, op, inputs = match.groups()
    return name, op, inputs.split(", ") if inputs else []


class _ChromeTrace:
    """The events of one trace, metadata first (chrome://tracing's trace-event format)."""

    def __init__(self):
        self.metadata, self.events = [], []

    def process(self, pid, name):
        self.metadata.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}})

    def thread(self, pid, tid, name):
        self.metadata.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                              "args": {"name": name}})

    def region(self, ts, dur, pid, tid, category, name, args):
        self.events.append({"ph": "X", "cat": category, "name": name, "pid": pid, "tid": tid,
                            "ts": ts, "dur": dur, "args": args})

    def flow(self, name, start, end, flow_id):
        """An arrow from ``start`` to ``end``, each (timestamp, pid, tid)."""
        (ts0, pid0, tid0), (ts1, pid1, tid1) = start, end
        self.events.append({"ph": "s", "cat": "DataFlow", "name": name, "pid": pid0, "tid": tid0,
                            "ts": ts0, "id": flow_id})
        self.events.append({"ph": "f", "bp": "e", "cat": "DataFlow", "name": name, "pid": pid1,
                            "tid": tid1, "ts": ts1, "id": flow_id})

    def to_json(self, pretty=True) -> str:
        trace = {"traceEvents": self.metadata + self.events}
        if pretty:
            return json.dumps(trace, indent=4, separators=(",", ": "))
        return json.dumps(trace, separators=(",", ":"))


class _Op:
    """One node's stats, with the lane and row it is drawn on."""

    __slots__ = ("name", "op", "inputs", "start", "end", "pid", "tid", "device", "outputs")

    def __init__(self, stats, pid, device):
        label_name, self.op, self.inputs = _parse_label(stats.timeline_label)
        self.name = stats.node_name or label_name
        self.start = int(stats.all_start_micros)
        self.end = self.start + int(stats.all_end_rel_micros)
        self.pid, self.tid, self.device = pid, 0, device
        outputs = getattr(stats, "output", None) or getattr(stats, "output_shapes", None) or ()
        self.outputs = max(1, len(outputs))


class Timeline:
    """A Chrome trace of one step's ``step_stats`` (a ``tf.RunMetadata().step_stats``)."""

    def __init__(self, step_stats, graph=None):
        if not hasattr(step_stats, "dev_stats"):
            raise TypeError(f"Timeline: step_stats must be a StepStats (run_metadata.step_stats), "
                            f"not {type(step_stats).__name__}")
        self._step_stats = step_stats
        self._graph = graph

    def generate_chrome_trace_format(self, show_dataflow=True, show_memory=False) -> str:
        """The trace as a JSON string (``{"traceEvents": [...]}``)."""
        if show_memory:
            raise NotImplementedError("Timeline.generate_chrome_trace_format: show_memory=True is not "
                                      "supported (dtf's step stats record no tensor allocations)")
        trace = _ChromeTrace()
        ops = self._lanes(trace)
        for op in ops:
            args = {"name": op.name, "op": op.op}
            for i, name in enumerate(op.inputs):
                args[f"input{i}"] = name
            trace.region(op.start, op.end - op.start, op.pid, op.tid, "Op", op.op, args)
        if show_dataflow:
            self._dataflow(trace, ops)
        return trace.to_json()

    def _lanes(self, trace) -> list:
        """A pid per device (in the order of the stats), and within it the rows ops are
        drawn on: each op goes on the first row free when it starts (TF's _assign_lanes)."""
        ops, pids = [], {}
        for dev in self._step_stats.dev_stats:
            pid = pids.get(dev.device)
            if pid is None:
                pid = pids[dev.device] = len(pids)
                trace.process(pid, f"{dev.device} Compute")
            rows = []  # the end time of the last op on each row
            for stats in dev.node_stats:
                op = _Op(stats, pid, dev.device)
                for tid, busy_until in enumerate(rows):
                    if op.start > busy_until:
                        rows[tid] = op.end
                        op.tid = tid
                        break
                else:
                    op.tid = len(rows)
                    rows.append(op.end)
                    trace.thread(pid, op.tid, f"ops {op.tid}")
                ops.append(op)
        return ops

    def _dataflow(self, trace, ops):
        """Arrows from producers to consumers on another row or lane (TF skips those on
        the same row: they would only clutter it), and from each _Send to its _Recv."""
        produced = {}
        for op in ops:
            produced[op.name] = op
            for k in range(1, op.outputs):
                produced[f"{op.name}:{k}"] = op
        flow_ids = iter(range(1 << 62))
        sends, recvs = {}, {}
        for op in ops:
            if op.op in ("_Send", "_Recv", "_HostSend", "_HostRecv") and len(op.inputs) == 1:
                transfer = _TRANSFER.match(op.inputs[0])
                if transfer is not None:
                    tensor, other = transfer.groups()
                    if "Send" in op.op:
                        sends[(tensor, op.device, other)] = op
                    else:
                        recvs[(tensor, other, op.device)] = op
                    continue
            for name in op.inputs:
                if name.startswith("^"):
                    continue
                producer = produced.get(name)
                if producer is None and "/_" in name:  # an input partitioning rewired: its source
                    producer = produced.get(name[:name.rfind("/_")])
                if producer is None or (producer.pid == op.pid and producer.tid == op.tid):
                    continue
                trace.flow(name, (_last_micro(producer), producer.pid, producer.tid),
                           (op.start, op.pid, op.tid), next(flow_ids))
        for key, send in sends.items():
            recv = recvs.get(key)
            if recv is not None:
                trace.flow(key[0], (_last_micro(send), send.pid, send.tid), (recv.start, recv.pid, recv.tid),
                           next(flow_ids))


def _last_micro(op) -> int:
    """Where an arrow leaves ``op``: inside its event (a viewer binds a flow to the event
    enclosing its timestamp, and an event's end is not inside it)."""
    return op.end - 1 if op.end > op.start else op.start
