"""tf.train.export_meta_graph / import_meta_graph: a graph with its collections and Saver
as TF's MetaGraphDef, so a restored meta graph trains on (``Saver.save`` writes one
beside each checkpoint as ``.meta``).

Collections are stored as TF does: Variables as serialized VariableDefs and Savers as
SaverDefs (bytes_list), Tensors and Operations by name (node_list), numbers and strings as lists of them. A
collection of anything else (queue runners, contexts, ...) is left out with a warning, as
TF leaves out what it cannot serialize.
"""
from __future__ import annotations

import logging
import os

__all__ = ["export_meta_graph", "import_meta_graph"]

log = logging.getLogger("dtf")

# Collections of Variables, stored as VariableDefs (TF's proto-typed variable collections).
_VARIABLE_COLLECTIONS = ("variables", "trainable_variables", "local_variables", "model_variables",
                         "moving_average_variables", "global_step", "metric_variables",
                         "concatenated_variables", "trainable_resource_variables")


def prepend_name_scope(name: str, import_scope) -> str:
    if not import_scope:
        return name
    return f"^{import_scope}/{name[1:]}" if name.startswith("^") else f"{import_scope}/{name}"


def variable_def(var, export_scope=None):
    from dtf.framework.graph_pb import VariableDef

    if export_scope:
        raise NotImplementedError("Variable.to_proto: export_scope is not supported by dtf")
    proto = VariableDef(variable_name=var._variable.name, initializer_name=var.initializer.name,
                        snapshot_name=var._snapshot.name, trainable=var.trainable)
    if var.initial_value is not None:
        proto.initial_value_name = var.initial_value.name
    return proto


def _collection_def(key, values):
    """A CollectionDef of a collection's values, or None when they cannot be stored."""
    from dtf.framework import graph_pb as pb
    from dtf.framework.ops import Operation, Tensor
    from dtf.ops.variables import Variable

    from dtf.train.saver import Saver

    values = list(values)
    if all(isinstance(v, Saver) for v in values):
        return pb.CollectionDef(bytes_list=pb.BytesList(
            value=[v.to_proto().SerializeToString() for v in values if v.saver_def is not None]))
    if all(isinstance(v, Variable) for v in values):
        return pb.CollectionDef(bytes_list=pb.BytesList(value=[v.to_proto().SerializeToString()
                                                              for v in values]))
    if all(isinstance(v, (Tensor, Operation)) for v in values):
        return pb.CollectionDef(node_list=pb.NodeList(value=[v.name for v in values]))
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return pb.CollectionDef(int64_list=pb.Int64List(value=values))
    if all(isinstance(v, float) for v in values):
        return pb.CollectionDef(float_list=pb.FloatList(value=values))
    if all(isinstance(v, (bytes, str)) for v in values):
        return pb.CollectionDef(bytes_list=pb.BytesList(value=values))
    log.warning("Issue encountered when serializing %s: its values (%s) have no MetaGraphDef "
                "encoding in dtf; the collection is left out.", key,
                ", ".join(sorted({type(v).__name__ for v in values})))
    return None


def export_meta_graph(filename=None, meta_info_def=None, graph_def=None, saver_def=None,
                      collection_list=None, as_text=False, graph=None, export_scope=None,
                      clear_devices=False, clear_extraneous_savers=False,
                      strip_default_attrs=False, save_debug_info=False, **kwargs):
    """The MetaGraphDef of ``graph`` (default: the default graph): its GraphDef, the
    collections (all, or ``collection_list``) and ``saver_def``; written to ``filename``
    when given (binary, or text with ``as_text``)."""
    from dtf.framework import graph_pb as pb
    from dtf.framework import ops as _ops
    from dtf.framework.prototext import to_text

    for arg, value in (("export_scope", export_scope), ("strip_default_attrs", strip_default_attrs),
                       ("save_debug_info", save_debug_info), ("clear_extraneous_savers",
                                                              clear_extraneous_savers)):
        if value:
            raise NotImplementedError(f"export_meta_graph: {arg} is not supported by dtf")
    if kwargs:
        raise TypeError(f"export_meta_graph: unexpected arguments {sorted(kwargs)}")
    graph = graph or _ops.get_default_graph()
    meta = pb.MetaGraphDef()
    if meta_info_def is not None:
        meta.meta_info_def.CopyFrom(meta_info_def)
    meta.meta_info_def.tensorflow_version = "1.15.0"
    gd = graph_def if graph_def is not None else graph.as_graph_def(add_shapes=True)
    meta.graph_def.CopyFrom(gd)
    if clear_devices:
        _clear_devices(meta.graph_def)
    if saver_def is not None:
        meta.saver_def.CopyFrom(saver_def)
    keys = collection_list if collection_list is not None else graph.get_all_collection_keys()
    for key in keys:
        values = graph.get_collection(key)
        if not values:
            continue
        cdef = _collection_def(key, values)
        if cdef is not None:
            meta.collection_def[key] = cdef
    if filename:
        from dtf.state.checkpoint_io import atomic_write

        directory = os.path.dirname(filename)
        if directory:
            os.makedirs(directory, exist_ok=True)
        atomic_write(filename, [to_text(meta).encode() if as_text else meta.SerializeToString()])
    return meta


