"""TF1's RNN cells (tf.nn.rnn_cell, tf.contrib.rnn): Python over registered ops, with TF's
variable names (``<scope>/basic_lstm_cell/kernel``...) so checkpoints and variable_scope
reuse line up.

A cell's variable scope is fixed at its first call: a new scope named after the cell
(``basic_lstm_cell``, uniquified within the scope around the call, or the ``name`` given),
as TF's layer-based cells do. Later calls reuse its variables.
"""
from __future__ import annotations

import collections
import re

from dtf.framework import dtypes as _dtypes
from dtf.framework import ops as _ops
from dtf.framework.tensor_shape import TensorShape

from . import control_flow_graphs as cfg
from . import variable_scope as vs

_WEIGHTS = "kernel"
_BIAS = "bias"


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """(c, h): an LSTM's cell state and output."""

    __slots__ = ()

    @property
    def dtype(self):
        c, h = self
        if c.dtype != h.dtype:
            raise TypeError(f"Inconsistent internal state: {c.dtype} vs {h.dtype}")
        return c.dtype


def _snake(name):
    s = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()


def _ops_mod():
    from . import array_ops, math_ops, nn_ops

    return array_ops, math_ops, nn_ops


class RNNCell:
    """Base of the cells: ``cell(inputs, state) -> (output, new_state)``."""

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        unknown = set(kwargs) - {"_reuse"}
        if unknown:
            raise TypeError(f"Unknown keyword arguments: {sorted(unknown)}")
        self._reuse = kwargs.get("_reuse")
        self._trainable = trainable
        self._name = name
        self._base_name = name or _snake(type(self).__name__)
        self._dtype = _dtypes.as_dtype(dtype) if dtype is not None else None
        self._scope = None
        self.built = False

    @property
    def state_size(self):
        raise NotImplementedError("Abstract method")

    @property
    def output_size(self):
        raise NotImplementedError("Abstract method")

    @property
    def name(self):
        return self._scope.name if self._scope is not None else self._base_name

    def build(self, inputs_shape):
        self.built = True

    def __call__(self, inputs, state, scope=None):
        if self._scope is None:
            with vs.variable_scope(scope, default_name=self._base_name) as captured:
                self._scope = captured
        with vs.variable_scope(self._scope, reuse=True if self.built else self._reuse,
                               auxiliary_name_scope=False):
            with _ops.name_scope(self._scope.original_name_scope or None):
                if not self.built:
                    first = cfg.flatten(inputs)[0]
                    if self._dtype is None:
                        self._dtype = _ops.convert_to_tensor(first).dtype
                    self.build(_ops.convert_to_tensor(first).shape)
                    self.built = True
                return self.call(inputs, state)

    def add_variable(self, name, shape, dtype=None, initializer=None, trainable=True):
        return vs.get_variable(name, shape, dtype=dtype or self._dtype, initializer=initializer,
                               trainable=self._trainable and trainable)

    add_weight = add_variable

    @property
    def trainable_variables(self):
        return [v for v in _ops.get_collection(_ops.GraphKeys.TRAINABLE_VARIABLES)
                if self._scope is not None and v.op.name.startswith(self._scope.name + "/")]

    variables = weights = trainable_weights = trainable_variables

    def zero_state(self, batch_size, dtype):
        """Zeros shaped like ``state_size`` with ``batch_size`` rows."""
        array_ops = _ops_mod()[0]
        with _ops.name_scope(None, f"{type(self).__name__}ZeroState", [batch_size]):
            def zeros(size):
                dims = [size] if isinstance(size, int) else list(TensorShape(size).as_list())
                if isinstance(batch_size, int):
                    return array_ops.zeros([batch_size] + dims, dtype=dtype)
                shape = array_ops.concat([array_ops.reshape(batch_size, [1]), dims], 0)
                return array_ops.zeros(shape, dtype=dtype)

            return _map(zeros, self.state_size)

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        if inputs is not None:
            inputs = _ops.convert_to_tensor(inputs)
            array_ops = _ops_mod()[0]
            batch_size = inputs.shape[0].value or array_ops.shape(inputs)[0]
            dtype = dtype or inputs.dtype
        return self.zero_state(batch_size, dtype)


def _map(fn, structure):
    if isinstance(structure, LSTMStateTuple):
        return LSTMStateTuple(*[_map(fn, s) for s in structure])
    if isinstance(structure, (list, tuple)) and not isinstance(structure, TensorShape):
        return type(structure)(_map(fn, s) for s in structure)
    return fn(structure)


