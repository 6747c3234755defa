"""TF's dataset and iterator nodes, read back into dtf's datasets (``import_graph_def``).

In TF's GraphDef each dataset stage is a node whose variant output feeds the next stage
and, at the end, ``MakeIterator`` (or a ``OneShotIterator``'s factory function). dtf has no
dataset ops: importing builds the same pipeline as the Python ``tf.data`` calls would, one
``Dataset`` object per node, and only the iterator ops become graph ops. The importer
(dtf/framework/importer.py) asks ``IMPORTS`` for each node type it finds here.

A stage argument dtf keeps static (a batch's drop_remainder, padded shapes, a reader's
compression) must be a Const node there, as TF's Python always writes it.
"""
from __future__ import annotations

import numpy as np

from dtf.framework import dtypes as _dtypes
from dtf.framework import graph_io
from dtf.framework import ops as _ops
from dtf.framework.importer import _Expanded
from dtf.framework.tensor_shape import TensorShape, unknown_shape
from . import structure as nest
from .dataset_ops import Captures, Component, Dataset, WindowComponent

IMPORTS: dict = {}

# attrs TF's dataset ops have that change nothing dtf computes
_IGNORED = frozenset({"metadata", "_class", "_output_shapes", "use_inter_op_parallelism",
                      "preserve_cardinality", "parallel_copy", "replicate_on_split",
                      "slack_period", "legacy_autotune", "buffer_size_min", "deterministic",
                      "sloppy", "force_synchronous", "use_unbounded_threadpool", "_cardinality"})


def importer(*op_types):
    def deco(fn):
        for t in op_types:
            if t in IMPORTS:
                raise KeyError(f"dataset import of {t!r} registered twice")
            IMPORTS[t] = fn
        return fn
    return deco


class DatasetNode(_Expanded):
    """An imported dataset node as the importer sees it: one output, a dtf Dataset."""

    def __init__(self, name, dataset):
        self.outputs = [dataset]
        self.name = name
        self._ops = []


class Node:
    """One TF node being imported: its inputs (Tensors and Datasets) and readable attrs."""

    def __init__(self, proto, inputs, library):
        self.proto = proto
        self.name = proto.name
        self.inputs = inputs
        self.library = library
        # (a window's output_types are variants, which dtf has no DType for: it reads the
        # nested element types from the input dataset instead)
        self.attrs = {k: v for k, v in _readable_attrs(proto).items() if k not in _IGNORED}

    def error(self, msg):
        return ValueError(msg)  # the importer says which node

    def dataset(self, i=0) -> Dataset:
        d = self.inputs[i]
        if not isinstance(d, Dataset):
            raise self.error(f"input {i} must be a dataset, got {getattr(d, 'name', d)!r}")
        return d

    def tensor(self, i):
        t = self.inputs[i]
        if not isinstance(t, _ops.Tensor):
            raise self.error(f"input {i} must be a tensor, got a dataset")
        return t

    def static(self, i, what):
        """The value of input ``i``, which dtf needs when the graph is built: a Const."""
        t = self.tensor(i)
        if t.op.type != "Const":
            raise self.error(f"{what} must be a constant for dtf (it is fixed when the pipeline "
                             f"is built), got the output of {t.op.name!r} ({t.op.type})")
        return np.asarray(t.op.get_attr("value"))

    def element(self, types_attr="output_types"):
        types = self.attrs.get(types_attr) or []
        shapes = self.attrs.get("output_shapes") or [None] * len(types)
        if len(shapes) != len(types):
            raise self.error(f"{len(types)} output types but {len(shapes)} output shapes")
        comps = tuple(Component(t, unknown_shape() if s is None else TensorShape(s))
                      for t, s in zip(types, shapes))
        return comps[0] if len(comps) == 1 else comps

    def static_int(self, i, what) -> int:
        return int(self.static(i, what))

    def captured(self, start, attr="Targuments"):
        """The tensors a function node passes its function after the element's components
        (TF's ``other_arguments``), from input ``start`` on."""
        count = len(self.attrs.get(attr) or [])
        return [self.tensor(start + k) for k in range(count)]

    def function(self, attr, dataset, captured, returns_dataset=False):
        """The TracedFunction of the FunctionDef the ``attr`` attr names, called on
        ``dataset``'s elements with ``captured`` as its extra arguments."""
        value = self.proto.attr[attr]
        if value.WhichOneof("value") != "func":
            raise self.error(f"attr {attr!r} must name a function")
        try:
            return import_function(self.library, value.func.name, dataset, captured,
                                   self.proto.op, returns_dataset)
        except (KeyError, ValueError, TypeError) as e:
            raise self.error(f"function {value.func.name!r}: {e}") from None

    def make(self, kind, inputs=(), tensors=None, attrs=None, functions=None,
             types_attr="output_types", element=None):
        ds = Dataset(kind, self.element(types_attr) if element is None else element,
                     inputs, tensors, attrs, functions)
        # under the import's name scope, where the node was in its own graph
        ds._scope = "/".join(p for p in (ds._scope, self.name.rpartition("/")[0]) if p)
        return ds


