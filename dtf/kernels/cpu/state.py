"""CPU kernels of the state ops: variables, assignments, training updates, checkpoints.

A variable's value is replaced, never mutated in place (readers keep their snapshot), and
every read-modify-write holds the variable's lock so concurrent updates are never lost.
"""
from __future__ import annotations

import os

import numpy as np

from dtf.framework import dtypes, errors, os_errors
from dtf.framework.op_registry import get_op_def
from dtf.kernels.registry import register_kernel
from dtf.state import checkpoint_io
from dtf.state.resources import as_array

from . import in_place
from .jit_loading import run_stand_in, when_loaded


def _fmt(shape):
    return "[" + ",".join(str(d) for d in shape) + "]"


@register_kernel("VariableV2", "CPU", host=True)
def variable_v2(node):
    a = node.attrs
    key = (a.get("container", ""), a.get("shared_name") or node.name)
    shape = a.get("shape")
    return lambda ctx: ctx.resources.variable(key[0], key[1], a["dtype"], shape)


def _declared_shape(ref):
    """The shape assignments must match: the declared one, else the current value's."""
    if ref.shape is not None and all(d is not None for d in ref.shape):
        return tuple(ref.shape)
    return None if ref.value is None else ref.value.shape


@register_kernel("Assign", "CPU", host=True)
def assign(node):
    validate = node.attrs.get("validate_shape", True)

    def compute(ctx, ref, value):
        value = as_array(value, ref.dtype)
        with ref.lock:
            want = _declared_shape(ref) if validate else None
            if want is not None and tuple(want) != value.shape:
                raise errors.InvalidArgumentError(
                    node.name, None, "Assign requires shapes of both tensors to match. "
                    f"lhs shape= {_fmt(want)} rhs shape= {_fmt(value.shape)}")
            ref.value = value
        return value

    return compute


def _update_kernel(fn):
    def factory(node):
        def compute(ctx, ref, value):
            with ref.lock:
                old = ref.read()
                if old.shape != value.shape:
                    raise errors.InvalidArgumentError(
                        node.name, None, f"{node.op} requires shapes of both tensors to match. "
                        f"lhs shape= {_fmt(old.shape)} rhs shape= {_fmt(value.shape)}")
                new = fn(old, value).astype(old.dtype, copy=False)
                ref.value = new
            return new

        return compute

    return factory


register_kernel("AssignAdd", "CPU", host=True)(_update_kernel(np.add))
register_kernel("AssignSub", "CPU", host=True)(_update_kernel(np.subtract))


@register_kernel("IsVariableInitialized", "CPU", host=True)
def is_variable_initialized(node):
    return lambda ctx, ref: np.asarray(ref.initialized)


@register_kernel("ValueOrInitial", "CPU", host=True)
def value_or_initial(node):
    def compute(ctx, ref, initial):
        v = ref.value
        return initial if v is None else v

    return compute


@register_kernel("SelectUninitialized", "CPU")
def select_uninitialized(node):
    names = [n.encode() if isinstance(n, str) else n for n in node.attrs["names"]]

    def compute(ctx, *flags):
        out = [n for n, ok in zip(names, flags) if not bool(ok)]
        arr = np.empty(len(out), dtype=object)
        arr[:] = out
        return arr

    return compute


# -- training updates: TF's formulas, one pure function per op ---------------------------
def _gradient_descent(a, var, alpha, delta):
    return (var - alpha * delta,)


def _momentum(a, var, accum, lr, grad, momentum):
    accum = accum * momentum + grad
    if a.get("use_nesterov"):
        return var - (grad * lr + accum * momentum * lr), accum
    return var - lr * accum, accum


def _adam(a, var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad):
    lr_t = lr * np.sqrt(1 - beta2_power) / (1 - beta1_power)
    m = m + (grad - m) * (1 - beta1)
    v = v + (grad * grad - v) * (1 - beta2)
    if a.get("use_nesterov"):
        step = (grad * (1 - beta1) + beta1 * m) * lr_t / (np.sqrt(v) + epsilon)
    else:
        step = m * lr_t / (np.sqrt(v) + epsilon)
    return var - step, m, v


def _adagrad(a, var, accum, lr, grad):
    if a.get("update_slots", True):
        accum = accum + grad * grad
    return var - lr * grad / np.sqrt(accum), accum


def _rms_prop(a, var, ms, mom, lr, rho, momentum, epsilon, grad):
    ms = ms + (grad * grad - ms) * (1 - rho)
    mom = mom * momentum + lr * grad / np.sqrt(ms + epsilon)
    return var - mom, ms, mom


def _centered_rms_prop(a, var, mg, ms, mom, lr, rho, momentum, epsilon, grad):
    mg = mg + (grad - mg) * (1 - rho)
    ms = ms + (grad * grad - ms) * (1 - rho)
    mom = mom * momentum + lr * grad / np.sqrt(ms - mg * mg + epsilon)
    return var - mom, mg, ms, mom