def _input_depth(inputs_shape, cell):
    depth = TensorShape(inputs_shape)[-1].value if TensorShape(inputs_shape).ndims else None
    if depth is None:
        raise ValueError(f"Expected inputs.shape[-1] to be known, saw shape: {inputs_shape}")
    return depth


def _activation(activation):
    if activation is None:
        return _ops_mod()[1].tanh
    return activation


def _linear(args, kernel, bias):
    from .linalg_ops import matmul

    array_ops, _, nn_ops = _ops_mod()
    out = matmul(array_ops.concat(args, 1), kernel)
    return nn_ops.bias_add(out, bias)


class BasicRNNCell(RNNCell):
    """``output = new_state = act(W [inputs, state] + b)``."""

    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None, **kwargs):
        super().__init__(name=name, dtype=dtype, _reuse=reuse, **kwargs)
        self._num_units = num_units
        self._activation = _activation(activation)

    state_size = property(lambda self: self._num_units)
    output_size = property(lambda self: self._num_units)

    def build(self, inputs_shape):
        depth = _input_depth(inputs_shape, self)
        self._kernel = self.add_variable(_WEIGHTS, [depth + self._num_units, self._num_units])
        self._bias = self.add_variable(_BIAS, [self._num_units], initializer=_zeros())

    def call(self, inputs, state):
        output = self._activation(_linear([inputs, state], self._kernel, self._bias))
        return output, output


def _zeros():
    from .init_ops import zeros_initializer

    return zeros_initializer()


def _ones():
    from .init_ops import constant_initializer

    return constant_initializer(1.0)


class GRUCell(RNNCell):
    """Gated recurrent unit (Cho et al. 2014), TF's variables ``gates/`` and ``candidate/``."""

    def __init__(self, num_units, activation=None, reuse=None, kernel_initializer=None,
                 bias_initializer=None, name=None, dtype=None, **kwargs):
        super().__init__(name=name, dtype=dtype, _reuse=reuse, **kwargs)
        self._num_units = num_units
        self._activation = _activation(activation)
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    state_size = property(lambda self: self._num_units)
    output_size = property(lambda self: self._num_units)

    def build(self, inputs_shape):
        depth, n = _input_depth(inputs_shape, self), self._num_units
        self._gate_kernel = self.add_variable(f"gates/{_WEIGHTS}", [depth + n, 2 * n],
                                              initializer=self._kernel_initializer)
        self._gate_bias = self.add_variable(f"gates/{_BIAS}", [2 * n],
                                            initializer=self._bias_initializer or _ones())
        self._candidate_kernel = self.add_variable(f"candidate/{_WEIGHTS}", [depth + n, n],
                                                   initializer=self._kernel_initializer)
        self._candidate_bias = self.add_variable(f"candidate/{_BIAS}", [n],
                                                 initializer=self._bias_initializer or _zeros())

    def call(self, inputs, state):
        array_ops, math_ops, _ = _ops_mod()
        value = math_ops.sigmoid(_linear([inputs, state], self._gate_kernel, self._gate_bias))
        r, u = array_ops.split(value, 2, axis=1)
        c = self._activation(_linear([inputs, r * state], self._candidate_kernel, self._candidate_bias))
        new_h = u * state + (1 - u) * c
        return new_h, new_h


class BasicLSTMCell(RNNCell):
    """LSTM without peepholes or projection (Zaremba et al. 2014), with ``forget_bias``."""

    def __init__(self, num_units, forget_bias=1.0, state_is_tuple=True, activation=None,
                 reuse=None, name=None, dtype=None, **kwargs):
        super().__init__(name=name, dtype=dtype, _reuse=reuse, **kwargs)
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation(activation)

    @property
    def state_size(self):
        n = self._num_units
        return LSTMStateTuple(n, n) if self._state_is_tuple else 2 * n

    output_size = property(lambda self: self._num_units)

    def build(self, inputs_shape):
        depth, n = _input_depth(inputs_shape, self), self._num_units
        self._kernel = self.add_variable(_WEIGHTS, [depth + n, 4 * n])
        self._bias = self.add_variable(_BIAS, [4 * n], initializer=_zeros())

    def call(self, inputs, state):
        array_ops, math_ops, _ = _ops_mod()
        sigmoid = math_ops.sigmoid
        if self._state_is_tuple:
            c, h = state
        else:
            c, h = array_ops.split(state, 2, axis=1)
        i, j, f, o = array_ops.split(_linear([inputs, h], self._kernel, self._bias), 4, axis=1)
        forget_bias = _ops.convert_to_tensor(self._forget_bias, dtype=f.dtype)
        new_c = c * sigmoid(f + forget_bias) + sigmoid(i) * self._activation(j)
        new_h = self._activation(new_c) * sigmoid(o)
        if self._state_is_tuple:
            return new_h, LSTMStateTuple(new_c, new_h)
        return new_h, array_ops.concat([new_c, new_h], 1)


