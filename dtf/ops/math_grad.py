"""Gradients of the elementwise ops, casts, add_n and select (TF's rules)."""
from __future__ import annotations


from dtf.framework.op_registry import NotDifferentiable, RegisterGradient
from . import array_ops, math_ops, reduction_ops


@RegisterGradient("Cumsum")
def _cumsum_grad(op, grad):
    # Each input feeds the sums after it (before it, reversed): sum the gradient the other way.
    return [math_ops.cumsum(grad, op.inputs[1], exclusive=op.get_attr("exclusive"),
                            reverse=not op.get_attr("reverse")), None]


@RegisterGradient("Cumprod")
def _cumprod_grad(op, grad):
    # TF's rule (it divides by x, so it is not defined where x is 0, as in TF).
    x, axis = op.inputs
    exclusive, reverse = op.get_attr("exclusive"), op.get_attr("reverse")
    prod = math_ops.cumprod(x, axis, exclusive=exclusive, reverse=reverse)
    out = math_ops.cumsum(prod * grad, axis, exclusive=exclusive, reverse=not reverse)
    return [out / x, None]




def _binary_grads(op, gx, gy):
    """Reduces (gx, gy) to the shapes of op's two inputs. When static shapes decide the
    broadcast (e.g. [?, 128] + [128]) the reduction is built with constant axes; only a
    truly ambiguous case falls back to TF's BroadcastGradientArgs on runtime shapes."""
    x, y = op.inputs
    xs, ys = x.shape, y.shape
    if xs.is_fully_defined() and ys.is_fully_defined() and xs == ys:
        return gx, gy
    axes = static_broadcast_axes(xs, ys)
    if axes is not None:
        out = []
        for g, t, r in ((gx, x, axes[0]), (gy, y, axes[1])):
            if g is None or not r and g.shape.ndims == t.shape.ndims:
                out.append(g)
                continue
            target = [-1 if d is None else d for d in t.shape.as_tuple_or_none()]
            summed = reduction_ops.reduce_sum(g, r) if r else g
            out.append(array_ops.reshape(summed, target))
        return out
    sx, sy = array_ops.shape(x), array_ops.shape(y)
    rx, ry = array_ops.broadcast_gradient_args(sx, sy)
    out = []
    for g, r, s in ((gx, rx, sx), (gy, ry, sy)):
        out.append(None if g is None else array_ops.reshape(reduction_ops.reduce_sum(g, r), s))
    return out


def static_broadcast_axes(xs, ys):
    """Axes (of the broadcast result) to sum each input's gradient over, decided from static
    shapes; None when an unknown dim could be 1 and so hide a broadcast. Summing over an
    axis of size 1 is harmless, so a known 1 always counts as broadcast. The reshape that
    follows allows at most one unknown dim."""
    if xs.ndims is None or ys.ndims is None:
        return None
    n = max(xs.ndims, ys.ndims)
    a = [False] * (n - xs.ndims) + list(xs.as_tuple_or_none())
    b = [False] * (n - ys.ndims) + list(ys.as_tuple_or_none())
    rx, ry = [], []
    for i, (p, q) in enumerate(zip(a, b)):
        # False: the input lacks this axis (rank-extended); None: unknown size.
        if (p is None and q not in (False, 1)) or (q is None and p not in (False, 1)):
            return None  # an unknown size facing a real one (or another unknown) may be 1
        if p is False or p == 1:
            rx.append(i)
        if q is False or q == 1:
            ry.append(i)
    for shape in (xs, ys):
        if sum(d is None for d in shape.as_tuple_or_none()) > 1:
            return None
    return rx, ry


@RegisterGradient("Add")
def _add_grad(op, grad):
    return _binary_grads(op, grad, grad)


@RegisterGradient("Sub")
def _sub_grad(op, grad):
    return _binary_grads(op, grad, -grad)


@RegisterGradient("Mul")
def _mul_grad(op, grad):
    x, y = op.inputs
    return _binary_grads(op, grad * y, x * grad)


@RegisterGradient("RealDiv")
def _realdiv_grad(op, grad):
    x, y = op.inputs
    return _binary_grads(op, grad / y, grad * (-x / math_ops.square(y)))  # noqa: F821


@RegisterGradient("DivNoNan")
def _div_no_nan_grad(op, grad):
    x, y = op.inputs
    return _binary_grads(op, math_ops.div_no_nan(grad, y),  # noqa: F821
                         grad * math_ops.div_no_nan(-x, math_ops.square(y)))  # noqa: F821


@RegisterGradient("Pow")
def _pow_grad(op, grad):
    x, y = op.inputs
    z = op.outputs[0]
    gx = grad * y * math_ops.pow(x, y - 1)  # noqa: F821
    safe_x = math_ops.where(x > 0, x, array_ops.ones_like(x))
    log_x = math_ops.where(x > 0, math_ops.log(safe_x), array_ops.zeros_like(x))  # noqa: F821
    gy = grad * z * log_x
    return _binary_grads(op, gx, gy)


def _select_mask_grads(op, grad, x_wins):
    zeros = array_ops.zeros_like(grad)
    return _binary_grads(op, math_ops.where(x_wins, grad, zeros),
                         math_ops.where(x_wins, zeros, grad))


@RegisterGradient("Maximum")
def _maximum_grad(op, grad):
    x, y = op.inputs
    return _select_mask_grads(op, grad, math_ops.greater_equal(x + array_ops.zeros_like(grad),  # noqa: F821
                                                               y + array_ops.zeros_like(grad)))


@RegisterGradient("Minimum")
def _minimum_grad(op, grad):
    x, y = op.inputs
    return _select_mask_grads(op, grad, math_ops.less_equal(x + array_ops.zeros_like(grad),  # noqa: F821
                                                            y + array_ops.zeros_like(grad)))