def _fold(fn):
    """An importer of one dataset node: fn(Node) -> Dataset."""
    def run(proto, inputs, controls, library):
        node = Node(proto, inputs, library)
        return DatasetNode(proto.name, fn(node))
    return run


def register(*op_types):
    return lambda fn: importer(*op_types)(_fold(fn))


# -- sources -------------------------------------------------------------------------------
@register("TensorSliceDataset", "TensorDataset")
def _tensors(n):
    if n.attrs.get("is_files"):
        raise n.error("is_files=True is not supported by dtf")
    kind = "tensor_slices" if n.proto.op == "TensorSliceDataset" else "tensors"
    return n.make(kind, tensors={f"c{i}": n.tensor(i) for i in range(len(n.inputs))},
                  attrs={"n": len(n.inputs)}, types_attr="Toutput_types")


@register("RangeDataset")
def _range(n):
    if list(n.attrs.get("output_types") or [_dtypes.int64]) != [_dtypes.int64]:
        raise n.error(f"dtf's range datasets are int64, got {n.attrs['output_types']}")
    return n.make("range", tensors={k: n.tensor(i) for i, k in enumerate(("start", "stop", "step"))},
                  element=Component(_dtypes.int64, []))


_RECORD = Component(_dtypes.string, [])


def _compression(n, i):
    from dtf.io.records import compression_name

    return compression_name(n.static(i, "compression_type").item())


@register("TFRecordDataset", "TextLineDataset")
def _records(n):
    kind = "tfrecord" if n.proto.op == "TFRecordDataset" else "text_line"
    return n.make(kind, tensors={"filenames": n.tensor(0)},
                  attrs={"compression": _compression(n, 1)}, element=_RECORD)


@register("FixedLengthRecordDataset", "FixedLengthRecordDatasetV2")
def _fixed_length(n):
    tensors = {k: n.tensor(i) for i, k in
               enumerate(("filenames", "header_bytes", "record_bytes", "footer_bytes"))}
    compression = _compression(n, 5) if n.proto.op.endswith("V2") else ""
    return n.make("fixed_length", tensors=tensors, attrs={"compression": compression},
                  element=_RECORD)


# -- combining -----------------------------------------------------------------------------
@register("ZipDataset")
def _zip(n):
    inputs = [n.dataset(i) for i in range(len(n.inputs))]
    return n.make("zip", inputs, attrs={"sizes": [len(d._components()) for d in inputs]})


@register("ConcatenateDataset")
def _concatenate(n):
    return n.make("concatenate", (n.dataset(0), n.dataset(1)))


# -- batching ------------------------------------------------------------------------------
@register("BatchDataset", "BatchDatasetV2")
def _batch(n):
    drop = bool(n.static(2, "drop_remainder")) if n.proto.op.endswith("V2") else False
    return n.make("batch", (n.dataset(),), tensors={"batch_size": n.tensor(1)},
                  attrs={"drop_remainder": drop})


