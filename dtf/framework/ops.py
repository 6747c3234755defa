"""Graph, Operation and Tensor: the TF1 graph-building surface.

A Graph owns Operations; each Operation has input Tensors, output Tensors, control inputs,
plain-data attrs and a device string. Names, scopes, collections and device stacks follow
TF1's rules exactly, because user code and checkpoints depend on those names.
"""
from __future__ import annotations

import contextlib
import re
import threading

import numpy as np

from . import dtypes as _dtypes
from .device_spec import DeviceSpec, canonical as _canonical_device
from .op_registry import get_op_def
from .tensor_shape import TensorShape, as_shape, unknown_shape

_VALID_OP_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$")
_VALID_SCOPE_NAME = re.compile(r"^[A-Za-z0-9_.\\/>-]*$")


class GraphKeys:
    """Standard collection names (same strings as TF1)."""

    GLOBAL_VARIABLES = "variables"
    VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    SUMMARIES = "summaries"
    QUEUE_RUNNERS = "queue_runners"
    TABLE_INITIALIZERS = "table_initializer"
    ASSET_FILEPATHS = "asset_filepaths"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    REGULARIZATION_LOSSES = "regularization_losses"
    CONCATENATED_VARIABLES = "concatenated_variables"
    SAVERS = "savers"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    SAVEABLE_OBJECTS = "saveable_objects"
    RESOURCES = "resources"
    LOCAL_RESOURCES = "local_resources"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    GLOBAL_STEP = "global_step"
    EVAL_STEP = "eval_step"
    TRAIN_OP = "train_op"
    COND_CONTEXT = "cond_context"
    WHILE_CONTEXT = "while_context"


class Tensor:
    """A symbolic handle to one output of an Operation."""

    __slots__ = ("_op", "_value_index", "_dtype", "_shape", "_consumers", "__weakref__")
    # numpy must defer to our operator overloads (ndarray + Tensor -> Tensor).
    __array_priority__ = 100

    def __init__(self, op, value_index, dtype, shape):
        self._op = op
        self._value_index = value_index
        self._dtype = dtype
        self._shape = shape
        self._consumers = []

    op = property(lambda self: self._op)
    value_index = property(lambda self: self._value_index)
    dtype = property(lambda self: self._dtype)
    graph = property(lambda self: self._op.graph)
    device = property(lambda self: self._op.device)
    shape = property(lambda self: self._shape)

    @property
    def name(self) -> str:
        return f"{self._op.name}:{self._value_index}"

    def get_shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape):
        self._shape = self._shape.merge_with(as_shape(shape))

    def consumers(self):
        return list(self._consumers)

    def eval(self, feed_dict=None, session=None):
        from dtf.client.session import _run_on_default

        return _run_on_default(self, feed_dict, session)

    def experimental_ref(self):
        return self

    ref = experimental_ref

    def __repr__(self):
        return f"<tf.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    def __str__(self):
        return f'Tensor("{self.name}", shape={self._shape}, dtype={self._dtype.name})'

    def __hash__(self):
        return id(self)

    def __eq__(self, other):  # TF1 semantics: identity, so tensors work as dict keys
        return self is other

    def __ne__(self, other):
        return self is not other

    def __bool__(self):
        raise TypeError("Using a `tf.Tensor` as a Python `bool` is not allowed. "
                        "Use `if t is not None:` instead of `if t:` to test if a tensor is defined.")

    def __iter__(self):
        dims = self._shape.as_tuple_or_none()
        if dims is None or not dims or dims[0] is None:
            raise TypeError("Tensor objects are only iterable when the first dimension is known.")
        from dtf.ops import array_ops

        return iter(array_ops.unstack(self, num=dims[0]))

    def __len__(self):
        raise TypeError(f"len is not well defined for symbolic Tensors. ({self.name}) "
                        "Please call `x.shape` rather than `len(x)` for shape information.")

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"Cannot convert a symbolic Tensor ({self.name}) to a numpy array.")

    def __getitem__(self, key):
        from dtf.ops import array_ops

        return array_ops._slice_helper(self, key)


