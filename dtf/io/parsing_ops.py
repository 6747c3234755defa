"""Example parsing and raw decoding: ``tf.parse_single_example``, ``tf.parse_example``,
``FixedLenFeature``, ``FixedLenSequenceFeature``, ``VarLenFeature`` (parsed into a
``tf.SparseTensor``), ``tf.decode_raw``, ``tf.matching_files``.

Kernels (numpy references in dtf/kernels/reference/parsing.py) read records with the
wire-level reader of dtf/io/example_wire.py.
"""
from __future__ import annotations

import collections

import numpy as np

from dtf.framework import dtypes as _dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, register_op
from dtf.framework.tensor_shape import TensorShape, as_shape, unknown_shape

__all__ = ["FixedLenFeature", "FixedLenSequenceFeature", "decode_csv", "decode_raw",
           "matching_files", "parse_example", "parse_single_example",
           "parse_single_sequence_example", "VarLenFeature"]

_PARSEABLE = (_dtypes.float32, _dtypes.int64, _dtypes.string)


class FixedLenFeature(collections.namedtuple("FixedLenFeature", ["shape", "dtype", "default_value"])):
    """A feature of fixed shape; ``default_value`` when an example lacks it (else required)."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


class FixedLenSequenceFeature(collections.namedtuple(
        "FixedLenSequenceFeature", ["shape", "dtype", "allow_missing", "default_value"])):
    """A variable number of values of ``shape``; batches are padded with ``default_value``."""

    def __new__(cls, shape, dtype, allow_missing=False, default_value=None):
        return super().__new__(cls, shape, dtype, allow_missing, default_value)


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """A feature with any number of values per example, parsed into a tf.SparseTensor."""


def dense_layout(attrs):
    """(inner shapes, variable flags) of the dense features. As in TF's op definitions, a
    FixedLenSequenceFeature is a dense shape whose first dimension is unknown (-1)."""
    shapes, variable = [], []
    for shape in attrs["dense_shapes"]:
        shape = list(shape)
        var = bool(shape) and shape[0] in (None, -1)
        shapes.append(shape[1:] if var else shape)
        variable.append(var)
    return shapes, variable


def _parse_infer(inputs, attrs, single):
    lead = [] if single else list(inputs[0].shape.as_list() or [None]) \
        if inputs[0].shape.ndims is not None else [None]
    # TF's output order: every sparse feature's indices, then values, then dense shapes.
    rank = 1 if single else 2
    sparse_types = attrs.get("sparse_types", [])
    sparse = ([(_dtypes.int64, TensorShape([None, rank]))] * len(sparse_types)
              + [(dt, TensorShape([None])) for dt in sparse_types]
              + [(_dtypes.int64, TensorShape([rank]))] * len(sparse_types))
    shapes, variable = dense_layout(attrs)
    return sparse + [(dt, TensorShape(lead + ([None] if var else []) + list(shape)))
                     for dt, shape, var in zip(attrs["Tdense"], shapes, variable)]


@register_op("ParseSingleSequenceExample")
def _parse_sequence_infer(inputs, attrs):
    # TF's signature: the keys are string inputs (context dense, feature list dense; dtf
    # has no sparse ones here) and allow_missing is the missing_assumed_empty key vector.
    context = [(dt, TensorShape(shape))
               for dt, shape in zip(attrs["Tcontext_dense"], attrs["context_dense_shapes"])]
    return context + [(dt, TensorShape([None] + list(shape))) for dt, shape
                      in zip(attrs["feature_list_dense_types"], attrs["feature_list_dense_shapes"])]


# TF's signatures: ParseExample takes its keys as string inputs (serialized, names,
# sparse_keys, dense_keys, dense_defaults); ParseSingleExample keeps them as attrs.
register_op("ParseExample")(lambda inputs, attrs: _parse_infer(inputs, attrs, False))
register_op("ParseSingleExample")(lambda inputs, attrs: _parse_infer(inputs, attrs, True))


@register_op("DecodeRaw")
def _decode_raw_infer(inputs, attrs):
    shape = inputs[0].shape
    return [(attrs["out_type"], unknown_shape() if shape.ndims is None
             else shape.concatenate(TensorShape([None])))]


register_op("MatchingFiles")(lambda inputs, attrs: [(_dtypes.string, TensorShape([None]))])
@register_op("DecodeCSV")
def _decode_csv_infer(inputs, attrs):
    return [(dt, inputs[0].shape) for dt in attrs["OUT_TYPE"]]


for _op in ("ParseExample", "ParseSingleExample", "ParseSingleSequenceExample", "DecodeRaw",
            "MatchingFiles", "DecodeCSV"):
    NotDifferentiable(_op)


def _parseable_dtype(key, f):
    dtype = _dtypes.as_dtype(f.dtype)
    if dtype not in _PARSEABLE:
        raise ValueError(f"Feature {key!r}: dtype {dtype.name} is not one of float32, int64, string")
    return dtype


def _sparse_specs(features):
    """The VarLenFeatures' keys and dtypes, sorted by key (as TF orders them)."""
    keys = sorted(k for k, f in features.items() if isinstance(f, VarLenFeature))
    return keys, [_parseable_dtype(k, features[k]) for k in keys]