@register("PaddedBatchDataset", "PaddedBatchDatasetV2")
def _padded_batch(n):
    count = n.attrs["N"]
    shapes = [[None if d < 0 else int(d) for d in n.static(2 + i, "padded_shapes").reshape(-1)]
              for i in range(count)]
    tensors = {"batch_size": n.tensor(1)}
    tensors.update({f"pad{i}": n.tensor(2 + count + i) for i in range(count)})
    drop = bool(n.static(2 + 2 * count, "drop_remainder")) if n.proto.op.endswith("V2") else False
    return n.make("padded_batch", (n.dataset(),), tensors=tensors, types_attr="Toutput_types",
                  attrs={"drop_remainder": drop, "padded_shapes": shapes})


@register("UnbatchDataset")
def _unbatch(n):
    return n.make("unbatch", (n.dataset(),))


@register("WindowDataset")
def _window(n):
    source = n.dataset()
    leaves = [WindowComponent(c) for c in nest.flatten(source._element)]
    return n.make("window", (source,), element=leaves[0] if len(leaves) == 1 else tuple(leaves),
                  tensors={k: n.tensor(1 + i) for i, k in enumerate(("size", "shift", "stride"))},
                  attrs={"drop_remainder": bool(n.static(4, "drop_remainder"))})


# -- order and count -----------------------------------------------------------------------
@register("ShuffleDataset")
def _shuffle(n):
    return _shuffled(n)


@register("ShuffleAndRepeatDataset")
def _shuffle_and_repeat(n):
    return n.make("repeat", (_shuffled(n),), tensors={"count": n.tensor(4)})


def _shuffled(n):
    seeds = n.inputs[2:4]
    attrs = {"reshuffle": bool(n.attrs.get("reshuffle_each_iteration", True))}
    tensors = {"buffer_size": n.tensor(1)}
    if all(t.op.type == "Const" for t in seeds):
        seed, seed2 = (int(n.static(i, "seed")) for i in (2, 3))
        # (0, 0) is "nondeterministic" for TF's kernel, as (None, None) is for dtf's
        attrs.update(seed=None if (seed, seed2) == (0, 0) else seed,
                     seed2=None if (seed, seed2) == (0, 0) else seed2)
    else:  # TF computes seed2 with a few ops: the stage reads both when it starts
        tensors.update(seed=n.tensor(2), seed2=n.tensor(3))
        attrs.update(seed=None, seed2=None)
    return n.make("shuffle", (n.dataset(),), tensors=tensors, attrs=attrs)


def _unary(kind, *keys):
    def fold(n):
        return n.make(kind, (n.dataset(),), tensors={k: n.tensor(1 + i) for i, k in enumerate(keys)})
    return fold


register("RepeatDataset")(_unary("repeat", "count"))
register("TakeDataset")(_unary("take", "count"))
register("SkipDataset")(_unary("skip", "count"))
register("PrefetchDataset")(_unary("prefetch", "buffer_size"))
register("CacheDataset")(_unary("cache", "filename"))


@register("ShardDataset")
def _shard(n):
    if n.attrs.get("require_non_empty"):
        raise n.error("require_non_empty=True is not supported by dtf")
    return n.make("shard", (n.dataset(),),
                  tensors={"num_shards": n.tensor(1), "index": n.tensor(2)})


@register("ModelDataset", "OptimizeDataset", "OptimizeDatasetV2")
def _tuning(n):
    # TF's autotuning and graph-rewrite wrappers: the elements are the input's
    return n.dataset()


# -- functions -----------------------------------------------------------------------------
def _function_def(library, name):
    if library is None:
        raise KeyError("the GraphDef has no function library")
    return library.get(name)  # (a KeyError naming the functions it has)


def _readable_attrs(node) -> dict:
    """The attrs of a node that dtf can read (what sizes its output lists); a variant
    Identity's ``T`` is not one of them."""
    out = {}
    for k, v in node.attr.items():
        if v.WhichOneof("value") != "func":
            try:
                out[k] = graph_io.attr_python(v)
            except ValueError:
                pass
    return out


