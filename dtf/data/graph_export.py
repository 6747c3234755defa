"""Datasets and iterators in TF's GraphDef form, as TF 1.15 writes them.

dtf keeps a pipeline as one plain-data *spec* (dtf/data/dataset_ops.py) in an attr of the
op that starts an iterator (``MakeIterator``, ``OneShotIterator``), with the graph tensors
it captured as that op's inputs. TF instead has one node per dataset stage, each taking the
stage before it as a variant input. Exporting unfolds the spec into those nodes:
``TensorSliceDataset``, ``MapDataset``, ``BatchDatasetV2``, ... then TF's ``MakeIterator``
(dataset first, iterator second). dtf/data/graph_import.py folds them back.

Each stage kind has one writer in ``WRITERS``; arguments dtf keeps static (a batch's
drop_remainder, a shuffle's seeds, a reader's compression) become Const nodes, as TF's
Python makes them. Attrs later TF versions added with a default (``parallel_copy``,
``require_non_empty``, ``sloppy``, ``metadata``) are left out: TF 1.15's importer rejects
an attr its op definition lacks, and newer ones fill in the default.
"""
from __future__ import annotations

import numpy as np

from dtf.framework import dtypes as _dtypes

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
    """Emits the node dicts of one pipeline (dtf/framework/graph_def.NodeDef.to_dict form),
    named uniquely among ``taken`` (lower-cased names in use), placed on ``device``.
    ``capture_names[i]`` is the tensor ("node:index") the spec's captured tensor i is;
    functions go to ``library`` (dtf/framework/function_def.py)."""

    def __init__(self, library, taken: set, device: str, capture_names: list):
        self.library = library
        self.taken = taken
        self.device = device
        self.capture_names = list(capture_names)
        self.nodes: list = []

    def unique(self, scope: str, base: str) -> str:
        name = f"{scope}/{base}" if scope else base
        i, candidate = 0, name
        while candidate.lower() in self.taken:
            i += 1
            candidate = f"{name}_{i}"
        self.taken.add(candidate.lower())
        return candidate

    def node(self, op_type: str, scope: str, inputs: list, attrs: dict, base=None) -> str:
        """A dataset node (one variant output, TF's ``handle``); returns its tensor name."""
        name = self.unique(scope, base or op_type)
        self.nodes.append({"name": name, "op": op_type, "input": list(inputs),
                           "device": self.device, "attr": attrs, "output_dtypes": ["variant"],
                           "_output_names": ["handle:0"]})
        return f"{name}:0"

    def const(self, scope: str, base: str, value, dtype) -> str:
        arr = np.asarray(value, dtype=object if dtype == _dtypes.string else dtype.as_numpy_dtype)
        name = self.unique(scope, base)
        self.nodes.append({"name": name, "op": "Const", "input": [], "device": self.device,
                           "attr": {"dtype": dtype, "value": arr}, "output_dtypes": [dtype.name]})
        return f"{name}:0"

    def tensor(self, spec, key) -> str:
        return self.capture_names[spec["tensors"][key]]

    def dataset(self, spec) -> str:
        """The tensor that is ``spec``'s dataset (its input stages written first)."""
        try:
            write = WRITERS[spec["kind"]]
        except KeyError:
            raise Unexportable(f"dataset stage {spec['kind']!r} has no TF GraphDef form; "
                               f"exportable: {sorted(WRITERS)}") from None
        return write(self, spec)

    def function(self, spec, name="f", hint="Dataset_fn"):
        """A stage's function as a FunctionDef of the library: (its FuncRef, the tensors
        it captures, their dtypes): TF passes captures as ``other_arguments``."""
        from dtf.framework.function_def import FuncRef, add_function

        fn = spec["functions"][name]
        nodes = list(fn["nodes"])
        by_name = {d["name"]: d for d in nodes}
        args = [(t.rpartition(":")[0], by_name[t.rpartition(":")[0]]["attr"]["dtype"])
                for t in list(fn["inputs"]) + list(fn["capture_inputs"])]
        outputs = list(fn["outputs"])
        if "inner" in spec:  # flat_map, interleave: the body builds a dataset and returns it
            inner = NodeWriter(self.library, {d["name"].lower() for d in nodes}, "", outputs)
            outputs = [inner.dataset(spec["inner"])]
            nodes += inner.nodes
        fname = add_function(self.library, hint, nodes, args, outputs)
        targs = [dt for _, dt in args[len(fn["inputs"]):]]
        return FuncRef(fname), [self.capture_names[i] for i in fn["captures"]], targs


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


@writer("window")
def _window(w, spec):
    scope = _scope(spec)
    inputs = [w.dataset(spec["inputs"][0])] + [w.tensor(spec, k) for k in ("size", "shift", "stride")]
    inputs.append(w.const(scope, "drop_remainder", spec["drop_remainder"], _dtypes.bool))
    # each component is a nested dataset: a scalar variant (dtf's dataset_window type)
    return w.node("WindowDataset", scope, inputs, structure(spec))


@writer("window_part")
def _window_part(w, spec):
    # the nested dataset a flat_map/interleave function receives is its argument itself
    return w.tensor(spec, "w")


# -- combining -----------------------------------------------------------------------------
@writer("zip")
def _zip(w, spec):
    inputs = [w.dataset(s) for s in spec["inputs"]]
    return w.node("ZipDataset", _scope(spec), inputs, {**structure(spec), "N": len(inputs)})