def _binary(op_name, reverse=False):
    def method(self, other):
        from dtf.ops import math_ops

        fn = math_ops.BINARY_OVERLOADS[op_name]
        return fn(other, self) if reverse else fn(self, other)

    method.__name__ = op_name
    return method


def _unary(op_name):
    def method(self):
        from dtf.ops import math_ops

        return math_ops.UNARY_OVERLOADS[op_name](self)

    method.__name__ = op_name
    return method


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul",
              "and", "or", "xor"):
    setattr(Tensor, f"__{_name}__", _binary(_name))
    setattr(Tensor, f"__r{_name}__", _binary(_name, reverse=True))
Tensor.__div__ = Tensor.__truediv__
Tensor.__rdiv__ = Tensor.__rtruediv__
for _name in ("lt", "le", "gt", "ge"):
    setattr(Tensor, f"__{_name}__", _binary(_name))
for _name in ("neg", "abs", "invert"):
    setattr(Tensor, f"__{_name}__", _unary(_name))


class Operation:
    """A node of the graph: type, inputs, outputs, control inputs, attrs, device."""

    __slots__ = ("_graph", "_name", "_type", "_inputs", "_outputs", "_control_inputs",
                 "_attrs", "_device", "_id", "_op_def", "_control_outputs", "_cached_node_def",
                 "__weakref__")

    def __init__(self, graph, name, op_type, inputs, attrs, control_inputs, device):
        self._graph = graph
        self._name = name
        self._type = op_type
        self._inputs = list(inputs)
        self._attrs = attrs
        self._control_inputs = list(control_inputs)
        self._control_outputs = []
        self._device = device
        self._op_def = get_op_def(op_type)
        self._outputs = []
        self._id = None
        self._cached_node_def = None

    name = property(lambda self: self._name)
    type = property(lambda self: self._type)
    graph = property(lambda self: self._graph)
    inputs = property(lambda self: tuple(self._inputs))
    outputs = property(lambda self: list(self._outputs))
    control_inputs = property(lambda self: list(self._control_inputs))
    device = property(lambda self: self._device)
    op_def = property(lambda self: self._op_def)
    attrs = property(lambda self: self._attrs)

    @property
    def node_def(self):
        """This op as TF's NodeDef proto (``.name``, ``.op``, ``.input``, ``.device``, ``.attr``)."""
        from .graph_io import node_def

        return node_def(self)

    def get_attr(self, name):
        try:
            return self._attrs[name]
        except KeyError:
            raise ValueError(f"Operation '{self._name}' has no attr named '{name}'.") from None

    def _set_attr(self, name, value):
        self._attrs[name] = value

    def _set_device(self, device):
        self._device = _canonical_device(device)

    def _add_control_input(self, op):
        if op not in self._control_inputs:
            self._control_inputs.append(op)
            op._control_outputs.append(self)

    def _add_control_inputs(self, ops):
        for op in ops:
            self._add_control_input(op)

    def colocation_groups(self):
        return [s.encode() if isinstance(s, str) else s for s in self._attrs.get("_class", [f"loc:@{self._name}"])]

    def run(self, feed_dict=None, session=None):
        from dtf.client.session import _run_on_default

        _run_on_default(self, feed_dict, session)

    def values(self):
        return tuple(self._outputs)

    def __repr__(self):
        return f"<tf.Operation '{self._name}' type={self._type}>"

    def __str__(self):
        inputs = ", ".join(repr(t.name) for t in self._inputs)
        return f'name: "{self._name}"\nop: "{self._type}"\ninput: [{inputs}]\ndevice: "{self._device}"'


