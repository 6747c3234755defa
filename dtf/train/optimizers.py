"""TF1 optimizers: compute_gradients / apply_gradients / minimize, slot variables, and
the update rules GradientDescent, Momentum, Adam, Adagrad and RMSProp.

Each update is one Apply* op (dtf/ops/state_ops.py) named like TF's
(``<Optimizer>/update_<var>/Apply<...>``) and colocated with its variable, so in a cluster
the update runs on the task that holds the variable.
"""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.indexed_slices import IndexedSlices
from dtf.framework.ops import GraphKeys
from dtf.ops import control_flow_ops, init_ops, state_ops
from dtf.ops import variable_scope as _vs
from dtf.ops import variables as _variables
from dtf.ops.gradients import gradients as _gradients

__all__ = ["Optimizer", "GradientDescentOptimizer", "MomentumOptimizer", "AdamOptimizer",
           "AdagradOptimizer", "RMSPropOptimizer"]

_VALID_DTYPES = (dtypes.float16, dtypes.float32, dtypes.float64)


def _var_key(var):
    return (var.op.graph, var.op.name)


def _create_slot_var(primary, initializer, slot_name, dtype):
    """A non-trainable variable named ``<primary>/<slot_name>``, beside its primary; the
    slot of a shard of a partitioned variable is that shard of a partitioned slot, saved as
    TF saves it: a slice of "<full name>/<slot>" (e.g. "emb/Adam", not "emb/part_0/Adam")."""
    slot = _new_slot_var(primary, initializer, slot_name, dtype)
    info = getattr(primary, "_save_slice_info", None)
    n = slot.get_shape().ndims
    if info is not None and (n is None or n > 0):
        from dtf.ops.partitioned_variables import SaveSliceInfo

        real_slot_name = slot.op.name[len(primary.op.name) + 1:]
        slot._save_slice_info = SaveSliceInfo(f"{info.full_name}/{real_slot_name}", info.full_shape[:n],
                                              info.var_offset[:n], info.var_shape[:n])
    return slot


def _new_slot_var(primary, initializer, slot_name, dtype):
    shape = primary.get_shape()
    graph = primary.graph
    with graph.as_default(), _ops.name_scope(None), graph.control_dependencies(None):
        with _vs.variable_scope(None, primary.op.name + "/" + slot_name):
            with graph.colocate_with(primary.op):
                if shape.is_fully_defined():
                    return _vs.get_variable("", shape=shape, dtype=dtype, initializer=initializer,
                                            trainable=False)
                from dtf.ops.array_ops import zeros_like

                value = zeros_like(primary.initialized_value(), dtype=dtype)
                return _vs.get_variable("", initializer=value, trainable=False, validate_shape=False)