class LSTMCell(RNNCell):
    """LSTM with optional peepholes (``use_peepholes``), cell clipping and a projection
    (``num_proj``, ``proj_clip``)."""

    def __init__(self, num_units, use_peepholes=False, cell_clip=None, initializer=None,
                 num_proj=None, proj_clip=None, num_unit_shards=None, num_proj_shards=None,
                 forget_bias=1.0, state_is_tuple=True, activation=None, reuse=None, name=None,
                 dtype=None, **kwargs):
        super().__init__(name=name, dtype=dtype, _reuse=reuse, **kwargs)
        if num_unit_shards is not None or num_proj_shards is not None:
            raise NotImplementedError("LSTMCell: num_unit_shards and num_proj_shards (deprecated "
                                      "sharding) are not supported")
        self._num_units = num_units
        self._use_peepholes = use_peepholes
        self._cell_clip = cell_clip
        self._initializer = initializer
        self._num_proj = num_proj
        self._proj_clip = proj_clip
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation(activation)

    @property
    def state_size(self):
        out = self._num_proj or self._num_units
        return LSTMStateTuple(self._num_units, out) if self._state_is_tuple else self._num_units + out

    output_size = property(lambda self: self._num_proj or self._num_units)

    def build(self, inputs_shape):
        depth, n = _input_depth(inputs_shape, self), self._num_units
        h_depth = self._num_proj or n
        self._kernel = self.add_variable(_WEIGHTS, [depth + h_depth, 4 * n],
                                         initializer=self._initializer)
        self._bias = self.add_variable(_BIAS, [4 * n], initializer=_zeros())
        if self._use_peepholes:
            self._w_f_diag = self.add_variable("w_f_diag", [n], initializer=self._initializer)
            self._w_i_diag = self.add_variable("w_i_diag", [n], initializer=self._initializer)
            self._w_o_diag = self.add_variable("w_o_diag", [n], initializer=self._initializer)
        if self._num_proj is not None:
            self._proj_kernel = self.add_variable(f"projection/{_WEIGHTS}", [n, self._num_proj],
                                                  initializer=self._initializer)

    def call(self, inputs, state):
        array_ops, math_ops, _ = _ops_mod()
        sigmoid, act = math_ops.sigmoid, self._activation
        n = self._num_units
        if self._state_is_tuple:
            c_prev, m_prev = state
        else:
            from .slicing_ops import slice as slice_

            c_prev = slice_(state, [0, 0], [-1, n])
            m_prev = slice_(state, [0, n], [-1, self._num_proj or n])
        i, j, f, o = array_ops.split(_linear([inputs, m_prev], self._kernel, self._bias), 4, axis=1)
        if self._use_peepholes:
            c = (sigmoid(f + self._forget_bias + self._w_f_diag * c_prev) * c_prev
                 + sigmoid(i + self._w_i_diag * c_prev) * act(j))
        else:
            c = sigmoid(f + self._forget_bias) * c_prev + sigmoid(i) * act(j)
        if self._cell_clip is not None:
            c = _clip(c, self._cell_clip)
        if self._use_peepholes:
            m = sigmoid(o + self._w_o_diag * c) * act(c)
        else:
            m = sigmoid(o) * act(c)
        if self._num_proj is not None:
            from .linalg_ops import matmul

            m = matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = _clip(m, self._proj_clip)
        if self._state_is_tuple:
            return m, LSTMStateTuple(c, m)
        return m, array_ops.concat([c, m], 1)


def _clip(x, limit):
    from .clip_ops import clip_by_value

    return clip_by_value(x, -limit, limit)