class _DeviceEntry:
    """One ``tf.device`` scope: a DeviceSpec, a device function, or None (reset)."""

    __slots__ = ("spec", "fn")

    def __init__(self, device):
        self.spec = None
        self.fn = None
        if device is None:
            return
        if callable(device) and not isinstance(device, (str, DeviceSpec)):
            self.fn = device
        elif isinstance(device, DeviceSpec):
            self.spec = device
        else:
            self.spec = DeviceSpec.from_string(device)

    def apply(self, op, current: str) -> str:
        if self.spec is not None:
            return self.spec.make_merged_spec(DeviceSpec.from_string(current)).to_string()
        op._device = current
        result = self.fn(op)
        return _canonical_device(result if result is not None else "")


class _ControlDependenciesController:
    __slots__ = ("control_inputs", "new_ops")

    def __init__(self, control_inputs):
        self.control_inputs = control_inputs
        self.new_ops = set()


class Graph:
    """A TensorFlow computation: a set of Operations plus scopes and collections."""

    def __init__(self):
        self._lock = threading.RLock()
        self._nodes_by_name: dict[str, Operation] = {}
        self._nodes_in_order: list[Operation] = []
        self._names_in_use: dict[str, int] = {}
        self._name_stack = ""
        self._device_stack: list[_DeviceEntry] = []
        self._colocation_stack: list[Operation] = []
        self._control_stack: list[_ControlDependenciesController | None] = []
        self._collections: dict[str, list] = {}
        self._finalized = False
        self._version = 0
        self.seed = None
        self._last_id = 0
        self._variable_store = None
        self._gradient_override_map: dict[str, str] = {}
        self._gradient_type_by_op: dict[str, str] = {}  # op name -> overriding gradient type

    # -- building ------------------------------------------------------------------
    def create_op(self, op_type, inputs, dtypes=None, input_types=None, name=None, attrs=None,
                  op_def=None, compute_shapes=True, compute_device=True):
        """Adds an op. ``inputs`` must already be Tensors of this graph."""
        self._check_not_finalized()
        attrs = dict(attrs or {})
        for t in inputs:
            if not isinstance(t, Tensor):
                raise TypeError(f"Input {t!r} to op {op_type} is not a Tensor")
            if t.graph is not self:
                raise ValueError(f"Tensor {t.name} must be from the same graph as the op {op_type}.")
        with self._lock:
            name = self._op_name(name or op_type)
            control_inputs = self._current_control_inputs(inputs)
            op = Operation(self, name, op_type, inputs, attrs, control_inputs, "")
            if op_type in self._gradient_override_map:
                self._gradient_type_by_op[name] = self._gradient_override_map[op_type]
            outputs = op._op_def.infer(list(inputs), {**attrs, "_op_name": name})
            op._outputs = [Tensor(op, i, dt, as_shape(sh)) for i, (dt, sh) in enumerate(outputs)]
            for t in inputs:
                t._consumers.append(op)
            for c in control_inputs:
                c._control_outputs.append(op)
            self._apply_device(op)
            self._apply_colocation(op)
            self._last_id += 1
            op._id = self._last_id
            self._nodes_by_name[name] = op
            self._nodes_in_order.append(op)
            self._version += 1
            for controller in self._control_stack:
                if controller is not None:
                    controller.new_ops.add(op)
        return op

    def _op_name(self, name: str) -> str:
        if name.endswith("/"):
            # A name_scope handed to create_op: use it as is (TF's rule).
            full = name[:-1]
            if full in self._nodes_by_name:
                raise ValueError(f"Duplicate node name in graph: '{full}'")
            return full
        if not _VALID_OP_NAME.match(name):
            raise ValueError(f"'{name}' is not a valid node name")
        return self.unique_name(name)

    def _apply_device(self, op):
        device = ""
        for entry in reversed(self._device_stack):
            if entry.spec is None and entry.fn is None:
                break
            device = entry.apply(op, device)
        op._device = device

    def _apply_colocation(self, op):
        ref_positions = op._op_def.ref_inputs
        target = None
        if self._colocation_stack:
            target = self._colocation_stack[-1]
        elif ref_positions:
            # Ops that take a variable handle run where the variable lives.
            for i in ref_positions:
                if i < len(op._inputs):
                    target = _colocation_root(op._inputs[i].op)
                    break
        if target is not None:
            op._attrs["_class"] = [f"loc:@{target.name}"]
            if target.device or not op._device:
                op._device = target.device

    def _current_control_inputs(self, inputs):
        ret = []
        input_ops = {t.op for t in inputs}
        for controller in self._control_stack:
            if controller is None:
                ret = []
                continue
            if any(o in controller.new_ops for o in input_ops):
                continue  # already depends on them through an input
            for c in controller.control_inputs:
                if c not in ret:
                    ret.append(c)
        return ret

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """TF's name uniquing: 'x', 'x_1', 'x_2', ... case-insensitively, within scope."""
        if self._name_stack:
            name = f"{self._name_stack}/{name}"
        name_key = name.lower()
        i = self._names_in_use.get(name_key, 0)
        if mark_as_used:
            self._names_in_use[name_key] = i + 1
        if i > 0:
            base = name_key
            while name_key in self._names_in_use:
                name_key = f"{base}_{i}"
                i += 1
            if mark_as_used:
                self._names_in_use[name_key] = 1
            name = f"{name}_{i - 1}"
        return name

    def get_name_scope(self) -> str:
        return self._name_stack

    @contextlib.contextmanager
    def name_scope(self, name):
        """Pushes a name scope; yields the scope string ending in '/' (TF1 rules)."""
        old = self._name_stack
        if not name:  # None and "" both reset to the root scope
            self._name_stack = ""
            try:
                yield ""
            finally:
                self._name_stack = old
            return
        if not isinstance(name, str):
            raise TypeError(f"name_scope name must be a string, got {name!r}")
        if name.endswith("/"):
            new_stack = name[:-1]
        else:
            if not _VALID_SCOPE_NAME.match(name):
                raise ValueError(f"'{name}' is not a valid scope name")
            new_stack = self.unique_name(name)
        self._name_stack = new_stack
        try:
            yield f"{new_stack}/" if new_stack else ""
        finally:
            self._name_stack = old

    @contextlib.contextmanager
    def device(self, device_name_or_function):
        self._device_stack.append(_DeviceEntry(device_name_or_function))
        try:
            yield
        finally:
            self._device_stack.pop()

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing=False):
        if op is None:
            saved, self._colocation_stack = self._colocation_stack, []
            try:
                yield
            finally:
                self._colocation_stack = saved
            return
        op = _as_op(op)
        self._colocation_stack.append(_colocation_root(op))
        try:
            yield
        finally:
            self._colocation_stack.pop()

    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        if control_inputs is None:
            self._control_stack.append(None)
            try:
                yield
            finally:
                self._control_stack.pop()
            return
        ops = []
        for c in control_inputs:
            if callable(c) and not isinstance(c, (Tensor, Operation)) and not hasattr(c, "op"):
                c = c()
            c = self.as_graph_element(c)
            op = c.op if isinstance(c, Tensor) else c
            if op not in ops:
                ops.append(op)
        self._control_stack.append(_ControlDependenciesController(ops))
        try:
            yield
        finally:
            self._control_stack.pop()

    @contextlib.contextmanager
    def gradient_override_map(self, op_type_map):
        saved = dict(self._gradient_override_map)
        self._gradient_override_map.update(op_type_map)
        try:
            yield
        finally:
            self._gradient_override_map = saved

    @contextlib.contextmanager
    def as_default(self):
        _default_graph_stack.append(self)
        try:
            yield self
        finally:
            _default_graph_stack.remove_last(self)

    # -- lookups -------------------------------------------------------------------
    def get_operations(self):
        return list(self._nodes_in_order)

    def get_operation_by_name(self, name) -> Operation:
        if not isinstance(name, str):
            raise TypeError(f"Operation names are strings (or similar), not {type(name).__name__}.")
        el = self.as_graph_element(name, allow_tensor=False, allow_operation=True)
        return el

    def get_tensor_by_name(self, name) -> Tensor:
        if not isinstance(name, str):
            raise TypeError(f"Tensor names are strings (or similar), not {type(name).__name__}.")
        return self.as_graph_element(name, allow_tensor=True, allow_operation=False)

    def as_graph_element(self, obj, allow_tensor=True, allow_operation=True):
        if hasattr(obj, "_as_graph_element") and not isinstance(obj, (Tensor, Operation)):
            obj = obj._as_graph_element()
        if isinstance(obj, str):
            if ":" in obj:
                if not allow_tensor:
                    raise ValueError(f"Name '{obj}' appears to refer to a Tensor, not a Operation.")
                op_name, _, idx = obj.rpartition(":")
                try:
                    idx = int(idx)
                except ValueError:
                    raise ValueError(f"The name '{obj}' looks a like a Tensor name, but is not a "
                                     "valid one. Tensor names must be of the form "
                                     "\"<op_name>:<output_index>\".") from None
                op = self._nodes_by_name.get(op_name)
                if op is None:
                    raise KeyError(f"The name '{obj}' refers to a Tensor which does not exist. "
                                   f"The operation, '{op_name}', does not exist in the graph.")
                if idx >= len(op._outputs):
                    raise KeyError(f"The name '{obj}' refers to a Tensor which does not exist. The "
                                   f"operation, '{op_name}', exists but only has "
                                   f"{len(op._outputs)} outputs.")
                return op._outputs[idx]
            if not allow_operation:
                raise ValueError(f"The name '{obj}' looks like an (invalid) Operation name, not a Tensor. "
                                 "Tensor names must be of the form \"<op_name>:<output_index>\".")
            op = self._nodes_by_name.get(obj)
            if op is None:
                raise KeyError(f"The name '{obj}' refers to an Operation not in the graph.")
            return op
        if isinstance(obj, Tensor) and allow_tensor:
            if obj.graph is not self:
                raise ValueError(f"Tensor {obj} is not an element of this graph.")
            return obj
        if isinstance(obj, Operation) and allow_operation:
            if obj.graph is not self:
                raise ValueError(f"Operation {obj} is not an element of this graph.")
            return obj
        kinds = " or ".join(k for k, ok in (("Tensor", allow_tensor), ("Operation", allow_operation)) if ok)
        raise TypeError(f"Can not convert a {type(obj).__name__} into a {kinds}.")

    # -- collections ---------------------------------------------------------------
    def add_to_collection(self, name, value):
        self._check_not_finalized()
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value):
        names = (names,) if isinstance(names, str) else set(names)
        for name in names:
            self.add_to_collection(name, value)

    def get_collection_ref(self, name):
        return self._collections.setdefault(name, [])

    def get_collection(self, name, scope=None):
        items = self._collections.get(name, [])
        if scope is None:
            return list(items)
        pattern = re.compile(scope)
        return [i for i in items if hasattr(i, "name") and pattern.match(i.name)]

    def get_all_collection_keys(self):
        return [k for k, v in self._collections.items() if isinstance(k, str)]

    def clear_collection(self, name):
        self._collections.pop(name, None)

    # -- state ---------------------------------------------------------------------
    def finalize(self):
        self._finalized = True

    @property
    def finalized(self):
        return self._finalized

    def _unsafe_unfinalize(self):
        self._finalized = False

    def _check_not_finalized(self):
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")

    @property
    def version(self):
        return self._version

    @property
    def building_function(self):
        return False

    def as_graph_def(self, from_version=None, add_shapes=False):
        """This graph as TF's GraphDef proto (``add_shapes``: each node's output shapes in
        its ``_output_shapes`` attr)."""
        if from_version is not None:
            raise NotImplementedError("as_graph_def: from_version is not supported by dtf")
        from .graph_io import graph_def

        return graph_def(self, add_shapes=add_shapes)

    def is_fetchable(self, tensor_or_op):
        return True

    def is_feedable(self, tensor):
        return True


