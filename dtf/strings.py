"""tf.strings: the string ops of input code (dtf/ops/string_ops.py). to_hash_bucket_fast and
as_string come with the feature-column kernels."""
from dtf.ops.string_ops import regex_replace, reduce_join, substr  # noqa: F401
from dtf.ops.string_ops import string_join as join  # noqa: F401
from dtf.ops.string_ops import string_length as length  # noqa: F401
from dtf.ops.string_ops import string_strip as strip  # noqa: F401
from dtf.ops.string_ops import string_to_number as to_number  # noqa: F401
from dtf.ops.string_ops import strings_split as split  # noqa: F401
