"""Reference semantics of Example parsing, DecodeRaw and MatchingFiles."""
from __future__ import annotations

import glob

import numpy as np

from dtf.framework import errors
from dtf.io import parsing_ops  # noqa: F401  (the op definitions, wherever kernels load)
from dtf.io.example_wire import (BYTES, FLOAT, INT64, DecodeError, example_entries, example_features,
                                 packed_int64s)
from dtf.kernels.registry import register_kernel

from .table import reference

_KIND_OF = {"float32": FLOAT, "int64": INT64, "string": BYTES}
_KIND_NAME = {FLOAT: "float", INT64: "int64", BYTES: "string", 0: "empty"}


def _record_bytes(v):
    return v.encode() if isinstance(v, str) else bytes(v)


def _size(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _values(key, dtype, kind, values, want, variable, index):
    expected = _KIND_OF[dtype.name]
    if kind not in (0, expected):
        raise errors.InvalidArgumentError(
            None, None, f"Name: <unknown>, Feature: {key} (data type: {_KIND_NAME[expected]}) "
            f"is required but has data type {_KIND_NAME[kind]} (example {index}): "
            "Data types don't match.")
    if dtype.name == "string":
        arr = np.empty(len(values), dtype=object)
        arr[:] = [bytes(v) for v in values]
    else:
        arr = np.asarray(values, dtype=dtype.as_numpy_dtype)
    size = _size(want)
    if variable:
        if arr.size % max(size, 1):
            raise errors.InvalidArgumentError(
                None, None, f"Name: <unknown>, Key: {key}, Index: {index}.  Number of values is "
                f"not a multiple of the inner shape {want}: {arr.size}")
        return arr.reshape([-1] + list(want))
    if arr.size != size:
        raise errors.InvalidArgumentError(
            None, None, f"Name: <unknown>, Key: {key}, Index: {index}.  Number of "
            f"{_KIND_NAME[expected]} values != expected.  Values size: {arr.size} but output "
            f"shape: {list(want)}")
    return arr.reshape(want)


def _parse_single_fixed(attrs, serialized, defaults):
    """ParseSingleExample with FixedLenFeatures only, the input-pipeline case (one record a
    step, per queue-runner thread): no columns to stack, and a scalar string or number is
    built directly. Anything unusual (a wrong kind or count, a missing key) goes through
    _values and the defaults as in _parse, for the same errors."""
    record = serialized.item() if isinstance(serialized, np.ndarray) else serialized
    try:
        feats = example_features(_record_bytes(record))
    except DecodeError as e:
        raise errors.InvalidArgumentError(
            None, None, f"Could not parse example input (example 0): {e}") from None
    out = []
    for key, dtype, shape, default in zip(attrs["dense_keys"], attrs["Tdense"],
                                          attrs["dense_shapes"], defaults):
        found = feats.get(key)
        if found is not None and not shape and len(found[1]) == 1 \
                and found[0] == _KIND_OF[dtype.name]:
            if found[0] == BYTES:
                v = np.empty((), dtype=object)
                v[()] = bytes(found[1][0])
            else:
                v = np.asarray(found[1][0], dtype=dtype.as_numpy_dtype)
            out.append(v)
        elif found is not None:
            out.append(_values(key, dtype, *found, shape, False, 0))
        else:
            default = np.asarray(default)
            if default.size == 0 and _size(shape) != 0:
                raise errors.InvalidArgumentError(
                    None, None, f"Feature: {key} (data type: {dtype.name}) is required but "
                    "could not be found.")
            out.append(default.reshape(shape))
    return tuple(out) if len(out) != 1 else out[0]


def _parse(attrs, serialized, defaults, single):
    shapes, variable = parsing_ops.dense_layout(attrs)
    if single and not attrs.get("sparse_keys") and not any(variable):
        return _parse_single_fixed(attrs, serialized, defaults)
    records = [serialized.item() if isinstance(serialized, np.ndarray) else serialized] if single \
        else list(np.asarray(serialized, dtype=object).reshape(-1))
    keys, types = attrs["dense_keys"], attrs["Tdense"]
    sparse_keys, sparse_types = attrs.get("sparse_keys", []), attrs.get("sparse_types", [])
    columns = [[] for _ in keys]
    sparse_columns = [[] for _ in sparse_keys]
    for index, record in enumerate(records):
        try:
            feats = example_features(_record_bytes(record))
        except DecodeError as e:
            raise errors.InvalidArgumentError(
                None, None, f"Could not parse example input (example {index}): {e}") from None
        for i, key in enumerate(sparse_keys):
            found = feats.get(key)
            sparse_columns[i].append(
                _values(key, sparse_types[i], *found, [], True, index) if found is not None
                else _values(key, sparse_types[i], 0, [], [], True, index))
        for i, key in enumerate(keys):
            found = feats.get(key)
            if found is None:
                default = np.asarray(defaults[i])
                if variable[i]:
                    columns[i].append(np.zeros([0] + list(shapes[i]), default.dtype))
                    continue
                if default.size == 0 and _size(shapes[i]) != 0:
                    raise errors.InvalidArgumentError(
                        None, None, f"Feature: {key} (data type: {types[i].name}) is required but "
                        "could not be found.")
                columns[i].append(default.reshape(shapes[i]))
                continue
            columns[i].append(_values(key, types[i], *found, shapes[i], variable[i], index))
    out = _sparse_outputs(sparse_columns, sparse_types, single)
    if single and not any(variable):
        out += [col[0] for col in columns]
        return tuple(out) if len(out) != 1 else out[0]
    for i, col in enumerate(columns):
        if variable[i]:
            longest = max((c.shape[0] for c in col), default=0)
            pad = np.asarray(defaults[i]).reshape(-1)[0] if np.size(defaults[i]) else 0
            padded = np.full([len(col), longest] + list(shapes[i]), pad,
                             dtype=object if types[i].name == "string" else types[i].as_numpy_dtype)
            for k, c in enumerate(col):
                padded[k, :c.shape[0]] = c
            col = padded
        else:
            col = np.stack(col) if col else np.zeros([0] + list(shapes[i]),
                                                     object if types[i].name == "string"
                                                     else types[i].as_numpy_dtype)
        out.append(col[0] if single else col.reshape(np.shape(serialized) + col.shape[1:]))
    return tuple(out) if len(out) != 1 else out[0]


def _sparse_outputs(sparse_columns, sparse_types, single):
    """Per VarLenFeature (in TF's order: all indices, all values, all dense shapes): the
    position of each value, as [example, j] in a batch or [j] in a single example."""
    indices, values, shapes = [], [], []
    for col, dtype in zip(sparse_columns, sparse_types):
        lengths = [len(c) for c in col]
        j = np.concatenate([np.arange(n) for n in lengths]).astype(np.int64) if col else \
            np.zeros([0], np.int64)
        if single:
            indices.append(j.reshape(-1, 1))
            shapes.append(np.asarray([lengths[0]], np.int64))
        else:
            rows = np.repeat(np.arange(len(col), dtype=np.int64), lengths)
            indices.append(np.stack([rows, j], axis=1))
            shapes.append(np.asarray([len(col), max(lengths, default=0)], np.int64))
        values.append(np.concatenate(col) if col else
                      np.zeros([0], object if dtype.name == "string" else dtype.as_numpy_dtype))
    return indices + values + shapes


def _key_list(values, what):
    keys = []
    for v in values:
        v = np.asarray(v, dtype=object)
        if v.ndim != 0:
            raise errors.InvalidArgumentError(None, None, f"Expected {what} to be a scalar, got "
                                              f"shape: {list(v.shape)}")
        keys.append(_record_bytes(v.item()).decode())
    return keys


@reference("ParseExample")
def parse_example(attrs, serialized, names, *rest):
    # The keys arrive as inputs (TF's signature); in practice they are constants.
    ns, nd = int(attrs["Nsparse"]), int(attrs["Ndense"])
    attrs = {**attrs, "sparse_keys": _key_list(rest[:ns], "sparse_keys"),
             "dense_keys": _key_list(rest[ns:ns + nd], "dense_keys")}
    return _parse(attrs, serialized, rest[ns + nd:], single=False)


@reference("ParseSingleExample")
def parse_single_example(attrs, serialized, *defaults):
    return _parse(attrs, serialized, defaults, single=True)


def _list_values(feature):
    kind = feature.WhichOneof("kind")
    if kind is None:
        return 0, []
    return {"bytes_list": BYTES, "float_list": FLOAT, "int64_list": INT64}[kind], \
        list(getattr(feature, kind).value)


@reference("ParseSingleSequenceExample")
def parse_single_sequence_example(attrs, serialized, missing, *rest):
    # TF's signature; dtf builds no sparse context or feature list features.
    if attrs.get("Ncontext_sparse", 0) or attrs.get("Nfeature_list_sparse", 0):
        raise errors.UnimplementedError(None, None, "ParseSingleSequenceExample: dtf parses no "
                                        "sparse context or feature list features")
    nc, nf = int(attrs["Ncontext_dense"]), int(attrs["Nfeature_list_dense"])
    missing = set(_key_list(np.asarray(missing, dtype=object).reshape(-1), "missing key"))
    seq_keys = _key_list(rest[nc:nc + nf], "feature_list_dense_keys")
    attrs = {"context_keys": _key_list(rest[:nc], "context_dense_keys"),
             "Tcontext": attrs["Tcontext_dense"], "context_shapes": attrs["context_dense_shapes"],
             "sequence_keys": seq_keys, "Tsequence": attrs["feature_list_dense_types"],
             "sequence_shapes": attrs["feature_list_dense_shapes"],
             "sequence_allow_missing": [k in missing for k in seq_keys]}
    return _parse_sequence(attrs, serialized, rest[nc + nf:-1])


def _parse_sequence(attrs, serialized, context_defaults):
    from dtf.io.example_pb import SequenceExample
    from dtf.framework.protowire import DecodeError as ProtoDecodeError

    record = _record_bytes(serialized.item() if isinstance(serialized, np.ndarray) else serialized)
    try:
        ex = SequenceExample.FromString(record)
    except ProtoDecodeError as e:
        raise errors.InvalidArgumentError(None, None, f"Could not parse example input: {e}") from None
    out = []
    context = ex.context.feature
    for key, dtype, shape, default in zip(attrs["context_keys"], attrs["Tcontext"],
                                          attrs["context_shapes"], context_defaults):
        if key not in context:
            default = np.asarray(default)
            if default.size == 0 and _size(shape) != 0:
                raise errors.InvalidArgumentError(
                    None, None, f"Feature: {key} (data type: {dtype.name}) is required but could "
                    "not be found.")
            out.append(default.reshape(shape))
            continue
        out.append(_values(key, dtype, *_list_values(context[key]), shape, False, 0))
    lists = ex.feature_lists.feature_list
    for key, dtype, shape, allow in zip(attrs["sequence_keys"], attrs["Tsequence"],
                                        attrs["sequence_shapes"], attrs["sequence_allow_missing"]):
        empty = np.zeros([0] + list(shape), object if dtype.name == "string" else dtype.as_numpy_dtype)
        if key not in lists:
            if not allow:
                raise errors.InvalidArgumentError(
                    None, None, f"Name: <unknown>, Feature list '{key}' is required but could not "
                    "be found.  Did you mean to include it in feature_list_dense_missing_assumed_empty "
                    "or feature_list_dense_defaults?")
            out.append(empty)
            continue
        steps = [_values(key, dtype, *_list_values(f), shape, False, t)
                 for t, f in enumerate(lists[key].feature)]
        out.append(np.stack(steps) if steps else empty)
    return tuple(out) if len(out) != 1 else out[0]


def _csv_fields(line, delim, quotes, where):
    import csv

    try:
        rows = list(csv.reader([line], delimiter=delim, quoting=csv.QUOTE_MINIMAL if quotes
                               else csv.QUOTE_NONE, strict=True))
    except csv.Error as e:
        raise errors.InvalidArgumentError(None, None, f"Unquoted fields cannot have quotes/CRLFs "
                                          f"inside ({where}): {e}") from None
    return rows[0] if rows else [""]


def _csv_value(field, dtype, default, col, index):
    if dtype.name == "string":
        return field.encode()
    try:
        if dtype.is_integer:
            return int(field)
        return float(field)
    except ValueError:
        kind = "int" if dtype.is_integer else "float"
        raise errors.InvalidArgumentError(
            None, None, f"Field {col} in record {index} is not a valid {kind}: {field}") from None


@reference("DecodeCSV")
def decode_csv(attrs, records, *defaults):
    delim, quotes, na = attrs["field_delim"], attrs["use_quote_delim"], attrs.get("na_value", "")
    select = attrs.get("select_cols") or None
    types = attrs["OUT_TYPE"]
    flat = [r.decode() if isinstance(r, bytes) else str(r)
            for r in np.asarray(records, dtype=object).reshape(-1)]
    columns = [[] for _ in types]
    for index, line in enumerate(flat):
        fields = _csv_fields(line, delim, quotes, f"record {index}")
        if select is not None:
            if len(fields) <= select[-1]:
                raise errors.InvalidArgumentError(
                    None, None, f"Expect {select[-1] + 1} fields but have {len(fields)} in record {index}")
            fields = [fields[c] for c in select]
        elif len(fields) != len(types):
            raise errors.InvalidArgumentError(
                None, None, f"Expect {len(types)} fields but have {len(fields)} in record {index}")
        for col, (field, dtype, default) in enumerate(zip(fields, types, defaults)):
            default = np.asarray(default).reshape(-1)
            if field == "" or field == na:
                if default.size == 0:
                    raise errors.InvalidArgumentError(
                        None, None, f"Field {col} is required but missing in record {index}!")
                columns[col].append(default[0])
            else:
                columns[col].append(_csv_value(field, dtype, default, col, index))
    shape = np.shape(records)
    out = []
    for col, dtype in zip(columns, types):
        arr = np.empty(len(col), dtype=object) if dtype.name == "string" else None
        if arr is not None:
            arr[:] = col
        else:
            arr = np.asarray(col, dtype=dtype.as_numpy_dtype)
        out.append(arr.reshape(shape))
    return tuple(out) if len(out) != 1 else out[0]


@reference("DecodeRaw")
def decode_raw(attrs, data):
    dtype = np.dtype(attrs["out_type"].as_numpy_dtype)
    dtype = dtype.newbyteorder("<" if attrs.get("little_endian", True) else ">")
    if np.ndim(data) == 0:  # one string: no joining
        b = _record_bytes(data.item() if isinstance(data, np.ndarray) else data)
        if len(b) % dtype.itemsize:
            raise errors.InvalidArgumentError(
                None, None, f"Input to DecodeRaw has length {len(b)} that is not a multiple of "
                f"{dtype.itemsize}, the size of {attrs['out_type'].name}")
        return np.frombuffer(b, dtype=dtype).astype(dtype.newbyteorder("="), copy=False)
    flat = [_record_bytes(v) for v in np.asarray(data, dtype=object).reshape(-1)]
    size = len(flat[0]) if flat else 0
    for i, b in enumerate(flat):
        if len(b) % dtype.itemsize:
            raise errors.InvalidArgumentError(
                None, None, f"Input to DecodeRaw has length {len(b)} that is not a multiple of "
                f"{dtype.itemsize}, the size of {attrs['out_type'].name}")
        if len(b) != size:
            raise errors.InvalidArgumentError(
                None, None, f"DecodeRaw requires input strings to all be the same size, but "
                f"element {i} has size {len(b)} != {size}")
    n = size // dtype.itemsize
    out = np.frombuffer(b"".join(flat), dtype=dtype).astype(dtype.newbyteorder("="), copy=False)
    return out.reshape(np.shape(data) + (n,))


@reference("MatchingFiles")
def matching_files(attrs, pattern):
    names = set()
    for p in np.asarray(pattern, dtype=object).reshape(-1):
        names.update(glob.glob(p.decode() if isinstance(p, bytes) else str(p)))
    return np.asarray([n.encode() for n in sorted(names)], dtype=object).reshape(-1)


# -- the CPU kernels of the per-record ops ------------------------------------------------
# The reference functions above are also the fallback kernels, called with the node's
# attributes on every call. A queue runner's thread runs ParseSingleExample and DecodeRaw
# once per record, so their kernels work out what depends only on the node once per plan
# and take the common case (one scalar string in, FixedLenFeatures of one value each)
# directly; everything else goes through the functions above, for the same results and
# errors.
@register_kernel("ParseSingleExample", "CPU", label="numpy, per-record fast path")
def _parse_single_example_kernel(node):
    attrs = node.attrs
    _, variable = parsing_ops.dense_layout(attrs)
    general = lambda ctx, serialized, *defaults: _parse(attrs, serialized, defaults, True)  # noqa: E731
    if attrs.get("sparse_keys") or any(variable) or any(attrs["dense_shapes"]):
        return general
    wanted = tuple((key, _KIND_OF[dtype.name], dtype.as_numpy_dtype)
                   for key, dtype in zip(attrs["dense_keys"], attrs["Tdense"]))
    # (entries, where each wanted value is) of the last layout seen: records of one input
    # share it (see example_wire.example_entries), so it is worked out once.
    last = [(None, None)]

    def compute(ctx, serialized, *defaults):
        record = serialized.item() if isinstance(serialized, np.ndarray) else serialized
        if type(record) is not bytes:
            return general(ctx, serialized, *defaults)
        try:
            entries = example_entries(record)
        except DecodeError:
            entries = None
        seen, places = last[0]
        if entries is not seen:
            places = _value_places(entries, wanted) if entries is not None else None
            last[0] = (entries, places)
        if places is None:
            return general(ctx, serialized, *defaults)  # a default, an error, another layout
        out = []
        for kind, a, b, np_dtype in places:
            if kind == BYTES:
                v = np.empty((), dtype=object)
                v[()] = record[a:b]
            elif kind == INT64:
                values = packed_int64s(record, a, b)
                if len(values) != 1:
                    return general(ctx, serialized, *defaults)
                v = np.asarray(values[0], dtype=np_dtype)
            else:
                v = np.asarray(np.frombuffer(record, "<f4", 1, a)[0], dtype=np_dtype)
            out.append(v)
        return tuple(out) if len(out) != 1 else out[0]

    return compute


def _value_places(entries, wanted):
    """(kind, start, end, numpy dtype) of each wanted feature's one value, or None when
    one is missing, of another kind or not one value (the general path then gives the
    default or TF's error)."""
    found = {key: (kind, ranges) for key, kind, ranges in entries}  # a later entry wins
    places = []
    for key, kind, np_dtype in wanted:
        got = found.get(key)
        if got is None or got[0] != kind or len(got[1]) != 1:
            return None
        ((a, b),) = got[1]
        if kind == FLOAT and b - a != 4:
            return None
        places.append((kind, a, b, np_dtype))
    return tuple(places)


@register_kernel("DecodeRaw", "CPU", label="numpy, per-record fast path")
def _decode_raw_kernel(node):
    attrs = node.attrs
    dtype = np.dtype(attrs["out_type"].as_numpy_dtype)
    dtype = dtype.newbyteorder("<" if attrs.get("little_endian", True) else ">")
    native = dtype.newbyteorder("=")
    swap = native != dtype  # bytes of the other order: astype makes a native copy
    itemsize = dtype.itemsize

    def compute(ctx, data):
        if isinstance(data, np.ndarray) and data.ndim == 0:
            b = data.item()
            if type(b) is bytes and not len(b) % itemsize:
                out = np.frombuffer(b, dtype=dtype)
                return out.astype(native) if swap else out
        return decode_raw(attrs, data)

    return compute