def _colocation_root(op: Operation) -> Operation:
    """Follows an op's existing colocation (``_class``) to the op it is colocated with."""
    cls = op._attrs.get("_class")
    if cls:
        target = op._graph._nodes_by_name.get(cls[0][len("loc:@"):])
        if target is not None:
            return target
    return op


def _as_op(x) -> Operation:
    if isinstance(x, Operation):
        return x
    if isinstance(x, Tensor):
        return x.op
    if hasattr(x, "op"):
        return x.op
    raise TypeError(f"{x!r} is not an Operation or Tensor")


class _DefaultGraphStack(threading.local):
    def __init__(self):
        self.stack: list[Graph] = []

    def append(self, g):
        self.stack.append(g)

    def remove_last(self, g):
        if self.stack and self.stack[-1] is g:
            self.stack.pop()
        elif g in self.stack:
            self.stack.remove(g)


_default_graph_stack = _DefaultGraphStack()
_global_default_graph: Graph | None = None


def get_default_graph() -> Graph:
    global _global_default_graph
    if _default_graph_stack.stack:
        return _default_graph_stack.stack[-1]
    if _global_default_graph is None:
        _global_default_graph = Graph()
    return _global_default_graph


def reset_default_graph():
    """Clears the global default graph (not allowed inside a ``with g.as_default()``)."""
    global _global_default_graph
    if _default_graph_stack.stack:
        raise AssertionError("Do not use tf.reset_default_graph() to clear nested graphs. If you "
                             "need a cleared graph, exit the nesting and create a new graph.")
    _global_default_graph = Graph()
    from dtf.client import session as _session

    _session._default_session_stack.clear()


