"""Random tensors and TF1's seed rules.

Every random op is stateful and carries two seed attrs (seed, seed2) derived by
``get_seed`` from the graph-level seed and the op-level seed. A seeded op produces the
same sequence in every new Session and advances from one run to the next.
"""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, register_op
from dtf.framework.tensor_shape import TensorShape, as_shape
from .common import const_value, convert, shape_from_tensor

__all__ = ["random_normal", "random_uniform", "truncated_normal", "random_shuffle", "multinomial",
           "set_random_seed", "get_seed"]

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2 ** 31 - 1


# -- seeds ------------------------------------------------------------------------------
def set_random_seed(seed):
    """Sets the graph-level seed of the default graph."""
    _ops.get_default_graph().seed = seed


def _truncate_seed(seed):
    return seed % _MAXINT32


def get_seed(op_seed):
    """(graph seed, op seed) for an op, TF1's rules: with a graph seed and no op seed the
    op seed is the graph's last op id (deterministic per graph position); with neither,
    (None, None) means nondeterministic."""
    graph = _ops.get_default_graph()
    global_seed = graph.seed
    if global_seed is not None:
        if op_seed is None:
            op_seed = graph._last_id
        seeds = _truncate_seed(global_seed), _truncate_seed(op_seed)
    elif op_seed is not None:
        seeds = DEFAULT_GRAPH_SEED, _truncate_seed(op_seed)
    else:
        seeds = None, None
    # The kernels read (0, 0) as "nondeterministic", which an explicit seed must not mean.
    if seeds == (0, 0):
        return 0, _MAXINT32
    return seeds


def _seed_attrs(seed):
    seed1, seed2 = get_seed(seed)
    return {"seed": seed1 or 0, "seed2": seed2 or 0}


# -- op definitions ---------------------------------------------------------------------
def _from_shape_infer(inputs, attrs):
    """Output shape given by the 1-D shape tensor in input 0, dtype by attr ``dtype``."""
    return [(attrs["dtype"], shape_from_tensor(inputs[0]))]


for _op in ("RandomStandardNormal", "RandomUniform", "TruncatedNormal"):
    register_op(_op, stateful=True)(_from_shape_infer)
    NotDifferentiable(_op)


@register_op("RandomUniformInt", stateful=True)
def _uniform_int_infer(inputs, attrs):
    shape, lo, hi = inputs
    for t, what in ((lo, "minval"), (hi, "maxval")):
        if t.shape.ndims not in (None, 0):
            raise ValueError(f"Shape must be rank 0 but is rank {t.shape.ndims} for "
                             f"'{attrs.get('_op_name', 'RandomUniformInt')}' (op: 'RandomUniformInt') "
                             f"({what})")
    return [(attrs["Tout"], shape_from_tensor(shape))]


@register_op("RandomShuffle", stateful=True)
def _shuffle_infer(inputs, attrs):
    return [(inputs[0].dtype, inputs[0].shape)]


@register_op("Multinomial", stateful=True)
def _multinomial_infer(inputs, attrs):
    logits, num_samples = inputs
    if logits.shape.ndims not in (None, 2):
        raise ValueError(f"Shape must be rank 2 but is rank {logits.shape.ndims} for "
                         f"'{attrs.get('_op_name', 'Multinomial')}' (op: 'Multinomial')")
    batch = logits.shape.as_tuple_or_none()[0] if logits.shape.ndims else None
    n = const_value(num_samples)
    return [(attrs["output_dtype"], TensorShape([batch, None if n is None else int(n)]))]


for _op in ("RandomUniformInt", "RandomShuffle", "Multinomial"):
    NotDifferentiable(_op)


# -- constructors -----------------------------------------------------------------------
_FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)


def _shape_tensor(shape):
    """TF's shape argument: a Tensor, a TensorShape, or a list of ints."""
    if isinstance(shape, TensorShape):
        shape = as_shape(shape).as_list()
    return convert(shape, "shape", hint=dtypes.int32)


