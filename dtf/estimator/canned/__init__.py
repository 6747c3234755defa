"""TF 1.15's canned estimators: linear, DNN and wide-and-deep, with their heads."""
from .dnn import (DNNClassifier, DNNLinearCombinedClassifier,  # noqa: F401
                  DNNLinearCombinedRegressor, DNNRegressor)
from .linear import LinearClassifier, LinearRegressor  # noqa: F401