def _adadelta(a, var, accum, accum_update, lr, rho, epsilon, grad):
    accum = accum * rho + grad * grad * (1 - rho)
    update = np.sqrt(accum_update + epsilon) / np.sqrt(accum + epsilon) * grad
    accum_update = accum_update * rho + update * update * (1 - rho)
    return var - update * lr, accum, accum_update


def _adagrad_da(a, var, g_acc, gg_acc, grad, lr, l1, l2, global_step):
    # Dual averaging: var is a closed form of the accumulated gradients at this step.
    g_acc = g_acc + grad
    gg_acc = gg_acc + grad * grad
    shrunk = np.sign(g_acc) * np.maximum(np.abs(g_acc) - global_step * l1, 0) if l1 > 0 else g_acc
    return -lr * shrunk / (global_step * l2 * lr + np.sqrt(gg_acc)), g_acc, gg_acc


def _ftrl_step(var, accum, linear, grad, shrunk_grad, lr, l1, l2, lr_power):
    new_accum = accum + grad * grad
    if lr_power == -0.5:
        sigma_num, new_power = np.sqrt(new_accum) - np.sqrt(accum), np.sqrt(new_accum)
    else:
        new_power = np.power(new_accum, -lr_power)
        sigma_num = new_power - np.power(accum, -lr_power)
    linear = linear + shrunk_grad - sigma_num / lr * var
    quadratic = new_power / lr + 2 * l2
    var = np.where(np.abs(linear) > l1, (np.sign(linear) * l1 - linear) / quadratic, 0)
    return var, new_accum, linear


def _ftrl(a, var, accum, linear, grad, lr, l1, l2, lr_power):
    return _ftrl_step(var, accum, linear, grad, grad, lr, l1, l2, lr_power)


def _ftrl_v2(a, var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power):
    # The shrinkage pulls the linear term only; the accumulator sees the plain gradient.
    return _ftrl_step(var, accum, linear, grad, grad + 2 * l2_shrinkage * var, lr, l1, l2, lr_power)


def _proximal_step(prox_var, lr, l1, l2):
    if l1 > 0:
        prox_var = np.sign(prox_var) * np.maximum(np.abs(prox_var) - lr * l1, 0)
    return prox_var / (1 + lr * l2)


def _proximal_gradient_descent(a, var, alpha, l1, l2, delta):
    return (_proximal_step(var - alpha * delta, alpha, l1, l2),)


def _proximal_adagrad(a, var, accum, lr, l1, l2, grad):
    accum = accum + grad * grad
    step_lr = lr / np.sqrt(accum)
    return _proximal_step(var - grad * step_lr, step_lr, l1, l2), accum


UPDATES = {
    "ApplyGradientDescent": _gradient_descent, "ApplyMomentum": _momentum,
    "ApplyAdam": _adam, "ApplyAdagrad": _adagrad, "ApplyRMSProp": _rms_prop,
    "ApplyCenteredRMSProp": _centered_rms_prop, "ApplyAdadelta": _adadelta,
    "ApplyAdagradDA": _adagrad_da, "ApplyFtrl": _ftrl, "ApplyFtrlV2": _ftrl_v2,
    "ApplyProximalGradientDescent": _proximal_gradient_descent,
    "ApplyProximalAdagrad": _proximal_adagrad,
}


class _locked:
    """Holds the locks of a set of variables (each once, in a fixed order so two updates
    sharing variables cannot deadlock). A plain class: contextlib.ExitStack cost ~10 us
    per update."""

    __slots__ = ("_locks",)

    def __init__(self, refs):
        self._locks = sorted({id(r.lock): r.lock for r in refs}.items())

    def __enter__(self):
        for _, lock in self._locks:
            lock.acquire()

    def __exit__(self, *exc):
        for _, lock in reversed(self._locks):
            lock.release()
        return False


def _apply_factory(update):
    def factory(node):
        attrs = node.attrs
        n_refs = len(get_op_def(node.op).ref_inputs)

        def compute(ctx, *inputs):
            refs, args = inputs[:n_refs], inputs[n_refs:]
            with _locked(refs):
                olds = [r.read() for r in refs]
                dt = olds[0].dtype
                for x in args:
                    if np.ndim(x) and np.shape(x) != olds[0].shape:
                        raise errors.InvalidArgumentError(
                            node.name, None, f"var and grad do not have the same shape"
                            f"{_fmt(olds[0].shape)} {_fmt(np.shape(x))}")
                news = update(attrs, *olds, *[np.asarray(x, dtype=dt) for x in args])
                for r, new in zip(refs, news):
                    r.value = np.asarray(new, dtype=dt)
                return refs[0].value

        return compute

    return factory


