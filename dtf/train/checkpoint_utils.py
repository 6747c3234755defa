"""tf.train.init_from_checkpoint: initialize variables from a checkpoint instead of their
initializers (warm starts, fine-tuning a pretrained scope under a new name).

Each mapped variable's initializer becomes an Assign from a RestoreV2 op on its device,
so the values are read when the initializers run, by the task that holds the variable.
"""
from __future__ import annotations

import logging

from dtf.framework import ops as _ops
from dtf.ops import state_ops
from dtf.ops import variable_scope as _vs
from dtf.ops.variables import Variable

__all__ = ["init_from_checkpoint"]

log = logging.getLogger("dtf")


def init_from_checkpoint(ckpt_dir_or_file, assignment_map):
    """Replaces the initializers of variables with values from a checkpoint.

    ``assignment_map`` maps checkpoint names to current ones: ``'old/v': 'new/v'`` or
    ``'old/v': variable`` for one variable, ``'old_scope/': 'new_scope/'`` for every
    ``tf.get_variable`` variable under ``new_scope`` (``'/'`` is the root on either
    side). Call it before building the initializer op (global_variables_initializer)."""
    from dtf.train.saver import _checkpoint_filename, load_checkpoint

    ckpt_file = _checkpoint_filename(ckpt_dir_or_file)
    shapes = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    store_vars = _vs._store().vars
    for ckpt_name, current in sorted(assignment_map.items(), key=lambda kv: kv[0]):
        if isinstance(current, list):
            raise NotImplementedError(
                f"init_from_checkpoint: a list of variables for {ckpt_name!r} (a partitioned "
                "variable) is not supported by dtf")
        var = current if isinstance(current, Variable) else store_vars.get(current)
        if var is not None:
            if ckpt_name not in shapes:
                raise ValueError(f"Tensor {ckpt_name} is not found in {ckpt_dir_or_file} "
                                 f"checkpoint {shapes}")
            _check_shape(var, ckpt_name, shapes[ckpt_name])
            _set_checkpoint_initializer(var, ckpt_file, ckpt_name)
            continue
        _init_scope_from_checkpoint(ckpt_dir_or_file, ckpt_file, ckpt_name, current, shapes,
                                    store_vars)


def _init_scope_from_checkpoint(ckpt_dir_or_file, ckpt_file, ckpt_scope, current, shapes,
                                store_vars):
    """'old_scope/': 'new_scope/': every store variable under new_scope, by relative name."""
    scope = current[:current.rindex("/")] if "/" in current else ""
    if not ckpt_scope.endswith("/"):
        raise ValueError(f"Assignment map with scope only name {scope} should map to scope only "
                         f"{ckpt_scope}. Should be 'scope/': 'other_scope/'.")
    for var_name in sorted(store_vars):
        if scope and not var_name.startswith(scope + "/"):
            continue
        relative = var_name[len(scope):]
        if current != "/":
            relative = relative[1:]
        full_name = relative if ckpt_scope == "/" else ckpt_scope + relative
        full_name = full_name.rstrip("/")
        if full_name not in shapes:
            raise ValueError(f"Tensor {full_name} ({var_name[len(scope) + 1:]} in {ckpt_scope}) is "
                             f"not found in {ckpt_dir_or_file} checkpoint")
        var = store_vars[var_name]
        _check_shape(var, full_name, shapes[full_name])
        _set_checkpoint_initializer(var, ckpt_file, full_name)


def _check_shape(var, ckpt_name, shape):
    if not var.get_shape().is_compatible_with(shape):
        raise ValueError(f"Shape of variable {var.name} ({var.get_shape()}) doesn't match with "
                         f"shape of tensor {ckpt_name} ({shape}) from checkpoint reader.")


def _set_checkpoint_initializer(var, ckpt_file, tensor_name):
    """var's initializer := Assign(var, RestoreV2(ckpt_file, tensor_name)), on var's task."""
    graph = var.graph
    with graph.as_default(), graph.control_dependencies(None), _ops.name_scope(None):
        with _ops.device(var.device), _ops.device("/cpu:0"):
            prefix = _ops.convert_to_tensor(ckpt_file, name="checkpoint_initializer/prefix")
            restored = state_ops.restore_v2(prefix, [tensor_name], [""], [var.dtype.base_dtype],
                                            name="checkpoint_initializer")[0]
        restored.set_shape(var.get_shape())
        with graph.colocate_with(var.op):
            var._initializer_op = state_ops.assign(var._ref(), restored).op
        var._initial_value = restored
    log.debug("Initialize variable %s from checkpoint %s with %s", var.name, ckpt_file, tensor_name)
