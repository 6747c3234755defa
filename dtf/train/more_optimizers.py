"""TF1 optimizers beyond the common five: Adadelta, AdagradDA, Ftrl, ProximalGradientDescent
and ProximalAdagrad, with TF's defaults, checks, hyper-parameters and slot names
(``<var>/<name>``, ``<var>/<name>_1``), so checkpoints line up with TF's.

Each update is one Apply* op (dtf/ops/state_ops.py), as in optimizers.py.
"""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.ops import init_ops, state_ops
from dtf.train.optimizers import Optimizer

__all__ = ["AdadeltaOptimizer", "AdagradDAOptimizer", "FtrlOptimizer",
           "ProximalGradientDescentOptimizer", "ProximalAdagradOptimizer"]


def _constant_slot(opt, var, slot_name, op_name, value):
    return opt._slot(var, slot_name, op_name, init_ops.constant_initializer(value, dtype=var.dtype))


def _check_non_negative(**values):
    for name, value in values.items():
        if value < 0.0:
            raise ValueError(f"{name} {value:f} needs to be positive or zero")


def _prepare_rate_l1_l2(opt):
    """The learning rate and regularization strengths as tensors, named as TF names them."""
    opt._learning_rate_tensor = opt._hyper(opt._learning_rate, "learning_rate")
    opt._l1_t = opt._hyper(opt._l1, "l1_regularization_strength")
    opt._l2_t = opt._hyper(opt._l2, "l2_regularization_strength")


class AdadeltaOptimizer(Optimizer):
    """Adadelta (Zeiler, 2012): steps scaled by the ratio of running RMS of updates and
    gradients, times ``learning_rate``."""

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-8, use_locking=False,
                 name="Adadelta"):
        super().__init__(use_locking, name)
        self._lr, self._rho, self._epsilon = learning_rate, rho, epsilon

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "accum", self._name)
            self._zeros_slot(v, "accum_update", self._name)

    def _prepare(self):
        self._lr_t = self._hyper(self._lr, "lr")
        self._rho_t = self._hyper(self._rho, "rho")
        self._epsilon_t = self._hyper(self._epsilon, "epsilon")

    def _apply_dense(self, grad, var):
        c = self._cast
        return state_ops.apply_adadelta(
            var, self.get_slot(var, "accum"), self.get_slot(var, "accum_update"),
            c(self._lr_t, var), c(self._rho_t, var), c(self._epsilon_t, var), grad,
            use_locking=self._use_locking)


class AdagradDAOptimizer(Optimizer):
    """Adagrad dual averaging: var = -lr * shrink(sum of gradients) / (sqrt(sum of
    squared gradients) + step * l2 * lr), at step = global_step + 1."""

    def __init__(self, learning_rate, global_step, initial_gradient_squared_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="AdagradDA"):
        if initial_gradient_squared_accumulator_value <= 0.0:
            raise ValueError("initial_gradient_squared_accumulator_value must be positive: "
                             f"{initial_gradient_squared_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._global_step = global_step
        self._initial_gg = initial_gradient_squared_accumulator_value
        self._l1 = l1_regularization_strength
        self._l2 = l2_regularization_strength

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "gradient_accumulator", self._name)
            _constant_slot(self, v, "gradient_squared_accumulator", self._name, self._initial_gg)

    def _prepare(self):
        from dtf.ops.array_ops import identity
        from dtf.ops.math_ops import cast

        _prepare_rate_l1_l2(self)
        # Read once per step (not once per variable), as TF does.
        step = cast(identity(self._global_step), dtypes.int64)
        self._global_step_on_worker = step + 1

    def _apply_dense(self, grad, var):
        c = self._cast
        return state_ops.apply_adagrad_da(
            var, self.get_slot(var, "gradient_accumulator"),
            self.get_slot(var, "gradient_squared_accumulator"), grad,
            c(self._learning_rate_tensor, var), c(self._l1_t, var), c(self._l2_t, var),
            self._global_step_on_worker,
            use_locking=self._use_locking)


