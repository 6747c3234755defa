"""Numba loops load in the background once numpy's stand-ins have cost enough
(dtf.kernels.cpu.jit_loading): a training step gives the same values before and after the
loops take over, a small model's steps never load them, stand-ins start the loading once
they reach the budget or when one kernel's call is slow twice, quick stand-ins are timed on
a sample and charged in full, and a process that exits while they are still loading exits
cleanly. Each case runs in a fresh interpreter, where nothing is loaded yet."""
import os
import subprocess
import sys
import textwrap

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TRAIN_STEP = """
import numpy as np
import dtf as tf
from dtf.kernels.cpu import jit_loading

x = tf.constant(np.linspace(-1, 1, 64 * 16, dtype=np.float32).reshape(64, 16))
labels = tf.constant(np.arange(64) % 10)
w = tf.Variable(np.linspace(-0.5, 0.5, 16 * 10, dtype=np.float32).reshape(16, 10))
b = tf.Variable(np.zeros(10, np.float32))
logits = tf.nn.relu(tf.matmul(x, w) + b)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
"""


def run(code, **env):
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, timeout=120,
                          capture_output=True, text=True,
                          env=dict(os.environ, DTF_JIT_BACKGROUND="1", **env))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_numpy_and_numba_steps_agree():
    out = run(TRAIN_STEP + """
import threading
gate = threading.Event()
real_load = jit_loading._load
jit_loading._load = lambda: (gate.wait(), real_load())  # hold the loading back
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    before = [sess.run([loss, train])[0] for _ in range(3)]
    assert jit_loading._loader is not None, "three steps' stand-ins did not start the loading"
    assert not jit_loading.loaded(), "loaded while held back"
    gate.set()
    assert jit_loading.wait(60)
    sess.run(tf.global_variables_initializer())
    after = [sess.run([loss, train])[0] for _ in range(3)]
from dtf.kernels.cpu import dense_jit, nn_jit  # loaded by now
print(repr(before), repr(after))
np.testing.assert_allclose(before, after, rtol=1e-6)
""", DTF_JIT_AFTER_S="0")
    assert out.strip()


def test_a_small_model_trains_without_loading_the_loops():
    """Its stand-ins cost less per step than the loops would ever pay back in a short run."""
    out = run(TRAIN_STEP + """
import sys
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    losses = [sess.run([loss, train])[0] for _ in range(50)]
print(jit_loading.state(), "numba" in sys.modules, losses[-1] < losses[0])
""")
    assert out.split() == ["idle", "False", "True"]


def test_the_stand_ins_start_the_loading_once_they_reach_the_budget():
    out = run(TRAIN_STEP + """
import time
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    sess.run(train)
    first = jit_loading.state()
    steps, deadline = 1, time.monotonic() + 60
    while jit_loading.state() == "idle" and time.monotonic() < deadline:
        sess.run(train)
        steps += 1
    print(first, steps > 1, jit_loading.wait(60))
""", DTF_JIT_AFTER_S="0.02")
    assert out.split() == ["idle", "True", "True"]


def test_a_kernels_second_slow_stand_in_call_starts_the_loading_at_once():
    out = run("""
import numpy as np
from dtf.kernels.cpu import jit_loading
from dtf.kernels.reference import REFERENCE

jit_loading.SLOW_CALL_S = 0.0  # any call is slow: the rule, not this machine's speed
g = np.ones((4, 3), np.float32)
once, other = {}, {}  # two kernels' keys
jit_loading.run_stand_in(REFERENCE["ReluGrad"], {}, g, g, key=once)
jit_loading.run_stand_in(REFERENCE["ReluGrad"], {}, g, g, key=other)
after_two_kernels = jit_loading.state()
jit_loading.run_stand_in(REFERENCE["ReluGrad"], {}, g, g, key=once)
print(after_two_kernels, jit_loading.state() != "idle", jit_loading.wait(60))
""")
    assert out.split() == ["idle", "True", "True"]


def test_a_large_initializer_loads_nothing():
    # A variable's initializer runs once: a parameter server that only initializes and
    # updates rows must not carry Numba for it.
    out = run("""
import sys
import dtf as tf
from dtf.kernels.cpu import jit_loading
v = tf.get_variable("v", [50000, 128], initializer=tf.random_uniform_initializer(-1.0, 1.0))
w = tf.get_variable("w", [50000, 128], initializer=tf.truncated_normal_initializer(stddev=0.1))
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
print(jit_loading.state(), "numba" in sys.modules)
""")
    assert out.split() == ["idle", "False"]


