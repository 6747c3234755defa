"""tf.estimator.WarmStartSettings and the warm start itself: variables of a new model
initialized from another model's checkpoint instead of their initializers (TF 1.15's
warm_starting_util, without vocabulary remapping)."""
from __future__ import annotations

import collections
import logging

from dtf.framework import ops as _ops
from dtf.ops.variables import Variable

__all__ = ["WarmStartSettings"]

log = logging.getLogger("dtf")


class WarmStartSettings(collections.namedtuple("WarmStartSettings", [
        "ckpt_to_initialize_from", "vars_to_warm_start", "var_name_to_vocab_info",
        "var_name_to_prev_var_name"])):
    """Which checkpoint to warm-start from, and which variables: a regex over the trainable
    variables (default '.*': all), or a list of scope regexes over all global variables, or
    a list of variables; var_name_to_prev_var_name renames."""

    def __new__(cls, ckpt_to_initialize_from, vars_to_warm_start=".*",
                var_name_to_vocab_info=None, var_name_to_prev_var_name=None):
        if not ckpt_to_initialize_from:
            raise ValueError("`ckpt_to_initialize_from` MUST be set in WarmStartSettings")
        if var_name_to_vocab_info:
            raise NotImplementedError("WarmStartSettings: var_name_to_vocab_info (vocabulary "
                                      "remapping) is not supported by dtf")
        return super().__new__(cls, ckpt_to_initialize_from, vars_to_warm_start,
                               var_name_to_vocab_info or {}, var_name_to_prev_var_name or {})


def settings_from(warm_start_from):
    """Estimator's warm_start_from (a checkpoint path or WarmStartSettings) as settings."""
    if warm_start_from is None:
        return None
    if isinstance(warm_start_from, (str, bytes)):
        if isinstance(warm_start_from, bytes):
            warm_start_from = warm_start_from.decode("utf-8")
        return WarmStartSettings(ckpt_to_initialize_from=warm_start_from)
    if isinstance(warm_start_from, WarmStartSettings):
        return warm_start_from
    raise ValueError("warm_start_from must be a string or a WarmStartSettings, instead got "
                     f"{type(warm_start_from)}")


def _variables_to_warm_start(vars_to_warm_start):
    if isinstance(vars_to_warm_start, str) or vars_to_warm_start is None:
        log.info("Warm-starting variables only in TRAINABLE_VARIABLES.")
        return _ops.get_collection(_ops.GraphKeys.TRAINABLE_VARIABLES, scope=vars_to_warm_start)
    if isinstance(vars_to_warm_start, list):
        if all(isinstance(v, str) for v in vars_to_warm_start):
            found = []
            for scope in vars_to_warm_start:
                found += _ops.get_collection(_ops.GraphKeys.GLOBAL_VARIABLES, scope=scope)
            return found
        if all(isinstance(v, Variable) for v in vars_to_warm_start):
            return vars_to_warm_start
        raise ValueError("If `vars_to_warm_start` is a list, it must be all `Variable` or all "
                         f"`str`.  Given types are {[type(v) for v in vars_to_warm_start]}")
    raise ValueError("`vars_to_warm_start must be a `list` or `str`.  Given type is "
                     f"{type(vars_to_warm_start)}")


def warm_start(settings):
    """Sets the chosen variables' initializers to read from the settings' checkpoint."""
    from dtf.train.checkpoint_utils import init_from_checkpoint

    log.info("Warm-starting from: %s", settings.ckpt_to_initialize_from)
    by_name = {}
    for var in _variables_to_warm_start(settings.vars_to_warm_start):
        by_name.setdefault(var.op.name, var)
    renames = settings.var_name_to_prev_var_name
    for name, var in by_name.items():
        init_from_checkpoint(settings.ckpt_to_initialize_from, {renames.get(name) or name: var})
    log.info("Warm-started %d variables.", len(by_name))
    unused = set(renames) - set(by_name)
    if unused:
        raise ValueError("You provided the following variables in var_name_to_prev_var_name "
                         f"that were not used: {unused}.  Perhaps you misspelled them?  Here is "
                         f"the list of viable variable names: {list(by_name)}")