class FtrlOptimizer(Optimizer):
    """FTRL-Proximal (McMahan et al., 2013) with l1/l2 regularization and, when
    ``l2_shrinkage_regularization_strength`` > 0, TF's online l2 shrinkage (ApplyFtrlV2)."""

    def __init__(self, learning_rate, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="Ftrl", accum_name=None, linear_name=None,
                 l2_shrinkage_regularization_strength=0.0):
        super().__init__(use_locking, name)
        _check_non_negative(initial_accumulator_value=initial_accumulator_value)
        if learning_rate_power > 0.0:
            raise ValueError(f"learning_rate_power {learning_rate_power:f} needs to be negative "
                             "or zero")
        _check_non_negative(l1_regularization_strength=l1_regularization_strength,
                            l2_regularization_strength=l2_regularization_strength,
                            l2_shrinkage_regularization_strength=l2_shrinkage_regularization_strength)
        self._learning_rate = learning_rate
        self._learning_rate_power = learning_rate_power
        self._initial_accumulator_value = initial_accumulator_value
        self._l1 = l1_regularization_strength
        self._l2 = l2_regularization_strength
        self._l2_shrinkage = l2_shrinkage_regularization_strength
        self._accum_name = accum_name
        self._linear_name = linear_name

    def _create_slots(self, var_list):
        for v in var_list:
            _constant_slot(self, v, "accum", self._accum_name or self._name,
                           self._initial_accumulator_value)
            self._zeros_slot(v, "linear", self._linear_name or self._name)

    def _prepare(self):
        self._lr_t = self._hyper(self._learning_rate, "learning_rate")
        self._l1_t = self._hyper(self._l1, "l1_regularization_strength")
        self._l2_t = self._hyper(self._l2, "l2_regularization_strength")
        self._l2_shrinkage_t = self._hyper(self._l2_shrinkage, "l2_shrinkage_regularization_strength")
        self._lr_power_t = self._hyper(self._learning_rate_power, "learning_rate_power")

    def _apply_dense(self, grad, var):
        c = self._cast
        slots = (self.get_slot(var, "accum"), self.get_slot(var, "linear"))
        lr, l1, l2 = c(self._lr_t, var), c(self._l1_t, var), c(self._l2_t, var)
        lr_power = c(self._lr_power_t, var)
        if self._l2_shrinkage <= 0.0:
            return state_ops.apply_ftrl(var, *slots, grad, lr, l1, l2, lr_power,
                                        use_locking=self._use_locking)
        return state_ops.apply_ftrl_v2(var, *slots, grad, lr, l1, l2, c(self._l2_shrinkage_t, var),
                                       lr_power, use_locking=self._use_locking)


class ProximalGradientDescentOptimizer(Optimizer):
    """Gradient descent followed by the proximal step of l1 (soft threshold) and l2."""

    def __init__(self, learning_rate, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, use_locking=False,
                 name="ProximalGradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength

    def _prepare(self):
        _prepare_rate_l1_l2(self)

    def _apply_dense(self, grad, var):
        c = self._cast
        return state_ops.apply_proximal_gradient_descent(
            var, c(self._learning_rate_tensor, var), c(self._l1_t, var), c(self._l2_t, var), grad,
            use_locking=self._use_locking)


class ProximalAdagradOptimizer(Optimizer):
    """Adagrad's step size followed by the proximal step of l1 and l2."""

    def __init__(self, learning_rate, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="ProximalAdagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: {initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength

    def _create_slots(self, var_list):
        for v in var_list:
            _constant_slot(self, v, "accumulator", self._name, self._initial_accumulator_value)

    def _prepare(self):
        _prepare_rate_l1_l2(self)

    def _apply_dense(self, grad, var):
        c = self._cast
        return state_ops.apply_proximal_adagrad(
            var, self.get_slot(var, "accumulator"), c(self._learning_rate_tensor, var),
            c(self._l1_t, var), c(self._l2_t, var), grad, use_locking=self._use_locking)