def test_graphs_without_loops_load_nothing():
    out = run("""
import sys
import dtf as tf
with tf.Session() as sess:
    print(sess.run(tf.constant(2) + 300))
from dtf.kernels.cpu import jit_loading
print(jit_loading._loader is None, "numba" in sys.modules)
""")
    assert out.split() == ["302", "True", "False"]


def test_exit_while_loading_is_clean():
    out = run(TRAIN_STEP + """
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    sess.run(train)
print("done", jit_loading._loader is not None)
""", DTF_JIT_AFTER_S="0")
    assert out.split() == ["done", "True"]


def test_a_child_forked_while_loading_loads_for_itself():
    out = run(TRAIN_STEP + """
import os, threading
gate = threading.Event()
real_load = jit_loading._load
jit_loading._load = lambda: (gate.wait(), real_load())  # the parent's loading never ends
jit_loading.start()
assert not jit_loading.loaded()
pid = os.fork()
if pid == 0:
    jit_loading._load = real_load
    os._exit(0 if jit_loading.wait(60) else 3)
_, status = os.waitpid(pid, 0)
gate.set()
print(os.waitstatus_to_exitcode(status))
""")
    assert out.split() == ["0"]


def test_a_server_process_preloads_only_when_told_to():
    code = """
import sys
from dtf.kernels.cpu import jit_loading
print(jit_loading.state())
jit_loading.preload_for_server()
print(jit_loading.state() in ("loading", "loaded"), "numba" in sys.modules or jit_loading._loader is not None)
print(jit_loading.wait(60), jit_loading.state())
"""
    assert run(code, DTF_PRELOAD_KERNELS="1").split() == ["idle", "True", "True", "True", "loaded"]
    default = run("""
import sys
from dtf.kernels.cpu import jit_loading
jit_loading.preload_for_server()
print(jit_loading.state(), "numba" in sys.modules)
""")
    assert default.split() == ["idle", "False"]


def test_a_script_blocked_in_server_join_preloads_when_told_to():
    out = run("""
import threading
import dtf as tf
from dtf.kernels.cpu import jit_loading
server = tf.train.Server.create_local_server()
print(jit_loading.state())
joined = threading.Thread(target=server.join)
joined.start()
import time
deadline = time.monotonic() + 30
while jit_loading.state() == "idle" and time.monotonic() < deadline:
    time.sleep(0.01)  # wait() would start the loading itself: only look
print(jit_loading.state() != "idle" and jit_loading.wait(60))
server.stop()
joined.join(10)
print(joined.is_alive())
""", DTF_PRELOAD_KERNELS="1")
    assert out.split() == ["idle", "True", "False"]


def test_the_interpreter_switches_threads_often_while_loading():
    out = run("""
import importlib, sys
from dtf.kernels.cpu import jit_loading
seen = []
real_import = importlib.import_module
def watched(name, *args):
    if name in jit_loading._MODULES:
        seen.append(sys.getswitchinterval())
    return real_import(name, *args)
importlib.import_module = watched
default = sys.getswitchinterval()
assert jit_loading.wait(60)
print(default, max(seen), sys.getswitchinterval())
""")
    default, during, after = map(float, out.split())
    assert during == 0.0005 < default
    assert after == default


def test_quick_stand_ins_read_the_clock_once_in_a_sample_and_are_charged_in_full():
    # Reading a thread's CPU clock is a system call: a kernel far under SLOW_CALL_S is timed
    # on one call in SAMPLE_EVERY, and that one is charged for the calls it stands for.
    out = run("""
from dtf.kernels.cpu import jit_loading

class Clock:  # each reading 1 us after the last: every timed call takes 1 us
    reads, now = 0, 0.0
    def thread_time(self):
        Clock.reads += 1
        Clock.now += 1e-6
        return Clock.now

jit_loading.time = Clock()
jit_loading.STANDIN_BUDGET_S = 1.0  # nothing starts loading here
quick, calls = object(), 10 * jit_loading.SAMPLE_EVERY
values = [jit_loading.run_stand_in(lambda v: v + 1, i, key=quick) for i in range(calls)]
print(values == list(range(1, calls + 1)), Clock.reads == 2 * calls // jit_loading.SAMPLE_EVERY,
      abs(jit_loading._standin_s - calls * 1e-6) < 1e-12, jit_loading.state())
""")
    assert out.split() == ["True", "True", "True", "idle"]