def _float_dtype(dtype):
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _FLOATS:
        raise TypeError(f"Value passed to parameter 'dtype' has DataType {dtype.name} not in list "
                        f"of allowed values: " + ", ".join(d.name for d in _FLOATS))
    return dtype


def _sample(op_type, shape, dtype, seed):
    """The unit-scale sample op for a float distribution."""
    return _ops.make_tensor(op_type, [shape], {"dtype": dtype, "T": shape.dtype, **_seed_attrs(seed)},
                            name=op_type)


def _scaled_normal(op_type, default_name, shape, mean, stddev, dtype, seed, name):
    dtype = _float_dtype(dtype)
    with _ops.name_scope(name, default_name, [shape, mean, stddev]) as scope:
        shape = _shape_tensor(shape)
        mean = convert(mean, "mean", dtype=dtype)
        stddev = convert(stddev, "stddev", dtype=dtype)
        rnd = _sample(op_type, shape, dtype, seed)
        from .math_ops import add

        return add(rnd * stddev, mean, name=scope)


def random_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Samples from a normal distribution."""
    return _scaled_normal("RandomStandardNormal", "random_normal", shape, mean, stddev, dtype,
                          seed, name)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Samples from a normal distribution, redrawing values more than 2 stddev from the mean."""
    return _scaled_normal("TruncatedNormal", "truncated_normal", shape, mean, stddev, dtype,
                          seed, name)


_UNIFORM_TYPES = _FLOATS + (dtypes.int32, dtypes.int64)


def random_uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None):
    """Samples uniformly from [minval, maxval); integer dtypes need an explicit maxval."""
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _UNIFORM_TYPES:
        raise ValueError(f"Invalid dtype {dtype!r}")
    if maxval is None:
        if dtype.is_integer:
            raise ValueError(f"Must specify maxval for integer dtype {dtype!r}")
        maxval = 1
    with _ops.name_scope(name, "random_uniform", [shape, minval, maxval]) as scope:
        shape = _shape_tensor(shape)
        minval = convert(minval, "min", dtype=dtype)
        maxval = convert(maxval, "max", dtype=dtype)
        if dtype.is_integer:
            attrs = {"Tout": dtype, "T": shape.dtype, **_seed_attrs(seed)}
            return _ops.make_tensor("RandomUniformInt", [shape, minval, maxval], attrs, name=scope)
        rnd = _sample("RandomUniform", shape, dtype, seed)
        from .math_ops import add

        return add(rnd * (maxval - minval), minval, name=scope)


def random_shuffle(value, seed=None, name=None):
    """Shuffles ``value`` along its first dimension."""
    value = convert(value, "value")
    return _ops.make_tensor("RandomShuffle", [value], {"T": value.dtype, **_seed_attrs(seed)},
                            name=name or "RandomShuffle")


def _draw_classes(logits, num_samples, seed, output_dtype, name, default_name):
    with _ops.name_scope(name, default_name, [logits]):
        logits = convert(logits, "logits")
        if not logits.dtype.is_floating:
            raise TypeError(f"Value passed to parameter 'logits' has DataType {logits.dtype.name} "
                            "not in list of allowed values: float16, float32, float64")
        num_samples = convert(num_samples, "num_samples", dtype=dtypes.int32)
        attrs = {"T": logits.dtype, "output_dtype": dtypes.as_dtype(output_dtype or dtypes.int64),
                 **_seed_attrs(seed)}
        return _ops.make_tensor("Multinomial", [logits, num_samples], attrs, name="Multinomial")


def multinomial(logits, num_samples, seed=None, name=None, output_dtype=None):
    """Draws ``num_samples`` class indices per row of unnormalized log-probabilities."""
    return _draw_classes(logits, num_samples, seed, output_dtype, name, "multinomial")


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """tf.random.categorical: multinomial with TF2's argument order."""
    return _draw_classes(logits, num_samples, seed, dtype, name, "categorical")


# tf.random.* names (dtf/random.py re-exports these).
normal = random_normal
uniform = random_uniform
shuffle = random_shuffle
