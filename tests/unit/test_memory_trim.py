"""dtf.runtime.memory.trim gives the C allocator's free memory back to the system: arrays
freed by a thread stay resident in its arena until then (what an initializer left on a
parameter server), also once ``keep_freed_memory`` lets the allocator keep what a task's
steps free; with that, a step's temporaries reuse the last step's pages instead of
faulting in fresh ones. Each runs in a fresh interpreter, whose allocator state nothing
else shares."""
import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CODE = """
import os, threading
import numpy as np
from dtf.runtime import memory

def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20

def one_off_step():
    big = np.ones(6_000_000, np.float32)  # freed, it lets the allocator keep what follows
    del big
    temporaries = [np.ones(1_000_000, np.float32) for _ in range(12)]  # 48 MB
    one_off_step.kept = np.ones(10, np.float32)  # something small stays above them
    del temporaries

if os.environ.get("KEEP_FREED") == "1":
    assert memory.keep_freed_memory()
t = threading.Thread(target=one_off_step)
t.start()
t.join()
before = rss_mib()
print(memory.trim(), before - rss_mib())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
@pytest.mark.parametrize("keep_freed", ["0", "1"])
def test_trim_returns_what_a_finished_step_freed(keep_freed):
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(CODE)], cwd=REPO, timeout=120,
                          capture_output=True, text=True, env={**os.environ, "KEEP_FREED": keep_freed})
    assert proc.returncode == 0, proc.stderr[-3000:]
    could, released_mib = proc.stdout.split()
    if could == "False":
        pytest.skip("this C library has no malloc_trim")
    assert float(released_mib) > 30, f"only {released_mib} MiB released of ~48 freed"


STEPS = """
import resource, sys
import numpy as np
from dtf.runtime import memory

def step():  # a training step's temporaries: a few arrays of 64 KiB to 1 MiB, written
    arrays = [np.ones((192, 128), np.float32), np.ones((128, 128), np.float32),
              np.ones((128, 65), np.float32), np.ones((1024, 256), np.float32)]
    return sum(float(a[-1, -1]) for a in arrays)

def faults_per_step(n=50):
    step()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(n):
        step()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / n

untuned = faults_per_step()
print(memory.keep_freed_memory(), untuned, faults_per_step())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_steps_reuse_pages_once_freed_memory_is_kept():
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(STEPS)], cwd=REPO, timeout=120,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    could, untuned, tuned = proc.stdout.split()
    if could == "False":
        pytest.skip("this C library has no mallopt")
    assert float(tuned) < 2, f"{tuned} page faults per step (before keep_freed_memory: {untuned})"


LOCAL_SESSION = """
import resource
import numpy as np
import dtf as tf

x = tf.placeholder(tf.float32, [1024, 256])
y = x * 2.0 + 1.0  # two 1 MiB temporaries a step
total = tf.reduce_sum(y * y)
feed = {x: np.ones((1024, 256), np.float32)}
with tf.Session() as sess:
    for _ in range(5):
        sess.run(total, feed)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(50):
        sess.run(total, feed)
    print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 50)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_local_session_steps_reuse_pages():
    # Without keep_freed_memory every 1 MiB array is mapped afresh: ~256 faults each.
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(LOCAL_SESSION)], cwd=REPO,
                          timeout=120, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert float(proc.stdout) < 50, f"{proc.stdout.strip()} page faults per local step"


POOL_THREAD_STEPS = """
import resource, threading
import numpy as np
from dtf.runtime import memory

def step():  # a model's step: activations kept for the backward pass, temporaries freed
    acts = [np.ones((1024, 1024), np.float32)]
    for _ in range(30):
        acts.append(acts[-1] + 1.0)
    g = acts[-1] * 2.0
    while acts:
        a = acts.pop()
        g = g * a

def run(out, n=20):
    np.seterr(all="ignore")
    step()
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    for _ in range(n):
        step()
    out.append((resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before) / n)

out = []
could = memory.keep_freed_memory()
t = threading.Thread(target=run, args=(out,))  # its arena's heaps hold 64 MiB each
t.start()
t.join()
print(could, out[0])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_pool_thread_steps_reuse_pages():
    # A thread's arena grows in heaps of 64 MiB; with glibc's default top pad, a heap the
    # step emptied was unmapped at once and mapped again by the next step: 1,500 faults a
    # step here, and 4,000-8,000 in the ResNet step's inter-op thread.
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(POOL_THREAD_STEPS)], cwd=REPO,
                          timeout=120, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    could, faults = proc.stdout.split()
    if could == "False":
        pytest.skip("this C library has no mallopt")
    assert float(faults) < 50, f"{faults} page faults per step on a thread"
