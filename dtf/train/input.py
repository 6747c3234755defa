"""TF1's queue-based input (tensorflow/python/training/input.py): producers that fill a
queue of file names or indices, and ``batch``/``shuffle_batch`` that assemble batches in
a queue, each fed by QueueRunner threads registered in the graph."""
from __future__ import annotations

from dtf.framework import dtypes as _dtypes
from dtf.framework import ops as _ops
from dtf.framework.ops import GraphKeys
from dtf.framework.tensor_shape import TensorShape, as_shape
from dtf.train.queue_runner import QueueRunner, add_queue_runner

__all__ = ["batch", "batch_join", "input_producer", "limit_epochs", "match_filenames_once",
           "maybe_batch", "maybe_batch_join", "maybe_shuffle_batch", "maybe_shuffle_batch_join",
           "range_input_producer",
           "shuffle_batch", "shuffle_batch_join", "slice_input_producer", "string_input_producer"]


def limit_epochs(tensor, num_epochs=None, name=None):
    """``tensor``, passed ``num_epochs`` times, then OutOfRangeError (a local ``epochs``
    counter, so run the local variables initializer)."""
    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 not {num_epochs}.")
    from dtf.ops.array_ops import identity
    from dtf.ops.state_ops import count_up_to
    from dtf.ops.variables import Variable

    with _ops.name_scope(name, "limit_epochs", [tensor]) as scope:
        zero64 = _ops.convert_to_tensor(0, dtype=_dtypes.int64)
        epochs = Variable(zero64, name="epochs", trainable=False,
                          collections=[GraphKeys.LOCAL_VARIABLES])
        counter = count_up_to(epochs, num_epochs)
        with _ops.control_dependencies([counter]):
            return identity(tensor, name=scope)


def match_filenames_once(pattern, name=None):
    """A local variable holding the files that match ``pattern``, listed when the local
    variables are initialized."""
    from dtf.io.parsing_ops import matching_files
    from dtf.ops.variables import Variable

    with _ops.name_scope(name, "matching_filenames", [pattern]) as scope:
        return Variable(matching_files(pattern), trainable=False, name=scope,
                        validate_shape=False, collections=[GraphKeys.LOCAL_VARIABLES])


def _fraction_summary(name, queue, capacity):
    from dtf.ops.math_ops import cast
    from dtf.summary.ops import scalar

    scalar(name, cast(queue.size(), _dtypes.float32) * (1.0 / capacity))


