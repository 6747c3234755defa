"""TF1 dtypes: immutable DType values mapped one to one onto numpy dtypes."""
from __future__ import annotations

import builtins

import numpy as np


class DType:
    """A tensor element type (``tf.float32`` ...). Compare with ``==``; hashable."""

    __slots__ = ("_name", "_np")

    def __init__(self, name: str, np_type):
        self._name = name
        self._np = np_type

    name = property(lambda self: self._name)
    as_numpy_dtype = property(lambda self: self._np)
    base_dtype = property(lambda self: self)
    real_dtype = property(lambda self: self)

    @property
    def is_floating(self) -> bool:
        return self._name in ("float16", "float32", "float64", "bfloat16")

    @property
    def is_integer(self) -> bool:
        return self._name.startswith("int") or self._name.startswith("uint")

    @property
    def is_unsigned(self) -> bool:
        return self._name.startswith("uint")

    @property
    def is_bool(self) -> bool:
        return self._name == "bool"

    @property
    def is_complex(self) -> bool:
        return False

    @property
    def is_numeric(self) -> bool:
        return self.is_floating or self.is_integer

    @property
    def size(self) -> int:
        return np.dtype(self._np).itemsize if self._name != "string" else 0

    @property
    def min(self):
        return np.finfo(self._np).min if self.is_floating else np.iinfo(self._np).min

    @property
    def max(self):
        return np.finfo(self._np).max if self.is_floating else np.iinfo(self._np).max

    def is_compatible_with(self, other) -> bool:
        return self == as_dtype(other)

    def __eq__(self, other):
        if isinstance(other, DType):
            return self._name == other._name
        try:
            return self._name == as_dtype(other)._name
        except TypeError:
            return False

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self._name)

    def __repr__(self):
        return f"tf.{self._name}"

    def __reduce__(self):
        return as_dtype, (self._name,)


float16 = half = DType("float16", np.float16)
float32 = DType("float32", np.float32)
float64 = double = DType("float64", np.float64)
int8 = DType("int8", np.int8)
int16 = DType("int16", np.int16)
int32 = DType("int32", np.int32)
int64 = DType("int64", np.int64)
uint8 = DType("uint8", np.uint8)
uint16 = DType("uint16", np.uint16)
bool = DType("bool", np.bool_)  # noqa: A001 - TF's public name
string = DType("string", np.object_)

ALL = (float16, float32, float64, int8, int16, int32, int64, uint8, uint16, bool, string)
_BY_NAME = {d.name: d for d in ALL}
# TF's extra spellings: tf.placeholder("float") is the classic tutorials' first line.
_BY_NAME.update({"half": float16, "float": float32, "double": float64})
# What a control-flow op records for its gradient (values of a body's runs): never fed,
# fetched or sent, so it is not among ALL, and not TF's "variant" (no name a program uses).
control_flow_record = DType("control_flow_record", np.object_)
_BY_NAME["control_flow_record"] = control_flow_record
# What a dataset of datasets (Dataset.window) passes to a flat_map/interleave function: one
# window's values, read only by the nested dataset built on it.
dataset_window = DType("dataset_window", np.object_)
_BY_NAME["dataset_window"] = dataset_window
_BY_NP = {np.dtype(d.as_numpy_dtype): d for d in ALL if d is not string}
FLOATING = (float16, float32, float64)
INTEGER = (int8, int16, int32, int64, uint8, uint16)
NUMERIC = FLOATING + INTEGER

# TF accepts exactly these Python types: float, bool and object. ``int`` and ``str`` are
# TypeErrors in TF 1.15, and so here, so a program that runs on dtf runs on TF.
_BY_PYTHON_TYPE = {float: float32, builtins.bool: bool, object: string}
# Names TF knows and dtf has no kernels for: told apart from misspellings in the error.
_TF_ONLY = ("bfloat16", "complex64", "complex128", "uint32", "uint64", "qint8", "qint16",
            "qint32", "quint8", "quint16", "resource", "variant")


def as_dtype(type_value) -> DType:
    """Converts a value to a DType as ``tf.as_dtype`` does.

    Accepts a DType; a TF name ("float32", "int64", "bool", "string", ...) or one of TF's
    aliases "half", "float", "double"; a numpy dtype or scalar type (numpy strings and
    objects are tf.string); the Python types ``float`` (float32), ``bool`` and ``object``
    (string). Every op constructor that takes a dtype goes through here.
    """
    if isinstance(type_value, DType):
        return type_value
    if isinstance(type_value, str):
        found = _BY_NAME.get(type_value)
        if found is not None:
            return found
        raise TypeError(_unknown(type_value))
    if type_value is None:  # np.dtype(None) is float64; TF refuses it
        raise TypeError(_unknown(type_value))
    if isinstance(type_value, type) and not issubclass(type_value, np.generic):
        found = _BY_PYTHON_TYPE.get(type_value)
        if found is not None:
            return found
        raise TypeError(_unknown(type_value))
    try:
        npd = np.dtype(type_value)
    except TypeError:
        raise TypeError(_unknown(type_value)) from None
    if npd.kind in ("U", "S", "O"):
        return string
    found = _BY_NP.get(npd)
    if found is None:
        raise TypeError(_unknown(type_value))
    return found


def _unknown(type_value) -> str:
    name = type_value.removesuffix("_ref") if isinstance(type_value, str) else None
    if name in _TF_ONLY or (name in _BY_NAME and name != type_value):
        return (f"Cannot convert value {type_value!r} to a TensorFlow DType: dtf has no "
                f"{type_value} tensors (it has {', '.join(d.name for d in ALL)}).")
    return f"Cannot convert value {type_value!r} to a TensorFlow DType."


def from_numpy(npd) -> DType:
    """DType of a numpy dtype, with strings (U/S/O) mapped to tf.string."""
    return as_dtype(np.dtype(npd))


_TF_TYPE_STRINGS = {"float32": "float", "float64": "double", "float16": "half"}


def tf_type_string(dtype) -> str:
    """TF's own name of a dtype in error messages (DataTypeString: float, double, half)."""
    name = as_dtype(dtype).base_dtype.name
    return _TF_TYPE_STRINGS.get(name, name)
