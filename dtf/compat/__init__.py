"""tf.compat: string conversions as TF 1.15 has them, and tf.compat.v1, which is dtf
itself (dtf's surface is TF1's: ``tf.compat.v1.placeholder``)."""
import numbers as _numbers
import sys as _sys

import numpy as _np

bytes_or_text_types = (bytes, str)
integral_types = (_numbers.Integral, _np.integer)
real_types = (_numbers.Real, _np.integer, _np.floating)
complex_types = (_numbers.Complex, _np.number)


def as_bytes(bytes_or_text, encoding="utf-8"):
    """``bytes_or_text`` as bytes (str is encoded with ``encoding``)."""
    if isinstance(bytes_or_text, bytearray):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


def as_text(bytes_or_text, encoding="utf-8"):
    """``bytes_or_text`` as str (bytes are decoded with ``encoding``)."""
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text.decode(encoding)
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


as_str = as_text


def as_str_any(value):
    """str of any value; bytes are decoded rather than repr'd."""
    if isinstance(value, bytes):
        return as_str(value)
    return str(value)


def path_to_str(path):
    """A PathLike's path as str; anything else unchanged."""
    if hasattr(path, "__fspath__"):
        path = as_str_any(path.__fspath__())
    return path


def dimension_value(dimension):
    """The int (or None) of a Dimension; an int or None passes through."""
    from dtf.framework.tensor_shape import Dimension
    return dimension.value if isinstance(dimension, Dimension) else dimension


def dimension_at_index(shape, index):
    """Dimension ``index`` of ``shape`` (unknown when the rank is)."""
    from dtf.framework.tensor_shape import Dimension, TensorShape
    shape = TensorShape(shape)
    return Dimension(None) if shape.ndims is None else shape.dims[index]


def __getattr__(name):
    if name == "v1":
        return _sys.modules["dtf"]
    raise AttributeError(f"module 'dtf.compat' has no attribute {name!r}")