for _op, _fn in UPDATES.items():
    if _op == "ApplyAdam":  # float32/64: .adam_fast; other dtypes here
        register_kernel(_op, "CPU", fallback=True, host=True)(_apply_factory(_fn))
    elif _op not in ("ApplyGradientDescent", "ApplyMomentum"):  # their own kernels, below
        register_kernel(_op, "CPU", host=True)(_apply_factory(_fn))


def _check_update_shape(node, var, x):
    """Every argument is a scalar or has var's shape (the generic path's rule)."""
    if x.shape != var.shape and x.ndim:
        raise errors.InvalidArgumentError(
            node.name, None, f"var and grad do not have the same shape"
            f"{_fmt(var.shape)} {_fmt(x.shape)}")


# Updates of variables of at least this many elements run in slices over the intra-op
# threads (gradient descent here, Adam in .adam_fast): they are bound by memory bandwidth,
# which one core does not fill. The MLP's 1024 x 1024 gradient-descent update took 0.43 ms
# on one thread and 0.34 on two (median of 50), the CNN's 3136 x 1024 Adam update 3.9 and
# 2.7 (median of 30).
PARALLEL_UPDATE_MIN = int(os.environ.get("DTF_UPDATE_PARALLEL_MIN", 1 << 19))


def _numba_gradient_descent(node):
    """(update, write_in_place): ``update(var, alpha, delta)`` gives var - alpha * delta
    in one Numba pass for float32/64 variables (numpy otherwise, and until the loops have
    loaded); ``write_in_place(var, alpha, delta)`` writes it into var when the loops can
    and says whether it did (None for other dtypes). Outputs are allocated here, not in
    Numba, so that they own their memory and the next update may write them in place."""
    def with_numpy(var, alpha, delta):
        return _gradient_descent(None, var, alpha, delta)[0]

    if node.attrs.get("T") not in (dtypes.float32, dtypes.float64):
        return with_numpy, None
    dtype = np.dtype(node.attrs["T"].as_numpy_dtype)

    def fits(var, alpha, delta):
        return var.dtype == dtype and alpha.ndim == 0 and delta.shape == var.shape

    def sliced(loop, v, a, *arrays):
        """``loop(v, a, *arrays)`` over flat arrays; large ones in slices on the intra-op
        threads (bandwidth, as for Adam in .adam_fast)."""
        if v.size < PARALLEL_UPDATE_MIN:
            loop(v, a, *arrays)
        else:
            from .elementwise import over_slices

            over_slices(lambda s0, s1: loop(v[s0:s1], a, *(x[s0:s1] for x in arrays)), v.size)

    def fast_update():
        from .dense_jit import _sub_scaled_into

        def update(var, alpha, delta):
            if not fits(var, alpha, delta):
                return with_numpy(var, alpha, delta)
            out = np.empty(var.shape, var.dtype)
            sliced(_sub_scaled_into, np.ascontiguousarray(var).reshape(-1), alpha[()],
                   np.ascontiguousarray(delta).reshape(-1), out.reshape(-1))
            return out

        return update

    def fast_in_place():
        from .dense_jit import _sub_scaled_in_place

        def write_in_place(var, alpha, delta):
            if not fits(var, alpha, delta):
                return False
            sliced(_sub_scaled_in_place, var.reshape(-1), alpha[()],
                   np.ascontiguousarray(delta).reshape(-1))
            return True

        return write_in_place

    def numpy_in_place(var, alpha, delta):
        """Until the loops load: numpy writes var in place too (the loop's one pass over
        memory is what loading buys; an allocated result cost 1 us more per update)."""
        if not fits(var, alpha, delta):
            return False
        run_stand_in(_subtract_scaled_with_numpy, var, alpha, delta, key=numpy_in_place)
        return True

    return (when_loaded(fast_update, lambda *args: run_stand_in(with_numpy, *args)),
            when_loaded(fast_in_place, numpy_in_place))


def _subtract_scaled_with_numpy(var, alpha, delta):
    np.subtract(var, alpha * delta, out=var)


@register_kernel("ApplyGradientDescent", "CPU", host=True)
def apply_gradient_descent(node):
    """The most common update, without the generic path's per-call lists and lock set
    (~10 us down to ~4 us on a 64x128 float32 variable). alpha and delta have var's dtype.
    Written in place when nothing but the variable holds its array (.in_place)."""
    update, write_in_place = _numba_gradient_descent(node)

    def compute(ctx, ref, alpha, delta):
        with ref.lock:
            var = ref.read()
            shape = var.shape
            if alpha.shape != shape and alpha.ndim:
                _check_update_shape(node, var, alpha)  # raises
            if delta.shape != shape and delta.ndim:
                _check_update_shape(node, var, delta)
            if write_in_place is not None and in_place.unshared_one(var) \
                    and write_in_place(var, alpha, delta):
                return var
            ref.value = new = update(var, alpha, delta)
            return new

    return compute