class Optimizer:
    """Base class: subclasses implement _create_slots, _prepare and _apply_dense."""

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking, name):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots: dict = {}
        self._non_slot_dict: dict = {}

    def get_name(self):
        return self._name

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        """compute_gradients then apply_gradients; returns the training op."""
        grads_and_vars = self.compute_gradients(
            loss, var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        if not [v for g, v in grads_and_vars if g is not None]:
            raise ValueError("No gradients provided for any variable, check your graph for ops "
                             "that do not support gradients, between variables "
                             f"{[str(v) for _, v in grads_and_vars]} and loss {loss}.")
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops=False,
                          grad_loss=None):
        """A list of (gradient or None, variable) for ``var_list`` (default: trainables)."""
        if callable(loss):
            loss = loss()
        if gate_gradients not in (Optimizer.GATE_NONE, Optimizer.GATE_OP, Optimizer.GATE_GRAPH):
            raise ValueError("gate_gradients must be one of: Optimizer.GATE_NONE, "
                             f"Optimizer.GATE_OP, Optimizer.GATE_GRAPH. Not {gate_gradients}")
        self._assert_valid_dtypes([loss] + ([grad_loss] if grad_loss is not None else []))
        var_list = _variables.trainable_variables() if var_list is None else _flatten(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        grads = _gradients(loss, [v._ref() if hasattr(v, "_ref") else v for v in var_list],
                           grad_ys=grad_loss, gate_gradients=(gate_gradients == Optimizer.GATE_OP),
                           aggregation_method=aggregation_method,
                           colocate_gradients_with_ops=colocate_gradients_with_ops)
        if gate_gradients == Optimizer.GATE_GRAPH:
            grads = control_flow_ops.tuple(grads)
        grads_and_vars = list(zip(grads, var_list))
        self._assert_valid_dtypes([v for g, v in grads_and_vars if g is not None])
        return grads_and_vars

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Adds the update ops (and global_step += 1 after them); returns the train op."""
        grads_and_vars = tuple(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        converted = []
        for g, v in grads_and_vars:
            if g is not None:
                try:
                    g = _ops.convert_to_tensor_or_indexed_slices(g)
                except (TypeError, ValueError):
                    raise TypeError(f"Gradient must be convertible to a Tensor or IndexedSlices, "
                                    f"or None: {g}") from None
            converted.append((g, v))
        var_list = [v for g, v in converted if g is not None]
        if not var_list:
            raise ValueError("No gradients provided for any variable: "
                             f"{[str(v) for _, v in converted]}.")
        graph = var_list[0].graph
        with graph.control_dependencies(None):
            self._create_slots(var_list)
        update_ops = []
        with _ops.name_scope(name, self._name) as scope:
            self._prepare()
            for grad, var in converted:
                if grad is None:
                    continue
                with _ops.name_scope("update_" + var.op.name), graph.colocate_with(var.op):
                    if isinstance(grad, IndexedSlices):
                        update_ops.append(_as_op(self._apply_sparse_duplicate_indices(grad, var)))
                    else:
                        update_ops.append(_as_op(self._apply_dense(grad, var)))
            if global_step is None:
                apply_updates = self._finish(update_ops, scope)
            else:
                with graph.control_dependencies([self._finish(update_ops, "update")]):
                    with graph.colocate_with(_as_op(global_step)):
                        apply_updates = state_ops.assign_add(global_step, 1, name=scope).op
        train_ops = graph.get_collection_ref(GraphKeys.TRAIN_OP)
        if apply_updates not in train_ops:
            train_ops.append(apply_updates)
        return apply_updates

    # -- slots -----------------------------------------------------------------------
    def get_slot(self, var, name):
        named = self._slots.get(name)
        return None if not named else named.get(_var_key(var))

    def get_slot_names(self):
        return sorted(self._slots)

    def variables(self):
        """The optimizer's own variables (slots and non-slot) in the default graph."""
        graph = _ops.get_default_graph()
        found = [v for v in self._non_slot_dict.values() if v.graph is graph]
        for slots in self._slots.values():
            found += [v for v in slots.values() if v.graph is graph]
        return sorted(found, key=lambda v: v.name)

    def _slot(self, var, slot_name, op_name, initializer):
        named = self._slots.setdefault(slot_name, {})
        key = _var_key(var)
        if key not in named:
            named[key] = _create_slot_var(var, initializer, op_name, var.dtype)
        return named[key]

    def _zeros_slot(self, var, slot_name, op_name):
        return self._slot(var, slot_name, op_name, init_ops.zeros_initializer())

    def _create_non_slot_variable(self, initial_value, name, colocate_with):
        key = (name, colocate_with.graph)
        if key not in self._non_slot_dict:
            with colocate_with.graph.colocate_with(colocate_with.op):
                self._non_slot_dict[key] = _variables.Variable(initial_value, name=name,
                                                               trainable=False)
        return self._non_slot_dict[key]

    def _get_non_slot_variable(self, name, graph=None):
        return self._non_slot_dict.get((name, graph or _ops.get_default_graph()))

    # -- subclass hooks --------------------------------------------------------------
    def _create_slots(self, var_list):
        pass

    def _prepare(self):
        pass

    def _apply_dense(self, grad, var):
        raise NotImplementedError

    def _apply_sparse_duplicate_indices(self, grad, var):
        """Sums the rows of repeated indices (on the variable's task), then _apply_sparse."""
        summed_values, unique_indices = _deduplicate_indexed_slices(grad.values, grad.indices)
        return self._apply_sparse(IndexedSlices(summed_values, unique_indices, grad.dense_shape),
                                  var)

    def _apply_sparse(self, grad, var):
        """The dense update's Apply op in its SparseApply form (the same inputs plus the row
        indices: what TF's optimizers build), so only the gradient's rows change."""
        return self._apply_dense(grad, var)

    def _finish(self, update_ops, name_scope):
        return control_flow_ops.group(*update_ops, name=name_scope)

    def _hyper(self, value, name):
        return _ops.convert_to_tensor(value() if callable(value) else value, name=name)

    @staticmethod
    def _cast(t, var):
        from dtf.ops.math_ops import cast

        return cast(t, var.dtype)

    def _assert_valid_dtypes(self, tensors):
        for t in tensors:
            if t.dtype not in _VALID_DTYPES:
                raise ValueError(f"Invalid type {t.dtype!r} for {t.name}, expected: "
                                 f"{list(_VALID_DTYPES)}.")


def _deduplicate_indexed_slices(values, indices):
    """(summed values, unique indices): the rows of each repeated index added up."""
    from dtf.ops.array_ops import shape, unsorted_segment_sum
    from dtf.ops.sort_ops import unique

    unique_indices, new_positions = unique(indices)
    summed = unsorted_segment_sum(values, new_positions, shape(unique_indices)[0])
    return summed, unique_indices


def _flatten(x):
    if isinstance(x, dict):
        x = list(x.values())
    if isinstance(x, (list, tuple)):
        return [v for item in x for v in _flatten(item)]
    return [x]


def _as_op(x):
    return x if isinstance(x, _ops.Operation) else x.op


class GradientDescentOptimizer(Optimizer):
    """var -= learning_rate * grad."""

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate

    def _prepare(self):
        self._learning_rate_tensor = self._hyper(self._learning_rate, "learning_rate")

    def _apply_dense(self, grad, var):
        return state_ops.apply_gradient_descent(
            var, self._cast(self._learning_rate_tensor, var), grad, use_locking=self._use_locking)

    def _apply_sparse_duplicate_indices(self, grad, var):
        # A scatter-subtract adds up repeated rows itself: no deduplication, as in TF.
        from dtf.ops.scatter_ops import scatter_sub

        delta = grad.values * self._cast(self._learning_rate_tensor, var)
        return scatter_sub(var, grad.indices, delta, use_locking=self._use_locking)


class MomentumOptimizer(Optimizer):
    """accum = momentum * accum + grad; var -= lr * accum (or the Nesterov variant)."""

    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum",
                 use_nesterov=False):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self):
        self._learning_rate_tensor = self._hyper(self._learning_rate, "learning_rate")
        self._momentum_tensor = self._hyper(self._momentum, "momentum")

    def _apply_dense(self, grad, var):
        return state_ops.apply_momentum(
            var, self.get_slot(var, "momentum"), self._cast(self._learning_rate_tensor, var),
            grad, self._cast(self._momentum_tensor, var), use_locking=self._use_locking,
            use_nesterov=self._use_nesterov)


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba) with TF's bias-corrected step size."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08,
                 use_locking=False, name="Adam"):
        super().__init__(use_locking, name)
        self._lr, self._beta1, self._beta2, self._epsilon = learning_rate, beta1, beta2, epsilon

    def _get_beta_accumulators(self):
        graph = _ops.get_default_graph()
        return (self._get_non_slot_variable("beta1_power", graph),
                self._get_non_slot_variable("beta2_power", graph))

    def _create_slots(self, var_list):
        first = min(var_list, key=lambda v: v.name)
        self._create_non_slot_variable(self._beta1, "beta1_power", first)
        self._create_non_slot_variable(self._beta2, "beta2_power", first)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name + "_1")

    def _prepare(self):
        self._lr_t = self._hyper(self._lr, "learning_rate")
        self._beta1_t = self._hyper(self._beta1, "beta1")
        self._beta2_t = self._hyper(self._beta2, "beta2")
        self._epsilon_t = self._hyper(self._epsilon, "epsilon")

    def _apply_dense(self, grad, var):
        beta1_power, beta2_power = self._get_beta_accumulators()
        c = self._cast
        return state_ops.apply_adam(
            var, self.get_slot(var, "m"), self.get_slot(var, "v"), c(beta1_power, var),
            c(beta2_power, var), c(self._lr_t, var), c(self._beta1_t, var), c(self._beta2_t, var),
            c(self._epsilon_t, var), grad, use_locking=self._use_locking)

    def _apply_sparse(self, grad, var):
        """TF's non-lazy sparse Adam: m and v decay everywhere (so every row of var moves),
        the gradient's rows are scatter-added into them."""
        from dtf.ops.math_ops import sqrt
        from dtf.ops.scatter_ops import scatter_add

        beta1_power, beta2_power = (self._cast(b, var) for b in self._get_beta_accumulators())
        lr_t, beta1_t = self._cast(self._lr_t, var), self._cast(self._beta1_t, var)
        beta2_t, epsilon_t = self._cast(self._beta2_t, var), self._cast(self._epsilon_t, var)
        lr = lr_t * sqrt(1 - beta2_power) / (1 - beta1_power)
        lock = self._use_locking
        m = self.get_slot(var, "m")
        m_t = state_ops.assign(m, m * beta1_t, use_locking=lock)
        with _ops.control_dependencies([m_t]):
            m_t = scatter_add(m, grad.indices, grad.values * (1 - beta1_t), use_locking=lock)
        v = self.get_slot(var, "v")
        v_t = state_ops.assign(v, v * beta2_t, use_locking=lock)
        with _ops.control_dependencies([v_t]):
            v_t = scatter_add(v, grad.indices, (grad.values * grad.values) * (1 - beta2_t),
                              use_locking=lock)
        var_update = state_ops.assign_sub(var, lr * m_t / (sqrt(v_t) + epsilon_t),
                                          use_locking=lock)
        return control_flow_ops.group(var_update, m_t, v_t)

    def _finish(self, update_ops, name_scope):
        beta1_power, beta2_power = self._get_beta_accumulators()
        graph = beta1_power.graph
        with graph.control_dependencies(update_ops), graph.colocate_with(beta1_power.op):
            update_beta1 = beta1_power.assign(beta1_power * self._beta1_t,
                                              use_locking=self._use_locking)
            update_beta2 = beta2_power.assign(beta2_power * self._beta2_t,
                                              use_locking=self._use_locking)
        return control_flow_ops.group(*update_ops, update_beta1, update_beta2, name=name_scope)