# -- tensor conversion -------------------------------------------------------------
_CONVERSION_FUNCTIONS: list[tuple[type, object]] = []


def register_tensor_conversion_function(base_type, conversion_func, priority=100):
    """Registers ``conversion_func(value, dtype, name, as_ref)`` for ``base_type``."""
    _CONVERSION_FUNCTIONS.append((base_type, conversion_func))


def convert_to_tensor(value, dtype=None, name=None, preferred_dtype=None, as_ref=False,
                      dtype_hint=None):
    """Converts a Tensor, Variable, numpy array or Python value to a Tensor."""
    preferred_dtype = preferred_dtype or dtype_hint
    if isinstance(value, Tensor):
        if dtype is not None and not _dtypes.as_dtype(dtype) == value.dtype:
            raise ValueError(f"Tensor conversion requested dtype {_dtypes.as_dtype(dtype).name} "
                             f"for Tensor with dtype {value.dtype.name}: {value!r}")
        return value
    for base_type, fn in _CONVERSION_FUNCTIONS:
        if isinstance(value, base_type):
            ret = fn(value, dtype=dtype, name=name, as_ref=as_ref)
            if ret is not NotImplemented:
                return ret
    if isinstance(value, Operation):
        raise TypeError(f"Can't convert Operation '{value.name}' to Tensor (target dtype={dtype}, "
                        f"name={name!r}, as_ref={as_ref})")
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) or _is_convertible_obj(v)
                                                for v in _flatten(value)):
        from dtf.ops import array_ops

        return array_ops._autopacking(value, dtype, name or "packed")
    from dtf.ops import constant_op

    if dtype is None and preferred_dtype is not None:
        try:
            return constant_op.constant(value, dtype=preferred_dtype, name=name or "Const")
        except (TypeError, ValueError):
            pass
    return constant_op.constant(value, dtype=dtype, name=name or "Const")


