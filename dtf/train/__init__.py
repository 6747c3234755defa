"""tf.train: servers and cluster specs, device setters, optimizers, Saver, global step."""
from dtf.train.cluster_spec import *  # noqa: F401,F403
from dtf.train.training_util import *  # noqa: F401,F403
from dtf.train.optimizers import *  # noqa: F401,F403
from dtf.train.saver import *  # noqa: F401,F403
from dtf.train.server import *  # noqa: F401,F403
from dtf.train.device_setter import *  # noqa: F401,F403
from dtf.train.coordinator import *  # noqa: F401,F403
from dtf.train.session_run_hook import *  # noqa: F401,F403
from dtf.train.basic_session_run_hooks import *  # noqa: F401,F403
from dtf.train.profiler_hook import *  # noqa: F401,F403
from dtf.train.session_manager import *  # noqa: F401,F403
from dtf.train.monitored_session import *  # noqa: F401,F403
from dtf.train.sync_replicas import *  # noqa: F401,F403
from dtf.train.supervisor import *  # noqa: F401,F403
from dtf.train.learning_rate_decay import *  # noqa: F401,F403
from dtf.train.moving_averages import *  # noqa: F401,F403
from dtf.train.more_optimizers import *  # noqa: F401,F403
from dtf.train.checkpoint_utils import *  # noqa: F401,F403
from dtf.train.graph_io import *  # noqa: F401,F403
from dtf.train.meta_graph import *  # noqa: F401,F403


def summary_iterator(path):
    """tf.train.summary_iterator: the Event protos of an event file, in order."""
    from dtf.summary.reader import summary_iterator as events  # summaries load on first use
    return events(path)


from dtf.io.example_pb import *  # noqa: F401,F403,E402
from dtf.train.queue_runner import *  # noqa: F401,F403,E402
from dtf.train.input import *  # noqa: F401,F403,E402


def __getattr__(name):  # tf.train names loaded on first use
    if name == "SaverDef":
        from dtf.framework.graph_pb import SaverDef

        return SaverDef
    raise AttributeError(f"module 'dtf.train' has no attribute {name!r}")
