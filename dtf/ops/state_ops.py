"""State ops: variables (VariableV2, Assign*, IsVariableInitialized), the training
update ops (Apply*) and the checkpoint I/O ops (SaveV2, RestoreV2, MergeV2Checkpoints,
ShardedFilename).

Ops that take a variable declare ``ref_inputs``: the executor hands those positions the
variable handle, dereferences it everywhere else, and the graph colocates such ops with
their variable. Kernels live in dtf/kernels/cpu/state.py.
"""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, register_op
from dtf.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from .common import convert, fmt_shape

__all__ = ["assign", "assign_add", "assign_sub", "count_up_to", "is_variable_initialized"]


# -- variables ---------------------------------------------------------------------
@register_op("VariableV2", stateful=True, ref_output=True)
def _variable_infer(inputs, attrs):
    shape = attrs.get("shape")
    return [(attrs["dtype"], unknown_shape() if shape is None else TensorShape(shape))]


def variable_op_v2(shape, dtype, name="Variable", container="", shared_name=""):
    """The VariableV2 op; its output is the variable's handle (a ref tensor)."""
    dims = as_shape(shape).as_tuple_or_none()
    attrs = {"shape": None if dims is None else list(dims), "dtype": dtypes.as_dtype(dtype),
             "container": container, "shared_name": shared_name}
    return _ops.make_tensor("VariableV2", [], attrs, name=name)


def _as_ref(ref, op_type):
    """The ref tensor of a Variable (or a ref tensor itself)."""
    if hasattr(ref, "_ref") and not isinstance(ref, _ops.Tensor):
        return ref._ref()
    if isinstance(ref, _ops.Tensor) and ref.op.op_def.ref_output:
        return ref
    raise TypeError(f"'{op_type}' Op requires that input 'ref' be a mutable tensor "
                    f"(e.g. a tf.Variable), got {ref!r}")


def _assign_infer(inputs, attrs):
    ref, value = inputs
    if not attrs.get("validate_shape", True):
        return [(ref.dtype, value.shape)]
    if not ref.shape.is_compatible_with(value.shape):
        raise ValueError(f"Shapes {ref.shape} and {value.shape} are incompatible for "
                         "'Assign' with input shapes: "
                         f"{fmt_shape(ref.shape)}, {fmt_shape(value.shape)}.")
    return [(ref.dtype, ref.shape.merge_with(value.shape))]


def _update_infer(inputs, attrs):
    ref, value = inputs
    if not ref.shape.is_compatible_with(value.shape):
        raise ValueError(f"Shapes {ref.shape} and {value.shape} are incompatible "
                         f"with input shapes: {fmt_shape(ref.shape)}, {fmt_shape(value.shape)}.")
    return [(ref.dtype, ref.shape)]


register_op("Assign", stateful=True, ref_inputs=(0,))(_assign_infer)
register_op("AssignAdd", stateful=True, ref_inputs=(0,))(_update_infer)
register_op("AssignSub", stateful=True, ref_inputs=(0,))(_update_infer)


def _ref_update(op_type, ref, value, name, **attrs):
    ref = _as_ref(ref, op_type)
    # As TF's op helper: inputs converted inside the op's scope ("a/value" for name "a").
    with _ops.name_scope(name, op_type, [ref, value]) as scope:
        value = convert(value, "value", dtype=ref.dtype)
        attrs = {"T": ref.dtype, "use_locking": bool(attrs.pop("use_locking", None)), **attrs}
        return _ops.make_tensor(op_type, [ref, value], attrs, name=scope)


def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    """Stores ``value`` in the variable ``ref``; returns the new value."""
    return _ref_update("Assign", ref, value, name, use_locking=use_locking,
                       validate_shape=True if validate_shape is None else bool(validate_shape))


def assign_add(ref, value, use_locking=None, name=None):
    """ref += value; returns the new value."""
    return _ref_update("AssignAdd", ref, value, name, use_locking=use_locking)


def assign_sub(ref, value, use_locking=None, name=None):
    """ref -= value; returns the new value."""
    return _ref_update("AssignSub", ref, value, name, use_locking=use_locking)


@register_op("IsVariableInitialized", ref_inputs=(0,))
def _is_initialized_infer(inputs, attrs):
    return [(dtypes.bool, TensorShape([]))]


def is_variable_initialized(ref, name=None):
    """A bool scalar: whether the variable has been initialized."""
    ref = _as_ref(ref, "IsVariableInitialized")
    return _ops.make_tensor("IsVariableInitialized", [ref], {"dtype": ref.dtype},
                            name=name or "IsVariableInitialized")