@register_kernel("ApplyMomentum", "CPU", host=True)
def apply_momentum(node):
    """accum = accum * momentum + grad; var -= lr * accum (or Nesterov's step), written
    into the two arrays when nothing but their variables holds them (.in_place), by the
    same numpy operations in the same order as the generic path, which serves the rest:
    the generic path's new accum and var cost a 1024x1024 float32 update 449 us against
    270 written in place (small variables gain nothing: 5.4 against 5.7 us)."""
    nesterov = bool(node.attrs.get("use_nesterov"))
    generic = _apply_factory(_momentum)(node)

    def compute(ctx, var_ref, accum_ref, lr, grad, momentum):
        with _locked((var_ref, accum_ref)):
            var, accum = var_ref.read(), accum_ref.read()
            dt = var.dtype
            if (type(grad) is np.ndarray and grad.shape == var.shape == accum.shape
                    and grad.dtype == dt == accum.dtype and np.ndim(lr) == 0
                    and np.ndim(momentum) == 0 and in_place.unshared((var, accum))):
                lr, momentum = np.asarray(lr, dtype=dt), np.asarray(momentum, dtype=dt)
                np.multiply(accum, momentum, out=accum)
                np.add(accum, grad, out=accum)
                if nesterov:
                    step = grad * lr
                    step += accum * momentum * lr
                else:
                    step = lr * accum
                np.subtract(var, step, out=var)
                return var
        return generic(ctx, var_ref, accum_ref, lr, grad, momentum)

    return compute


# -- checkpoints ---------------------------------------------------------------------
def _text(x) -> str:
    v = np.asarray(x, dtype=object).reshape(-1)[0] if np.ndim(x) else np.asarray(x, dtype=object).item()
    return v.decode() if isinstance(v, bytes) else str(v)


def _texts(x) -> list:
    return [v.decode() if isinstance(v, bytes) else str(v) for v in np.asarray(x, dtype=object).reshape(-1)]


@register_kernel("SaveV2", "CPU")
def save_v2(node):
    def compute(ctx, prefix, names, slices, *tensors):
        names = _texts(names)
        if len(names) != len(tensors):
            raise errors.InvalidArgumentError(
                node.name, None, f"Got {len(names)} tensor names but {len(tensors)} tensors")
        specs = _texts(slices)
        try:
            checkpoint_io.write(_text(prefix), names, tensors,
                                specs if any(specs) else None)
        except OSError as e:  # disk full, read-only directory...: TF's class, path and OS message
            raise os_errors.from_os_error(e, node_name=node.name) from None

    return compute


@register_kernel("RestoreV2", "CPU")
def restore_v2(node):
    want = node.attrs["dtypes"]

    def compute(ctx, prefix, names, slices):
        reader = checkpoint_io.open_reader(_text(prefix))
        out = []
        for name, spec, dt in zip(_texts(names), _texts(slices), want):
            stored = reader.dtype_name(name)
            if stored != dt.name:
                raise errors.InvalidArgumentError(
                    node.name, None, f"tensor_name = {name}; expected dtype {dt.name} does not "
                    f"equal original dtype {stored}")
            out.append(reader.read_slice(name, spec) if spec else reader.read(name))
        return out[0] if len(out) == 1 else tuple(out)

    return compute


@register_kernel("MergeV2Checkpoints", "CPU")
def merge_v2_checkpoints(node):
    def compute(ctx, prefixes, destination):
        prefixes = np.asarray(prefixes, dtype=object)
        if prefixes.ndim != 1:
            raise errors.InvalidArgumentError(
                node.name, None, f"checkpoint_prefixes must be a vector, got shape {prefixes.shape}")
        try:
            checkpoint_io.merge([_text(p) for p in prefixes], _text(destination))
        except OSError as e:
            raise os_errors.from_os_error(e, node_name=node.name) from None

    return compute


@register_kernel("ShardedFilename", "CPU")
def sharded_filename(node):
    def compute(ctx, basename, shard, num_shards):
        return np.asarray(f"{_text(basename)}-{int(shard):05d}-of-{int(num_shards):05d}".encode(),
                          dtype=object)

    return compute


@register_kernel("CountUpTo", "CPU", dtypes=("int32", "int64"))
def count_up_to(node):
    limit = int(node.attrs["limit"])

    def compute(ctx, ref):
        with ref.lock:
            old = ref.read()
            if int(old) >= limit:
                raise errors.OutOfRangeError(node.name, None, f"Reached limit of {limit}")
            ref.value = np.asarray(old + 1, dtype=old.dtype)
        return old

    return compute
