"""``tf.data.Dataset`` at graph-building time: a tree of Python objects describing a
pipeline, with the element structure TF1 reports (output_types/shapes/classes).

Nothing here runs. An iterator's initializer turns the tree into a *spec* (plain data:
each stage's kind, its arguments, traced functions as node lists) plus the list of
graph tensors the pipeline captured (its inputs, scalar arguments, functions' captures);
the iterator kernel builds the running pipeline from both (dtf/data/pipeline.py).
"""
from __future__ import annotations

import os

import numpy as np

from dtf.framework import dtypes as _dtypes
from dtf.framework import ops as _ops
from dtf.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from . import function as _function
from . import structure as nest

AUTOTUNE = -1


class Captures:
    """Graph tensors a spec refers to, by index. Relative to a function graph, tensors from
    outside it are captured into it first."""

    def __init__(self, graph=None):
        self.graph = graph
        self.tensors: list = []
        self._index: dict = {}

    def index(self, tensor) -> int:
        if self.graph is not None:
            tensor = self.graph.capture(tensor)
        i = self._index.get(tensor)
        if i is None:
            i = self._index[tensor] = len(self.tensors)
            self.tensors.append(tensor)
        return i


class Component:
    """One leaf of an element structure: its dtype and static shape."""

    __slots__ = ("dtype", "shape")

    def __init__(self, dtype, shape):
        self.dtype = _dtypes.as_dtype(dtype)
        self.shape = as_shape(shape)

    def __iter__(self):
        return iter((self.dtype, self.shape))

    def argument(self, placeholder):
        """What a traced function receives for this leaf: the placeholder itself."""
        return placeholder


class WindowComponent(Component):
    """A leaf of a window dataset's element: a nested dataset of ``element`` (a Component
    of the input), which flat_map and interleave functions receive as a Dataset."""

    __slots__ = ("element",)

    def __init__(self, element):
        super().__init__(_dtypes.dataset_window, [])
        self.element = element

    def argument(self, placeholder):
        return Dataset("window_part", self.element, tensors={"w": placeholder})


def _nested(dataset) -> bool:
    return any(isinstance(c, WindowComponent) for c in nest.flatten(dataset._element))


def _refuse_nested(dataset, what):
    if _nested(dataset):
        raise TypeError(f"{what} of a dataset of datasets (from Dataset.window) is not supported "
                        "by dtf: consume the windows with flat_map or interleave, e.g. "
                        "`.flat_map(lambda w: w.batch(size))`")


def element_of(output_types, output_shapes=None):
    """The element structure (of Components) that output_types and output_shapes describe."""
    types = nest.map_structure(_dtypes.as_dtype, output_types)
    if output_shapes is None:
        shapes = nest.map_structure(lambda _: unknown_shape(), types)
    else:
        shapes = nest.map_structure(as_shape, output_shapes) if nest.is_sequence(output_shapes) \
            else as_shape(output_shapes)
    nest.assert_same_structure(types, shapes, "output_types and output_shapes")
    return nest.pack_sequence_as(types, [Component(t, s) for t, s in
                                         zip(nest.flatten(types), nest.flatten(shapes))])


def _most_specific(a: TensorShape, b: TensorShape) -> TensorShape:
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return unknown_shape()
    return TensorShape([x if x == y else None for x, y in zip(a.as_tuple_or_none(),
                                                              b.as_tuple_or_none())])


def _int64(value, name):
    from dtf.ops.math_ops import cast

    t = _ops.convert_to_tensor(value, name=name, preferred_dtype=_dtypes.int64)
    return t if t.dtype == _dtypes.int64 else cast(t, _dtypes.int64)


def _static_int(value):
    """The Python int of a constant argument, else None."""
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, _ops.Tensor) and value.op.type == "Const":
        return int(np.asarray(value.op.get_attr("value")))
    return None


