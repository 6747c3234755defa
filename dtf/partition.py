"""Partitioning: (pruned nodes, placement) -> {device: [NodeDef]} with a _Send/_Recv pair
on every edge that crosses devices. Pure.

Fed tensors are not edges: the master hands each partition the feeds it consumes. A
control edge across devices becomes a send of a dummy scalar whose receive is made a
control input of the destination.
"""
from __future__ import annotations

import numpy as np

import dtf.ops.sendrecv_ops  # noqa: F401  (registers _Send/_Recv)
from dtf.framework import dtypes
from dtf.framework.graph_def import NodeDef
from dtf.placement import task_of
from dtf.runtime.graph_walk import split_tensor_name


def rendezvous_key(send_device, recv_device, tensor_name) -> str:
    return f"{send_device};{recv_device};{tensor_name}"


def partition(nodes, placement: dict, feeds=()) -> dict:
    fed = set(feeds)
    out: dict = {}
    dtype_of = {}
    for n in nodes:
        for k, dt in enumerate(n.output_dtypes):
            dtype_of[f"{n.name}:{k}"] = dt
    recv_for: dict = {}  # (tensor, dst device) -> recv tensor name
    control_recv_for: dict = {}

    def part(dev):
        return out.setdefault(dev, [])

    def recv_tensor(tensor, src_dev, dst_dev):
        key = (tensor, dst_dev)
        if key not in recv_for:
            rkey = rendezvous_key(src_dev, dst_dev, tensor)
            safe = tensor.replace(":", "_")
            dst_tag = _tag(dst_dev)
            send = NodeDef(f"{safe}/_send_to_{dst_tag}", "_Send", [tensor], [], src_dev,
                           {"key": rkey, "recv_task": task_of(dst_dev), "T": dtype_of[tensor]}, [])
            recv = NodeDef(f"{safe}/_recv_from_{_tag(src_dev)}", "_Recv", [], [], dst_dev,
                           {"key": rkey, "tensor_type": dtype_of[tensor], "send_task": task_of(src_dev)},
                           [dtype_of[tensor]])
            part(src_dev).append(send)
            part(dst_dev).append(recv)
            recv_for[key] = f"{recv.name}:0"
        return recv_for[key]

    def control_recv(src, src_dev, dst_dev):
        key = (src, dst_dev)
        if key not in control_recv_for:
            rkey = rendezvous_key(src_dev, dst_dev, f"^{src}")
            dummy = NodeDef(f"{src}/_control_value_to_{_tag(dst_dev)}", "Const", [], [src], src_dev,
                            {"value": np.zeros((), np.float32), "dtype": dtypes.float32}, [dtypes.float32])
            send = NodeDef(f"{src}/_control_send_to_{_tag(dst_dev)}", "_Send", [f"{dummy.name}:0"], [],
                           src_dev, {"key": rkey, "recv_task": task_of(dst_dev), "T": dtypes.float32}, [])
            recv = NodeDef(f"{src}/_control_recv_from_{_tag(src_dev)}", "_Recv", [], [], dst_dev,
                           {"key": rkey, "tensor_type": dtypes.float32, "send_task": task_of(src_dev)},
                           [dtypes.float32])
            part(src_dev).extend([dummy, send])
            part(dst_dev).append(recv)
            control_recv_for[key] = recv.name
        return control_recv_for[key]

    for n in nodes:
        dev = placement[n.name]
        inputs = []
        for t in n.inputs:
            src_dev = placement.get(split_tensor_name(t)[0])
            if t in fed or src_dev is None or src_dev == dev:
                inputs.append(t)
            else:
                inputs.append(recv_tensor(t, src_dev, dev))
        controls = []
        for c in n.control_inputs:
            src_dev = placement.get(c)
            if src_dev is None or src_dev == dev:
                controls.append(c)
            else:
                controls.append(control_recv(c, src_dev, dev))
        part(dev).append(NodeDef(n.name, n.op, inputs, controls, dev, n.attrs, n.output_dtypes))
    return out


def _tag(device: str) -> str:
    """'/job:w/replica:0/task:1/device:CPU:0' -> 'w_1_CPU_0' (for readable node names)."""
    parts = dict(p.split(":", 1) for p in device.strip("/").split("/") if ":" in p)
    d = parts.get("device", "CPU:0").replace(":", "_")
    return f"{parts.get('job', '')}_{parts.get('task', '')}_{d}"