def _body_graph_def(library, fdef):
    """A FunctionDef's body as a GraphDef (its arguments left out: ``input_map`` feeds
    them); TF's ``node:output_arg:index`` inputs become ``node:flat_index``. Returns the
    GraphDef, a function mapping a FunctionDef tensor name to the GraphDef's, and the
    argument names the body reads."""
    from dtf.framework import graph_pb as pb
    from dtf.framework.function_def import output_index

    nodes = {n.name: n for n in fdef.node_def}
    args = {a.name for a in fdef.signature.input_arg}
    used = set()

    def tensor(name):
        if name.startswith("^"):
            return name
        parts = name.split(":")
        if len(parts) == 1 and parts[0] in args:
            used.add(parts[0])
            return f"{parts[0]}:0"
        if len(parts) != 3 or parts[0] not in nodes:
            raise ValueError(f"input {name!r} names no argument or node of the function")
        node = nodes[parts[0]]
        if node.op in IMPORTS and parts[1] == "handle":  # a dataset made in the body
            return f"{parts[0]}:{parts[2]}"
        return f"{parts[0]}:{output_index(node.op, _readable_attrs(node), parts[1], int(parts[2]))}"

    gd = pb.GraphDef(library=library.proto())
    for n in fdef.node_def:
        node = pb.NodeDef(name=n.name, op=n.op, device=n.device, input=[tensor(i) for i in n.input])
        for k, v in n.attr.items():
            node.attr[k] = v
        gd.node.append(node)
    return gd, tensor, used


def _import_body(library, fdef, arg_tensors):
    """Imports a FunctionDef's body into the default graph, its arguments read from
    ``arg_tensors``; returns what it returns (Tensors, or Datasets for dataset nodes)."""
    from dtf.framework.importer import import_graph_def

    if len(arg_tensors) != len(fdef.signature.input_arg):
        raise ValueError(f"it takes {len(fdef.signature.input_arg)} arguments, the node gives "
                         f"{len(arg_tensors)}")
    gd, tensor, used = _body_graph_def(library, fdef)
    used = set(used)  # (what the nodes read: a function may return an argument as it is)
    rets = [tensor(fdef.ret[a.name]) for a in fdef.signature.output_arg]
    input_map = {f"{a.name}:0": t for a, t in zip(fdef.signature.input_arg, arg_tensors)
                 if a.name in used}
    direct = {f"{a.name}:0": t for a, t in zip(fdef.signature.input_arg, arg_tensors)}
    body_rets = [r for r in rets if r not in direct]
    scope = _ops.get_default_graph().get_name_scope()
    out = import_graph_def(gd, input_map=input_map, return_elements=body_rets or None,
                           name=f"{scope}/" if scope else "") or []
    got = dict(zip(body_rets, out))
    return [direct[r] if r in direct else got[r] for r in rets]


def import_function(library, name, dataset, captured, what, returns_dataset=False):
    """A TF dataset function as dtf traces one (dtf/data/function.py): a FuncGraph with a
    placeholder per element component, then one per captured tensor."""
    from . import function as _function

    fdef = _function_def(library, name)
    graph = _function.FuncGraph(_ops.get_default_graph(), what)
    with graph.as_default():
        phs = [graph.placeholder(dt, shape, f"arg{i}")
               for i, (dt, shape) in enumerate(dataset._components())]
        # a window's component is a nested dataset in the body (its argument, a variant)
        args = [leaf.argument(ph) for leaf, ph in zip(nest.flatten(dataset._element), phs)]
        outs = _import_body(library, fdef, args + [graph.capture(t) for t in captured])
    if returns_dataset:
        if len(outs) != 1 or not isinstance(outs[0], Dataset):
            raise ValueError("it must return one dataset")
        return _function.TracedFunction(graph, phs, [], None, outs[0])
    if any(isinstance(o, Dataset) for o in outs):
        raise ValueError("it returns a dataset where tensors are expected")
    return _function.TracedFunction(graph, phs, outs, tuple(outs), tuple(outs))


def _parallel(n, i):
    from .dataset_ops import _parallel as parallel

    return parallel(n.static_int(i, "num_parallel_calls"))


@register("MapDataset", "ParallelMapDataset", "ParallelMapDatasetV2")
def _map(n):
    source = n.dataset()
    captured = n.captured(1)
    fn = n.function("f", source, captured)
    parallel = 1 if n.proto.op == "MapDataset" else _parallel(n, 1 + len(captured))
    return n.make("map", (source,), functions={"f": fn}, attrs={"parallel": parallel})


