"""The TF names the canned estimators are written in, gathered from the layers below the
``dtf`` facade (a model library may not import ``dtf`` itself: tests/unit/test_import_layers.py).
``from dtf.estimator.canned.tf_api import tf`` then reads like TF's own canned code."""
from __future__ import annotations

from types import SimpleNamespace

from dtf import feature_column, layers, losses, metrics, summary
from dtf.framework.dtypes import float32, int32, int64, string
from dtf.framework.ops import (GraphKeys, control_dependencies, convert_to_tensor,
                               get_collection, name_scope)
from dtf.ops.array_ops import (concat, expand_dims, identity, ones_like, range, reshape, shape,
                               tile, zeros_like)
from dtf.ops import check_ops, nn_extra_ops, nn_ops
from dtf.ops.constant_op import constant
from dtf.ops.control_flow_ops import group
from dtf.ops.init_ops import glorot_uniform_initializer
from dtf.ops.math_ops import add_n, cast, equal, maximum, sigmoid, squared_difference
from dtf.ops.reduction_ops import argmax, reduce_all, reduce_any, reduce_sum
from dtf.ops.slicing_ops import gather
from dtf.ops.state_ops import assign_add
from dtf.ops.variable_scope import variable_scope
from dtf.train import training_util

tf = SimpleNamespace(
    float32=float32, int32=int32, int64=int64, string=string, GraphKeys=GraphKeys,
    control_dependencies=control_dependencies, convert_to_tensor=convert_to_tensor,
    get_collection=get_collection, name_scope=name_scope, concat=concat,
    expand_dims=expand_dims, identity=identity, ones_like=ones_like, range=range,
    reshape=reshape, shape=shape, tile=tile, zeros_like=zeros_like, constant=constant,
    group=group, glorot_uniform_initializer=glorot_uniform_initializer, add_n=add_n, cast=cast,
    equal=equal, maximum=maximum, sigmoid=sigmoid, squared_difference=squared_difference,
    argmax=argmax, reduce_all=reduce_all, reduce_any=reduce_any, reduce_sum=reduce_sum,
    gather=gather, assign_add=assign_add, variable_scope=variable_scope,
    feature_column=feature_column, layers=layers, losses=losses, metrics=metrics,
    summary=summary,
    debugging=SimpleNamespace(assert_equal=check_ops.assert_equal,
                              assert_less=check_ops.assert_less,
                              assert_non_negative=check_ops.assert_non_negative),
    nn=SimpleNamespace(relu=nn_ops.relu,
                       sigmoid_cross_entropy_with_logits=nn_ops.sigmoid_cross_entropy_with_logits,
                       softmax=nn_ops.softmax,
                       sparse_softmax_cross_entropy_with_logits=(
                           nn_ops.sparse_softmax_cross_entropy_with_logits),
                       zero_fraction=nn_extra_ops.zero_fraction),
    train=SimpleNamespace(get_global_step=training_util.get_global_step),
)
