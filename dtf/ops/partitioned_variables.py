"""Partitioned variables: ``tf.get_variable(..., partitioner=)`` splits a variable along one
axis into shards ``<name>/part_0``, ``<name>/part_1`` ... (TF's names), each an ordinary
Variable, so a device function such as replica_device_setter places each on its own
parameter server. The partitioners are TF's: fixed_size_partitioner,
variable_axis_size_partitioner and min_max_variable_partitioner.

Each shard carries a SaveSliceInfo (full name, full shape, offset, shape); the Saver writes
a partitioned variable as one tensor under its full name and slices it back on restore,
so the shard count may change between saving and restoring.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.tensor_shape import TensorShape, as_shape
from . import state_ops

__all__ = ["fixed_size_partitioner", "variable_axis_size_partitioner",
           "min_max_variable_partitioner"]


# -- partitioners ------------------------------------------------------------------------
def fixed_size_partitioner(num_shards, axis=0):
    """A partitioner that makes ``num_shards`` shards along ``axis`` (fewer when the axis is
    shorter)."""
    def _partitioner(shape, **unused_args):
        partitions = [1] * len(shape)
        partitions[axis] = min(num_shards, _dim(shape, axis))
        return partitions

    return _partitioner


def variable_axis_size_partitioner(max_shard_bytes, axis=0, bytes_per_string_element=16,
                                   max_shards=None):
    """A partitioner that keeps every shard under ``max_shard_bytes`` (at least one slice
    along ``axis`` per shard), with at most ``max_shards`` shards."""
    if max_shard_bytes < 1 or bytes_per_string_element < 1:
        raise ValueError("Both max_shard_bytes and bytes_per_string_element must be positive. "
                         f"Currently, max_shard_bytes is {max_shard_bytes} and "
                         f"bytes_per_string_element is {bytes_per_string_element}")
    if max_shards and max_shards < 1:
        raise ValueError("max_shards must be positive.")

    def _partitioner(shape, dtype):
        if not isinstance(shape, TensorShape):
            raise ValueError(f"shape is not a TensorShape: {shape}")
        if not shape.is_fully_defined():
            raise ValueError(f"shape is not fully defined: {shape}")
        if not isinstance(dtype, dtypes.DType):
            raise ValueError(f"dtype is not a DType: {dtype}")
        element_size = bytes_per_string_element if dtype == dtypes.string else dtype.size
        partitions = [1] * shape.ndims
        bytes_per_slice = 1.0 * (shape.num_elements() / _dim(shape, axis)) * element_size
        slices_per_shard = max(1, math.floor(max_shard_bytes / bytes_per_slice))
        axis_shards = int(math.ceil(1.0 * _dim(shape, axis) / slices_per_shard))
        if max_shards:
            axis_shards = min(max_shards, axis_shards)
        partitions[axis] = axis_shards
        return partitions

    return _partitioner


def min_max_variable_partitioner(max_partitions=1, axis=0, min_slice_size=256 << 10,
                                 bytes_per_string_element=16):
    """A partitioner that gives each shard at least ``min_slice_size`` bytes, with at most
    ``max_partitions`` shards."""
    def _partitioner(shape, dtype):
        if axis >= len(shape):
            raise ValueError(f"Can not partition variable along axis {axis} when shape is "
                             f"only {shape}")
        element_size = bytes_per_string_element if dtype == dtypes.string else dtype.size
        partitions = shape.num_elements() * element_size / min_slice_size
        partitions_list = [1] * len(shape)
        partitions_list[axis] = max(1, min(_dim(shape, axis), max_partitions,
                                           int(math.ceil(partitions))))
        return partitions_list

    return _partitioner


def _dim(shape, axis):
    d = as_shape(shape)[axis]
    return getattr(d, "value", d)


# -- slices and their save info -----------------------------------------------------------
class PartitionInfo:
    """What an initializer is told about the shard it fills: the full shape and the
    shard's offset in it (TF's _PartitionInfo)."""

    def __init__(self, full_shape, var_offset):
        if len(full_shape) != len(var_offset):
            raise ValueError(f"Expected equal length, but `var_offset` is of length "
                             f"{len(var_offset)} while full_shape is of length {len(full_shape)}.")
        self.full_shape = list(full_shape)
        self.var_offset = list(var_offset)

    def single_offset(self, shape):
        """The offset along the one partitioned axis (0 when none is)."""
        axis = self.single_slice_dim(shape)
        return 0 if axis is None else self.var_offset[axis]

    def single_slice_dim(self, shape):
        """The axis along which the shard of ``shape`` is a slice, or None."""
        dims = [i for i, (d, f) in enumerate(zip(shape, self.full_shape)) if d != f]
        if len(dims) > 1:
            raise ValueError(f"Cannot use single_slice_dim() with shape: {shape} and "
                             f"full_shape: {self.full_shape} since slice dim could be either "
                             f"dimension {dims[0]} or {dims[1]}.")
        return dims[0] if dims else None


class SaveSliceInfo:
    """Where a shard sits in its full variable: what the Saver writes it as."""

    def __init__(self, full_name, full_shape, var_offset, var_shape):
        self.full_name = full_name
        self.full_shape = list(full_shape)
        self.var_offset = list(var_offset)
        self.var_shape = list(var_shape)

    @property
    def spec(self):
        """TF's slice spec: "<full shape> <offset>,<length>:..." (e.g. "10 3 0,5:0,3")."""
        full = " ".join(str(d) for d in self.full_shape)
        parts = ":".join(f"{o},{n}" for o, n in zip(self.var_offset, self.var_shape))
        return f"{full} {parts}"