@register_op("ValueOrInitial", ref_inputs=(0,))
def _value_or_initial_infer(inputs, attrs):
    return [(inputs[0].dtype, inputs[0].shape.merge_with(inputs[1].shape)
             if inputs[0].shape.is_compatible_with(inputs[1].shape) else inputs[1].shape)]


def value_or_initial(ref, initial_value, name=None):
    """The variable's value when initialized, else ``initial_value`` (what TF builds
    with a cond for ``Variable.initialized_value``)."""
    return _ops.make_tensor("ValueOrInitial", [_as_ref(ref, "ValueOrInitial"), initial_value],
                            {"T": initial_value.dtype}, name=name or "ValueOrInitial")


@register_op("SelectUninitialized")
def _select_uninitialized_infer(inputs, attrs):
    return [(dtypes.string, TensorShape([None]))]


def select_uninitialized(initialized_flags, names, name=None):
    """The ``names`` whose flag is false, as a 1-D string tensor."""
    return _ops.make_tensor("SelectUninitialized", list(initialized_flags),
                            {"names": list(names)}, name=name or "SelectUninitialized")


# -- training update ops (TF's training_ops) -----------------------------------------
# op type -> (python name, ref inputs, other inputs); the first ref is the variable.
APPLY_OPS = {
    "ApplyGradientDescent": ("apply_gradient_descent", ("var",), ("alpha", "delta")),
    "ApplyMomentum": ("apply_momentum", ("var", "accum"), ("lr", "grad", "momentum")),
    "ApplyAdam": ("apply_adam", ("var", "m", "v"),
                  ("beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon", "grad")),
    "ApplyAdagrad": ("apply_adagrad", ("var", "accum"), ("lr", "grad")),
    "ApplyRMSProp": ("apply_rms_prop", ("var", "ms", "mom"),
                     ("lr", "rho", "momentum", "epsilon", "grad")),
    "ApplyCenteredRMSProp": ("apply_centered_rms_prop", ("var", "mg", "ms", "mom"),
                             ("lr", "rho", "momentum", "epsilon", "grad")),
    "ApplyAdadelta": ("apply_adadelta", ("var", "accum", "accum_update"),
                      ("lr", "rho", "epsilon", "grad")),
    "ApplyAdagradDA": ("apply_adagrad_da", ("var", "gradient_accumulator",
                                            "gradient_squared_accumulator"),
                       ("grad", "lr", "l1", "l2", "global_step")),
    "ApplyFtrl": ("apply_ftrl", ("var", "accum", "linear"), ("grad", "lr", "l1", "l2", "lr_power")),
    "ApplyFtrlV2": ("apply_ftrl_v2", ("var", "accum", "linear"),
                    ("grad", "lr", "l1", "l2", "l2_shrinkage", "lr_power")),
    "ApplyProximalGradientDescent": ("apply_proximal_gradient_descent", ("var",),
                                     ("alpha", "l1", "l2", "delta")),
    "ApplyProximalAdagrad": ("apply_proximal_adagrad", ("var", "accum"), ("lr", "l1", "l2", "grad")),
}
# Inputs whose dtype is not the variable's (TF's signatures); the rest take var's dtype.
APPLY_ARG_DTYPES = {("ApplyAdagradDA", "global_step"): dtypes.int64}


def _make_apply_infer(op_type, ref_names, arg_names):
    grad_pos = len(ref_names) + arg_names.index("delta" if "delta" in arg_names else "grad")

    def infer(inputs, attrs):
        var = inputs[0]
        for t in inputs[1:len(ref_names)] + [inputs[grad_pos]]:
            if not var.shape.is_compatible_with(t.shape):
                raise ValueError(f"{op_type}: var and {t.op.name} do not have the same shape: "
                                 f"{fmt_shape(var.shape)} vs {fmt_shape(t.shape)}")
        return [(var.dtype, var.shape)]

    return infer


def _make_apply(op_type, ref_names, arg_names):
    def fn(*args, use_locking=False, name=None, **attrs):
        if len(args) != len(ref_names) + len(arg_names):
            raise TypeError(f"{op_type} takes {ref_names + arg_names}, got {len(args)} inputs")
        if any(hasattr(a, "indices") and hasattr(a, "values") for a in args):
            # An IndexedSlices gradient: the SparseApply form, which updates its rows only.
            from .scatter_ops import sparse_apply

            return sparse_apply(op_type, args[:len(ref_names)], args[len(ref_names):],
                                use_locking=use_locking, name=name, **attrs)
        refs = [_as_ref(r, op_type) for r in args[:len(ref_names)]]
        dtype = refs[0].dtype
        others = [convert(v, n, dtype=APPLY_ARG_DTYPES.get((op_type, n), dtype))
                  for v, n in zip(args[len(ref_names):], arg_names)]
        return _ops.make_tensor(op_type, refs + others,
                                {"T": dtype, "use_locking": bool(use_locking), **attrs},
                                name=name or op_type)

    fn.__name__ = APPLY_OPS[op_type][0]
    fn.__doc__ = f"The {op_type} op: updates {', '.join(ref_names)} in place; returns var."
    return fn