def _clear_devices(graph_def):
    """No device on any node, the control-flow bodies' (library functions) included."""
    for node in graph_def.node:
        node.device = ""
    for function in graph_def.library.function:
        for node in function.node_def:
            node.device = ""


def _read_meta_graph(meta_graph_or_file):
    from dtf.framework import graph_pb as pb
    from dtf.framework.prototext import from_text
    from dtf.framework.protowire import DecodeError

    if isinstance(meta_graph_or_file, pb.MetaGraphDef):
        return meta_graph_or_file
    if hasattr(meta_graph_or_file, "SerializeToString"):  # e.g. TF's own MetaGraphDef class
        return pb.MetaGraphDef.FromString(meta_graph_or_file.SerializeToString())
    path = os.fspath(meta_graph_or_file)
    with open(path, "rb") as f:
        data = f.read()
    try:
        return pb.MetaGraphDef.FromString(data)
    except (DecodeError, UnicodeDecodeError) as binary_error:
        try:  # as TF: binary first, then the text format
            return from_text(pb.MetaGraphDef, data.decode("utf-8"))
        except (DecodeError, UnicodeDecodeError) as text_error:
            raise IOError(f"Cannot parse file {path}: not a binary MetaGraphDef "
                          f"({binary_error}) nor a text one ({text_error})") from None


def _restore_collections(meta, graph, import_scope):
    from dtf.framework import graph_pb as pb
    from dtf.ops.variables import Variable

    variables = {}
    for key in sorted(meta.collection_def):
        cdef = meta.collection_def[key]
        kind = cdef.WhichOneof("kind")
        if kind == "node_list":
            for name in cdef.node_list.value:
                graph.add_to_collection(key, graph.as_graph_element(prepend_name_scope(name, import_scope)))
        elif kind == "bytes_list" and key in _VARIABLE_COLLECTIONS:
            for raw in cdef.bytes_list.value:
                vdef = pb.VariableDef.FromString(raw)
                var = variables.get(vdef.variable_name)
                if var is None:
                    var = variables[vdef.variable_name] = Variable.from_proto(vdef, import_scope)
                graph.add_to_collection(key, var)
        elif kind == "bytes_list" and key == "savers":
            from dtf.train.saver import Saver

            for raw in cdef.bytes_list.value:
                graph.add_to_collection(key, Saver.from_proto(pb.SaverDef.FromString(raw), import_scope))
        elif kind is not None:
            for value in getattr(cdef, kind).value:
                graph.add_to_collection(key, value)
    return variables


def import_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None, **kwargs):
    """Recreates a saved graph in the default graph: its nodes, collections (variables
    come back as Variables) and Saver. Returns that Saver (one over all variables when
    the meta graph has no SaverDef; None without variables)."""
    from dtf.framework import ops as _ops
    from dtf.framework.importer import import_graph_def
    from dtf.train.saver import Saver

    for arg in kwargs:
        if arg in ("input_map", "return_elements"):
            raise NotImplementedError(f"import_meta_graph: {arg} is not supported by dtf")
        raise TypeError(f"import_meta_graph: unexpected argument {arg!r}")
    meta = _read_meta_graph(meta_graph_or_file)
    graph_def = meta.graph_def
    if clear_devices:
        graph_def = type(graph_def).FromString(graph_def.SerializeToString())
        _clear_devices(graph_def)
    graph = _ops.get_default_graph()
    import_graph_def(graph_def, name=import_scope or "")
    variables = _restore_collections(meta, graph, import_scope)
    if meta.HasField("saver_def"):
        return Saver.from_proto(meta.saver_def, import_scope)
    return Saver() if variables else None