def _is_convertible_obj(v):
    return any(isinstance(v, b) for b, _ in _CONVERSION_FUNCTIONS)


def _flatten(value):
    for v in value:
        if isinstance(v, (list, tuple)):
            yield from _flatten(v)
        else:
            yield v


def convert_n_to_tensor(values, dtype=None, name=None):
    return [convert_to_tensor(v, dtype=dtype, name=name) for v in values]


def convert_to_tensor_or_indexed_slices(value, dtype=None, name=None):
    """IndexedSlices pass through unchanged; anything else becomes a Tensor."""
    from .indexed_slices import IndexedSlices

    if isinstance(value, IndexedSlices):
        if dtype is not None and not _dtypes.as_dtype(dtype).is_compatible_with(value.dtype):
            raise ValueError(f"Tensor conversion requested dtype {_dtypes.as_dtype(dtype).name} "
                             f"for IndexedSlices with dtype {value.dtype.name}: {value}")
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)


def is_dense_tensor_like(t):
    return isinstance(t, Tensor)


# -- module-level helpers (tf.name_scope, tf.device, ...) -----------------------------
class name_scope:  # noqa: N801 - TF's public name
    """``tf.name_scope(name, default_name=None, values=None)`` (TF1 signature)."""

    def __init__(self, name, default_name=None, values=None):
        self._name = default_name if name is None else name
        self._default_name = default_name
        self._values = values
        self._ctx = None

    def __enter__(self):
        g = _graph_from_values(self._values)
        if self._name is None and self._values is not None:
            raise ValueError(f"At least one of name ({self._name}) and default_name "
                             f"({self._default_name}) must be provided.")
        self._ctx = g.as_default()
        self._ctx.__enter__()
        self._scope = g.name_scope(self._name)
        return self._scope.__enter__()

    def __exit__(self, *exc):
        self._scope.__exit__(*exc)
        self._ctx.__exit__(*exc)
        return False

    @property
    def name(self):
        return self._name


