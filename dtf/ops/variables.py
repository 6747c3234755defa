"""tf.Variable with TF1 reference-variable semantics, variable collections and the
initializer / report ops over them.

A Variable is four ops: ``<name>`` (VariableV2, the handle), ``<name>/initial_value``
(when built from a Python value), ``<name>/Assign`` (the initializer) and ``<name>/read``
(an Identity snapshot every ordinary use reads).
"""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.func_graph import init_scope
from dtf.framework.ops import GraphKeys
from dtf.framework.tensor_shape import as_shape, unknown_shape
from . import state_ops

__all__ = ["Variable", "VariableV1", "global_variables", "all_variables", "local_variables",
           "trainable_variables", "model_variables", "moving_average_variables",
           "global_variables_initializer", "initialize_all_variables",
           "local_variables_initializer", "initialize_local_variables", "variables_initializer",
           "initialize_variables", "report_uninitialized_variables", "is_variable_initialized",
           "assert_variables_initialized"]


class Variable:
    """A mutable tensor that lives across ``Session.run`` calls (TF1 RefVariable)."""

    def __init__(self, initial_value=None, trainable=True, collections=None, validate_shape=True,
                 caching_device=None, name=None, variable_def=None, dtype=None,
                 expected_shape=None, import_scope=None, constraint=None, use_resource=None,
                 synchronization=None, aggregation=None, shape=None):
        if variable_def is not None:
            if initial_value is not None:
                raise ValueError("variable_def and initial_value are mutually exclusive.")
            self._init_from_proto(variable_def, import_scope)
            return
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        if constraint is not None and not callable(constraint):
            raise ValueError("The `constraint` argument must be a callable.")
        if collections is None:
            collections = [GraphKeys.GLOBAL_VARIABLES]
        if not isinstance(collections, (list, tuple, set)):
            raise ValueError(f"collections argument to Variable constructor must be a list, "
                             f"tuple, or set. Got {collections} of type {type(collections)}")
        collections = list(collections)
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections.append(GraphKeys.TRAINABLE_VARIABLES)
        self._trainable = trainable
        self._constraint = constraint
        self._save_slice_info = None
        if isinstance(initial_value, _ops.Tensor) and initial_value.graph.building_function:
            raise ValueError(f"Initializer for variable {name} is from inside a control-flow "
                             "construct, such as a loop or conditional. When creating a variable "
                             "inside a loop or conditional, use a lambda as the initializer.")
        # Variables ignore the caller's control deps; one made inside a cond or loop body is
        # made outside it (and the body captures it), as TF's init_scope does.
        with init_scope() as graph:
            self._build(graph, initial_value, validate_shape, name, dtype, shape)
        graph.add_to_collections(collections, self)

    def _build(self, graph, initial_value, validate_shape, name, dtype, shape):
        from_fn = callable(initial_value)
        with _ops.name_scope(name, "Variable", [] if from_fn else [initial_value]) as scope:
            first_new = len(graph._nodes_in_order)
            if from_fn:
                with graph.name_scope("Initializer"), graph.colocate_with(None), graph.device(None):
                    self._initial_value = _ops.convert_to_tensor(
                        initial_value(), name="initial_value", dtype=dtype)
            else:
                self._initial_value = _ops.convert_to_tensor(initial_value, name="initial_value",
                                                             dtype=dtype)
            init_ops = graph._nodes_in_order[first_new:]
            init_shape = self._initial_value.shape
            if shape is not None:
                init_shape = as_shape(shape)
            if validate_shape and not init_shape.is_fully_defined():
                raise ValueError(f"initial_value must have a shape specified: {self._initial_value}")
            self._variable = state_ops.variable_op_v2(
                init_shape if validate_shape else unknown_shape(),
                self._initial_value.dtype, name=scope)
            if from_fn:
                _colocate_ops_with(init_ops, self._variable.op)
            with graph.colocate_with(self._variable.op):
                self._initializer_op = state_ops.assign(
                    self._variable, self._initial_value, validate_shape=validate_shape).op
                self._snapshot = _identity(self._variable, "read")

    def _init_from_proto(self, variable_def, import_scope=None):
        """Wraps the ops a VariableDef names (in a graph already imported) as a Variable."""
        from dtf.train.meta_graph import prepend_name_scope

        graph = _ops.get_default_graph()

        def element(name):
            return graph.as_graph_element(prepend_name_scope(name, import_scope))

        self._variable = element(variable_def.variable_name)
        self._initializer_op = element(variable_def.initializer_name)
        self._snapshot = element(variable_def.snapshot_name)
        self._initial_value = (element(variable_def.initial_value_name)
                               if variable_def.initial_value_name else None)
        self._trainable = variable_def.trainable
        self._constraint = None
        self._save_slice_info = None

    def to_proto(self, export_scope=None):
        """This variable as a VariableDef proto (what a MetaGraphDef's collections hold)."""
        from dtf.train.meta_graph import variable_def

        return variable_def(self, export_scope)

    @staticmethod
    def from_proto(variable_def, import_scope=None):
        return Variable(variable_def=variable_def, import_scope=import_scope)

    # -- properties ------------------------------------------------------------------
    name = property(lambda self: self._variable.name)
    op = property(lambda self: self._variable.op)
    graph = property(lambda self: self._variable.graph)
    device = property(lambda self: self._variable.device)
    dtype = property(lambda self: self._variable.dtype)
    shape = property(lambda self: self._variable.shape)
    initializer = property(lambda self: self._initializer_op)
    initial_value = property(lambda self: self._initial_value)
    trainable = property(lambda self: self._trainable)
    constraint = property(lambda self: self._constraint)

    def get_shape(self):
        return self._variable.shape

    def _ref(self):
        """The VariableV2 output: what tf.gradients and the update ops take."""
        return self._variable

    def _as_graph_element(self):
        return self._variable

    def value(self):
        return self._snapshot

    def read_value(self):
        return _identity(self._variable, "read")

    def initialized_value(self):
        """The variable's value, or its initial value when not yet initialized (so other
        variables can be initialized from this one in any order)."""
        graph = self.graph
        with graph.control_dependencies(None), _ops.name_scope(None, self.op.name + "/", []):
            return state_ops.value_or_initial(self._variable, self._initial_value)

    def eval(self, session=None):
        return self._variable.eval(session=session)

    def load(self, value, session=None):
        """Writes ``value`` into the variable by feeding its initial value."""
        from dtf.client.session import get_default_session

        session = session or get_default_session()
        if session is None:
            raise ValueError("Either session argument should be provided or default session "
                             "should be established")
        session.run(self._initializer_op, {self._initializer_op.inputs[1]: value})

    def assign(self, value, use_locking=False, name=None, read_value=True):
        t = state_ops.assign(self._variable, value, use_locking=use_locking, name=name)
        return t if read_value else t.op

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        t = state_ops.assign_add(self._variable, delta, use_locking=use_locking, name=name)
        return t if read_value else t.op

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        t = state_ops.assign_sub(self._variable, delta, use_locking=use_locking, name=name)
        return t if read_value else t.op

    def scatter_sub(self, sparse_delta, use_locking=False, name=None):
        """ref[sparse_delta.indices] -= sparse_delta.values (IndexedSlices)."""
        return _scatter("scatter_sub", self, sparse_delta, use_locking, name)

    def scatter_add(self, sparse_delta, use_locking=False, name=None):
        """ref[sparse_delta.indices] += sparse_delta.values (IndexedSlices)."""
        return _scatter("scatter_add", self, sparse_delta, use_locking, name)

    def scatter_update(self, sparse_delta, use_locking=False, name=None):
        """ref[sparse_delta.indices] = sparse_delta.values (IndexedSlices)."""
        return _scatter("scatter_update", self, sparse_delta, use_locking, name)

    def set_shape(self, shape):
        self._variable.set_shape(shape)
        self._snapshot.set_shape(shape)

    def __repr__(self):
        return f"<tf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}_ref>"

    def __getitem__(self, key):
        return self.value()[key]

    def __iter__(self):
        raise TypeError("'Variable' object is not iterable.")

    def __hash__(self):
        return id(self)

    def __eq__(self, other):  # identity in graph mode, as TF1
        return self is other

    def __ne__(self, other):
        return self is not other

    __array_priority__ = 100


