"""Heads whose kernel can take the elementwise tail of a fused group into its own loop:
a bias added per output channel, then optionally ReLU (TensorFlow's fused Conv2D and
MatMul).

dtf.runtime.fusion runs a head (a matmul or a convolution) and then its tail as one
serial pass over the head's output; for the CNN's conv1 that pass (bias + ReLU over 1.6M
float32) took about 0.8 ms after a 0.35 ms convolution. Where the head's kernel is
oneDNN's, the library adds the bias and applies ReLU while each output block is still in
registers, so the pass disappears. ``plan`` recognises such a tail from its op types,
``run`` calls the head's variant, which returns None where it does not serve the call
(then the group runs as before).
"""
from __future__ import annotations

# Tail ops that add a row (the output channels' bias) to the head's result, and those
# that apply ReLU to the previous result.
BIAS_OPS = frozenset({"BiasAdd", "Add", "AddV2"})
RELU_OPS = frozenset({"Relu"})

# head op type -> (module, function name): fn(node, head inputs, bias, relu) -> result or
# None. Names, so that planning a graph does not import the convolution kernels.
HEADS = {"Conv2D": ("conv_fast", "conv2d_with_epilogue"),
         "MatMul": ("math", "mat_mul_with_epilogue")}
_loaded: dict = {}


# The heads' variants compute in float32 only (oneDNN's path): other groups never try.
DTYPES = frozenset({"float32"})


def plan(head_op, tail_ops, n_tail_inputs, dtype="float32"):
    """Whether the head takes this tail in: None, or ``relu`` (bool). ``tail_ops`` are
    (op type, argument indices) as fusion.TailStep numbers them: the tail's group inputs
    first (here only the bias, index 0), then the head's result, then each member's;
    ``dtype`` the group's."""
    if (head_op not in HEADS or str(dtype) not in DTYPES or n_tail_inputs != 1
            or not 1 <= len(tail_ops) <= 2):
        return None
    head = n_tail_inputs
    (op, args) = tail_ops[0]
    if op not in BIAS_OPS or sorted(args) != [0, head] or (op == "BiasAdd" and args != (head, 0)):
        return None
    if len(tail_ops) == 1:
        return False
    op, args = tail_ops[1]
    if op not in RELU_OPS or args != (head + 1,):
        return None
    return True


def run(node, inputs, bias, relu):
    """The head ``node``'s result with the bias added and ReLU applied (``relu``), or
    None where its kernel does not serve these inputs."""
    fn = _loaded.get(node.op)
    if fn is None:
        import importlib

        module, name = HEADS[node.op]
        fn = _loaded[node.op] = getattr(importlib.import_module(f"{__package__}.{module}"), name)
    return fn(node, inputs, bias, relu)
