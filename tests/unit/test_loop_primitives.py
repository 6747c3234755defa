"""The loop primitives (dtf.wire.primitives) on their own: timers run due functions in
order and only those, and the handler pool runs jobs concurrently, hands back results
and errors, and refuses work once shut down. The wake-up is tested with the server loop
(test_server_loop) and the reply pump (test_rendezvous_pump)."""
import threading

import pytest

from dtf.wire import primitives


def test_timers_run_what_is_due_in_due_order_and_keep_the_rest():
    timers, ran = primitives.Timers(), []
    timers.call_later(0.0, lambda: ran.append("b"))
    timers.call_later(-1.0, lambda: ran.append("a"))  # overdue: first
    late = timers.call_later(300.0, lambda: ran.append("late"))
    timers.pop_due(lambda fn: fn())
    assert ran == ["a", "b"]
    assert [entry[2] for entry in timers.heap] == [late]


def test_timers_due_at_the_same_time_run_in_the_order_they_were_set():
    timers, ran = primitives.Timers(), []
    for i in range(20):
        timers.call_later(-1.0, lambda i=i: ran.append(i))
    timers.pop_due(lambda fn: fn())
    assert ran == list(range(20))


def test_a_cancelled_timer_is_dropped_from_the_count_when_it_comes_due():
    timers, ran = primitives.Timers(), []
    timers.call_later(-1.0, lambda: ran.append(1)).cancel()
    assert timers._cancelled == 1
    timers.pop_due(lambda fn: fn())
    assert ran == [] and timers.heap == [] and timers._cancelled == 0


def test_the_pool_runs_blocking_jobs_side_by_side_and_returns_their_results():
    pool = primitives.HandlerPool(4, "test-pool")
    try:
        barrier = threading.Barrier(3, timeout=10)

        def meet(x):
            barrier.wait()  # each job waits for the others: they must run together
            return x * 2

        assert pool.map(meet, [1, 2, 3]) == [2, 4, 6]
        outcome = pool.call(lambda a, b: a + b, 2, 3)
        assert outcome.result() == 5
    finally:
        pool.shutdown()


def test_a_jobs_error_is_raised_by_its_result():
    pool = primitives.HandlerPool(2, "test-pool")
    try:
        outcome = pool.call(int, "not a number")
        with pytest.raises(ValueError, match="not a number"):
            outcome.result()
        assert pool.call(int, "7").result() == 7  # the thread that raised serves on
    finally:
        pool.shutdown()


def test_the_pool_queues_jobs_beyond_its_threads_and_runs_them_all():
    pool = primitives.HandlerPool(2, "test-pool")
    try:
        release = threading.Event()
        slow = [pool.call(release.wait, 10) for _ in range(2)]
        queued = pool.call(lambda: "ran")
        release.set()
        assert [o.result() for o in slow] == [True, True] and queued.result() == "ran"
        assert len(pool._threads) == 2
    finally:
        pool.shutdown()


def test_a_shut_down_pool_refuses_new_work():
    pool = primitives.HandlerPool(2, "test-pool")
    assert pool.call(lambda: 1).result() == 1
    pool.shutdown()
    pool.shutdown()  # twice: nothing more
    with pytest.raises(RuntimeError, match="test-pool"):
        pool.submit(print)
    for t in pool._threads:
        t.join(10)
        assert not t.is_alive()  # its threads ended