def _dense_specs(features, allow_sparse=False):
    if not isinstance(features, dict) or not features:
        raise ValueError("features must be a non-empty dict of feature configurations")
    keys, types, shapes, variable, defaults = [], [], [], [], []
    for key in sorted(features):
        f = features[key]
        if allow_sparse and isinstance(f, VarLenFeature):
            continue
        if not isinstance(f, (FixedLenFeature, FixedLenSequenceFeature)):
            raise ValueError(f"Unsupported feature configuration for {key!r}: {f!r} (dtf parses "
                             "FixedLenFeature and FixedLenSequenceFeature"
                             + (", and VarLenFeature here)" if allow_sparse else " here)"))
        dtype = _parseable_dtype(key, f)
        shape = as_shape(f.shape)
        if not shape.is_fully_defined():
            raise ValueError(f"Feature {key!r}: shape {shape} must be fully defined")
        seq = isinstance(f, FixedLenSequenceFeature)
        if seq and not f.allow_missing:
            raise NotImplementedError(f"FixedLenSequenceFeature {key!r}: dtf supports "
                                      "allow_missing=True only")
        keys.append(key)
        types.append(dtype)
        shapes.append(shape.as_list())
        variable.append(seq)
        if f.default_value is None:
            default = np.zeros([0], dtype.as_numpy_dtype)  # empty: the feature is required
            if seq:
                default = np.asarray(b"" if dtype == _dtypes.string else 0, dtype.as_numpy_dtype)
        else:
            default = np.asarray(f.default_value, dtype=dtype.as_numpy_dtype)
            if not seq:
                default = np.broadcast_to(default, shape.as_list()).copy()
        defaults.append(_ops.convert_to_tensor(default, dtype=dtype, name=f"key_{key}"
                                               .replace(":", "_").replace(" ", "_")))
    return keys, types, shapes, variable, defaults


def _parse(op_type, serialized, features, name, default_name):
    with _ops.name_scope(name, default_name, [serialized]):
        serialized = _ops.convert_to_tensor(serialized, dtype=_dtypes.string, name="serialized")
        keys, types, shapes, variable, defaults = _dense_specs(features, allow_sparse=True)
        sparse_keys, sparse_types = _sparse_specs(features)
        dense_shapes = [[None] + s if var else s for s, var in zip(shapes, variable)]
        attrs = {"sparse_types": sparse_types, "Tdense": types, "dense_shapes": dense_shapes}
        if op_type == "ParseExample":
            names = _ops.convert_to_tensor(np.zeros([0], object), dtype=_dtypes.string, name="names")
            key_inputs = [_ops.convert_to_tensor(k, dtype=_dtypes.string, name=f"{kind}_keys_{i}")
                          for kind, ks in (("sparse", sparse_keys), ("dense", keys))
                          for i, k in enumerate(ks)]
            inputs = [serialized, names] + key_inputs + defaults
            attrs.update(Nsparse=len(sparse_keys), Ndense=len(keys))
        else:
            inputs = [serialized] + defaults
            attrs.update(num_sparse=len(sparse_keys), sparse_keys=sparse_keys, dense_keys=keys)
        op = _ops.make_op(op_type, inputs, attrs, name=op_type)
    from dtf.ops.sparse_ops import SparseTensor

    outs, n = list(op.outputs), len(sparse_keys)
    parsed = {key: SparseTensor(outs[i], outs[n + i], outs[2 * n + i])
              for i, key in enumerate(sparse_keys)}
    parsed.update(zip(keys, outs[3 * n:]))
    return parsed


def parse_example(serialized, features, name=None, example_names=None):
    """Parses a batch (1-D string tensor) of serialized Examples into a dict of tensors,
    each with the batch as dimension 0; a VarLenFeature gives a SparseTensor of dense
    shape [batch, most values in one example]."""
    return _parse("ParseExample", serialized, features, name, "ParseExample")


def parse_single_example(serialized, features, name=None, example_names=None):
    """Parses one serialized Example (a scalar string) into a dict of tensors; a
    VarLenFeature gives a 1-D SparseTensor of its values."""
    return _parse("ParseSingleExample", serialized, features, name, "ParseSingleExample")


