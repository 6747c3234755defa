"""tf.layers.Layer: the base of every TF1 layer, and the argument normalizers the layer
families share.

Variables are made by ``tf.get_variable`` inside the layer's variable scope, so their names
are TF's (``dense/kernel``, ``dense_1/kernel``, ``model/conv2d/bias``) and checkpoints and
``variable_scope`` reuse line up with TF programs. How that scope is chosen follows TF1:

- ``Dense(..., name=None)``: the scope is picked at the first call, ``default_name`` style
  (``dense``, ``dense_1``, ... within the enclosing variable scope);
- ``Dense(..., name="fc")``: the same with "fc" as the default name (``fc``, ``fc_1``);
- the functional ``tf.layers.dense(..., name="fc")`` captures ``variable_scope("fc")``
  itself, so a second call without ``reuse`` fails as in TF, and ``reuse=True`` shares.

After the first call a layer always reuses its own variables. Ops go under the scope's
name scope. Regularization losses (weights' and activity's) go to
``GraphKeys.REGULARIZATION_LOSSES``, updates (batch norm's moving averages) to
``GraphKeys.UPDATE_OPS`` when the layer is called.
"""
from __future__ import annotations

import re
import weakref

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.ops import GraphKeys
from dtf.framework.tensor_shape import TensorShape
from dtf.ops import array_ops, math_ops, nn_extra_ops, nn_ops, reduction_ops, variable_scope as vs
from dtf.ops.smart_cond import smart_constant_value

# Per graph: how many layers of each base name exist (layer.name is unique per graph).
_NAME_UIDS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def to_snake_case(name):
    """Class name -> default layer name, as TF spells it (Conv2DTranspose -> conv2d_transpose)."""
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    insecure = re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()
    return insecure if insecure[0] != "_" else "private" + insecure


def _unique_layer_name(base):
    """layer.name of an unnamed layer: numbered from 1 per graph (``dense_1``, ``dense_2``),
    as TF numbers them; its variable scope is chosen apart (``dense``, ``dense_1``)."""
    uids = _NAME_UIDS.setdefault(_ops.get_default_graph(), {})
    uids[base] = uids.get(base, 0) + 1
    return f"{base}_{uids[base]}"


class InputSpec:
    """What a layer accepts (rank bounds, dtype, fixed axis sizes); ``layer.input_spec``
    is checked on every call, naming the layer and what did not match."""

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None,
                 axes=None):
        self.dtype = None if dtype is None else dtypes.as_dtype(dtype).name
        self.shape = None if shape is None else tuple(shape)
        self.ndim = len(self.shape) if self.shape is not None else ndim
        self.max_ndim, self.min_ndim = max_ndim, min_ndim
        self.axes = dict(axes or {})

    def __repr__(self):
        return (f"InputSpec(dtype={self.dtype}, shape={self.shape}, ndim={self.ndim}, "
                f"max_ndim={self.max_ndim}, min_ndim={self.min_ndim}, axes={self.axes})")


def _check_input_spec(spec, x, layer_name):
    where = f"Input 0 of layer {layer_name} is incompatible with the layer"
    dims = x.shape.as_tuple_or_none()
    if dims is None:
        if spec.ndim is not None or spec.min_ndim is not None or spec.max_ndim is not None:
            raise ValueError(f"{where}: its rank is undefined, but the layer requires a defined "
                             "rank.")
        return
    full = list(dims)
    if spec.ndim is not None and len(dims) != spec.ndim:
        raise ValueError(f"{where}: expected ndim={spec.ndim}, found ndim={len(dims)}. Full shape "
                         f"received: {full}")
    if spec.max_ndim is not None and len(dims) > spec.max_ndim:
        raise ValueError(f"{where}: expected max_ndim={spec.max_ndim}, found ndim={len(dims)}")
    if spec.min_ndim is not None and len(dims) < spec.min_ndim:
        raise ValueError(f"{where}: expected min_ndim={spec.min_ndim}, found ndim={len(dims)}. "
                         f"Full shape received: {full}")
    if spec.dtype is not None and x.dtype.base_dtype.name != spec.dtype:
        raise ValueError(f"{where}: expected dtype={spec.dtype}, found dtype={x.dtype.name}")
    for axis, value in spec.axes.items():
        if value is not None and dims[axis] not in (value, None):
            raise ValueError(f"{where}: expected axis {axis} of input shape to have value "
                             f"{value} but received input with shape {full}")
    if spec.shape is not None:
        for want, got in zip(spec.shape, dims):
            if want is not None and got is not None and want != got:
                raise ValueError(f"Input 0 is incompatible with layer {layer_name}: expected "
                                 f"shape={spec.shape}, found shape={tuple(dims)}")


