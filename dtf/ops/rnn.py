"""TF1's RNN drivers: tf.nn.dynamic_rnn (a tf.while_loop over time with TensorArrays, as
TF builds it), tf.nn.static_rnn (one cell call per step) and their bidirectional forms."""
from __future__ import annotations

from dtf.framework import dtypes as _dtypes
from dtf.framework import ops as _ops
from dtf.framework.tensor_shape import TensorShape

from . import control_flow_graphs as cfg
from . import variable_scope as vs
from .control_flow_while import while_loop
from .matrix_ops import reverse_sequence
from .tensor_array_ops import TensorArray


def _a():
    from . import array_ops

    return array_ops


def _m():
    from . import math_ops

    return math_ops


def _transpose_batch_time(x):
    rank = x.shape.ndims
    if rank is not None and rank < 2:
        return x
    return _a().transpose(x, [1, 0] + list(range(2, rank)))


def _batch_size(flat_time_major):
    for x in flat_time_major:
        if x.shape.ndims and x.shape.ndims >= 2 and x.shape[1].value is not None:
            return x.shape[1].value
    return _a().shape(flat_time_major[0])[1]


def _copy_through(copy, old, new):
    """Where ``copy`` (past a row's sequence length): ``old``, else ``new``, row-wise."""
    if new.shape.ndims == 0:
        return new
    return _m().where(copy, old, new)


def _step(time, sequence_length, zero_output, state, call_cell):
    """One cell step; rows past their length output zeros and keep their state."""
    output, new_state = call_cell()
    if sequence_length is None:
        return output, new_state
    copy = _m().greater_equal(time, sequence_length)
    flat_out = [_copy_through(copy, z, o) for z, o in zip(cfg.flatten(zero_output), cfg.flatten(output))]
    flat_state = [_copy_through(copy, s, n) for s, n in zip(cfg.flatten(state), cfg.flatten(new_state))]
    pack = cfg.pack_sequence_as
    return (pack(output, flat_out) if cfg.is_sequence(output) else flat_out[0],
            pack(new_state, flat_state) if cfg.is_sequence(new_state) else flat_state[0])


def _zero_output(cell, batch_size, dtype):
    a = _a()

    def zeros(size):
        dims = [size] if isinstance(size, int) else TensorShape(size).as_list()
        if isinstance(batch_size, int):
            return a.zeros([batch_size] + dims, dtype)
        return a.zeros(a.concat([a.reshape(batch_size, [1]), dims], 0), dtype)

    size = cell.output_size
    return cfg.pack_sequence_as(size, [zeros(s) for s in cfg.flatten(size)]) \
        if cfg.is_sequence(size) else zeros(size)


def _lengths(sequence_length):
    if sequence_length is None:
        return None
    lengths = _m().cast(_ops.convert_to_tensor(sequence_length), _dtypes.int32)
    if lengths.shape.ndims not in (None, 1):
        raise ValueError(f"sequence_length must be a vector of length batch_size, but saw "
                         f"shape: {lengths.shape}")
    return _a().identity(lengths, name="sequence_length")


def _initial_state(cell, initial_state, batch_size, dtype):
    if initial_state is not None:
        return initial_state
    if dtype is None:
        raise ValueError("If there is no initial_state, you must give a dtype.")
    return cell.zero_state(batch_size, dtype)


def dynamic_rnn(cell, inputs, sequence_length=None, initial_state=None, dtype=None,
                parallel_iterations=None, swap_memory=False, time_major=False, scope=None):
    """Runs ``cell`` over the time dimension of ``inputs`` in a tf.while_loop; returns
    (outputs, final_state). Past a row's ``sequence_length`` its outputs are zeros and its
    state is carried unchanged."""
    with vs.variable_scope(scope or "rnn"):
        flat = [_ops.convert_to_tensor(x) for x in cfg.flatten(inputs)]
        if not time_major:
            flat = [_transpose_batch_time(x) for x in flat]
        lengths = _lengths(sequence_length)
        batch_size = _batch_size(flat)
        state = _initial_state(cell, initial_state, batch_size, dtype)
        dtype = dtype or cfg.flatten(state)[0].dtype
        a, m = _a(), _m()
        time_steps = a.shape(flat[0])[0]
        const_steps = flat[0].shape[0].value if flat[0].shape.ndims else None
        const_batch = batch_size if isinstance(batch_size, int) else None
        zero_output = _zero_output(cell, batch_size, dtype)
        input_tas = [TensorArray(x.dtype, size=time_steps, element_shape=x.shape[1:]).unstack(x)
                     for x in flat]
        out_sizes = cfg.flatten(cell.output_size)
        out_tas = [TensorArray(dtype, size=time_steps,
                               element_shape=TensorShape([const_batch]).concatenate(
                                   [s] if isinstance(s, int) else TensorShape(s)))
                   for s in out_sizes]

        def body(time, tas, state):
            step_in = [ta.read(time) for ta in input_tas]
            for x, t in zip(step_in, flat):
                x.set_shape(t.shape[1:])
            step_in = cfg.pack_sequence_as(inputs, step_in) if cfg.is_sequence(inputs) else step_in[0]
            output, new_state = _step(time, lengths, zero_output, state,
                                      lambda: cell(step_in, state))
            tas = [ta.write(time, o) for ta, o in zip(tas, cfg.flatten(output))]
            return time + 1, tas, new_state

        from .reduction_ops import reduce_max

        if lengths is None:
            bound = time_steps
        else:
            bound = m.minimum(time_steps, m.maximum(1, reduce_max(lengths)))
        _, out_tas, final_state = while_loop(
            lambda time, *_: time < bound, body,
            (_ops.convert_to_tensor(0, name="time"), out_tas, state),
            parallel_iterations=parallel_iterations or 32, swap_memory=swap_memory,
            maximum_iterations=time_steps)
        outputs = []
        for ta, s in zip(out_tas, out_sizes):
            o = ta.stack()
            o.set_shape(TensorShape([const_steps, const_batch]).concatenate(
                [s] if isinstance(s, int) else TensorShape(s)))
            outputs.append(o if time_major else _transpose_batch_time(o))
        size = cell.output_size
        outputs = cfg.pack_sequence_as(size, outputs) if cfg.is_sequence(size) else outputs[0]
        return outputs, final_state


