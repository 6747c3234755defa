"""tf.queue: queues shared between sessions."""
from dtf.ops.data_flow_ops import FIFOQueue, PaddingFIFOQueue, QueueBase, RandomShuffleQueue  # noqa: F401
from dtf.ops.data_flow_ops import PriorityQueue  # noqa: F401
