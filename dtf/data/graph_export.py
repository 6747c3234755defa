"""Datasets and iterators in TF's GraphDef form, as TF 1.15 writes them.

dtf keeps a pipeline as one plain-data *spec* (dtf/data/dataset_ops.py) in an attr of the
op that starts an iterator (``MakeIterator``, ``OneShotIterator``), with the graph tensors
it captured as that op's inputs. TF instead has one node per dataset stage, each taking the
stage before it as a variant input. Exporting unfolds the spec into those nodes:
``TensorSliceDataset``, ``MapDataset``, ``BatchDatasetV2``, ... then TF's ``MakeIterator``
(dataset first, iterator second). dtf/data/graph_import.py folds them back.

Each stage kind has one writer in ``WRITERS``; arguments dtf keeps static (a batch's
drop_remainder, a shuffle's seeds, a reader's compression) become Const nodes, as TF's
Python makes them.
"""
from __future__ import annotations

import numpy as np

from dtf.framework import dtypes as _dtypes
from dtf.framework import graph_io
from dtf.framework import graph_pb as pb

WRITERS: dict = {}

# TF's readers' default buffer (DEFAULT_READER_BUFFER_SIZE_BYTES in TF's readers.py)
_READER_BUFFER = 256 * 1024


def writer(*kinds):
    def deco(fn):
        for kind in kinds:
            if kind in WRITERS:
                raise KeyError(f"dataset writer {kind!r} registered twice")
            WRITERS[kind] = fn
        return fn
    return deco


class Unexportable(TypeError):
    """A dataset stage with no TF GraphDef form."""


class NodeWriter:
    """Emits the nodes of one pipeline, named uniquely among ``taken`` (all node names of
    the GraphDef being written), placed on ``device``. ``capture_names[i]`` is the GraphDef
    name of the spec's captured tensor i."""

    def __init__(self, taken: set, device: str, capture_names: list, functions=None):
        self.taken = taken
        self.device = device
        self.capture_names = capture_names
        self.nodes: list = []
        self.functions = functions  # library writer for map/filter functions (None: refuse)

    def unique(self, scope: str, base: str) -> str:
        name = f"{scope}/{base}" if scope else base
        if name.lower() not in self.taken:
            self.taken.add(name.lower())
            return name
        i = 1
        while f"{name}_{i}".lower() in self.taken:
            i += 1
        self.taken.add(f"{name}_{i}".lower())
        return f"{name}_{i}"

    def node(self, op_type: str, scope: str, inputs: list, attrs: dict, base=None) -> str:
        node = pb.NodeDef(name=self.unique(scope, base or op_type), op=op_type,
                          device=self.device, input=list(inputs))
        for key, value in attrs.items():
            node.attr[key] = graph_io.attr_value(key, value)
        self.nodes.append(node)
        return node.name

    def const(self, scope: str, base: str, value, dtype) -> str:
        arr = np.asarray(value, dtype=object if dtype == _dtypes.string else dtype.as_numpy_dtype)
        return self.node("Const", scope, [], {"dtype": dtype, "value": arr}, base=base)

    def tensor(self, spec, key) -> str:
        return self.capture_names[spec["tensors"][key]]

    def dataset(self, spec) -> str:
        """The name of the node that outputs ``spec``'s dataset (its inputs written first)."""
        try:
            write = WRITERS[spec["kind"]]
        except KeyError:
            raise Unexportable(f"dataset stage {spec['kind']!r} has no TF GraphDef form; "
                               f"exportable: {sorted(WRITERS)}") from None
        return write(self, spec)


def structure(spec) -> dict:
    return {"output_types": list(spec["types"]), "output_shapes": list(spec["shapes"])}


def _scope(spec) -> str:
    return spec.get("scope", "")


def _unary(op_type, *keys):
    """A stage with one input dataset and scalar tensor arguments ``keys``."""
    def write(w, spec):
        inputs = [w.dataset(spec["inputs"][0])] + [w.tensor(spec, k) for k in keys]
        return w.node(op_type, _scope(spec), inputs, structure(spec))
    return write


# -- sources -------------------------------------------------------------------------------
@writer("tensors", "tensor_slices")
def _tensors(w, spec):
    op_type = "TensorDataset" if spec["kind"] == "tensors" else "TensorSliceDataset"
    return w.node(op_type, _scope(spec), [w.tensor(spec, f"c{i}") for i in range(spec["n"])],
                  {"Toutput_types": list(spec["types"]), "output_shapes": list(spec["shapes"])})


@writer("nonempty_files")
def _files(w, spec):
    # list_files: TF slices the MatchingFiles output (after an Assert that it is non-empty)
    return w.node("TensorSliceDataset", _scope(spec), [w.tensor(spec, "names")],
                  {"Toutput_types": list(spec["types"]), "output_shapes": list(spec["shapes"])})


@writer("range")
def _range(w, spec):
    return w.node("RangeDataset", _scope(spec),
                  [w.tensor(spec, k) for k in ("start", "stop", "step")], structure(spec))


