"""The convolutions and pools with no CUDA kernel yet (Conv3D, the depthwise conv2d ops, the
3-D pools, the second-order max-pool gradients): on a GPU device they run their CPU kernel
on the host, as the variable ops do."""
from dtf.kernels.registry import register_kernel
from .state import _on_host

HOST_RUN_OPS = ("Conv3D", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2",
                "DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
                "DepthwiseConv2dNativeBackpropFilter",
                "MaxPool3D", "MaxPool3DGrad", "AvgPool3D", "AvgPool3DGrad",
                "MaxPool3DGradGrad", "MaxPoolGradGrad")

for _op in HOST_RUN_OPS:
    register_kernel(_op, "GPU", label="host memory")(_on_host(_op))