_CALL_ARGUMENTS: dict = {}


def _call_arguments(cls):
    """The keyword arguments ``cls.call`` takes (cached per class)."""
    if cls not in _CALL_ARGUMENTS:
        import inspect  # here, not at import: inspect costs start-up time

        params = inspect.signature(cls.call).parameters.values()
        takes_any = any(p.kind == p.VAR_KEYWORD for p in params)
        names = {p.name for p in params}
        _CALL_ARGUMENTS[cls] = names | ({"training"} if takes_any else set())
    return _CALL_ARGUMENTS[cls]


class Layer:
    """Base layer: ``build(input_shape)`` makes the variables once, ``call(inputs)`` the ops;
    ``layer(inputs)`` (or ``layer.apply``) runs both inside the layer's variable scope."""

    input_spec = None  # an InputSpec checked on each call (a class default: subclasses set it)

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        scope = kwargs.pop("_scope", None)
        self._reuse = kwargs.pop("_reuse", None)
        self._activity_regularizer = get_regularizer(kwargs.pop("activity_regularizer", None))
        for key in ("input_shape", "batch_input_shape", "batch_size", "autocast"):
            kwargs.pop(key, None)  # Keras model-building hints with no effect on a TF1 layer
        if kwargs:
            raise TypeError(f"Keyword argument not understood: {sorted(kwargs)[0]!r}")
        self.trainable = trainable
        self.built = False
        self._dtype = None if dtype is None else dtypes.as_dtype(dtype).base_dtype
        self._trainable_weights, self._non_trainable_weights = [], []
        self._losses, self._updates = [], []
        if isinstance(name, vs.VariableScope):
            self._base_name = name.name
            self._name = _unique_layer_name(to_snake_case(type(self).__name__))
        elif name:
            self._base_name = self._name = name
        else:
            self._name = _unique_layer_name(to_snake_case(type(self).__name__))
            self._base_name = to_snake_case(type(self).__name__)
        self._scope = None
        if scope:
            with vs.variable_scope(scope) as captured:
                self._scope = captured
        self._current_scope = None

    # -- what users read -------------------------------------------------------------------------
    name = property(lambda self: self._name)
    dtype = property(lambda self: None if self._dtype is None else self._dtype.name)
    activity_regularizer = property(lambda self: self._activity_regularizer)
    losses = property(lambda self: list(self._losses))
    updates = property(lambda self: list(self._updates))

    @property
    def scope_name(self):
        if self._scope is None:
            raise ValueError(f'No name available for layer scope because the layer "{self._name}" '
                             "has not been used yet. The scope name  is determined the first time "
                             "the layer instance is called. You must therefore call the layer "
                             "before querying `scope_name`.")
        return self._scope.name

    @property
    def trainable_weights(self):
        return list(self._trainable_weights) if self.trainable else []

    @property
    def non_trainable_weights(self):
        if self.trainable:
            return list(self._non_trainable_weights)
        return self._trainable_weights + self._non_trainable_weights

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights

    @property
    def weights(self):
        return self.trainable_weights + self.non_trainable_weights

    variables = weights

    def get_losses_for(self, inputs=None):
        return self.losses

    def get_updates_for(self, inputs=None):
        return self.updates

    # -- what subclasses write --------------------------------------------------------------------
    def build(self, input_shape):
        self.built = True

    def call(self, inputs, **kwargs):
        return inputs

    def add_weight(self, name, shape, dtype=None, initializer=None, regularizer=None,
                   trainable=None, constraint=None, partitioner=None, use_resource=None,
                   **kwargs):
        """A variable of this layer, from tf.get_variable in the layer's scope."""
        if partitioner is not None:
            raise NotImplementedError("add_weight: partitioner is not supported")
        for key in ("synchronization", "aggregation", "experimental_autocast"):
            kwargs.pop(key, None)  # distribution hints: dtf variables have one copy
        if kwargs:
            raise TypeError(f"add_weight: unexpected keyword argument {sorted(kwargs)[0]!r}")
        dtype = dtypes.as_dtype(dtype or self._dtype or dtypes.float32)
        trainable = (True if trainable is None else bool(trainable)) and self.trainable
        self._set_scope(None)
        with vs.variable_scope(self._scope, reuse=self.built or self._reuse,
                               auxiliary_name_scope=False) as scope:
            self._current_scope = scope
            with _ops.name_scope(scope.original_name_scope):
                existing = set(id(v) for v in _ops.get_collection(GraphKeys.GLOBAL_VARIABLES))
                initializer = get_initializer(initializer)
                if initializer is None:
                    initializer = scope.initializer
                variable = vs.get_variable(name, shape=shape, dtype=dtype,
                                           initializer=initializer, trainable=trainable,
                                           constraint=constraint)
                (self._trainable_weights if trainable else self._non_trainable_weights).append(variable)
                regularizer = get_regularizer(regularizer)
                if regularizer is not None and id(variable) not in existing:
                    with _ops.name_scope(f"{name}/Regularizer"):
                        self.add_loss(regularizer(variable))
        return variable

    add_variable = add_weight

    def add_loss(self, losses, inputs=None):
        """Adds loss tensors to this layer and to GraphKeys.REGULARIZATION_LOSSES."""
        losses = losses if isinstance(losses, (list, tuple)) else [losses]
        for loss in losses:
            if callable(loss) and not isinstance(loss, _ops.Tensor):
                loss = loss()
            if loss is None:
                continue
            self._losses.append(loss)
            if loss not in _ops.get_collection(GraphKeys.REGULARIZATION_LOSSES):
                _ops.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)

    def add_update(self, updates, inputs=None):
        """Ops to run with each training step (collected into GraphKeys.UPDATE_OPS)."""
        updates = updates if isinstance(updates, (list, tuple)) else [updates]
        for update in updates:
            self._updates.append(update() if callable(update) else update)

    # -- calling ------------------------------------------------------------------------------------
    def _set_scope(self, scope=None):
        if self._scope is not None:
            return
        if self._reuse:
            ctx = vs.variable_scope(scope if scope is not None else self._base_name)
        else:
            ctx = vs.variable_scope(scope, default_name=self._base_name)
        with ctx as captured:
            self._scope = captured

    def __call__(self, inputs, *args, **kwargs):
        scope = kwargs.pop("scope", None)
        self._set_scope(scope)
        reuse = True if self.built else self._reuse
        with vs.variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False) as vscope:
            self._current_scope = vscope
            with _ops.name_scope(vscope.original_name_scope):
                if isinstance(inputs, (list, tuple)):  # several inputs: each its own tensor
                    inputs = type(inputs)(_ops.convert_to_tensor(t) for t in inputs)
                    first, shapes = inputs[0], [t.shape for t in inputs]
                else:
                    inputs = first = _ops.convert_to_tensor(inputs, name="inputs")
                    shapes = inputs.shape
                if self.input_spec is not None:
                    _check_input_spec(self.input_spec, first, self.name)
                if not self.built:
                    if self._dtype is None:
                        self._dtype = first.dtype.base_dtype
                    self.build(shapes)
                    self.built = True
                accepted = _call_arguments(type(self))
                if "training" not in accepted:
                    kwargs.pop("training", None)  # as Keras: layers without one ignore it
                if "scope" in accepted:
                    kwargs["scope"] = vscope
                outputs = self.call(inputs, *args, **kwargs)
                if self._activity_regularizer is not None:
                    self._add_activity_loss(outputs)
        for update in self._updates:
            if update not in _ops.get_collection(GraphKeys.UPDATE_OPS):
                _ops.add_to_collection(GraphKeys.UPDATE_OPS, update)
        return outputs

    apply = __call__

    def _add_activity_loss(self, outputs):
        """The regularizer of the outputs, divided by the batch size (TF's rule)."""
        with _ops.name_scope("ActivityRegularizer"):
            loss = self._activity_regularizer(outputs)
            if loss is not None:
                batch = math_ops.cast(array_ops.shape(outputs)[0], loss.dtype)
                self.add_loss(loss / batch)