class MultiRNNCell(RNNCell):
    """Cells stacked: each one's output is the next one's input (scopes ``cell_<i>``)."""

    def __init__(self, cells, state_is_tuple=True):
        super().__init__()
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        if not isinstance(cells, (list, tuple)):
            raise TypeError(f"cells must be a list or tuple, but saw: {cells}.")
        if not state_is_tuple:
            raise NotImplementedError("MultiRNNCell(state_is_tuple=False) is not supported")
        self._cells = list(cells)

    state_size = property(lambda self: tuple(c.state_size for c in self._cells))
    output_size = property(lambda self: self._cells[-1].output_size)

    def zero_state(self, batch_size, dtype):
        with _ops.name_scope(None, "MultiRNNCellZeroState", [batch_size]):
            return tuple(c.zero_state(batch_size, dtype) for c in self._cells)

    def build(self, inputs_shape):
        pass

    def call(self, inputs, state):
        cur, new_states = inputs, []
        for i, cell in enumerate(self._cells):
            with vs.variable_scope(f"cell_{i}"):
                if not isinstance(state, (list, tuple)):
                    raise ValueError(f"Expected state to be a tuple of length {len(self._cells)}, "
                                     f"but received: {state}")
                cur, s = cell(cur, state[i])
                new_states.append(s)
        return cur, tuple(new_states)


class _Wrapper(RNNCell):
    """A cell around a cell: no scope of its own (the wrapped cell's variables keep
    their names), as TF's wrappers."""

    def __init__(self, cell):
        super().__init__()
        self._cell = cell

    state_size = property(lambda self: self._cell.state_size)
    output_size = property(lambda self: self._cell.output_size)

    def zero_state(self, batch_size, dtype):
        return self._cell.zero_state(batch_size, dtype)

    def __call__(self, inputs, state, scope=None):
        return self.call(inputs, state, scope)


class DropoutWrapper(_Wrapper):
    """Dropout on a cell's inputs, outputs and (but for an LSTM's c) state."""

    def __init__(self, cell, input_keep_prob=1.0, output_keep_prob=1.0, state_keep_prob=1.0,
                 variational_recurrent=False, input_size=None, dtype=None, seed=None,
                 dropout_state_filter_visitor=None):
        super().__init__(cell)
        if variational_recurrent:
            raise NotImplementedError("DropoutWrapper(variational_recurrent=True) is not supported")
        for name, p in (("input", input_keep_prob), ("output", output_keep_prob),
                        ("state", state_keep_prob)):
            if isinstance(p, (int, float)) and not 0.0 < p <= 1.0:
                raise ValueError(f"Parameter {name}_keep_prob must be between 0 and 1: {p}")
        self._keep = (input_keep_prob, output_keep_prob, state_keep_prob)
        self._seed = seed
        self._filter = dropout_state_filter_visitor

    @staticmethod
    def _should_drop(p):
        return not (isinstance(p, (int, float)) and p == 1.0)

    def _dropout(self, values, p, salt, keep=None):
        from .nn_ops import dropout

        def drop(i, v):
            if keep is not None and not keep[i]:
                return v
            seed = None if self._seed is None else self._seed + salt + i
            return dropout(v, keep_prob=p, seed=seed)

        flat = cfg.flatten(values)
        return cfg.pack_sequence_as(values, [drop(i, v) for i, v in enumerate(flat)]) \
            if cfg.is_sequence(values) else drop(0, values)

    def call(self, inputs, state, scope=None):
        p_in, p_out, p_state = self._keep
        if self._should_drop(p_in):
            inputs = self._dropout(inputs, p_in, 0)
        output, new_state = self._cell(inputs, state, scope=scope)
        if self._should_drop(p_state):
            new_state = self._dropout(new_state, p_state, 100, self._state_mask(new_state))
        if self._should_drop(p_out):
            output = self._dropout(output, p_out, 200)
        return output, new_state

    def _state_mask(self, state):
        """Which flat state parts get dropout: all but an LSTM's c (TF's default filter)."""
        def visit(s):
            if self._filter is not None:
                keep = self._filter(s)
                return [bool(keep)] * len(cfg.flatten(s)) if isinstance(keep, bool) else cfg.flatten(keep)
            if isinstance(s, LSTMStateTuple):
                return [False, True]
            if isinstance(s, (list, tuple)):
                return [k for item in s for k in visit(item)]
            return [True]
        return visit(state)


class ResidualWrapper(_Wrapper):
    """The cell's output plus its input (``residual_fn(inputs, outputs)`` when given)."""

    def __init__(self, cell, residual_fn=None):
        super().__init__(cell)
        self._residual_fn = residual_fn

    def call(self, inputs, state, scope=None):
        output, new_state = self._cell(inputs, state, scope=scope)
        if self._residual_fn is not None:
            return self._residual_fn(inputs, output), new_state
        flat = [a + b for a, b in zip(cfg.flatten(inputs), cfg.flatten(output))]
        packed = cfg.pack_sequence_as(output, flat) if cfg.is_sequence(output) else flat[0]
        return packed, new_state
