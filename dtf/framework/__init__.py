"""Graph-building layer: dtypes, shapes, errors, devices, Graph/Operation/Tensor.

Nothing here does arithmetic or touches a socket.
"""
