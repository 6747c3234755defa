"""dtf: TensorFlow 1.x graph-mode programs, distributed over ZeroMQ, on Numba kernels.

``import dtf as tf`` gives the TF1 surface; everything here is an explicit re-export.
"""
from __future__ import annotations

import os as _os

# OpenBLAS (numpy's BLAS) keeps its threads spinning for a long while after each call,
# which took half the cores from the Numba kernels that followed a matmul (a fused
# elementwise step measured 15 ms instead of 7). Read when numpy loads, so it helps when
# dtf is imported first; the user's own setting wins.
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

# tf.__version__ is the TF API dtf follows (1.15.0), which programs test for; dtf's own
# release is dtf.version.DTF_VERSION.
from dtf.version import GIT_VERSION, VERSION, VERSION as __version__  # noqa: E402,F401

from dtf.framework import dtypes as _dtypes_mod
from dtf.framework.dtypes import (  # noqa: F401
    DType, as_dtype, bool, double, float16, float32, float64, half, int8, int16, int32, int64,
    string, uint8, uint16,
)
from dtf.framework import errors  # noqa: F401
from dtf.framework.tensor_shape import Dimension, TensorShape  # noqa: F401
from dtf.framework.device_spec import DeviceSpec  # noqa: F401
from dtf.framework.op_registry import NoGradient, NotDifferentiable, RegisterGradient  # noqa: F401
from dtf.framework.ops import (  # noqa: F401
    Graph, GraphKeys, Operation, Tensor, add_to_collection, add_to_collections, colocate_with,
    control_dependencies, convert_to_tensor, device, get_collection, get_collection_ref,
    get_default_graph, is_tensor, name_scope, op_scope, register_tensor_conversion_function,
    reset_default_graph,
)
from dtf.framework.indexed_slices import IndexedSlices, IndexedSlicesValue  # noqa: F401
from dtf.framework.ops import convert_to_tensor_or_indexed_slices  # noqa: F401
from dtf.client.config import ConfigProto, GPUOptions, GraphOptions, RunMetadata, RunOptions  # noqa: F401
from dtf.client.session import InteractiveSession, Session, get_default_session  # noqa: F401

# Each op family lists its public TF names in __all__ (a new op is exported there only).
from dtf.ops.constant_op import *  # noqa: F401,F403,E402
from dtf.ops.control_flow_ops import *  # noqa: F401,F403,E402
from dtf.ops.math_ops import *  # noqa: F401,F403,E402

newaxis = None

from dtf.ops.array_ops import *  # noqa: F401,F403,E402
from dtf.ops.linalg_ops import *  # noqa: F401,F403,E402
from dtf.ops.clip_ops import *  # noqa: F401,F403,E402
from dtf.ops.random_ops import *  # noqa: F401,F403,E402
from dtf.ops.variables import *  # noqa: F401,F403,E402
from dtf.ops.state_ops import *  # noqa: F401,F403,E402
from dtf.ops.scatter_ops import *  # noqa: F401,F403,E402
from dtf.ops.partitioned_variables import *  # noqa: F401,F403,E402
from dtf.ops.sparse_ops import *  # noqa: F401,F403,E402
from dtf.ops.variable_scope import *  # noqa: F401,F403,E402
from dtf.ops.init_ops import *  # noqa: F401,F403,E402
from dtf.ops.data_flow_ops import *  # noqa: F401,F403,E402
from dtf.ops.sparse_accumulator_ops import *  # noqa: F401,F403,E402
from dtf.ops.scatter_nd_ops import *  # noqa: F401,F403,E402
from dtf import compat, initializers, logging, queue, random, train  # noqa: F401,E402

# Loaded on first use (PEP 562): most programs never touch them, and start-up matters.
_LAZY_MODULES = {"summary": "dtf.summary", "distribute": "dtf.distribute", "math": "dtf.math"}
_LAZY_MODULES["linalg"] = "dtf.linalg"
_LAZY_MODULES["nn"] = "dtf.nn"  # the rnn cells and the nn families' op definitions
_LAZY_NAMES = {"Event": "dtf.summary", "HistogramProto": "dtf.summary",
               "SessionLog": "dtf.summary", "Summary": "dtf.summary"}
