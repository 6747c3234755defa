"""tf.contrib: the few TF 1.15 contrib names TF1 programs lean on (see each module)."""
from dtf.contrib import layers  # noqa: F401
from dtf.contrib import opt  # noqa: F401,E402
from dtf.contrib import rnn  # noqa: F401,E402
