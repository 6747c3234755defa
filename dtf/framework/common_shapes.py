"""Shape arithmetic shared by op shape inference (dtf.ops) and the kernels (dtf.kernels),
kept here so that neither has to import the other."""
from __future__ import annotations


def window_geometry(in_size, k, stride, padding):
    """(out_size, pad_before, pad_after) of one spatial dimension, as TF computes them:
    SAME gives ceil(in / stride) outputs and puts the odd padding pixel after."""
    if padding == "VALID":
        out = (in_size - k) // stride + 1 if in_size >= k else 0
        return out, 0, 0
    out = -(-in_size // stride)
    total = max((out - 1) * stride + k - in_size, 0)
    return out, total // 2, total - total // 2