def input_producer(input_tensor, element_shape=None, num_epochs=None, shuffle=True, seed=None,
                   capacity=32, shared_name=None, summary_name=None, name=None, cancel_op=None):
    """A FIFOQueue filled with the rows of ``input_tensor`` (shuffled each epoch unless
    ``shuffle=False``) by a QueueRunner."""
    from dtf.ops.data_flow_ops import FIFOQueue
    from dtf.ops.random_ops import random_shuffle

    with _ops.name_scope(name, "input_producer", [input_tensor]):
        input_tensor = _ops.convert_to_tensor(input_tensor, name="input_tensor")
        shape = input_tensor.shape.with_rank_at_least(1)
        rows = TensorShape(None) if shape.ndims is None else TensorShape(shape.as_list()[1:])
        element_shape = rows if element_shape is None else rows.merge_with(as_shape(element_shape))
        if not element_shape.is_fully_defined():
            raise ValueError("Either `input_tensor` must have a fully defined shape or "
                             "`element_shape` must be specified")
        if shuffle:
            input_tensor = random_shuffle(input_tensor, seed=seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        q = FIFOQueue(capacity, [input_tensor.dtype], shapes=[element_shape],
                      shared_name=shared_name, name=name or "fifo_queue")
        enq = q.enqueue_many([input_tensor])
        add_queue_runner(QueueRunner(q, [enq], cancel_op=cancel_op))
        if summary_name is not None:
            _fraction_summary(summary_name, q, capacity)
        return q


def string_input_producer(string_tensor, num_epochs=None, shuffle=True, seed=None, capacity=32,
                          shared_name=None, name=None, cancel_op=None):
    """A queue of the strings (usually file names) in ``string_tensor``, for readers."""
    if isinstance(string_tensor, (list, tuple)) and not string_tensor:
        raise ValueError("string_input_producer requires a non-null input tensor")
    with _ops.name_scope(name, "input_producer", [string_tensor]):
        string_tensor = _ops.convert_to_tensor(string_tensor, dtype=_dtypes.string)
        return input_producer(string_tensor, [], num_epochs, shuffle, seed, capacity, shared_name,
                              f"fraction_of_{capacity}_full", "fifo_queue", cancel_op)


def range_input_producer(limit, num_epochs=None, shuffle=True, seed=None, capacity=32,
                         shared_name=None, name=None):
    """A queue of the integers 0 .. limit-1 (int32)."""
    from dtf.ops.array_ops import range as _range

    with _ops.name_scope(name, "input_producer", [limit]):
        return input_producer(_range(limit), [], num_epochs, shuffle, seed, capacity, shared_name,
                              f"fraction_of_{capacity}_full", "fifo_queue")


def slice_input_producer(tensor_list, num_epochs=None, shuffle=True, seed=None, capacity=32,
                         shared_name=None, name=None):
    """One slice (along dimension 0) of each tensor of ``tensor_list`` per dequeue."""
    from dtf.ops.array_ops import shape as _shape
    from dtf.ops.slicing_ops import gather

    with _ops.name_scope(name, "input_producer", tensor_list):
        tensors = [_ops.convert_to_tensor(t) for t in tensor_list]
        if not tensors:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        n = tensors[0].shape.with_rank_at_least(1).as_list()[0]
        limit = n if n is not None else _shape(tensors[0])[0]
        queue = range_input_producer(limit, num_epochs, shuffle, seed, capacity, shared_name)
        index = queue.dequeue()
        return [gather(t, index) for t in tensors]


# -- batching ------------------------------------------------------------------------
def _flatten(tensors):
    if isinstance(tensors, dict):
        keys = sorted(tensors)
        return [tensors[k] for k in keys], lambda out: dict(zip(keys, out))
    if isinstance(tensors, (list, tuple)):
        return list(tensors), list
    return [tensors], lambda out: out[0]


def _shapes(tensor_list, shapes, enqueue_many, dynamic_pad=False):
    if shapes is not None:
        return [as_shape(s) for s in shapes]
    out = []
    for t in tensor_list:
        s = t.shape
        if enqueue_many:
            s = TensorShape(s.with_rank_at_least(1).as_list()[1:])
        if not (s.ndims is not None if dynamic_pad else s.is_fully_defined()):
            raise ValueError(f"All shapes must be fully defined: {[x.shape for x in tensor_list]}")
        out.append(s)
    return out


def _fifo(capacity, dtypes, shapes, shared_name, dynamic_pad):
    from dtf.ops.data_flow_ops import FIFOQueue, PaddingFIFOQueue

    cls = PaddingFIFOQueue if dynamic_pad else FIFOQueue
    return cls(capacity, dtypes, shapes, shared_name=shared_name)


def _validate_keep_input(keep_input, enqueue_many):
    keep_input = _ops.convert_to_tensor(keep_input, dtype=_dtypes.bool, name="keep_input")
    ndims = keep_input.shape.ndims
    if ndims is None:
        raise ValueError("`keep_input` dimensions must be known at graph construction.")
    if not enqueue_many and ndims == 1:
        raise ValueError("`keep_input` cannot be a vector when `enqueue_many=False`.")
    if ndims > 1:
        raise ValueError("`keep_input` must be 0 or 1 dimensions.")
    return keep_input


def _enqueue(queue, tensor_list, enqueue_many, keep_input=None):
    """The enqueue op of ``tensor_list``; with ``keep_input`` only the kept elements go in
    (TF's rule). A scalar flag is applied as a vector over the element(s), so the op is
    one enqueue_many of the kept ones rather than TF's cond around the enqueue: what
    reaches the queue is the same."""
    if keep_input is None:
        return queue.enqueue_many(tensor_list) if enqueue_many else queue.enqueue(tensor_list)
    from dtf.ops import array_ops, math_ops, segment_ops

    if not enqueue_many:
        tensor_list = [array_ops.expand_dims(t, 0) for t in tensor_list]
    if keep_input.shape.ndims == 0:
        keep_input = array_ops.fill(array_ops.shape(tensor_list[0])[:1], keep_input)
    select = math_ops.cast(keep_input, _dtypes.int32)
    kept = [segment_ops.dynamic_partition(t, select, num_partitions=2)[1] for t in tensor_list]
    return queue.enqueue_many(kept)


def _batch(queue, enqueues, batch_size, enqueue_many, allow_smaller, pack, name, summary):
    add_queue_runner(QueueRunner(queue, enqueues))
    _fraction_summary(summary, queue, queue.queue_ref.op.get_attr("capacity"))
    out = (queue.dequeue_up_to if allow_smaller else queue.dequeue_many)(batch_size, name=name)
    return pack(out if isinstance(out, list) else [out])


def batch(tensors, batch_size, num_threads=1, capacity=32, enqueue_many=False, shapes=None,
          dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    """Batches of ``batch_size`` from ``tensors`` (a list or dict), assembled in a FIFOQueue
    by ``num_threads`` QueueRunner threads."""
    return _batch_of(tensors, None, batch_size, num_threads, capacity, enqueue_many, shapes,
                     dynamic_pad, allow_smaller_final_batch, shared_name, name, "batch")


def maybe_batch(tensors, keep_input, batch_size, num_threads=1, capacity=32, enqueue_many=False,
                shapes=None, dynamic_pad=False, allow_smaller_final_batch=False,
                shared_name=None, name=None):
    """batch, enqueuing only the elements whose ``keep_input`` is True (a scalar, or with
    ``enqueue_many`` one flag per element)."""
    keep_input = _validate_keep_input(keep_input, enqueue_many)
    return _batch_of(tensors, keep_input, batch_size, num_threads, capacity, enqueue_many,
                     shapes, dynamic_pad, allow_smaller_final_batch, shared_name, name,
                     "maybe_batch")


def _batch_of(tensors, keep_input, batch_size, num_threads, capacity, enqueue_many, shapes,
              dynamic_pad, allow_smaller_final_batch, shared_name, name, default_name):
    tensor_list, pack = _flatten(tensors)
    with _ops.name_scope(name, default_name, tensor_list) as scope:
        tensor_list = [_ops.convert_to_tensor(t) for t in tensor_list]
        shapes = _shapes(tensor_list, shapes, enqueue_many, dynamic_pad)
        q = _fifo(capacity, [t.dtype for t in tensor_list], shapes, shared_name, dynamic_pad)
        enq = _enqueue(q, tensor_list, enqueue_many, keep_input)
        return _batch(q, [enq] * num_threads, batch_size, enqueue_many, allow_smaller_final_batch,
                      pack, scope, f"fraction_of_{capacity}_full")


def batch_join(tensors_list, batch_size, capacity=32, enqueue_many=False, shapes=None,
               dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    """Like batch, with one enqueuing thread per element of ``tensors_list``."""
    return _batch_join_of(tensors_list, None, batch_size, capacity, enqueue_many, shapes,
                          dynamic_pad, allow_smaller_final_batch, shared_name, name, "batch_join")


def maybe_batch_join(tensors_list, keep_input, batch_size, capacity=32, enqueue_many=False,
                     shapes=None, dynamic_pad=False, allow_smaller_final_batch=False,
                     shared_name=None, name=None):
    """batch_join, enqueuing only the elements whose ``keep_input`` is True."""
    keep_input = _validate_keep_input(keep_input, enqueue_many)
    return _batch_join_of(tensors_list, keep_input, batch_size, capacity, enqueue_many, shapes,
                          dynamic_pad, allow_smaller_final_batch, shared_name, name,
                          "maybe_batch_join")


def _batch_join_of(tensors_list, keep_input, batch_size, capacity, enqueue_many, shapes,
                   dynamic_pad, allow_smaller_final_batch, shared_name, name, default_name):
    flat = [_flatten(t) for t in tensors_list]
    pack = flat[0][1]
    with _ops.name_scope(name, default_name, [t for f, _ in flat for t in f]) as scope:
        lists = [[_ops.convert_to_tensor(t) for t in f] for f, _ in flat]
        shapes = _shapes(lists[0], shapes, enqueue_many, dynamic_pad)
        q = _fifo(capacity, [t.dtype for t in lists[0]], shapes, shared_name, dynamic_pad)
        enqs = [_enqueue(q, tl, enqueue_many, keep_input) for tl in lists]
        return _batch(q, enqs, batch_size, enqueue_many, allow_smaller_final_batch, pack,
                      scope, f"fraction_of_{capacity}_full")


def shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, num_threads=1, seed=None,
                  enqueue_many=False, shapes=None, allow_smaller_final_batch=False,
                  shared_name=None, name=None):
    """Batches drawn at random from a RandomShuffleQueue that keeps ``min_after_dequeue``
    elements back for mixing."""
    return _shuffle_batch_of(tensors, None, batch_size, capacity, min_after_dequeue,
                             num_threads, seed, enqueue_many, shapes, allow_smaller_final_batch,
                             shared_name, name, "shuffle_batch")


def maybe_shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, keep_input,
                        num_threads=1, seed=None, enqueue_many=False, shapes=None,
                        allow_smaller_final_batch=False, shared_name=None, name=None):
    """shuffle_batch, enqueuing only the elements whose ``keep_input`` is True."""
    keep_input = _validate_keep_input(keep_input, enqueue_many)
    return _shuffle_batch_of(tensors, keep_input, batch_size, capacity, min_after_dequeue,
                             num_threads, seed, enqueue_many, shapes, allow_smaller_final_batch,
                             shared_name, name, "maybe_shuffle_batch")


def _shuffle_batch_of(tensors, keep_input, batch_size, capacity, min_after_dequeue, num_threads,
                      seed, enqueue_many, shapes, allow_smaller_final_batch, shared_name, name,
                      default_name):
    from dtf.ops.data_flow_ops import RandomShuffleQueue

    tensor_list, pack = _flatten(tensors)
    with _ops.name_scope(name, default_name, tensor_list) as scope:
        tensor_list = [_ops.convert_to_tensor(t) for t in tensor_list]
        shapes = _shapes(tensor_list, shapes, enqueue_many)
        q = RandomShuffleQueue(capacity, min_after_dequeue, [t.dtype for t in tensor_list],
                               shapes, seed=seed, shared_name=shared_name)
        enq = _enqueue(q, tensor_list, enqueue_many, keep_input)
        return _batch(q, [enq] * num_threads, batch_size, enqueue_many, allow_smaller_final_batch,
                      pack, scope,
                      f"fraction_over_{min_after_dequeue}_of_{capacity - min_after_dequeue}_full")


def shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, seed=None,
                       enqueue_many=False, shapes=None, allow_smaller_final_batch=False,
                       shared_name=None, name=None):
    """Like shuffle_batch, with one enqueuing thread per element of ``tensors_list``."""
    return _shuffle_batch_join_of(tensors_list, None, batch_size, capacity, min_after_dequeue,
                                  seed, enqueue_many, shapes, allow_smaller_final_batch,
                                  shared_name, name, "shuffle_batch_join")


