"""tf.graph_util (TF1): extract_sub_graph, convert_variables_to_constants, import_graph_def."""
from dtf.framework.graph_util import *  # noqa: F401,F403
