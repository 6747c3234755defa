"""Iterators over datasets: the resource ops and TF1's Iterator class.

An iterator is a resource of the task its op is placed on (like a queue): the handle op
(``IteratorV2``, ``OneShotIterator``, ``IteratorFromStringHandleV2``) outputs it, and
``MakeIterator`` / ``IteratorGetNext`` / ``IteratorToStringHandle`` take it as input 0, so
they are colocated with it. ``MakeIterator`` carries the dataset's spec as an attr and the
tensors the dataset captured as inputs; a one-shot iterator carries, instead of inputs, a
function that computes them, run once when the iterator is first used.
"""
from __future__ import annotations

from dtf.framework import dtypes as _dtypes
from dtf.framework import ops as _ops
from dtf.framework.graph_def import node_def_of
from dtf.framework.op_registry import NotDifferentiable, register_op, get_op_def
from dtf.framework.tensor_shape import TensorShape, unknown_shape
from . import structure as nest
from .dataset_ops import Captures, Dataset, _refuse_nested, element_of

_SCALAR = TensorShape([])


def _handle_infer(inputs, attrs):
    return [(_dtypes.string, _SCALAR)]


def _get_next_infer(inputs, attrs):
    return [(dt, unknown_shape() if s is None else TensorShape(s))
            for dt, s in zip(attrs["output_types"], attrs["output_shapes"])]


for _op in ("IteratorV2", "OneShotIterator", "IteratorFromStringHandleV2"):
    register_op(_op, stateful=True, ref_output=True)(_handle_infer)
    NotDifferentiable(_op)
register_op("MakeIterator", stateful=True, ref_inputs=(0,))(lambda inputs, attrs: [])
register_op("IteratorGetNext", stateful=True, ref_inputs=(0,))(_get_next_infer)
register_op("IteratorToStringHandle", stateful=True, ref_inputs=(0,))(_handle_infer)
for _op in ("MakeIterator", "IteratorGetNext", "IteratorToStringHandle"):
    NotDifferentiable(_op)


def _structure_attrs(element):
    flat = nest.flatten(element)
    return {"output_types": [c.dtype for c in flat],
            "output_shapes": [c.shape.as_list() if c.shape.ndims is not None else None
                              for c in flat]}


class Iterator:
    """TF1's ``tf.data.Iterator``: ``get_next()``, ``initializer``, ``make_initializer``,
    ``string_handle()``."""

    def __init__(self, iterator_resource, initializer, element):
        self._iterator_resource = iterator_resource
        self._initializer = initializer
        self._element = element

    @staticmethod
    def from_structure(output_types, output_shapes=None, shared_name=None, output_classes=None):
        """A reinitializable iterator for datasets of this structure (``make_initializer``)."""
        element = element_of(output_types, output_shapes)
        handle = _ops.make_tensor("IteratorV2", [], {
            "shared_name": shared_name or "", "container": "", **_structure_attrs(element)},
            name="Iterator")
        return Iterator(handle, None, element)

    @staticmethod
    def from_string_handle(string_handle, output_types, output_shapes=None, output_classes=None):
        """The iterator named by a ``string_handle()`` value fed into ``string_handle``."""
        element = element_of(output_types, output_shapes)
        handle = _ops.convert_to_tensor(string_handle, dtype=_dtypes.string)
        res = _ops.make_tensor("IteratorFromStringHandleV2", [handle], _structure_attrs(element),
                               name="IteratorFromStringHandleV2")
        return Iterator(res, None, element)

    output_types = property(lambda self: nest.map_structure(lambda c: c.dtype, self._element))
    output_shapes = property(lambda self: nest.map_structure(lambda c: c.shape, self._element))
    output_classes = property(lambda self: nest.map_structure(lambda c: _ops.Tensor, self._element))

    @property
    def initializer(self):
        if self._initializer is None:
            raise ValueError("Iterator does not have an initializer.")
        return self._initializer

    def make_initializer(self, dataset, name=None):
        """An op that (re)starts this iterator on ``dataset``, whose structure must match."""
        _refuse_nested(dataset, "An iterator")
        nest.assert_same_structure(self._element, dataset._element, "iterator and dataset structures")
        for mine, theirs in zip(nest.flatten(self._element), nest.flatten(dataset._element)):
            if mine.dtype != theirs.dtype:
                raise TypeError(f"Expected output types {self.output_types} but got dataset with "
                                f"output types {dataset.output_types}.")
            if not mine.shape.is_compatible_with(theirs.shape):
                raise TypeError(f"Expected output shapes compatible with {self.output_shapes} but "
                                f"got dataset with output shapes {dataset.output_shapes}.")
        with _ops.name_scope(name, "make_initializer") as scope:
            # TF names the op after the scope ("make_initializer")
            return self._make_iterator(dataset, scope)

    def _make_iterator(self, dataset, name):
        captures = Captures()
        spec = dataset._spec(captures)
        return _ops.make_op("MakeIterator", [self._iterator_resource] + captures.tensors,
                            {"dataset": spec}, name=name)

    def get_next(self, name=None):
        """The next element (a structure of tensors); OutOfRangeError at the end."""
        op = _ops.make_op("IteratorGetNext", [self._iterator_resource],
                          _structure_attrs(self._element), name=name or "IteratorGetNext")
        return nest.pack_sequence_as(self._element, list(op.outputs))

    def string_handle(self, name=None):
        """A string naming this iterator, to feed a ``from_string_handle`` iterator."""
        return _ops.make_tensor("IteratorToStringHandle", [self._iterator_resource], {},
                                name=name or "IteratorToStringHandle")