def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
    """The cell unrolled over a Python list of per-step inputs; (outputs list, final state)."""
    if not isinstance(inputs, (list, tuple)):
        raise TypeError("inputs must be a sequence")
    if not inputs:
        raise ValueError("inputs must not be empty")
    with vs.variable_scope(scope or "rnn") as varscope:
        first = _ops.convert_to_tensor(cfg.flatten(inputs[0])[0])
        batch_size = first.shape[0].value if first.shape.ndims else None
        if batch_size is None:
            batch_size = _a().shape(first)[0]
        state = _initial_state(cell, initial_state, batch_size, dtype)
        lengths = _lengths(sequence_length)
        zero_output = None
        if lengths is not None:
            zero_output = _zero_output(cell, batch_size, dtype or cfg.flatten(state)[0].dtype)
        outputs = []
        for time, step_in in enumerate(inputs):
            if time > 0:
                varscope.reuse_variables()
            output, state = _step(time, lengths, zero_output, state,
                                  lambda: cell(step_in, state))
            outputs.append(output)
        return outputs, state


def _reverse(x, lengths, seq_axis, batch_axis):
    if lengths is None:
        return _a().reverse(x, axis=[seq_axis])
    return reverse_sequence(x, lengths, seq_axis=seq_axis, batch_axis=batch_axis)


def _map(fn, structure):
    flat = [fn(x) for x in cfg.flatten(structure)]
    return cfg.pack_sequence_as(structure, flat) if cfg.is_sequence(structure) else flat[0]


def bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length=None,
                              initial_state_fw=None, initial_state_bw=None, dtype=None,
                              parallel_iterations=None, swap_memory=False, time_major=False,
                              scope=None):
    """dynamic_rnn forward and over the (length-aware) reversed inputs; returns
    ((output_fw, output_bw), (state_fw, state_bw)), output_bw in the inputs' order."""
    time_axis, batch_axis = (0, 1) if time_major else (1, 0)
    with vs.variable_scope(scope or "bidirectional_rnn"):
        with vs.variable_scope("fw") as fw_scope:
            out_fw, state_fw = dynamic_rnn(cell_fw, inputs, sequence_length, initial_state_fw,
                                           dtype, parallel_iterations, swap_memory, time_major,
                                           scope=fw_scope)
        with vs.variable_scope("bw") as bw_scope:
            reversed_in = _map(lambda x: _reverse(x, sequence_length, time_axis, batch_axis), inputs)
            tmp, state_bw = dynamic_rnn(cell_bw, reversed_in, sequence_length, initial_state_bw,
                                        dtype, parallel_iterations, swap_memory, time_major,
                                        scope=bw_scope)
    out_bw = _map(lambda x: _reverse(x, sequence_length, time_axis, batch_axis), tmp)
    return (out_fw, out_bw), (state_fw, state_bw)


def _reverse_steps(steps, lengths):
    if lengths is None:
        return list(reversed(steps))
    a = _a()
    flat_steps = [cfg.flatten(s) for s in steps]
    columns = []
    for parts in zip(*flat_steps):
        stacked = a.stack(list(parts))
        columns.append(a.unstack(reverse_sequence(stacked, lengths, seq_axis=0, batch_axis=1)))
    rows = list(zip(*columns))
    return [cfg.pack_sequence_as(s, list(r)) if cfg.is_sequence(s) else r[0]
            for s, r in zip(steps, rows)]


def static_bidirectional_rnn(cell_fw, cell_bw, inputs, initial_state_fw=None,
                             initial_state_bw=None, dtype=None, sequence_length=None, scope=None):
    """static_rnn forward and over the reversed steps; returns (outputs with the two
    directions concatenated per step, state_fw, state_bw)."""
    if not isinstance(inputs, (list, tuple)):
        raise TypeError("inputs must be a list")
    if not inputs:
        raise ValueError("inputs must not be empty")
    with vs.variable_scope(scope or "bidirectional_rnn"):
        with vs.variable_scope("fw") as fw_scope:
            out_fw, state_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype,
                                          sequence_length, scope=fw_scope)
        with vs.variable_scope("bw") as bw_scope:
            tmp, state_bw = static_rnn(cell_bw, _reverse_steps(inputs, sequence_length),
                                       initial_state_bw, dtype, sequence_length, scope=bw_scope)
    out_bw = _reverse_steps(tmp, sequence_length)
    outputs = []
    for fw, bw in zip(out_fw, out_bw):
        flat = [_a().concat([f, b], 1) for f, b in zip(cfg.flatten(fw), cfg.flatten(bw))]
        outputs.append(cfg.pack_sequence_as(fw, flat) if cfg.is_sequence(fw) else flat[0])
    return outputs, state_fw, state_bw