# -- the kernel and bias most layers make ------------------------------------------------------------
def add_kernel(layer, shape, name="kernel", prefix="kernel"):
    """A weight configured by the layer's ``<prefix>_initializer/_regularizer/_constraint``."""
    return layer.add_weight(name, shape=shape, initializer=getattr(layer, f"{prefix}_initializer"),
                            regularizer=getattr(layer, f"{prefix}_regularizer"),
                            constraint=getattr(layer, f"{prefix}_constraint"))


def add_bias(layer, units):
    """The layer's ``bias`` of ``units`` entries, or None when ``use_bias`` is off."""
    return add_kernel(layer, [units], "bias", "bias") if layer.use_bias else None


# -- argument normalizers (TF's conv_utils), shared by the layer families -----------------------------
def normalize_tuple(value, n, name):
    """An int or n ints as an n-tuple; anything else is a ValueError naming ``name``."""
    if isinstance(value, int):
        return (value,) * n
    try:
        value = tuple(value)
    except TypeError:
        raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. Received: "
                         f"{value}") from None
    if len(value) != n or not all(isinstance(v, int) for v in value):
        raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. Received: "
                         f"{value}")
    return value


def normalize_padding(value, allow_causal=False):
    padding = value.lower() if isinstance(value, str) else value
    allowed = ("valid", "same", "causal") if allow_causal else ("valid", "same")
    if padding not in allowed:
        raise ValueError('The `padding` argument must be one of "valid", "same" (or "causal", only '
                         f"for `Conv1D). Received: {value}")
    return padding


