"""tf.train: servers and cluster specs, device setters, optimizers, Saver, global step."""
from dtf.train.cluster_spec import *  # noqa: F401,F403
from dtf.train.training_util import *  # noqa: F401,F403
from dtf.train.optimizers import *  # noqa: F401,F403
from dtf.train.saver import *  # noqa: F401,F403
from dtf.train.server import *  # noqa: F401,F403
from dtf.train.device_setter import *  # noqa: F401,F403