def _delegating(op_name):
    def method(self, *args):
        return getattr(self.value(), op_name)(*args)

    method.__name__ = op_name
    return method


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
              "xor", "div"):
    for _n in (f"__{_name}__", f"__r{_name}__"):
        if hasattr(_ops.Tensor, _n):
            setattr(Variable, _n, _delegating(_n))
for _n in ("__lt__", "__le__", "__gt__", "__ge__", "__neg__", "__abs__", "__invert__"):
    setattr(Variable, _n, _delegating(_n))

VariableV1 = Variable
RefVariable = Variable


def _scatter(fn, var, sparse_delta, use_locking, name):
    from dtf.framework.indexed_slices import IndexedSlices
    from . import scatter_ops

    if not isinstance(sparse_delta, IndexedSlices):
        raise TypeError(f"sparse_delta is not IndexedSlices: {sparse_delta}")
    return getattr(scatter_ops, fn)(var, sparse_delta.indices, sparse_delta.values,
                                    use_locking=use_locking, name=name)


def _identity(t, name):
    return _ops.make_tensor("Identity", [t], {"T": t.dtype}, name=name)


def _colocate_ops_with(ops_, target):
    """Places initializer ops built before their variable existed beside it (TF sets
    their ``_class`` attr in advance)."""
    for op in ops_:
        op._attrs["_class"] = [f"loc:@{target.name}"]
        op._device = target.device