@writer("concatenate")
def _concatenate(w, spec):
    inputs = [w.dataset(s) for s in spec["inputs"]]
    return w.node("ConcatenateDataset", _scope(spec), inputs, structure(spec))


# -- functions -----------------------------------------------------------------------------
@writer("map")
def _map(w, spec):
    scope = _scope(spec)
    f, captured, targs = w.function(spec, hint="Dataset_map_fn")
    inputs = [w.dataset(spec["inputs"][0])] + captured
    attrs = {"f": f, "Targuments": targs, **structure(spec),
             "use_inter_op_parallelism": True, "preserve_cardinality": False}
    parallel = int(spec.get("parallel", 1))
    if parallel <= 1:
        return w.node("MapDataset", scope, inputs, attrs)
    # TF 1.15's op (its V2, an int64 count, came with TF 2.2; both import into TF 2.x)
    inputs.append(w.const(scope, "num_parallel_calls", parallel, _dtypes.int32))
    return w.node("ParallelMapDataset", scope, inputs, attrs)


@writer("filter")
def _filter(w, spec):
    f, captured, targs = w.function(spec, hint="Dataset_filter_fn")
    return w.node("FilterDataset", _scope(spec), [w.dataset(spec["inputs"][0])] + captured,
                  {"predicate": f, "Targuments": targs, **structure(spec)})


@writer("flat_map")
def _flat_map(w, spec):
    f, captured, targs = w.function(spec, hint="Dataset_flat_map_fn")
    return w.node("FlatMapDataset", _scope(spec), [w.dataset(spec["inputs"][0])] + captured,
                  {"f": f, "Targuments": targs, **structure(spec)})


@writer("interleave")
def _interleave(w, spec):
    scope = _scope(spec)
    f, captured, targs = w.function(spec, hint="Dataset_interleave_fn")
    inputs = [w.dataset(spec["inputs"][0])] + captured + [
        w.tensor(spec, "cycle_length"), w.tensor(spec, "block_length")]
    attrs = {"f": f, "Targuments": targs, **structure(spec)}
    parallel = int(spec.get("parallel", 1))
    if parallel <= 1:
        return w.node("InterleaveDataset", scope, inputs, attrs)
    inputs.append(w.const(scope, "num_parallel_calls", parallel, _dtypes.int64))
    return w.node("ParallelInterleaveDatasetV2", scope, inputs, attrs)


# -- batching ------------------------------------------------------------------------------
@writer("batch")
def _batch(w, spec):
    scope = _scope(spec)
    inputs = [w.dataset(spec["inputs"][0]), w.tensor(spec, "batch_size"),
              w.const(scope, "drop_remainder", spec["drop_remainder"], _dtypes.bool)]
    return w.node("BatchDatasetV2", scope, inputs, structure(spec))


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
        "Toutput_types": list(spec["types"]),
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
    return w.node("ShardDataset", _scope(spec), inputs, structure(spec))


# -- iterators -----------------------------------------------------------------------------
class _NoGraphDefForm:
    """Stands for a pipeline that cannot be written: encoding it is a TypeError with why
    (or, for a picture of the graph such as TensorBoard's, the attr is left out)."""

    def __init__(self, why):
        self.why = why

    def __repr__(self):
        return self.why


def _taken(ctx) -> set:
    return ctx.memo.setdefault("dataset_names", {n.lower() for n in ctx.nodes})


def _controls(d):
    return [i for i in d["input"] if i.startswith("^")]


def export_make_iterator(d, ctx) -> list:
    """dtf's ``MakeIterator`` (iterator, captures...; the spec as an attr): its dataset's
    nodes, then TF's MakeIterator (dataset, iterator)."""
    data = [i for i in d["input"] if not i.startswith("^")]
    w = NodeWriter(ctx.library, _taken(ctx), d.get("device", ""), data[1:])
    try:
        handle = w.dataset(d["attr"]["dataset"])
    except Unexportable as e:
        return [dict(d, attr=dict(d["attr"], dataset=_NoGraphDefForm(str(e))))]
    attrs = {k: v for k, v in d["attr"].items() if k == "_class"}
    return w.nodes + [{"name": d["name"], "op": "MakeIterator", "input": [handle, data[0]]
                       + _controls(d), "device": d.get("device", ""), "attr": attrs,
                       "output_dtypes": []}]


def export_one_shot_iterator(d, ctx) -> list:
    """dtf's ``OneShotIterator`` (the spec, and a function computing its captures): TF's,
    whose ``dataset_factory`` function computes the captures and builds the dataset."""
    from dtf.framework.function_def import FuncRef, add_function

    a = d["attr"]
    capture_fn = a["capture_fn"]
    body = list(capture_fn["nodes"])
    w = NodeWriter(ctx.library, {n["name"].lower() for n in body}, "", capture_fn["outputs"])
    try:
        handle = w.dataset(a["dataset"])
    except Unexportable as e:
        return [dict(d, attr=dict(d["attr"], dataset=_NoGraphDefForm(str(e))))]
    factory = add_function(ctx.library, "_make_dataset", body + w.nodes, [], [handle])
    attrs = {k: a[k] for k in ("output_types", "output_shapes", "container", "shared_name", "_class")
             if k in a}
    return [{"name": d["name"], "op": "OneShotIterator", "input": _controls(d),
             "device": d.get("device", ""), "attr": {"dataset_factory": FuncRef(factory), **attrs},
             "output_dtypes": d["output_dtypes"]}]