def _iter_slices(full_shape, num_slices, slice_dim):
    """(offset, shape) of each shard: the first ``len % num_slices`` get one row more."""
    with_excess = full_shape[slice_dim] % num_slices
    min_len = full_shape[slice_dim] // num_slices
    offset = [0] * len(full_shape)
    for i in range(num_slices):
        shape = list(full_shape)
        shape[slice_dim] = min_len + (i < with_excess)
        yield list(offset), shape
        offset[slice_dim] += shape[slice_dim]


def _call_partitioner(partitioner, shape, dtype):
    if not shape.is_fully_defined():
        raise ValueError(f"Shape of a new partitioned variable must be fully defined, but "
                         f"instead was {shape}.")
    if shape.ndims < 1:
        raise ValueError(f"A partitioned Variable must have rank at least 1, shape: {shape}")
    slicing = partitioner(shape=shape, dtype=dtype)
    if not isinstance(slicing, Sequence):
        raise ValueError(f"Partitioner must return a sequence, but saw: {slicing}")
    if len(slicing) != shape.ndims:
        raise ValueError(f"Partitioner returned a partition list that does not match the "
                         f"Variable's rank: {slicing} vs. {shape}")
    if any(p < 1 for p in slicing):
        raise ValueError(f"Partitioner returned zero partitions for some axes: {slicing}")
    if sum(p > 1 for p in slicing) > 1:
        raise ValueError(f"Can only slice a variable along one dimension: shape: {shape}, "
                         f"partitioning: {slicing}")
    return list(slicing)