def _conversion(v, dtype=None, name=None, as_ref=False):
    if dtype is not None and not dtypes.as_dtype(dtype) == v.dtype:
        raise ValueError(f"Incompatible type conversion requested to type "
                         f"'{dtypes.as_dtype(dtype).name}' for variable of type "
                         f"'{v.dtype.name}_ref'")
    return v._ref() if as_ref else v.value()


_ops.register_tensor_conversion_function(Variable, _conversion)


# -- collections -------------------------------------------------------------------
def global_variables(scope=None):
    return _ops.get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


def all_variables():
    return global_variables()


def local_variables(scope=None):
    return _ops.get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def trainable_variables(scope=None):
    return _ops.get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def model_variables(scope=None):
    return _ops.get_collection(GraphKeys.MODEL_VARIABLES, scope)


def moving_average_variables(scope=None):
    return _ops.get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


# -- initialization ----------------------------------------------------------------
def variables_initializer(var_list, name="init"):
    """An op that runs the initializers of ``var_list``."""
    from .control_flow_ops import group, no_op

    if var_list:
        return group(*[v.initializer for v in var_list], name=name)
    return no_op(name=name)


initialize_variables = variables_initializer


def global_variables_initializer():
    return variables_initializer(global_variables())


initialize_all_variables = global_variables_initializer


def local_variables_initializer():
    return variables_initializer(local_variables())


initialize_local_variables = local_variables_initializer


def is_variable_initialized(variable):
    return state_ops.is_variable_initialized(variable)


def report_uninitialized_variables(var_list=None, name="report_uninitialized_variables"):
    """A 1-D string tensor with the names of the uninitialized variables of ``var_list``
    (default: global and local variables)."""
    if var_list is None:
        var_list = global_variables() + local_variables()
    with _ops.name_scope(name):
        flags = [state_ops.is_variable_initialized(v) for v in var_list]
        return state_ops.select_uninitialized(flags, [v.op.name for v in var_list])


def assert_variables_initialized(var_list=None):
    """An op that fails (FailedPreconditionError) when a variable of ``var_list`` is not
    initialized: reading each variable does exactly that."""
    from .control_flow_ops import group

    if var_list is None:
        var_list = global_variables() + local_variables()
    reads = [_identity(v._ref(), "read") for v in var_list]
    return group(*reads, name="assert_variables_initialized")