_g = globals()
for _op, (_fn, _refs, _args) in APPLY_OPS.items():
    register_op(_op, stateful=True, ref_inputs=tuple(range(len(_refs))))(_make_apply_infer(_op, _refs, _args))
    _g[_fn] = _make_apply(_op, _refs, _args)


# -- checkpoint I/O ops (TF's io_ops) ----------------------------------------------------
@register_op("SaveV2", stateful=True)
def _save_infer(inputs, attrs):
    return []


@register_op("RestoreV2", stateful=True)
def _restore_infer(inputs, attrs):
    return [(dt, unknown_shape()) for dt in attrs["dtypes"]]


@register_op("MergeV2Checkpoints", stateful=True)
def _merge_infer(inputs, attrs):
    return []


@register_op("ShardedFilename")
def _sharded_filename_infer(inputs, attrs):
    return [(dtypes.string, TensorShape([]))]


def _strings(values, name):
    return convert(list(values), name, dtype=dtypes.string)


def save_v2(prefix, tensor_names, shape_and_slices, tensors, name=None):
    """Writes ``tensors`` under ``tensor_names`` to the checkpoint at ``prefix``."""
    with _ops.name_scope(name, "SaveV2") as scope:
        inputs = [prefix, _strings(tensor_names, "tensor_names"),
                  _strings(shape_and_slices, "shape_and_slices")] + list(tensors)
        return _ops.make_op("SaveV2", inputs, {"dtypes": [t.dtype for t in tensors]}, name=scope)


def restore_v2(prefix, tensor_names, shape_and_slices, dtypes_, name=None):
    """Reads ``tensor_names`` from the checkpoint at ``prefix``; one tensor per name."""
    with _ops.name_scope(name, "RestoreV2") as scope:
        inputs = [prefix, _strings(tensor_names, "tensor_names"),
                  _strings(shape_and_slices, "shape_and_slices")]
        op = _ops.make_op("RestoreV2", inputs, {"dtypes": [dtypes.as_dtype(d) for d in dtypes_]},
                          name=scope)
        return op.outputs


def merge_v2_checkpoints(checkpoint_prefixes, destination_prefix, delete_old_dirs=True, name=None):
    """Merges per-shard checkpoints into one checkpoint at ``destination_prefix``."""
    # TF's op takes the shard prefixes as one string vector (gen_io_ops packs the list
    # under the op's scope), so the graph imports into TF unchanged.
    with _ops.name_scope(name, "MergeV2Checkpoints") as scope:
        prefixes = convert(list(checkpoint_prefixes) if isinstance(checkpoint_prefixes, (list, tuple))
                           else checkpoint_prefixes, "checkpoint_prefixes", dtype=dtypes.string)
        destination_prefix = convert(destination_prefix, "destination_prefix", dtype=dtypes.string)
        return _ops.make_op("MergeV2Checkpoints", [prefixes, destination_prefix],
                            {"delete_old_dirs": bool(delete_old_dirs)}, name=scope)


def sharded_filename(basename, shard, num_shards, name=None):
    """"<basename>-<shard:05d>-of-<num_shards:05d>" as a string scalar."""
    shard = convert(shard, "shard", dtype=dtypes.int32)
    num_shards = convert(num_shards, "num_shards", dtype=dtypes.int32)
    return _ops.make_tensor("ShardedFilename", [basename, shard, num_shards], {},
                            name=name or "ShardedFilename")


for _op in ["VariableV2", "Assign", "AssignAdd", "AssignSub", "IsVariableInitialized",
            "ValueOrInitial", "SelectUninitialized", "SaveV2", "RestoreV2",
            "MergeV2Checkpoints", "ShardedFilename", *APPLY_OPS]:
    NotDifferentiable(_op)


@register_op("CountUpTo", stateful=True, ref_inputs=(0,))
def _count_up_to_infer(inputs, attrs):
    return [(inputs[0].dtype, TensorShape([]))]


NotDifferentiable("CountUpTo")


def count_up_to(ref, limit, name=None):
    """Increments the integer variable ``ref`` and returns its value before; once it has
    reached ``limit``, raises OutOfRangeError instead (how input producers count epochs)."""
    ref = _as_ref(ref, "CountUpTo")
    return _ops.make_tensor("CountUpTo", [ref], {"T": ref.dtype, "limit": int(limit)},
                            name=name or "CountUpTo")
