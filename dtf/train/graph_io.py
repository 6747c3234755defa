"""tf.train.write_graph: a graph's GraphDef to a file, as text or binary protobuf."""
from __future__ import annotations

import os

__all__ = ["write_graph"]


def write_graph(graph_or_graph_def, logdir, name, as_text=True):
    """Writes the GraphDef of a Graph (or a GraphDef) to ``logdir/name``; returns the path.
    ``as_text``: protobuf text format (``.pbtxt``), else binary (``.pb``)."""
    from dtf.framework.ops import Graph
    from dtf.framework.prototext import to_text
    from dtf.state.checkpoint_io import atomic_write

    graph_def = graph_or_graph_def.as_graph_def() if isinstance(graph_or_graph_def, Graph) \
        else graph_or_graph_def
    if not hasattr(graph_def, "SerializeToString"):
        raise TypeError(f"write_graph: expected a Graph or GraphDef, got {type(graph_def).__name__}")
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    data = to_text(graph_def).encode() if as_text else graph_def.SerializeToString()
    atomic_write(path, [data])
    return path
