"""tf.variable_scope and tf.get_variable (TF1 semantics).

Each Graph owns one ``_VariableStore`` (``graph._variable_store``): the variables made by
get_variable, keyed by full name, plus per-thread scope state (the current VariableScope
and how often each scope name was opened, to uniquify ``default_name`` scopes).
"""
from __future__ import annotations

import enum
import functools
import threading

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.ops import GraphKeys
from dtf.framework.tensor_shape import as_shape
from . import init_ops
from .variables import Variable

__all__ = ["variable_scope", "get_variable", "get_local_variable", "get_variable_scope",
           "VariableScope", "AUTO_REUSE", "variable_op_scope", "no_regularizer"]


class _ReuseMode(enum.Enum):
    AUTO_REUSE = 1


AUTO_REUSE = _ReuseMode.AUTO_REUSE


def no_regularizer(_):
    """Use this to turn a scope's regularizer off for one variable."""
    return None


class VariableScope:
    """Defaults (reuse, initializer, regularizer, dtype ...) for get_variable calls."""

    def __init__(self, reuse, name="", initializer=None, regularizer=None, caching_device=None,
                 partitioner=None, custom_getter=None, name_scope="", dtype=dtypes.float32,
                 use_resource=None, constraint=None):
        self._name = name
        self._reuse = reuse
        self._initializer = initializer
        self._regularizer = regularizer
        self._caching_device = caching_device
        self._partitioner = partitioner
        self._custom_getter = custom_getter
        self._name_scope = name_scope
        self._dtype = dtypes.as_dtype(dtype)
        self._use_resource = use_resource
        self._constraint = constraint

    name = property(lambda self: self._name)
    original_name_scope = property(lambda self: self._name_scope)
    reuse = property(lambda self: self._reuse)
    initializer = property(lambda self: self._initializer)
    regularizer = property(lambda self: self._regularizer)
    caching_device = property(lambda self: self._caching_device)
    partitioner = property(lambda self: self._partitioner)
    custom_getter = property(lambda self: self._custom_getter)
    dtype = property(lambda self: self._dtype)
    use_resource = property(lambda self: self._use_resource)
    constraint = property(lambda self: self._constraint)

    def reuse_variables(self):
        self._reuse = True

    def set_initializer(self, initializer):
        self._initializer = initializer

    def set_regularizer(self, regularizer):
        self._regularizer = regularizer

    def set_caching_device(self, caching_device):
        self._caching_device = caching_device

    def set_partitioner(self, partitioner):
        self._partitioner = partitioner

    def set_custom_getter(self, custom_getter):
        self._custom_getter = custom_getter

    def set_dtype(self, dtype):
        self._dtype = dtypes.as_dtype(dtype)

    def set_use_resource(self, use_resource):
        self._use_resource = use_resource

    def global_variables(self):
        return _ops.get_collection(GraphKeys.GLOBAL_VARIABLES, self._scope_regex())

    def trainable_variables(self):
        return _ops.get_collection(GraphKeys.TRAINABLE_VARIABLES, self._scope_regex())

    def local_variables(self):
        return _ops.get_collection(GraphKeys.LOCAL_VARIABLES, self._scope_regex())

    def _scope_regex(self):
        return self._name + "/" if self._name else None

    def get_variable(self, var_store, name, shape=None, dtype=None, initializer=None,
                     regularizer=None, reuse=None, trainable=None, collections=None,
                     caching_device=None, partitioner=None, validate_shape=True,
                     use_resource=None, custom_getter=None, constraint=None, **_):
        if regularizer is None:
            regularizer = self._regularizer
        if custom_getter is None:
            custom_getter = self._custom_getter
        if reuse is None:
            reuse = self._reuse
        full_name = f"{self._name}/{name}" if self._name else name
        # Variable names depend on the variable scope only, never on the name scope.
        with _ops.name_scope(None):
            if dtype is not None and initializer is not None and not callable(initializer):
                init_dtype = _ops.convert_to_tensor(initializer).dtype
                if init_dtype != dtypes.as_dtype(dtype):
                    raise ValueError(f"Initializer type '{init_dtype.name}' and explicit dtype "
                                     f"'{dtypes.as_dtype(dtype).name}' don't match.")
            if initializer is None:
                initializer = self._initializer
            if constraint is None:
                constraint = self._constraint
            if dtype is None:
                dtype = self._dtype
            if partitioner is None:
                partitioner = self._partitioner
            if partitioner is not None and not (shape is not None and as_shape(shape).ndims == 0):
                return _partitioned(var_store, full_name, shape, dtype, initializer, partitioner,
                                    dict(regularizer=regularizer, reuse=reuse, trainable=trainable,
                                         collections=collections, validate_shape=validate_shape,
                                         custom_getter=custom_getter, constraint=constraint))
            return var_store.get_variable(
                full_name, shape=shape, dtype=dtype, initializer=initializer,
                regularizer=regularizer, reuse=reuse, trainable=trainable,
                collections=collections, validate_shape=validate_shape,
                custom_getter=custom_getter, constraint=constraint)


