"""tf.app: run(main, argv) and the flags module, as TF1 scripts use them."""
from __future__ import annotations

import sys

from dtf import flags

__all__ = ["run", "flags"]


def run(main=None, argv=None):
    """Parses the known flags out of ``argv`` (default ``sys.argv``), then exits with
    ``main(rest)``, where ``rest`` is the program name plus everything that was not a
    defined flag. ``main`` defaults to ``__main__.main``; --help/--helpfull print the
    flags and exit 1, as TF's absl-based run does."""
    main = main or sys.modules["__main__"].main
    flags.define_help_flags()
    rest = flags.FLAGS(sys.argv if argv is None else argv, known_only=True)
    sys.exit(main(rest))