def normalize_data_format(value):
    data_format = "channels_last" if value is None else str(value).lower()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError('The `data_format` argument must be one of "channels_first", '
                         f'"channels_last". Received: {value}')
    return data_format


def require_channels_last(data_format, layer):
    """The CPU convolution and pooling kernels run channels-last only."""
    if data_format != "channels_last":
        raise ValueError(f"{layer}: data_format='{data_format}' is not supported: the CPU "
                         "convolution and pooling kernels run channels_last only")


def constant_value(pred):
    """True/False when ``training`` is known at graph-construction time, else None."""
    try:
        return smart_constant_value(pred)
    except TypeError:
        raise TypeError(f"`training` must be a bool or a boolean Tensor, got {pred!r}") from None


# Names Keras accepts for an initializer or regularizer, limited to those whose meaning is
# the same in TF 1.15 and later (Keras changed the random initializers' defaults since).
_INITIALIZERS = {"zeros": "zeros_initializer", "ones": "ones_initializer",
                 "glorot_uniform": "glorot_uniform_initializer",
                 "glorot_normal": "glorot_normal_initializer"}
_REGULARIZERS = {"l1": (0.01, 0.0), "l2": (0.0, 0.01), "l1_l2": (0.01, 0.01)}


def get_initializer(initializer):
    """A callable, None, or the name of one of _INITIALIZERS (Keras's initializers.get)."""
    if not isinstance(initializer, str):
        return initializer
    if initializer.lower() not in _INITIALIZERS:
        raise ValueError(f"Unknown initializer: {initializer} (dtf takes the names "
                         f"{sorted(_INITIALIZERS)}, or an initializer object)")
    from dtf.ops import init_ops

    return getattr(init_ops, _INITIALIZERS[initializer.lower()])()


def get_regularizer(regularizer):
    """A callable, None, or "l1" / "l2" / "l1_l2" (factor 0.01, Keras's defaults)."""
    if not isinstance(regularizer, str):
        return regularizer
    if regularizer.lower() not in _REGULARIZERS:
        raise ValueError(f"Unknown regularizer: {regularizer}")
    l1, l2 = _REGULARIZERS[regularizer.lower()]

    def penalty(weights):
        loss = 0.0
        if l1:
            loss += l1 * reduction_ops.reduce_sum(math_ops.abs(weights))
        if l2:
            loss += l2 * reduction_ops.reduce_sum(math_ops.square(weights))
        return loss

    return penalty


# The activations a layer may be given by name (Keras's names for tf.nn's functions).
ACTIVATIONS = {"relu": nn_ops.relu, "relu6": nn_ops.relu6, "elu": nn_ops.elu,
               "selu": nn_extra_ops.selu, "softplus": nn_ops.softplus, "softsign": nn_ops.softsign,
               "sigmoid": nn_ops.sigmoid, "tanh": nn_ops.tanh, "softmax": nn_ops.softmax,
               "linear": None}


def get_activation(activation):
    """A callable, None, or the name of one (Keras's activations.get)."""
    if activation is None or callable(activation):
        return activation
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise ValueError(f"Unknown activation function: {activation}")
    return ACTIVATIONS[activation]


def static_dims(shape):
    return TensorShape(shape).as_tuple_or_none()