# -- the variable ------------------------------------------------------------------------
class PartitionedVariable:
    """A variable stored as shards along one axis; iterating gives the shard Variables."""

    def __init__(self, name, shape, dtype, variable_list, partitions):
        if not isinstance(variable_list, (list, tuple)) or not variable_list:
            raise ValueError(f"variable_list is not a non-empty list: {variable_list}")
        self._name = name
        self._shape = as_shape(shape)
        self._dtype = dtypes.as_dtype(dtype)
        self._variable_list = sorted(variable_list, key=lambda v: v._save_slice_info.var_offset)
        self._partitions = list(partitions)

    def __iter__(self):
        return iter(self._variable_list)

    def __len__(self):
        num_partition_axes = len([p for p in self._partitions if p > 1])
        if num_partition_axes > 1:
            raise ValueError("Cannot get a length for %d > 1 partitioned axes" % num_partition_axes)
        return len(self._variable_list)

    name = property(lambda self: self._name)
    dtype = property(lambda self: self._dtype)
    shape = property(lambda self: self._shape)
    graph = property(lambda self: self._variable_list[0].graph)

    def get_shape(self):
        return self._shape

    def _get_variable_list(self):
        return self._variable_list

    def _get_partitions(self):
        return self._partitions

    def _partition_axis(self):
        axes = [i for i, p in enumerate(self._partitions) if p > 1]
        return axes[0] if axes else 0

    def as_tensor(self):
        """The whole variable: its shards concatenated (free of the caller's control
        dependencies, as TF builds it)."""
        from .array_ops import concat, identity

        with _ops.control_dependencies(None):
            if len(self._variable_list) == 1:
                with _ops.name_scope(None):
                    return identity(self._variable_list[0], name=self._name)
            with _ops.name_scope(self._name + "/ConcatPartitions/"):
                return concat(self._variable_list, self._partition_axis(), name="concat")

    def __repr__(self):
        return (f"<dtf.PartitionedVariable '{self._name}' shape={self._shape} "
                f"dtype={self._dtype.name} partitions={self._partitions}>")


def _conversion(v, dtype=None, name=None, as_ref=False):
    if as_ref:
        raise NotImplementedError("PartitionedVariable doesn't support being used as a reference.")
    if dtype is not None and not dtypes.as_dtype(dtype) == v.dtype:
        raise ValueError(f"Incompatible type conversion requested to type "
                         f"'{dtypes.as_dtype(dtype).name}' for variable of type '{v.dtype.name}'")
    return v.as_tensor()


_ops.register_tensor_conversion_function(PartitionedVariable, _conversion)


def get_partitioned_variable(store, name, shape, dtype, initializer, partitioner, reuse,
                             create_shard):
    """The PartitionedVariable ``name`` from ``store`` (created, or reused by the scope's
    rule). ``create_shard(shard_name, shard_shape, shard_initializer)`` makes one shard with
    get_variable's other arguments."""
    shape, dtype = as_shape(shape), dtypes.as_dtype(dtype)
    if initializer is not None and not callable(initializer):
        # TF needs the full shape up front, and refuses a constant with a shape.
        raise ValueError(f"Shape of a new partitioned variable must be fully defined, but "
                         f"instead was {shape}." if not shape.is_fully_defined() else
                         "If initializer is a constant, do not specify shape.")
    partitions = _call_partitioner(partitioner, shape, dtype)
    found = store.partitioned_vars.get(name)
    if found is not None:
        return _reuse(found, name, shape, dtype, partitions, reuse)
    if reuse is True:
        raise ValueError(f"PartitionedVariable {name} does not exist, or was not created with "
                         "tf.get_variable(). Did you mean to set reuse=False or "
                         "reuse=tf.AUTO_REUSE in VarScope?")
    if name in store.vars:
        raise ValueError(f"A partitioner was provided, but an unpartitioned version of the "
                         f"variable was found: {name}. Perhaps a variable of the same name "
                         "was already created without partitioning?")
    slice_dim = next((i for i, p in enumerate(partitions) if p > 1), 0)
    num_slices = partitions[slice_dim]
    full_shape = shape.as_list()
    shards = []
    for i, (offset, shard_shape) in enumerate(_iter_slices(full_shape, num_slices, slice_dim)):
        shard_name = f"{name}/part_{i}"
        if shard_name in store.vars:
            raise ValueError(f"Partitioned variable {name} already exists as shards "
                             f"({shard_name}), disallowed.")
        shard_init = _with_partition_info(initializer, PartitionInfo(full_shape, offset), dtype,
                                          name)
        with _ops.name_scope(None):
            v = create_shard(shard_name, shard_shape, shard_init)
        v._save_slice_info = SaveSliceInfo(name, full_shape, offset, shard_shape)
        shards.append(v)
    pv = PartitionedVariable(name, shape, dtype, shards, partitions)
    store.partitioned_vars[name] = pv
    return pv


