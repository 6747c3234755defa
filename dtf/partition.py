"""Partitioning: (pruned nodes, placement) -> {device: [NodeDef]} with a _Send/_Recv pair
on every edge that crosses devices. Pure.

Fed tensors are not edges: the master hands each partition the feeds it consumes. A
control edge across devices becomes a send of a dummy scalar whose receive is made a
control input of the destination.

Before cutting, edges whose transfer can be avoided without changing any result are made
local (``localize``): a constant consumed on another device gets a copy there, and a NoOp
whose control inputs all live on the device that consumes it gets a copy there. An
optimizer's step (variables on a ps, the learning rate and the ``update`` NoOp on the
worker) then costs two transfers instead of five, and no extra round trip.
"""
from __future__ import annotations

import collections

import numpy as np

import dtf.framework.sendrecv_ops  # noqa: F401  (registers _Send/_Recv)
from dtf.framework import dtypes
from dtf.framework.graph_def import NodeDef
from dtf.placement import task_of
from dtf.framework.graph_walk import split_tensor_name


def rendezvous_key(send_device, recv_device, tensor_name) -> str:
    return f"{send_device};{recv_device};{tensor_name}"


def timeline_label(node) -> str:
    """The label TF's step stats give a node: "name = Op(input, ...)", and for a _Send or
    _Recv "name = _Send(tensor @recv_device)" / "name = _Recv(tensor @send_device)", which is
    how a timeline pairs the two ends of a transfer (dtf.client.timeline)."""
    if node.op in ("_Send", "_Recv") and isinstance(node.attrs.get("key"), str):
        send_device, recv_device, tensor = node.attrs["key"].split(";", 2)
        other = recv_device if node.op == "_Send" else send_device
        return f"{node.name} = {node.op}({tensor} @{other})"
    inputs = [t[:-2] if t.endswith(":0") else t for t in node.inputs]
    return f"{node.name} = {node.op}({', '.join(inputs)})"


def partition(nodes, placement: dict, feeds=(), keep=()) -> dict:
    """``keep``: names of nodes the step fetches or targets (never dropped by ``localize``)."""
    fed = set(feeds)
    nodes, placement = localize(nodes, placement, fed, set(keep))
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


def localize(nodes, placement: dict, fed=frozenset(), keep=frozenset()):
    """(nodes, placement) with copies of constants and NoOps on the devices that consume
    them (see the module docstring); an original left without a consumer on its own
    device is dropped unless kept. Both kinds are stateless, so a copy behaves the same."""
    consumers = collections.defaultdict(list)
    for n in nodes:
        for t in n.inputs:
            if t not in fed:
                consumers[split_tensor_name(t)[0]].append(n)
        for c in n.control_inputs:
            consumers[c].append(n)
    copies: dict = {}  # (node name, device) -> copy's name
    for n in nodes:
        home = placement[n.name]
        for c in consumers.get(n.name, ()):
            dev = placement[c.name]
            if dev != home and (n.name, dev) not in copies and _copyable_to(n, dev, placement):
                copies[(n.name, dev)] = f"{n.name}/_copy_on_{_tag(dev)}"
    if not copies:
        return nodes, placement
    placement = dict(placement)
    out = []
    for n in nodes:
        for dev in sorted({d for (name, d) in copies if name == n.name}):
            name = copies[(n.name, dev)]
            copy = NodeDef(name, n.op, list(n.inputs), list(n.control_inputs), dev, n.attrs,
                           n.output_dtypes)
            out.append(_rewired(copy, dev, copies, fed))
            placement[name] = dev
        out.append(_rewired(n, placement[n.name], copies, fed))
    return _drop_unused_originals(out, {name for name, _ in copies}, keep), placement


def _drop_unused_originals(nodes, copied, keep):
    """Drops copied originals nothing refers to any more (unless kept). A sweep from the
    last node back, so that a dropped node's own inputs can be dropped in turn."""
    referenced, live = set(), []
    for n in reversed(nodes):
        if n.name in copied and n.name not in keep and n.name not in referenced:
            continue
        live.append(n)
        referenced.update(split_tensor_name(t)[0] for t in n.inputs)
        referenced.update(n.control_inputs)
    live.reverse()
    return live


def _copyable_to(node, dev, placement) -> bool:
    if node.op == "Const":
        return not node.inputs and not node.control_inputs
    if node.op == "NoOp":
        return (not node.inputs and bool(node.control_inputs)
                and all(placement.get(c) == dev for c in node.control_inputs))
    return False


def _rewired(n, dev, copies, fed):
    """``n`` reading the copies made on its own device."""
    inputs = []
    for t in n.inputs:
        op, idx = split_tensor_name(t)
        copy = None if t in fed else copies.get((op, dev))
        inputs.append(t if copy is None else f"{copy}:{idx}")
    controls = [copies.get((c, dev), c) for c in n.control_inputs]
    if inputs == list(n.inputs) and controls == list(n.control_inputs):
        return n
    return NodeDef(n.name, n.op, inputs, controls, dev, n.attrs, n.output_dtypes)


def _tag(device: str) -> str:
    """'/job:w/replica:0/task:1/device:CPU:0' -> 'w_1_CPU_0' (for readable node names)."""
    parts = dict(p.split(":", 1) for p in device.strip("/").split("/") if ":" in p)
    d = parts.get("device", "CPU:0").replace(":", "_")
    return f"{parts.get('job', '')}_{parts.get('task', '')}_{d}"