class AdagradOptimizer(Optimizer):
    """accum += grad**2; var -= lr * grad / sqrt(accum)."""

    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False,
                 name="Adagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError("initial_accumulator_value must be positive: "
                             f"{initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value

    def _create_slots(self, var_list):
        for v in var_list:
            init = init_ops.constant_initializer(self._initial_accumulator_value, dtype=v.dtype)
            self._slot(v, "accumulator", self._name, init)

    def _prepare(self):
        self._learning_rate_tensor = self._hyper(self._learning_rate, "learning_rate")

    def _apply_dense(self, grad, var):
        return state_ops.apply_adagrad(
            var, self.get_slot(var, "accumulator"), self._cast(self._learning_rate_tensor, var),
            grad, use_locking=self._use_locking)


class RMSPropOptimizer(Optimizer):
    """RMSProp with momentum; ``centered`` normalises by the gradient's variance."""

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10, use_locking=False,
                 centered=False, name="RMSProp"):
        super().__init__(use_locking, name)
        self._learning_rate, self._decay = learning_rate, decay
        self._momentum, self._epsilon, self._centered = momentum, epsilon, centered

    def _create_slots(self, var_list):
        for v in var_list:
            self._slot(v, "rms", self._name, init_ops.ones_initializer(dtype=v.dtype))
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self):
        self._learning_rate_tensor = self._hyper(self._learning_rate, "learning_rate")
        self._decay_tensor = self._hyper(self._decay, "decay")
        self._momentum_tensor = self._hyper(self._momentum, "momentum")
        self._epsilon_tensor = self._hyper(self._epsilon, "epsilon")

    def _apply_dense(self, grad, var):
        c = self._cast
        hypers = [c(self._learning_rate_tensor, var), c(self._decay_tensor, var),
                  c(self._momentum_tensor, var), c(self._epsilon_tensor, var), grad]
        rms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        if self._centered:
            return state_ops.apply_centered_rms_prop(
                var, self.get_slot(var, "mg"), rms, mom, *hypers, use_locking=self._use_locking)
        return state_ops.apply_rms_prop(var, rms, mom, *hypers,
                                        use_locking=self._use_locking)
