"""tf.estimator: Estimator, EstimatorSpec, ModeKeys, RunConfig, numpy input_fns, the canned
estimators and SavedModel export (TF 1.15's API); docs/estimator.md says what differs."""
from dtf.estimator import inputs  # noqa: F401 - tf.estimator.inputs.numpy_input_fn
from dtf.estimator.estimator import Estimator  # noqa: F401
from dtf.estimator.model_fn import EstimatorSpec, ModeKeys  # noqa: F401
from dtf.estimator.run_config import RunConfig  # noqa: F401
from dtf.estimator.training import EvalSpec, TrainSpec, train_and_evaluate  # noqa: F401,E402
from dtf.estimator.warm_starting import WarmStartSettings  # noqa: F401,E402
from dtf.estimator.canned import (  # noqa: F401,E402
    DNNClassifier, DNNLinearCombinedClassifier, DNNLinearCombinedRegressor, DNNRegressor,
    LinearClassifier, LinearRegressor,
)
from dtf.estimator import export  # noqa: F401,E402
from dtf.estimator.exporter import (  # noqa: F401,E402
    BestExporter, Exporter, FinalExporter, LatestExporter,
)