_LAZY_MODULES["losses"] = "dtf.losses"
_LAZY_MODULES["metrics"] = "dtf.metrics"
_LAZY_MODULES["contrib"] = "dtf.contrib"
_LAZY_MODULES["layers"] = "dtf.layers"
_LAZY_MODULES["sparse"] = "dtf.sparse"
_LAZY_MODULES["image"] = "dtf.image"
_LAZY_MODULES["strings"] = "dtf.strings"
_LAZY_MODULES["data"] = "dtf.data"
_LAZY_MODULES["python_io"] = "dtf.io.python_io"
_LAZY_MODULES["graph_util"] = "dtf.graph_util"
_LAZY_MODULES["estimator"] = "dtf.estimator"
_LAZY_MODULES["feature_column"] = "dtf.feature_column"
_LAZY_MODULES["saved_model"] = "dtf.saved_model"
_LAZY_NAMES.update({n: "dtf.framework.graph_pb" for n in ("GraphDef", "NodeDef", "AttrValue", "MetaGraphDef")})
_LAZY_NAMES["import_graph_def"] = "dtf.framework.importer"
_LAZY_NAMES["random_crop"] = "dtf.ops.image_transforms"  # tf.random_crop is tf.image.random_crop
_LAZY_NAMES.update({n: "dtf.framework.tensor_util" for n in ("make_tensor_proto", "make_ndarray")})


def disable_eager_execution():
    """A no-op: dtf only has graph mode (scripts written for tf.compat.v1 call it)."""


def executing_eagerly():
    """False: dtf only has graph mode, as TF 1.15 runs by default (scripts branch on it)."""
    return False


def disable_v2_behavior():
    """A no-op: dtf only has TF1 behaviour."""


def __getattr__(name):
    import importlib

    if name in _LAZY_MODULES:
        return importlib.import_module(_LAZY_MODULES[name])
    if name in _LAZY_NAMES:
        return getattr(importlib.import_module(_LAZY_NAMES[name]), name)
    family = _LAZY_OP_NAMES.get(name)
    if family is not None:
        value = getattr(importlib.import_module(family), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module 'dtf' has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *_LAZY_MODULES, *_LAZY_NAMES, *_LAZY_OP_NAMES})


# Op families most programs never call (linalg solvers, segment/sparse math, parsing, tf.cond,
# while loops, ...) load on first use of one of their public names: a generated index
# (scripts/api_index.py, checked by a unit test) maps each name to its family. Their op
# definitions and gradients register through dtf.framework.registry_index when a graph
# holding them is built or imported.
from dtf.framework.api_index import NAMES as _LAZY_OP_NAMES  # noqa: E402

from dtf.ops.reduction_ops import *  # noqa: F401,F403,E402
from dtf.ops.gradients import *  # noqa: F401,F403,E402
from dtf.ops.nn_ops import log_sigmoid  # noqa: F401,E402 - a tf.nn function TF exports here too
_LAZY_MODULES["app"] = "dtf.app"  # tf.app and tf.flags (the same module as tf.app.flags):
_LAZY_MODULES["flags"] = "dtf.flags"  # argument parsing loads with the program that uses it
from dtf import gfile, io, version  # noqa: F401,E402 - tf.gfile, tf.io.gfile, tf.version
_LAZY_MODULES["test"] = "dtf.test"  # tf.test: unittest loads only for tests
from dtf.ops.logging_ops import *  # noqa: F401,F403,E402,A004
_LAZY_MODULES["debugging"] = "dtf.debugging"
from dtf.ops.template import make_template  # noqa: F401,E402
from dtf.ops.custom_gradient import custom_gradient  # noqa: F401,E402
from dtf import dtypes  # noqa: F401,E402 - tf.dtypes
from dtf.logging import get_logger  # noqa: F401,E402 - tf.get_logger
