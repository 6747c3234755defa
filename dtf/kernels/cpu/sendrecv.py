"""Kernels of _Send and _Recv over the step's rendezvous."""
from __future__ import annotations

from dtf.kernels.registry import register_kernel


@register_kernel("_Send", "CPU")
def send(node):
    key = node.attrs["key"]
    dst = node.attrs["recv_task"]

    def compute(ctx, x):
        ctx.rendezvous.send(key, x, dst)

    return compute


@register_kernel("_Recv", "CPU")
def recv(node):
    key = node.attrs["key"]

    def compute(ctx):
        return ctx.rendezvous.recv(key, ctx.deadline)

    # The dataflow executor polls the rendezvous for this key instead of blocking.
    compute.recv_key = key
    return compute
