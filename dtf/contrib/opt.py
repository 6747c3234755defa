"""tf.contrib.opt: LazyAdamOptimizer, Adam whose sparse updates touch only the rows of the
gradient (moments of other rows are left as they are), as TF 1.15's contrib has it."""
from __future__ import annotations

from dtf.ops import array_ops, control_flow_ops, math_ops
from dtf.ops.scatter_ops import scatter_sub, scatter_update
from dtf.train.optimizers import AdamOptimizer

__all__ = ["LazyAdamOptimizer"]


class LazyAdamOptimizer(AdamOptimizer):
    """Adam for sparse gradients: m, v and var change only at the gradient's indices (TF's
    AdamOptimizer decays every row's moments, so every row moves). Dense gradients are
    updated as by AdamOptimizer."""

    def _apply_sparse(self, grad, var):
        c = self._cast
        beta1_power, beta2_power = (c(b, var) for b in self._get_beta_accumulators())
        lr_t, beta1_t = c(self._lr_t, var), c(self._beta1_t, var)
        beta2_t, epsilon_t = c(self._beta2_t, var), c(self._epsilon_t, var)
        lr = lr_t * math_ops.sqrt(1 - beta2_power) / (1 - beta1_power)
        lock = self._use_locking
        m = self.get_slot(var, "m")
        m_t = scatter_update(m, grad.indices, beta1_t * array_ops.gather(m, grad.indices)
                             + (1 - beta1_t) * grad.values, use_locking=lock)
        v = self.get_slot(var, "v")
        v_t = scatter_update(v, grad.indices, beta2_t * array_ops.gather(v, grad.indices)
                             + (1 - beta2_t) * math_ops.square(grad.values), use_locking=lock)
        m_t_slice = array_ops.gather(m_t, grad.indices)
        v_t_slice = array_ops.gather(v_t, grad.indices)
        var_update = scatter_sub(var, grad.indices,
                                 lr * m_t_slice / (math_ops.sqrt(v_t_slice) + epsilon_t),
                                 use_locking=lock)
        return control_flow_ops.group(var_update, m_t, v_t)