class Dataset:
    """A sequence of elements, each a structure of tensors (TF1's DatasetV1)."""

    # TF's graphs hold a dataset as a variant tensor; import_graph_def may map one to a
    # Dataset (dtf/data/graph_import.py reads it)
    _folded_graph_value = True

    def __init__(self, kind, element, inputs=(), tensors=None, attrs=None, functions=None):
        self._kind = kind
        self._element = element  # structure of Component
        self._inputs = tuple(inputs)
        self._tensors = dict(tensors or {})
        self._attrs = dict(attrs or {})
        self._functions = dict(functions or {})
        # the name scope TF would have created this dataset's op in (its GraphDef export)
        self._scope = _ops.get_default_graph().get_name_scope()

    # -- structure -----------------------------------------------------------------
    @property
    def output_types(self):
        return nest.map_structure(lambda c: c.dtype, self._element)

    @property
    def output_shapes(self):
        return nest.map_structure(lambda c: c.shape, self._element)

    @property
    def output_classes(self):
        return nest.map_structure(lambda c: _ops.Tensor, self._element)

    def _components(self):
        return [tuple(c) for c in nest.flatten(self._element)]

    def __repr__(self):
        return (f"<{type(self).__name__} shapes: {self.output_shapes}, "
                f"types: {self.output_types}>")

    def _spec(self, captures: Captures) -> dict:
        spec = {"kind": self._kind, **self._attrs,
                "types": [c.dtype for c in nest.flatten(self._element)],
                "shapes": [c.shape.as_list() if c.shape.ndims is not None else None
                           for c in nest.flatten(self._element)],
                "scope": self._scope,
                "inputs": [d._spec(captures) for d in self._inputs],
                "tensors": {k: captures.index(t) for k, t in self._tensors.items()}}
        functions = {}
        for name, fn in self._functions.items():
            if fn.returned is not None and isinstance(fn.returned, Dataset):
                inner = Captures(fn.graph)
                spec["inner"] = fn.returned._spec(inner)
                functions[name] = fn.spec(captures, extra_outputs=inner.tensors)
            else:
                functions[name] = fn.spec(captures)
        spec["functions"] = functions
        return spec

    # -- sources -------------------------------------------------------------------
    @staticmethod
    def from_tensors(tensors):
        """A dataset of one element: ``tensors``."""
        with _ops.name_scope("tensors"):
            flat = [_ops.convert_to_tensor(t, name=f"component_{i}")
                    for i, t in enumerate(nest.flatten(tensors))]
        element = nest.pack_sequence_as(tensors, [Component(t.dtype, t.shape) for t in flat])
        return Dataset("tensors", element, tensors={f"c{i}": t for i, t in enumerate(flat)},
                       attrs={"n": len(flat)})

    @staticmethod
    def from_tensor_slices(tensors):
        """A dataset of the slices of ``tensors`` along their first dimension."""
        with _ops.name_scope("tensors"):
            flat = [_ops.convert_to_tensor(t, name=f"component_{i}")
                    for i, t in enumerate(nest.flatten(tensors))]
        if not flat:
            raise ValueError("from_tensor_slices needs at least one component")
        lead = None
        for t in flat:
            shape = t.shape.with_rank_at_least(1)
            d = shape.as_tuple_or_none()[0] if shape.ndims is not None else None
            if d is not None and lead is not None and d != lead:
                raise ValueError(f"Dimensions {lead} and {d} are not compatible")
            lead = lead if d is None else d
        element = nest.pack_sequence_as(tensors, [
            Component(t.dtype, unknown_shape() if t.shape.ndims is None
                      else TensorShape(t.shape.as_tuple_or_none()[1:])) for t in flat])
        return Dataset("tensor_slices", element, tensors={f"c{i}": t for i, t in enumerate(flat)},
                       attrs={"n": len(flat)})

    @staticmethod
    def range(*args):
        """int64 elements of range(start, stop, step), like Python's ``range``."""
        if not 1 <= len(args) <= 3:
            raise ValueError(f"Invalid arguments to range: {args}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (tuple(args) + (1,))[:3]
        names = ("start", "stop", "step")
        tensors = {n: _int64(v, n) for n, v in zip(names, (start, stop, step))}
        return Dataset("range", Component(_dtypes.int64, []), tensors=tensors)

    @staticmethod
    def zip(datasets):
        """Elements of ``datasets`` (a structure of datasets) side by side."""
        flat = nest.flatten(datasets)
        for d in flat:
            if not isinstance(d, Dataset):
                raise TypeError(f"The argument to `Dataset.zip()` must be a nested structure of "
                                f"`Dataset` objects, got {type(d).__name__}")
        element = nest.pack_sequence_as(datasets, [d._element for d in flat])
        return Dataset("zip", element, inputs=flat,
                       attrs={"sizes": [len(nest.flatten(d._element)) for d in flat]})

    @staticmethod
    def from_generator(generator, output_types, output_shapes=None, args=None):
        """Elements yielded by ``generator()``, a Python callable run in the process that
        hosts the iterator (a clear error where that is another process)."""
        from . import generators

        if args is not None:
            raise NotImplementedError("Dataset.from_generator(args=...) is not supported by dtf")
        if not callable(generator):
            raise TypeError("`generator` must be callable.")
        element = element_of(output_types, output_shapes)
        key = generators.register(generator)
        return Dataset("generator", element, attrs={
            "key": key, "shapes": [c.shape.as_list() if c.shape.ndims is not None else None
                                   for c in nest.flatten(element)]})

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None):
        """File names matching ``file_pattern`` (a string or strings), shuffled unless
        ``shuffle=False``."""
        from .readers import list_files

        return list_files(file_pattern, shuffle, seed)

    # -- transformations -------------------------------------------------------------
    def concatenate(self, dataset):
        """This dataset's elements, then ``dataset``'s."""
        nest.assert_same_structure(self._element, dataset._element, "datasets")
        element = []
        for a, b in zip(nest.flatten(self._element), nest.flatten(dataset._element)):
            if a.dtype != b.dtype:
                raise TypeError(f"Two datasets to concatenate have different types "
                                f"{self.output_types} and {dataset.output_types}")
            element.append(Component(a.dtype, _most_specific(a.shape, b.shape)))
        return Dataset("concatenate", nest.pack_sequence_as(self._element, element),
                       inputs=(self, dataset))

    def _trace(self, fn, name, **kw):
        if not kw.get("returns_dataset"):
            _refuse_nested(self, f"Dataset.{name}")
        return _function.trace(fn, self._components(), self._element, name, **kw)

    def map(self, map_func, num_parallel_calls=None):
        """Applies ``map_func`` to each element. The function is traced into a graph once;
        with ``num_parallel_calls`` it runs on that many elements at once (threads: its
        kernels release the GIL in numpy and Numba), and elements keep their order."""
        fn = self._trace(map_func, "map")
        element = nest.map_structure(lambda t: Component(t.dtype, t.shape), fn.output_structure)
        return Dataset("map", element, inputs=(self,), functions={"f": fn},
                       attrs={"parallel": _parallel(num_parallel_calls)})

    def filter(self, predicate):
        """The elements for which ``predicate`` returns True (a scalar bool tensor)."""
        fn = self._trace(predicate, "filter")
        out = fn.outputs
        if len(out) != 1 or out[0].dtype != _dtypes.bool or not out[0].shape.is_compatible_with([]):
            raise ValueError("`predicate` must return a scalar boolean tensor.")
        return Dataset("filter", self._element, inputs=(self,), functions={"f": fn})

    def flat_map(self, map_func):
        """Maps each element to a dataset and flattens the results in order."""
        fn = self._trace(map_func, "flat_map", returns_dataset=True)
        return Dataset("flat_map", fn.returned._element, inputs=(self,), functions={"f": fn})

    def interleave(self, map_func, cycle_length=AUTOTUNE, block_length=1, num_parallel_calls=None):
        """Maps each element to a dataset and interleaves ``cycle_length`` of them,
        ``block_length`` consecutive elements from each in turn."""
        fn = self._trace(map_func, "interleave", returns_dataset=True)
        return Dataset("interleave", fn.returned._element, inputs=(self,), functions={"f": fn},
                       tensors={"cycle_length": _int64(cycle_length, "cycle_length"),
                                "block_length": _int64(block_length, "block_length")},
                       attrs={"parallel": _parallel(num_parallel_calls)})

    def batch(self, batch_size, drop_remainder=False):
        """Stacks ``batch_size`` consecutive elements (the last batch may be smaller unless
        ``drop_remainder``)."""
        _refuse_nested(self, "Dataset.batch")
        lead = _static_int(batch_size) if drop_remainder else None
        element = nest.map_structure(
            lambda c: Component(c.dtype, TensorShape([lead]).concatenate(c.shape)), self._element)
        return Dataset("batch", element, inputs=(self,),
                       tensors={"batch_size": _int64(batch_size, "batch_size")},
                       attrs={"drop_remainder": bool(drop_remainder)})

    def padded_batch(self, batch_size, padded_shapes, padding_values=None, drop_remainder=False):
        """Batches elements, padding each component to ``padded_shapes`` (None or -1: the
        longest in the batch) with ``padding_values`` (0 or b'' by default)."""
        _refuse_nested(self, "Dataset.padded_batch")
        comps = nest.flatten(self._element)
        shapes = nest.flatten(_shape_structure(padded_shapes))
        if len(shapes) != len(comps):
            raise ValueError("padded_shapes must have the structure of the dataset's elements")
        if padding_values is None:
            values = [b"" if c.dtype == _dtypes.string else 0 for c in comps]
        else:
            values = nest.flatten(padding_values)
        pads = []
        for c, s in zip(comps, shapes):
            if c.shape.ndims is not None and s.ndims != c.shape.ndims:
                raise ValueError(f"The padded shape {s} is not compatible with the shape "
                                 f"{c.shape} of the corresponding input component.")
            pads.append(s)
        lead = _static_int(batch_size) if drop_remainder else None
        element = nest.pack_sequence_as(self._element, [
            Component(c.dtype, TensorShape([lead]).concatenate(s)) for c, s in zip(comps, pads)])
        tensors = {"batch_size": _int64(batch_size, "batch_size")}
        for i, (c, v) in enumerate(zip(comps, values)):
            tensors[f"pad{i}"] = _ops.convert_to_tensor(v, dtype=c.dtype, name=f"padding_value_{i}")
        return Dataset("padded_batch", element, inputs=(self,), tensors=tensors, attrs={
            "drop_remainder": bool(drop_remainder),
            "padded_shapes": [s.as_list() for s in pads]})

    def unbatch(self):
        """Splits each element along its first dimension into separate elements."""
        _refuse_nested(self, "Dataset.unbatch")
        element = nest.map_structure(
            lambda c: Component(c.dtype, unknown_shape() if c.shape.ndims is None
                                else TensorShape(c.shape.as_tuple_or_none()[1:])), self._element)
        return Dataset("unbatch", element, inputs=(self,))

    def window(self, size, shift=None, stride=1, drop_remainder=False):
        """A dataset of windows: each element has this dataset's structure with a nested
        Dataset at every component, holding ``size`` elements taken every ``stride``-th
        from a start that moves by ``shift`` (default ``size``). The last windows may be
        smaller unless ``drop_remainder``. Consume them with flat_map or interleave."""
        _refuse_nested(self, "Dataset.window")
        shift = size if shift is None else shift
        for name, value in (("size", size), ("shift", shift), ("stride", stride)):
            n = _static_int(value)
            if n is not None and n <= 0:
                raise ValueError(f"Window {name} must be greater than zero, but got {n}.")
        element = nest.map_structure(WindowComponent, self._element)
        return Dataset("window", element, inputs=(self,), tensors={
            "size": _int64(size, "size"), "shift": _int64(shift, "shift"),
            "stride": _int64(stride, "stride")}, attrs={"drop_remainder": bool(drop_remainder)})

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None):
        """Shuffles through a buffer of ``buffer_size`` elements. dtf's order for a seed is
        deterministic but not TF's (a different generator)."""
        from dtf.ops.random_ops import get_seed

        seed1, seed2 = get_seed(seed)
        return Dataset("shuffle", self._element, inputs=(self,),
                       tensors={"buffer_size": _int64(buffer_size, "buffer_size")},
                       attrs={"seed": seed1, "seed2": seed2,
                              "reshuffle": True if reshuffle_each_iteration is None
                              else bool(reshuffle_each_iteration)})

    def repeat(self, count=None):
        """Repeats the dataset ``count`` times (forever when None or -1)."""
        return Dataset("repeat", self._element, inputs=(self,),
                       tensors={"count": _int64(-1 if count is None else count, "count")})

    def take(self, count):
        """At most ``count`` elements (all when -1)."""
        return Dataset("take", self._element, inputs=(self,), tensors={"count": _int64(count, "count")})

    def skip(self, count):
        """All but the first ``count`` elements (none when -1)."""
        return Dataset("skip", self._element, inputs=(self,), tensors={"count": _int64(count, "count")})

    def prefetch(self, buffer_size):
        """Keeps up to ``buffer_size`` elements ready, produced by a background thread."""
        return Dataset("prefetch", self._element, inputs=(self,),
                       tensors={"buffer_size": _int64(buffer_size, "buffer_size")})

    def cache(self, filename=""):
        """Replays the elements of the first complete pass: from memory, or from the file
        ``filename`` (which later iterators and runs read instead of the input)."""
        return Dataset("cache", self._element, inputs=(self,), tensors={
            "filename": _ops.convert_to_tensor(filename, dtype=_dtypes.string, name="filename")})

    def shard(self, num_shards, index):
        """Every ``num_shards``-th element, starting at ``index``."""
        n, i = _static_int(num_shards), _static_int(index)
        if n is not None and n <= 0:
            raise ValueError(f"num_shards must be > 0, got {n}")
        if n is not None and i is not None and not 0 <= i < n:
            raise ValueError(f"index must be in [0, num_shards), got {i} for {n} shards")
        return Dataset("shard", self._element, inputs=(self,), tensors={
            "num_shards": _int64(num_shards, "num_shards"), "index": _int64(index, "index")})

    def enumerate(self, start=0):
        """(int64 index, element) pairs, counting from ``start``."""
        return Dataset.zip((Dataset.range(start, np.iinfo(np.int64).max), self))

    def apply(self, transformation_func):
        """``transformation_func(self)``, which must return a Dataset."""
        out = transformation_func(self)
        if not isinstance(out, Dataset):
            raise TypeError("`transformation_func` must return a Dataset.")
        return out

    def with_options(self, options):
        return self

    # -- iterators -----------------------------------------------------------------
    def make_one_shot_iterator(self):
        """An iterator that initializes itself on first use; the dataset must not capture
        placeholders or variables (use make_initializable_iterator then)."""
        from .iterator_ops import make_one_shot_iterator

        return make_one_shot_iterator(self)

    def make_initializable_iterator(self, shared_name=None):
        """An iterator whose ``initializer`` op (re)starts it, reading fed placeholders."""
        from .iterator_ops import make_initializable_iterator

        return make_initializable_iterator(self, shared_name)