def _partitioned(var_store, full_name, shape, dtype, initializer, partitioner, kwargs):
    """get_variable with a partitioner: a PartitionedVariable of ordinary shards."""
    from .partitioned_variables import get_partitioned_variable

    def create_shard(shard_name, shard_shape, shard_initializer):
        return var_store.get_variable(shard_name, shape=shard_shape, dtype=dtype,
                                      initializer=shard_initializer, **kwargs)

    return get_partitioned_variable(var_store, full_name, shape, dtype, initializer,
                                    partitioner, kwargs["reuse"], create_shard)


class _ScopeState(threading.local):
    def __init__(self):
        self.current = VariableScope(False)
        self.counts: dict[str, int] = {}


class _VariableStore:
    """Variables created by get_variable in one graph, and the scope state."""

    def __init__(self):
        self.vars: dict[str, Variable] = {}
        self.partitioned_vars: dict = {}  # name -> PartitionedVariable
        self.scopes = _ScopeState()

    def open_scope(self, name):
        self.scopes.counts[name] = self.scopes.counts.get(name, 0) + 1

    def close_subscopes(self, name):
        for k in self.scopes.counts:
            if k.startswith(name + "/"):
                self.scopes.counts[k] = 0

    def get_variable(self, name, shape=None, dtype=dtypes.float32, initializer=None,
                     regularizer=None, reuse=None, trainable=None, collections=None,
                     validate_shape=True, custom_getter=None, constraint=None):
        from_value = initializer is not None and not callable(initializer)
        if shape is not None and from_value:
            raise ValueError("If initializer is a constant, do not specify shape.")
        dtype = dtypes.as_dtype(dtype)
        shape = as_shape(shape)
        trainable = True if trainable is None else trainable
        getter = functools.partial(self._true_getter, reuse=reuse)
        kwargs = dict(name=name, shape=shape, dtype=dtype, initializer=initializer,
                      regularizer=regularizer, trainable=trainable, collections=collections,
                      validate_shape=validate_shape, constraint=constraint)
        if custom_getter is not None:
            if not callable(custom_getter):
                raise ValueError(f"Passed a custom_getter which is not callable: {custom_getter}")
            return custom_getter(getter, **kwargs)
        return getter(**kwargs)

    def _true_getter(self, name, shape=None, dtype=dtypes.float32, initializer=None,
                     regularizer=None, reuse=None, trainable=True, collections=None,
                     validate_shape=True, constraint=None, **_):
        shape = as_shape(shape)
        dtype = dtypes.as_dtype(dtype)
        if name in self.vars:
            return self._existing(name, shape, dtype, reuse)
        if reuse is True:
            raise ValueError(f"Variable {name} does not exist, or was not created with "
                             "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                             "VarScope?")
        v = Variable(initial_value=_initial_value(name, shape, dtype, initializer),
                     name=name, trainable=trainable, collections=collections,
                     dtype=None if initializer is not None and not callable(initializer) else dtype,
                     validate_shape=validate_shape, constraint=constraint)
        self.vars[name] = v
        if regularizer:
            _add_regularization(v, name, regularizer)
        return v

    def _existing(self, name, shape, dtype, reuse):
        if not reuse:
            raise ValueError(f"Variable {name} already exists, disallowed. Did you mean to set "
                             "reuse=True or reuse=tf.AUTO_REUSE in VarScope?")
        found = self.vars[name]
        if not shape.is_compatible_with(found.get_shape()):
            raise ValueError(f"Trying to share variable {name}, but specified shape {shape} and "
                             f"found shape {found.get_shape()}.")
        if dtype != found.dtype:
            raise ValueError(f"Trying to share variable {name}, but specified dtype {dtype.name} "
                             f"and found dtype {found.dtype.name}.")
        return found


def default_initializer(name, dtype):
    """get_variable's initializer when none is given: glorot uniform for floats, zeros for
    integers, bools and strings."""
    if dtype.is_floating:
        return init_ops.glorot_uniform_initializer()
    if dtype.is_integer or dtype.is_bool or dtype == dtypes.string:
        return init_ops.zeros_initializer()
    raise ValueError(f"An initializer for variable {name} of {dtype} is required")


def _initial_value(name, shape, dtype, initializer):
    """What Variable gets: the constant itself, or a thunk calling the initializer."""
    if initializer is None:
        initializer = default_initializer(name, dtype)
    if not callable(initializer):
        return initializer
    import inspect  # here, not at import: inspect costs ~15 ms of start-up

    if inspect.isclass(initializer):
        initializer = initializer()
    if shape.is_fully_defined():
        return lambda: initializer(shape.as_list(), dtype=dtype, partition_info=None)
    params = inspect.signature(initializer).parameters.values()
    if all(p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
           for p in params):
        return initializer
    raise ValueError("The initializer passed is not valid. It should be a callable with no "
                     "arguments and the shape should not be provided or an instance of "
                     "`tf.keras.initializers.*' and `shape` should be fully defined.")


def _add_regularization(v, name, regularizer):
    graph = v.graph
    with graph.colocate_with(v.op), graph.name_scope(name + "/Regularizer/"):
        loss = regularizer(v)
    if loss is not None:
        graph.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)


