"""tf.make_template: a function whose variables are created on the first call and reused
by every later call, under one variable scope, as TF 1.15's Template does."""
from __future__ import annotations

import functools

from dtf import logging
from dtf.framework import ops as _ops
from dtf.framework.ops import GraphKeys

from . import variable_scope as vs

__all__ = ["make_template", "Template"]


class Template:
    """Calls ``func`` in its variable scope: the first call creates its variables, later
    calls reuse them (a trainable variable created by a later call is a ValueError, as in
    TF: it is usually a tf.Variable meant to be a tf.get_variable)."""

    def __init__(self, name, func, create_scope_now=False, unique_name=None,
                 custom_getter=None):
        if name is None:
            raise ValueError("name cannot be None.")
        self._func, self._name = func, name
        self._unique_name, self._custom_getter = unique_name, custom_getter
        self._variables_created = False
        self._variable_scope = None
        if create_scope_now:
            store = vs._store()
            scope_name = unique_name or vs._unique_scope_name(store, name)
            pure = vs._PureVariableScope(store, scope_name, None, None, {}, custom_getter, None)
            with pure as scope:  # a variable scope only: no name scope is opened yet
                self._variable_scope = scope

    name = property(lambda self: self._name)
    func = property(lambda self: self._func)
    variable_scope = property(lambda self: self._variable_scope)

    @property
    def variable_scope_name(self):
        """The variable scope's name with a trailing "/" ("" before the first call)."""
        return self._variable_scope.name + "/" if self._variable_scope else ""

    def _collection(self, key):
        return _ops.get_collection(key, scope=self.variable_scope_name) if self._variable_scope else []

    variables = property(lambda self: self.global_variables + self.local_variables)
    global_variables = property(lambda self: self._collection(GraphKeys.GLOBAL_VARIABLES))
    local_variables = property(lambda self: self._collection(GraphKeys.LOCAL_VARIABLES))
    trainable_variables = property(lambda self: self._collection(GraphKeys.TRAINABLE_VARIABLES))

    @property
    def non_trainable_variables(self):
        trainable = set(map(id, self.trainable_variables))
        return [v for v in self.global_variables if id(v) not in trainable]

    def _call_func(self, args, kwargs):
        before_all = len(_ops.get_collection(GraphKeys.GLOBAL_VARIABLES))
        before_trainable = len(_ops.get_collection(GraphKeys.TRAINABLE_VARIABLES))
        result = self._func(*args, **kwargs)
        if self._variables_created:
            trainable = _ops.get_collection(GraphKeys.TRAINABLE_VARIABLES)
            if len(trainable) != before_trainable:
                raise ValueError("Trainable variable created when calling a template after the "
                                 "first time, perhaps you used tf.Variable when you meant "
                                 f"tf.get_variable: {trainable[before_trainable:]}")
            if len(_ops.get_collection(GraphKeys.GLOBAL_VARIABLES)) != before_all:
                logging.info("New variables created when calling a template after the first "
                             "time, perhaps you used tf.Variable when you meant tf.get_variable")
        else:
            self._variables_created = True
        return result

    def __call__(self, *args, **kwargs):
        if self._variable_scope is not None:
            with vs.variable_scope(self._variable_scope, reuse=self._variables_created or None):
                return self._call_func(args, kwargs)
        with vs.variable_scope(self._unique_name, self._name,
                               custom_getter=self._custom_getter) as scope:
            self._variable_scope = scope
            return self._call_func(args, kwargs)


def make_template(name_, func_, create_scope_now_=False, unique_name_=None, custom_getter_=None,
                  **kwargs):
    """Wraps ``func_`` (with ``kwargs`` bound) so that all its calls share variables."""
    if kwargs:
        func_ = functools.partial(func_, **kwargs)
    return Template(name_, func_, create_scope_now=create_scope_now_, unique_name=unique_name_,
                    custom_getter=custom_getter_)
