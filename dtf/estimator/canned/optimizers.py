"""The canned estimators' ``optimizer`` argument: a name ('Adagrad', 'Adam', 'Ftrl',
'RMSProp', 'SGD') made with the estimator's default learning rate, an Optimizer, or a
callable returning one (TF 1.15's ``optimizers.get_optimizer_instance``)."""
from __future__ import annotations


def _by_name():
    from dtf import train
    return {"Adagrad": train.AdagradOptimizer, "Adam": train.AdamOptimizer,
            "Ftrl": train.FtrlOptimizer, "RMSProp": train.RMSPropOptimizer,
            "SGD": train.GradientDescentOptimizer}


def get_optimizer_instance(opt, learning_rate=None):
    from dtf.train.optimizers import Optimizer

    if isinstance(opt, str):
        table = _by_name()
        if opt in table:
            if not learning_rate:
                raise ValueError("learning_rate must be specified when opt is string.")
            return table[opt](learning_rate=learning_rate)
        raise ValueError(f"Unsupported optimizer name: {opt}. Supported names are: "
                         f"{tuple(sorted(table))}")
    if callable(opt) and not isinstance(opt, Optimizer):
        opt = opt()
    if not isinstance(opt, Optimizer):
        raise ValueError(f"The given object is not an Optimizer instance. Given: {opt}")
    return opt