def _parallel(num_parallel_calls):
    if num_parallel_calls is None:
        return 1
    n = _static_int(num_parallel_calls)
    if n is None or (n < 1 and n != AUTOTUNE):
        raise ValueError(f"num_parallel_calls must be a positive int or AUTOTUNE, got "
                         f"{num_parallel_calls!r}")
    return os.cpu_count() or 1 if n == AUTOTUNE else n


def _shape_structure(padded_shapes):
    """padded_shapes as a structure of TensorShapes (a list of dims is one shape)."""
    if isinstance(padded_shapes, dict):
        return {k: _shape_structure(v) for k, v in padded_shapes.items()}
    if isinstance(padded_shapes, tuple) and not all(
            d is None or isinstance(d, (int, np.integer)) for d in padded_shapes):
        return tuple(_shape_structure(v) for v in padded_shapes)
    if isinstance(padded_shapes, _ops.Tensor):
        raise NotImplementedError("padded_batch: padded_shapes as a tensor is not supported by "
                                  "dtf; give lists of ints (None or -1 for 'longest')")
    dims = list(padded_shapes) if isinstance(padded_shapes, (list, tuple)) else padded_shapes
    if isinstance(dims, list):
        dims = [None if d is None or d == -1 else int(d) for d in dims]
    return as_shape(dims)