def _store(graph=None) -> _VariableStore:
    graph = graph or _ops.get_default_graph()
    if graph._variable_store is None:
        graph._variable_store = _VariableStore()
    return graph._variable_store


def get_variable_scope() -> VariableScope:
    """The current VariableScope."""
    return _store().scopes.current


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable=None, collections=None, caching_device=None, partitioner=None,
                 validate_shape=True, use_resource=None, custom_getter=None, constraint=None,
                 synchronization=None, aggregation=None):
    """Gets an existing variable or creates a new one, following the scope's reuse rule."""
    return get_variable_scope().get_variable(
        _store(), name, shape=shape, dtype=dtype, initializer=initializer,
        regularizer=regularizer, trainable=trainable, collections=collections,
        validate_shape=validate_shape, custom_getter=custom_getter, constraint=constraint,
        partitioner=partitioner)


def get_local_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                       trainable=False, collections=None, **kwargs):
    """get_variable into LOCAL_VARIABLES (not saved, not trained)."""
    collections = list(collections or []) + [GraphKeys.LOCAL_VARIABLES]
    return get_variable(name, shape, dtype, initializer, regularizer, trainable=False,
                        collections=collections, **kwargs)


def _unique_scope_name(store, prefix):
    current = store.scopes.current.name
    name = f"{current}/{prefix}" if current else prefix
    if store.scopes.counts.get(name, 0) == 0:
        return prefix
    idx = 1
    while store.scopes.counts.get(f"{name}_{idx}", 0) > 0:
        idx += 1
    return f"{prefix}_{idx}"


def _wrap_getter(getter, old):
    if old is None:
        return getter
    return lambda base, *a, **kw: getter(functools.partial(old, base), *a, **kw)


class _PureVariableScope:
    """Pushes a VariableScope (no name scope): a sub-scope of the current one, or a jump
    to a captured VariableScope object."""

    _OVERRIDES = ("initializer", "regularizer", "caching_device", "partitioner", "dtype",
                  "use_resource")

    def __init__(self, store, name_or_scope, reuse, old_name_scope, overrides, custom_getter,
                 constraint):
        self._store = store
        self._name_or_scope = name_or_scope
        self._reuse = reuse
        self._old_name_scope = old_name_scope
        self._overrides = overrides
        self._custom_getter = custom_getter
        self._constraint = constraint

    def __enter__(self):
        st = self._store.scopes
        self._old = st.current
        base = self._name_or_scope
        if isinstance(base, VariableScope):
            self._new_name = base.name
            self._old_counts = dict(st.counts)
            self._store.open_scope(self._new_name)
            reuse = base.reuse if not self._reuse else self._reuse
            name_scope = base.original_name_scope
        else:
            base = self._old
            self._new_name = f"{self._old.name}/{self._name_or_scope}" if self._old.name else self._name_or_scope
            reuse = self._reuse or self._old.reuse
            name_scope = self._name_or_scope if self._old_name_scope is None else self._old_name_scope
        scope = VariableScope(reuse, name=self._new_name, initializer=base.initializer,
                              regularizer=base.regularizer, caching_device=base.caching_device,
                              partitioner=base.partitioner, custom_getter=base.custom_getter,
                              name_scope=name_scope, dtype=base.dtype,
                              use_resource=base.use_resource, constraint=self._constraint)
        for key in self._OVERRIDES:
            if self._overrides.get(key) is not None:
                getattr(scope, f"set_{key}")(self._overrides[key])
        if self._custom_getter is not None:
            scope.set_custom_getter(_wrap_getter(self._custom_getter, base.custom_getter))
        if not isinstance(self._name_or_scope, VariableScope):
            self._store.open_scope(self._new_name)
        st.current = self._entered = scope
        return scope

    def __exit__(self, *exc):
        st = self._store.scopes
        if st.current is not self._entered:
            raise RuntimeError("Improper nesting of variable_scope.")
        if isinstance(self._name_or_scope, VariableScope):
            st.counts = self._old_counts
        else:
            self._store.close_subscopes(self._new_name)
        st.current = self._old
        return False