def parse_single_sequence_example(serialized, context_features=None, sequence_features=None,
                                  example_name=None, name=None):
    """Parses one serialized SequenceExample: (context dict, sequence dict). Context
    features are FixedLenFeatures; sequence features FixedLenSequenceFeatures, each parsed
    to [steps] + shape."""
    context_features = dict(context_features or {})
    sequence_features = dict(sequence_features or {})
    if not context_features and not sequence_features:
        raise ValueError("Missing features.")
    with _ops.name_scope(name, "ParseSingleSequenceExample", [serialized]):
        serialized = _ops.convert_to_tensor(serialized, dtype=_dtypes.string, name="serialized")
        ckeys, ctypes, cshapes, _, cdefaults = (_dense_specs(context_features) if context_features
                                                else ([], [], [], [], []))
        skeys, stypes, sshapes, allow = [], [], [], []
        for key in sorted(sequence_features):
            f = sequence_features[key]
            if not isinstance(f, FixedLenSequenceFeature):
                raise NotImplementedError(f"sequence feature {key!r}: dtf parses "
                                          "FixedLenSequenceFeature only")
            dtype = _dtypes.as_dtype(f.dtype)
            if dtype not in _PARSEABLE:
                raise ValueError(f"Feature {key!r}: dtype {dtype.name} is not one of float32, int64, string")
            skeys.append(key)
            stypes.append(dtype)
            sshapes.append(as_shape(f.shape).as_list())
            allow.append(bool(f.allow_missing))
        def strings(values, name):
            return _ops.convert_to_tensor(np.asarray(values, dtype=object).reshape(-1)
                                          if name.endswith("empty") else values,
                                          dtype=_dtypes.string, name=name)

        missing = strings([k for k, a in zip(skeys, allow) if a],
                          "feature_list_dense_missing_assumed_empty")
        keys = ([strings(k, f"context_dense_keys_{i}") for i, k in enumerate(ckeys)]
                + [strings(k, f"feature_list_dense_keys_{i}") for i, k in enumerate(skeys)])
        debug_name = strings("" if example_name is None else example_name, "debug_name")
        op = _ops.make_op("ParseSingleSequenceExample",
                          [serialized, missing] + keys + cdefaults + [debug_name], {
            "Ncontext_sparse": 0, "Ncontext_dense": len(ckeys), "Nfeature_list_sparse": 0,
            "Nfeature_list_dense": len(skeys), "context_sparse_types": [],
            "Tcontext_dense": ctypes, "feature_list_dense_types": stypes,
            "context_dense_shapes": cshapes, "feature_list_sparse_types": [],
            "feature_list_dense_shapes": sshapes}, name="ParseSingleSequenceExample")
    outs = list(op.outputs)
    return dict(zip(ckeys, outs[:len(ckeys)])), dict(zip(skeys, outs[len(ckeys):]))


_CSV_TYPES = (_dtypes.float32, _dtypes.float64, _dtypes.int32, _dtypes.int64, _dtypes.string)


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, name=None,
               na_value="", select_cols=None):
    """Splits each CSV line of ``records`` into one tensor per column; a column's
    ``record_defaults`` entry gives its type and the value of an empty field (an empty
    default makes the column required)."""
    if select_cols is not None:
        select_cols = [int(c) for c in select_cols]
        if any(b <= a for a, b in zip(select_cols, select_cols[1:])) or any(c < 0 for c in select_cols):
            raise ValueError("select_cols is not strictly increasing or has negative indices.")
        if len(select_cols) != len(record_defaults):
            raise ValueError("Length of select_cols and record_defaults do not match.")
    if len(field_delim) != 1:
        raise ValueError(f"field_delim should be only 1 char, got {field_delim!r}")
    with _ops.name_scope(name, "DecodeCSV", [records]):
        records = _ops.convert_to_tensor(records, dtype=_dtypes.string, name="records")
        defaults = []
        for i, d in enumerate(record_defaults):
            t = _ops.convert_to_tensor(d, name=f"record_defaults_{i}")
            if t.dtype not in _CSV_TYPES:
                raise TypeError(f"record_defaults[{i}] has type {t.dtype.name}; decode_csv takes "
                                "float32, float64, int32, int64 or string")
            defaults.append(t)
        op = _ops.make_op("DecodeCSV", [records] + defaults, {
            "OUT_TYPE": [t.dtype for t in defaults], "field_delim": field_delim,
            "use_quote_delim": bool(use_quote_delim), "na_value": na_value,
            "select_cols": select_cols or []}, name="DecodeCSV")
    return list(op.outputs)


def decode_raw(input_bytes=None, out_type=None, little_endian=True, name=None, bytes=None):  # noqa: A002
    """Reinterprets the bytes of each string as a vector of ``out_type``."""
    if input_bytes is None:
        input_bytes = bytes
    out_type = _dtypes.as_dtype(out_type)
    if out_type == _dtypes.string:
        raise TypeError("decode_raw: out_type must be numeric")
    t = _ops.convert_to_tensor(input_bytes, dtype=_dtypes.string, name="bytes")
    return _ops.make_tensor("DecodeRaw", [t], {"out_type": out_type,
                                               "little_endian": bool(little_endian)},
                            name=name or "DecodeRaw")


def matching_files(pattern, name=None):
    """The sorted file names matching ``pattern`` (a glob, or a 1-D tensor of globs)."""
    t = _ops.convert_to_tensor(pattern, dtype=_dtypes.string, name="pattern")
    return _ops.make_tensor("MatchingFiles", [t], {}, name=name or "MatchingFiles")
