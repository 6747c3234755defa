"""CPU kernels of the iterator ops (dtf/data/iterator_ops.py).

An iterator is a resource of the task that runs its handle op; ``MakeIterator`` builds the
pipeline (dtf/data/pipeline.py) from the dataset spec and the captured tensors' values, and
``IteratorGetNext`` takes the next element from it. Functions in the spec are compiled
into plans once per kernel (so once per graph and task), not per initialization.
"""
from __future__ import annotations

import threading

import numpy as np

from dtf.data import file_stages  # noqa: F401  (registers the file-reading stages)
from dtf.data import window_stages  # noqa: F401  (registers Dataset.window's stages)
from dtf.data import iterator_ops  # noqa: F401  (registers the op definitions)
from dtf.data.function import Env, Function
from dtf.data.pipeline import Builder
from dtf.framework import errors
from dtf.kernels.registry import WouldBlock, register_kernel
from dtf.kernels.cpu.data_flow import _Resource


class IteratorResource(_Resource):
    def __init__(self, attrs, name, container=""):
        self.name = name
        self.container = container
        self.types = list(attrs["output_types"])
        self.shapes = list(attrs["output_shapes"])
        self.lock = threading.Lock()
        self.elements = None

    def reset(self, pipeline):
        with self.lock:
            old, self.elements = self.elements, iter(pipeline)
        if old is not None and hasattr(old, "close"):
            old.close()  # stops the old pipeline's prefetch threads

    def get_next(self, node):
        with self.lock:
            if self.elements is None:
                raise errors.FailedPreconditionError(
                    node.name, None, "GetNext() failed because the iterator has not been "
                    "initialized. Ensure that you have run the initializer operation for this "
                    "iterator before getting the next element.")
            try:
                el = next(self.elements)
            except StopIteration:
                raise errors.OutOfRangeError(node.name, None, "End of sequence") from None
        if len(el) != len(self.types):
            raise errors.InvalidArgumentError(
                node.name, None, f"the dataset produced {len(el)} components, the iterator "
                f"expects {len(self.types)}")
        return el

    def handle_string(self):
        return f"{self.container}::{self.name}"


def _iterator_factory(node):
    a = node.attrs
    container, name = a.get("container", ""), a.get("shared_name") or node.name
    return lambda ctx: ctx.resources.get_or_create(
        container, name, lambda: IteratorResource(a, name, container))


register_kernel("IteratorV2", "CPU")(_iterator_factory)


@register_kernel("OneShotIterator", "CPU")
def one_shot_iterator(node):
    a = node.attrs
    plans: dict = {}

    def make(ctx, name):
        res = IteratorResource(a, name)
        env = Env(ctx.state)
        values = Function(a["capture_fn"], [])(env, [])
        res.reset(Builder(values, env, plans).build(a["dataset"]))
        return res

    return lambda ctx: ctx.resources.get_or_create("", node.name, lambda: make(ctx, node.name))


@register_kernel("MakeIterator", "CPU")
def make_iterator(node):
    spec = node.attrs["dataset"]
    plans: dict = {}

    def compute(ctx, iterator, *captured):
        iterator.reset(Builder(captured, Env(ctx.state), plans).build(spec))

    return compute


@register_kernel("IteratorGetNext", "CPU", blocking=True)
def iterator_get_next(node):
    n = len(node.output_dtypes)

    def compute(ctx, iterator):
        if ctx.may_park is not None:
            raise WouldBlock()  # producing an element may take long: run on a thread
        el = iterator.get_next(node)
        return el[0] if n == 1 else el

    return compute


@register_kernel("IteratorToStringHandle", "CPU")
def iterator_to_string_handle(node):
    return lambda ctx, iterator: np.asarray(iterator.handle_string().encode(), dtype=object)


@register_kernel("IteratorFromStringHandleV2", "CPU")
def iterator_from_string_handle(node):
    def compute(ctx, handle):
        text = handle.item() if isinstance(handle, np.ndarray) else handle
        text = text.decode() if isinstance(text, bytes) else str(text)
        container, sep, name = text.partition("::")
        if not sep:
            container, name = "", text
        try:
            res = ctx.resources.lookup(container, name)
        except errors.NotFoundError:
            raise errors.NotFoundError(
                node.name, None, f"no iterator {text!r} on this task: a string handle names an "
                "iterator of the task that ran its string_handle() op") from None
        if not isinstance(res, IteratorResource):
            raise errors.InvalidArgumentError(node.name, None, f"{text!r} is not an iterator")
        return res

    return compute