class variable_scope:  # noqa: N801 - TF's public name
    """Opens a variable scope (and a name scope of the same name) for get_variable."""

    def __init__(self, name_or_scope, default_name=None, values=None, initializer=None,
                 regularizer=None, caching_device=None, partitioner=None, custom_getter=None,
                 reuse=None, dtype=None, use_resource=None, constraint=None,
                 auxiliary_name_scope=True):
        if default_name is None and name_or_scope is None:
            raise TypeError("If default_name is None then name_or_scope is required")
        if reuse is False:  # False means "inherit", exactly like None
            reuse = None
        if not (reuse is True or reuse is None or reuse is AUTO_REUSE):
            raise ValueError("The reuse parameter must be True or False or None.")
        if name_or_scope is not None and not isinstance(name_or_scope, (VariableScope, str)):
            raise TypeError("VariableScope: name_or_scope must be a string or VariableScope.")
        if not isinstance(auxiliary_name_scope, bool):
            raise TypeError("The auxiliary_name_scope must be `True` or `False`, while get "
                            f"{auxiliary_name_scope}")
        self._name_or_scope = name_or_scope
        self._default_name = default_name
        self._values = values or []
        self._reuse = reuse
        self._overrides = {"initializer": initializer, "regularizer": regularizer,
                           "caching_device": caching_device, "partitioner": partitioner,
                           "dtype": dtype, "use_resource": use_resource}
        self._custom_getter = custom_getter
        self._constraint = constraint
        self._auxiliary = auxiliary_name_scope

    def __enter__(self):
        graph = _ops._graph_from_values(self._values)
        self._graph_ctx = graph.as_default()
        self._graph_ctx.__enter__()
        self._name_ctx = None
        try:
            return self._enter(graph)
        except BaseException:
            if self._name_ctx is not None:
                self._name_ctx.__exit__(None, None, None)
            self._graph_ctx.__exit__(None, None, None)
            raise

    def _enter(self, graph):
        store = _store(graph)
        name = self._name_or_scope
        if name is None and self._reuse:
            raise ValueError("reuse=True cannot be used without a name_or_scope")
        if self._auxiliary:
            scope_name = self._default_name if name is None else (
                name if isinstance(name, str) else name.name.split("/")[-1])
        else:  # re-enter the current name scope
            current = graph.get_name_scope()
            scope_name = current + "/" if current else ""
        old_name_scope = None
        if scope_name or not self._auxiliary:
            self._name_ctx = graph.name_scope(scope_name)
            entered = self._name_ctx.__enter__()
            old_name_scope = entered if not isinstance(name, VariableScope) else None
        if name is None:
            name = _unique_scope_name(store, self._default_name)
        self._pure = _PureVariableScope(store, name, self._reuse, old_name_scope, self._overrides,
                                        self._custom_getter, self._constraint)
        return self._pure.__enter__()

    def __exit__(self, *exc):
        try:
            self._pure.__exit__(*exc)
        finally:
            if self._name_ctx is not None:
                self._name_ctx.__exit__(*exc)
            self._graph_ctx.__exit__(*exc)
        return False


def variable_op_scope(values, name_or_scope, default_name=None, **kwargs):
    """Deprecated spelling of ``variable_scope(name_or_scope, default_name, values)``."""
    return variable_scope(name_or_scope, default_name=default_name, values=values, **kwargs)