def _reader_args(w, spec):
    scope = _scope(spec)
    return (w.const(scope, "compression_type", spec["compression"], _dtypes.string),
            w.const(scope, "buffer_size", _READER_BUFFER, _dtypes.int64))


@writer("tfrecord", "text_line")
def _records(w, spec):
    op_type = "TFRecordDataset" if spec["kind"] == "tfrecord" else "TextLineDataset"
    compression, buffer = _reader_args(w, spec)
    return w.node(op_type, _scope(spec), [w.tensor(spec, "filenames"), compression, buffer], {})


@writer("fixed_length")
def _fixed_length(w, spec):
    compression, buffer = _reader_args(w, spec)
    inputs = [w.tensor(spec, k) for k in ("filenames", "header_bytes", "record_bytes", "footer_bytes")]
    return w.node("FixedLengthRecordDatasetV2", _scope(spec), inputs + [buffer, compression], {})


@writer("generator")
def _generator(w, spec):
    raise Unexportable("Dataset.from_generator runs a Python callable of this process, which a "
                       "GraphDef cannot carry")


# -- combining -----------------------------------------------------------------------------
@writer("zip")
def _zip(w, spec):
    inputs = [w.dataset(s) for s in spec["inputs"]]
    return w.node("ZipDataset", _scope(spec), inputs, {**structure(spec), "N": len(inputs)})


@writer("concatenate")
def _concatenate(w, spec):
    inputs = [w.dataset(s) for s in spec["inputs"]]
    return w.node("ConcatenateDataset", _scope(spec), inputs, structure(spec))


# -- batching ------------------------------------------------------------------------------
@writer("batch")
def _batch(w, spec):
    scope = _scope(spec)
    inputs = [w.dataset(spec["inputs"][0]), w.tensor(spec, "batch_size"),
              w.const(scope, "drop_remainder", spec["drop_remainder"], _dtypes.bool)]
    return w.node("BatchDatasetV2", scope, inputs, {"parallel_copy": False, **structure(spec)})


@writer("padded_batch")
def _padded_batch(w, spec):
    scope = _scope(spec)
    shapes = spec["padded_shapes"]
    inputs = [w.dataset(spec["inputs"][0]), w.tensor(spec, "batch_size")]
    inputs += [w.const(scope, "padded_shapes" if i == 0 else f"padded_shapes_{i}",
                       [-1 if d is None else d for d in s], _dtypes.int64)
               for i, s in enumerate(shapes)]
    inputs += [w.tensor(spec, f"pad{i}") for i in range(len(shapes))]
    inputs.append(w.const(scope, "drop_remainder", spec["drop_remainder"], _dtypes.bool))
    return w.node("PaddedBatchDatasetV2", scope, inputs, {
        "parallel_copy": False, "Toutput_types": list(spec["types"]),
        "output_shapes": list(spec["shapes"]), "N": len(shapes)})


writer("unbatch")(_unary("UnbatchDataset"))


# -- order and count -----------------------------------------------------------------------
@writer("shuffle")
def _shuffle(w, spec):
    scope = _scope(spec)
    inputs = [w.dataset(spec["inputs"][0]), w.tensor(spec, "buffer_size")]
    if "seed" in spec["tensors"]:  # read from a TF graph: the seeds are tensors there
        inputs += [w.tensor(spec, "seed"), w.tensor(spec, "seed2")]
    else:
        inputs += [w.const(scope, "seed", spec["seed"] or 0, _dtypes.int64),
                   w.const(scope, "seed2", spec["seed2"] or 0, _dtypes.int64)]
    return w.node("ShuffleDataset", scope, inputs,
                  {"reshuffle_each_iteration": bool(spec["reshuffle"]), **structure(spec)})


writer("repeat")(_unary("RepeatDataset", "count"))
writer("take")(_unary("TakeDataset", "count"))
writer("skip")(_unary("SkipDataset", "count"))
writer("prefetch")(_unary("PrefetchDataset", "buffer_size"))
writer("cache")(_unary("CacheDataset", "filename"))


@writer("shard")
def _shard(w, spec):
    inputs = [w.dataset(spec["inputs"][0]), w.tensor(spec, "num_shards"), w.tensor(spec, "index")]
    return w.node("ShardDataset", _scope(spec), inputs,
                  {"require_non_empty": False, **structure(spec)})


# -- iterators -----------------------------------------------------------------------------
def make_iterator_nodes(op, taken: set, functions=None) -> list:
    """The nodes of dtf's ``MakeIterator`` op: its dataset's nodes, then TF's MakeIterator
    (dataset, iterator)."""
    captures = [graph_io.input_name(t) for t in op.inputs[1:]]
    w = NodeWriter(taken, op.device, captures, functions)
    try:
        dataset = w.dataset(op.get_attr("dataset"))
    except Unexportable as e:
        raise TypeError(f"op {op.name!r} (MakeIterator): attr 'dataset': {e}") from None
    node = pb.NodeDef(name=op.name, op="MakeIterator", device=op.device,
                      input=[dataset, graph_io.input_name(op.inputs[0])]
                      + [f"^{c.name}" for c in op.control_inputs])
    return w.nodes + [node]