def make_initializable_iterator(dataset, shared_name=None):
    """An iterator plus the op that initializes it on ``dataset``."""
    _refuse_nested(dataset, "An iterator")
    it = Iterator.from_structure(dataset.output_types, dataset.output_shapes, shared_name)
    it._initializer = it._make_iterator(dataset, "MakeIterator")
    return it


def make_one_shot_iterator(dataset):
    """An iterator that starts on first use. The tensors the dataset captured are computed
    by a copy of their subgraph, run once then: it may not contain placeholders or
    stateful resources (variables, queues, tables)."""
    if not isinstance(dataset, Dataset):
        raise TypeError(f"make_one_shot_iterator expects a Dataset, got {type(dataset).__name__}")
    handle = _ops.make_tensor("OneShotIterator", [], one_shot_attrs(dataset), name="OneShotIterator")
    return Iterator(handle, None, dataset._element)


def one_shot_attrs(dataset) -> dict:
    """A OneShotIterator's attrs: the dataset's spec and the function computing its captures."""
    _refuse_nested(dataset, "An iterator")
    captures = Captures()
    spec = dataset._spec(captures)
    capture_fn = {"nodes": _subgraph(captures.tensors), "inputs": [], "capture_inputs": [],
                  "captures": [], "outputs": [t.name for t in captures.tensors]}
    return {"dataset": spec, "capture_fn": capture_fn, "container": "", "shared_name": "",
            **_structure_attrs(dataset._element)}


def _subgraph(tensors) -> list:
    """The node dicts that compute ``tensors``, device-free, refusing inputs a one-shot
    iterator cannot capture by value."""
    seen, order, stack = set(), [], [(t.op, False) for t in tensors]
    while stack:
        op, done = stack.pop()
        if done:
            order.append(op)
            continue
        if op in seen:
            continue
        seen.add(op)
        if op.type in ("Placeholder", "PlaceholderWithDefault"):
            raise ValueError(f"Cannot capture a placeholder (name:{op.name}, type:{op.type}) by "
                             "value. Use `make_initializable_iterator()` to feed it.")
        if get_op_def(op.type).ref_output:
            raise ValueError(
                "Failed to create a one-shot iterator for a dataset. "
                "`Dataset.make_one_shot_iterator()` does not support datasets that capture "
                f"stateful objects, such as a `Variable` (here {op.name}, a {op.type}). In these "
                "cases, use `Dataset.make_initializable_iterator()`.")
        stack.append((op, True))
        stack.extend((t.op, False) for t in op.inputs)
        stack.extend((c, False) for c in op.control_inputs)
    nodes = []
    for op in order:
        d = node_def_of(op).to_dict()
        d["device"] = ""
        d["attr"] = {k: v for k, v in d["attr"].items() if k != "_class"}
        nodes.append(d)
    return nodes

