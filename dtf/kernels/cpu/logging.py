"""CPU kernels of Print and PrintV2: they write in the process that runs them (a remote
task's output, as in TF), to sys.stderr (Print, and PrintV2 by default), sys.stdout or a
file ("file://path", appended)."""
from __future__ import annotations

import sys
import threading

from dtf.kernels.reference.logging import bracketed, summarize_v2
from dtf.kernels.registry import register_kernel


@register_kernel("Print", "CPU")
def print_v1(node):
    message, first_n = node.attrs.get("message", ""), node.attrs.get("first_n", -1)
    max_entries = node.attrs.get("summarize", 3)
    calls, lock = [0], threading.Lock()

    def compute(ctx, x, *data):
        if first_n >= 0:
            with lock:
                if calls[0] >= first_n:
                    return x
                calls[0] += 1
        sys.stderr.write(f"{message}{bracketed(data, max_entries)}\n")
        sys.stderr.flush()
        return x

    return compute


def write_to_stream(stream: str, text: str):
    """Writes ``text`` to "stderr", "stdout", "log(info|warning|error)" or "file://path"."""
    if stream.startswith("log("):
        from dtf import logging as tf_logging
        getattr(tf_logging, stream[4:-1])("%s", text.rstrip("\n"))
        return
    if stream.startswith("file://"):
        with open(stream[len("file://"):], "a", encoding="utf-8") as f:
            f.write(text)
        return
    out = sys.stdout if stream == "stdout" else sys.stderr
    out.write(text)
    out.flush()


@register_kernel("PrintV2", "CPU")
def print_v2(node):
    # "template": the text around each input, separators included (len(inputs) + 1 pieces).
    pieces, end = node.attrs["template"], node.attrs["end"]
    stream, max_entries = node.attrs["output_stream"], node.attrs["summarize"]
    raw = node.attrs.get("raw_string", False)

    def compute(ctx, *values):
        texts = []
        for piece, value in zip(pieces, values):
            texts.append(piece)
            texts.append(_as_text(value) if raw else summarize_v2(value, max_entries))
        texts.append(pieces[-1])
        write_to_stream(stream, "".join(texts) + end)

    return compute


def _as_text(value):
    v = value.reshape(-1)[0] if hasattr(value, "reshape") else value
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