def maybe_shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, keep_input,
                             seed=None, enqueue_many=False, shapes=None,
                             allow_smaller_final_batch=False, shared_name=None, name=None):
    """shuffle_batch_join, enqueuing only the elements whose ``keep_input`` is True."""
    keep_input = _validate_keep_input(keep_input, enqueue_many)
    return _shuffle_batch_join_of(tensors_list, keep_input, batch_size, capacity,
                                  min_after_dequeue, seed, enqueue_many, shapes,
                                  allow_smaller_final_batch, shared_name, name,
                                  "maybe_shuffle_batch_join")


def _shuffle_batch_join_of(tensors_list, keep_input, batch_size, capacity, min_after_dequeue,
                           seed, enqueue_many, shapes, allow_smaller_final_batch, shared_name,
                           name, default_name):
    from dtf.ops.data_flow_ops import RandomShuffleQueue

    flat = [_flatten(t) for t in tensors_list]
    pack = flat[0][1]
    with _ops.name_scope(name, default_name, [t for f, _ in flat for t in f]) as scope:
        lists = [[_ops.convert_to_tensor(t) for t in f] for f, _ in flat]
        shapes = _shapes(lists[0], shapes, enqueue_many)
        q = RandomShuffleQueue(capacity, min_after_dequeue, [t.dtype for t in lists[0]], shapes,
                               seed=seed, shared_name=shared_name)
        enqs = [_enqueue(q, tl, enqueue_many, keep_input) for tl in lists]
        return _batch(q, enqs, batch_size, enqueue_many, allow_smaller_final_batch, pack, scope,
                      f"fraction_over_{min_after_dequeue}_of_{capacity - min_after_dequeue}_full")