@RegisterGradient("SquaredDifference")
def _squared_difference_grad(op, grad):
    x, y = op.inputs
    g = 2.0 * grad * (x - y) if grad.dtype.is_floating else grad * 2 * (x - y)
    return _binary_grads(op, g, -g)


@RegisterGradient("Atan2")
def _atan2_grad(op, grad):
    y, x = op.inputs
    inv = grad / (math_ops.square(x) + math_ops.square(y))  # noqa: F821
    return _binary_grads(op, x * inv, -y * inv)


@RegisterGradient("FloorMod")
def _floormod_grad(op, grad):
    # x mod y = x - floor(x / y) * y, piecewise linear in both inputs.
    x, y = op.inputs
    return _binary_grads(op, grad, grad * math_ops.negative(math_ops.floordiv(x, y)))  # noqa: F821


@RegisterGradient("TruncateMod")
def _truncatemod_grad(op, grad):
    # x rem y = x - trunc(x / y) * y.
    x, y = op.inputs
    return _binary_grads(op, grad, grad * math_ops.negative(math_ops.truncatediv(x, y)))  # noqa: F821


@RegisterGradient("Xdivy")
def _xdivy_grad(op, grad):
    x, y = op.inputs
    not_zero_x = math_ops.cast(math_ops.not_equal(x, array_ops.zeros_like(x)), x.dtype)  # noqa: F821
    return _binary_grads(op, grad * math_ops.xdivy(not_zero_x, y),  # noqa: F821
                         grad * math_ops.xdivy(-x, math_ops.square(y)))  # noqa: F821


for _t in ("FloorDiv", "TruncateDiv", "Less", "LessEqual", "Greater",
           "GreaterEqual", "Equal", "NotEqual", "LogicalAnd", "LogicalOr", "LogicalXor",
           "LogicalNot", "Sign", "Floor", "Ceil", "Round", "IsNan", "IsInf", "IsFinite",
           "ArgMax", "ArgMin", "Shape", "BroadcastGradientArgs", "ZerosLike", "OnesLike"):
    NotDifferentiable(_t)


# -- unary: d/dx expressed with the op's input x and/or output y -------------------------
def _unary(op_type, rule):
    @RegisterGradient(op_type)
    def grad_fn(op, grad):
        return [rule(op.inputs[0], op.outputs[0], grad)]

    return grad_fn


m = math_ops
_unary("Neg", lambda x, y, g: -g)
_unary("Abs", lambda x, y, g: g * m.sign(x))  # noqa: F821
_unary("Square", lambda x, y, g: g * (2.0 * x) if x.dtype.is_floating else g * 2 * x)
_unary("Sqrt", lambda x, y, g: g * 0.5 / y if y.dtype.is_floating else g / (2 * y))
_unary("Rsqrt", lambda x, y, g: g * (-0.5) * y * y * y)
_unary("Reciprocal", lambda x, y, g: -g * y * y)
_unary("Exp", lambda x, y, g: g * y)
_unary("Expm1", lambda x, y, g: g * (y + 1.0))
_unary("Log", lambda x, y, g: g * m.reciprocal(x))  # noqa: F821
_unary("Log1p", lambda x, y, g: g * m.reciprocal(x + 1.0))  # noqa: F821
_unary("Sin", lambda x, y, g: g * m.cos(x))  # noqa: F821
_unary("Cos", lambda x, y, g: -g * m.sin(x))  # noqa: F821
_unary("Tan", lambda x, y, g: g * m.square(m.reciprocal(m.cos(x))))  # noqa: F821
_unary("Tanh", lambda x, y, g: g * (1.0 - y * y))
_unary("Sigmoid", lambda x, y, g: g * y * (1.0 - y))
_unary("Atan", lambda x, y, g: g / (1.0 + x * x))
_unary("Asin", lambda x, y, g: g * m.rsqrt(1.0 - x * x))  # noqa: F821
_unary("Acos", lambda x, y, g: -g * m.rsqrt(1.0 - x * x))  # noqa: F821
_unary("Sinh", lambda x, y, g: g * m.cosh(x))  # noqa: F821
_unary("Cosh", lambda x, y, g: g * m.sinh(x))  # noqa: F821
_unary("Erf", lambda x, y, g: g * (2.0 / 3.141592653589793 ** 0.5) * m.exp(-x * x))  # noqa: F821
_unary("Identity", lambda x, y, g: g)


@RegisterGradient("Cast")
def _cast_grad(op, grad):
    src = op.inputs[0].dtype
    if src.is_floating and grad.dtype.is_floating:
        return [math_ops.cast(grad, src)]
    return [None]


@RegisterGradient("AddN")
def _add_n_grad(op, grad):
    return [grad] * len(op.inputs)


@RegisterGradient("Select")
def _select_grad(op, grad):
    c, x, _ = op.inputs
    zeros = array_ops.zeros_like(x)
    return [None, math_ops.where(c, grad, zeros), math_ops.where(c, zeros, grad)]


@RegisterGradient("SelectV2")
def _select_v2_grad(op, grad):
    c, x, y = op.inputs
    zeros = array_ops.zeros_like(grad)
    gx = math_ops.where_v2(c, grad, zeros)
    gy = math_ops.where_v2(c, zeros, grad)
    out = []
    for g, t in ((gx, x), (gy, y)):
        if t.shape.is_fully_defined() and grad.shape.is_fully_defined() and t.shape == grad.shape:
            out.append(g)
        else:
            sg, st = array_ops.shape(g), array_ops.shape(t)
            r, _ = array_ops.broadcast_gradient_args(st, sg)
            out.append(array_ops.reshape(reduction_ops.reduce_sum(g, r), st))
    return [None] + out



