"""A task's state and its files: variables in named containers (resources) and
TensorFlow's V2 checkpoint format (checkpoint_io, tensor_bundle, sstable).

A leaf below ops and kernels: the stateful kernels, the executor and the Saver all use it,
and it imports nothing of dtf but the framework (see the layer order in docs/layers.md).
"""