def _reuse(found, name, shape, dtype, partitions, reuse):
    if not reuse:
        raise ValueError(f"Partitioned variable with name {name} already exists. Did you mean "
                         "to set reuse=True or reuse=tf.AUTO_REUSE in VarScope?")
    if not shape.is_compatible_with(found.get_shape()):
        raise ValueError(f"Trying to reuse partitioned variable {name}, but specified shape "
                         f"{shape} and found shape {found.get_shape()}.")
    if dtype != found.dtype:
        raise ValueError(f"Trying to reuse partitioned variable {name}, but specified dtype "
                         f"{dtype.name} and found dtype {found.dtype.name}.")
    if partitions != found._get_partitions():
        raise ValueError(f"Trying to reuse partitioned variable {name}, but specified "
                         f"partitions {partitions} and found partitions "
                         f"{found._get_partitions()}.")
    return found


def _with_partition_info(initializer, info, dtype, name):
    """The shard's initializer: the given one (or get_variable's default) told which
    part of the full variable it fills."""
    import inspect

    from .variable_scope import default_initializer

    if initializer is None:
        initializer = default_initializer(name, dtype)
    if inspect.isclass(initializer):
        initializer = initializer()

    def shard_initializer(shape, dtype=None, partition_info=None):
        return initializer(shape, dtype=dtype, partition_info=info)

    return shard_initializer


class SlicedSaveable:
    """The shards of one partitioned variable as the Saver sees them: each is saved as
    a slice of the full name (TF's slice spec, from its SaveSliceInfo) and restored as
    that slice, so a checkpoint does not depend on how many shards there were."""

    def __init__(self, name, shards):
        infos = [v._save_slice_info for v in shards]
        full = infos[0].full_shape
        if any(i.full_shape != full for i in infos):
            raise ValueError(f"Slices of {name} disagree on the full shape: "
                             f"{[i.full_shape for i in infos]}")
        axes = {a for i in infos for a, (n, f) in enumerate(zip(i.var_shape, full)) if n != f}
        if len(axes) > 1:
            raise ValueError(f"Slices of {name} are cut along several axes: {sorted(axes)}")
        self.name = name
        self.axis = axes.pop() if axes else 0
        self.shards = sorted(shards, key=lambda v: v._save_slice_info.var_offset)
        covered = sum(v._save_slice_info.var_shape[self.axis] for v in self.shards)
        if covered != full[self.axis]:
            raise ValueError(f"The slices of {name} cover {covered} of its {full[self.axis]} "
                             f"entries along axis {self.axis}: save all of its shards together")
        self.dtype = shards[0].dtype
        self.device = self.shards[0].device
        self.full_shape = full

    @property
    def slice_shards(self):
        """The shards in order of offset, each saved under its own slice spec."""
        return self.shards


def saveables_by_name(var_list):
    """{checkpoint name: Variable or SlicedSaveable} for a Saver's var_list: shards (and
    PartitionedVariables) are grouped under their full variable's name."""
    named = var_list.items() if isinstance(var_list, dict) else [(None, v) for v in var_list]
    out, sliced = {}, {}
    for key, v in named:
        if isinstance(v, PartitionedVariable):
            sliced.setdefault(key or v.name, []).extend(v)
            continue
        info = getattr(v, "_save_slice_info", None)
        if info is not None and key is None:
            sliced.setdefault(info.full_name, []).append(v)
            continue
        if not hasattr(v, "_ref"):
            raise TypeError(f"Variable to save is not a Variable: {v}")
        name = key if key is not None else v.op.name
        if name in out:
            raise ValueError(f"At least two variables have the same name: {name}")
        out[name] = v
    for name, shards in sliced.items():
        if name in out:
            raise ValueError(f"At least two variables have the same name: {name}")
        unique = list({id(v): v for v in shards}.values())
        out[name] = SlicedSaveable(name, unique)
    return out