def _graph_from_values(values):
    if get_default_graph().building_function:
        return get_default_graph()  # scopes inside a traced function stay in it
    if values:
        for v in values:
            if isinstance(v, (Tensor, Operation)):
                return _graph_for(v.graph)
            if hasattr(v, "graph") and isinstance(getattr(v, "graph", None), Graph):
                return _graph_for(v.graph)
    return get_default_graph()


def _graph_for(graph):
    """``graph``, or the control-flow body being built that captures its tensors."""
    default = get_default_graph()
    if default is graph or not default.building_function:
        return graph
    from .func_graph import graph_for_inputs

    return graph_for_inputs(graph, default)


def device(device_name_or_function):
    return get_default_graph().device(device_name_or_function)


def colocate_with(op, ignore_existing=False):
    return get_default_graph().colocate_with(op, ignore_existing)


def control_dependencies(control_inputs):
    return get_default_graph().control_dependencies(control_inputs)


def add_to_collection(name, value):
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value):
    get_default_graph().add_to_collections(names, value)


def get_collection(key, scope=None):
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key):
    return get_default_graph().get_collection_ref(key)


def get_name_scope():
    return get_default_graph().get_name_scope()


def op_scope(values, name, default_name=None):
    return name_scope(name, default_name, values)


def make_op(op_type, inputs, attrs=None, name=None, graph=None):
    """Creates an op from already-converted inputs; returns the Operation."""
    g = graph or (_graph_for(inputs[0].graph) if inputs else get_default_graph())
    return g.create_op(op_type, list(inputs), name=name, attrs=attrs)


def make_tensor(op_type, inputs, attrs=None, name=None):
    """Creates a single-output op and returns its output Tensor."""
    return make_op(op_type, inputs, attrs, name)._outputs[0]


def is_tensor(x):
    return isinstance(x, Tensor)


def numpy_value_is_scalar(x):
    return np.ndim(x) == 0


EagerTensor = Tensor
unknown = unknown_shape