@register("MapAndBatchDataset", "ExperimentalMapAndBatchDataset")
def _map_and_batch(n):
    source = n.dataset()
    captured = n.captured(1)
    k = 1 + len(captured)
    fn = n.function("f", source, captured)
    batched = n.element()
    mapped = tuple(Component(c.dtype, unknown_shape() if c.shape.ndims is None
                             else TensorShape(c.shape.as_list()[1:]))
                   for c in (batched if isinstance(batched, tuple) else (batched,)))
    mapped = n.make("map", (source,), functions={"f": fn}, attrs={"parallel": _parallel(n, k + 1)},
                    element=mapped[0] if len(mapped) == 1 else mapped)
    return n.make("batch", (mapped,), tensors={"batch_size": n.tensor(k)},
                  attrs={"drop_remainder": bool(n.static(k + 2, "drop_remainder"))})


@register("FilterDataset")
def _filter(n):
    source = n.dataset()
    fn = n.function("predicate", source, n.captured(1))
    return n.make("filter", (source,), functions={"f": fn})


@register("FlatMapDataset")
def _flat_map(n):
    source = n.dataset()
    fn = n.function("f", source, n.captured(1), returns_dataset=True)
    return n.make("flat_map", (source,), functions={"f": fn})


@register("InterleaveDataset", "ParallelInterleaveDatasetV2", "ParallelInterleaveDatasetV3",
          "ParallelInterleaveDatasetV4")
def _interleave(n):
    source = n.dataset()
    captured = n.captured(1)
    fn = n.function("f", source, captured, returns_dataset=True)
    k = 1 + len(captured)
    parallel = 1
    if n.proto.op != "InterleaveDataset":  # V4 has two buffer sizes before the count
        parallel = _parallel(n, len(n.inputs) - 1)
    return n.make("interleave", (source,), functions={"f": fn}, attrs={"parallel": parallel},
                  tensors={"cycle_length": n.tensor(k), "block_length": n.tensor(k + 1)})


@importer("Identity")
def _identity(proto, inputs, controls, library):
    """TF's functions return a dataset they build through an Identity (T=variant)."""
    if inputs and isinstance(inputs[0], Dataset):
        return DatasetNode(proto.name, inputs[0])
    return None


# -- iterators -----------------------------------------------------------------------------
@importer("MakeIterator")
def _make_iterator(proto, inputs, controls, library):
    node = Node(proto, inputs, library)
    dataset, iterator = node.dataset(0), node.tensor(1)
    captures = Captures()
    spec = dataset._spec(captures)
    graph = _ops.get_default_graph()
    op = graph.create_op("MakeIterator", [iterator] + captures.tensors, name=proto.name,
                         attrs={"dataset": spec})
    for c in controls:
        op._add_control_input(c)
    if proto.device:
        op._set_device(proto.device)
    return op


@importer("OneShotIterator")
def _one_shot_iterator(proto, inputs, controls, library):
    """TF's one-shot iterator builds its dataset with a function of no arguments; dtf's
    carries the dataset's spec and a function computing what the spec captures."""
    from .iterator_ops import one_shot_attrs

    node = Node(proto, inputs, library)
    value = proto.attr["dataset_factory"]
    if value.WhichOneof("value") != "func":
        raise node.error("attr 'dataset_factory' must name a function")
    try:
        fdef = _function_def(library, value.func.name)
        with _ops.Graph().as_default():  # the factory's own graph: its nodes run once, in it
            outs = _import_body(library, fdef, [])
            if len(outs) != 1 or not isinstance(outs[0], Dataset):
                raise ValueError("it must return one dataset")
            attrs = one_shot_attrs(outs[0])
    except (KeyError, ValueError, TypeError) as e:
        raise node.error(f"dataset_factory {value.func.name!r}: {e}") from None
    attrs.update({k: node.attrs[k] for k in ("container", "shared_name") if k in node.attrs})
    attrs.update({k: node.attrs[k] for k in ("output_types", "output_shapes") if k in node.attrs})
    op = _ops.get_default_graph().create_op("OneShotIterator", [], name=proto.name, attrs=attrs)
    for c in controls:
        op._add_control_input(c)
    if proto.device:
        op._set_device(proto.device)
    return op
