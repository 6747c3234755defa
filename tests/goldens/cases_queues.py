"""Queues: PriorityQueue order (lowest priority first), its priority component, dequeue_many
and dequeue_up_to; close and cancel semantics of FIFO, padding and priority queues."""
import numpy as np

from tests.goldens.harness import case


def _error(sess, fetch, tf):
    try:
        sess.run(fetch)
        return "none"
    except tf.errors.OpError as e:
        return type(e).__name__


@case
def priority_queue_order(tf):
    q = tf.PriorityQueue(10, [tf.string, tf.float32], shapes=[[], [2]])
    one = q.enqueue((tf.constant(5, tf.int64), "five", [5.0, 5.5]))
    many = q.enqueue_many((tf.constant([3, 9, 1], tf.int64), ["three", "nine", "one"],
                           np.array([[3, 3.5], [9, 9.5], [1, 1.5]], np.float32)))
    first = q.dequeue()
    rest = q.dequeue_many(2)
    static = {"first_shapes": str([t.get_shape() for t in first]),
              "rest_shapes": str([t.get_shape() for t in rest])}

    def run(sess):
        sess.run([one])
        sess.run(many)
        out = {"size": sess.run(q.size())}
        p, s, v = sess.run(first)
        out.update(first_priority=p, first_name=s, first_values=v)
        p, s, v = sess.run(rest)
        out.update(rest_priority=p, rest_name=s, rest_values=v)
        out["size_after"] = sess.run(q.size())
        return {**out, **static}
    return run


@case
def priority_queue_close(tf):
    q = tf.PriorityQueue(4, [tf.int32], shapes=[[]])
    fill = q.enqueue_many((tf.constant([7, 2], tf.int64), tf.constant([70, 20])))
    close = q.close()
    up_to = q.dequeue_up_to(5)
    taken = q.dequeue_many(3)

    def run(sess):
        sess.run(fill)
        sess.run(close)
        out = {"enqueue_after_close": _error(sess, q.enqueue((tf.constant(1, tf.int64), 1)), tf)}
        # TF's priority queue ignores dequeue_up_to's small batch: like dequeue_many it
        # fails once closed with too few elements (TF also drops the ones it had taken).
        out["up_to_short"] = _error(sess, up_to, tf)
        out["dequeue_empty_closed"] = _error(sess, taken, tf)
        return out
    return run


@case
def close_and_cancel(tf):
    fifo = tf.FIFOQueue(3, [tf.int32], shapes=[[]])
    padded = tf.PaddingFIFOQueue(3, [tf.int32], shapes=[[None]])
    fill = [fifo.enqueue_many(([1, 2],)), padded.enqueue(([1, 2, 3],)), padded.enqueue(([4],))]

    def run(sess):
        for op in fill:  # one at a time: the padded queue's order is the runs' order
            sess.run(op)
        sess.run([fifo.close(cancel_pending_enqueues=True), padded.close()])
        out = {"fifo_enqueue": _error(sess, fifo.enqueue((3,)), tf),
               "padded_enqueue": _error(sess, padded.enqueue(([5],)), tf)}
        out["fifo_many_short"] = _error(sess, fifo.dequeue_many(3), tf)
        out["fifo_left"] = sess.run(fifo.size())  # a failed dequeue_many takes nothing
        out["fifo_up_to"] = sess.run(fifo.dequeue_up_to(3))
        out["padded_batch"] = sess.run(padded.dequeue_many(2))
        out["padded_empty"] = _error(sess, padded.dequeue(), tf)
        return out
    return run


def _drain_all(tf, sess, fetches):
    """Every batch of each fetch until its queue ends, with the graph's queue runners
    started once (stopping a coordinator closes every runner's queue)."""
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess, coord)
    out = []
    try:
        for fetch in fetches:
            got = []
            try:
                for _ in range(50):
                    got.append(sess.run(fetch))
            except tf.errors.OutOfRangeError:
                pass
            out.append(got)
    finally:
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=5)
    return out


@case
def maybe_batch_keeps_flagged_elements(tf):
    x, = tf.train.slice_input_producer([tf.range(10)], num_epochs=1, shuffle=False)
    kept = tf.train.maybe_batch([x, x * 10], tf.equal(x % 3, 0), 2,
                                allow_smaller_final_batch=True)

    def run(sess):
        a, = _drain_all(tf, sess, [kept])
        return {"x": np.concatenate([p[0] for p in a]), "x10": np.concatenate([p[1] for p in a]),
                "sizes": [len(p[0]) for p in a]}
    return run
