"""tf.app: run(main, argv) as TF1 scripts call it."""
from __future__ import annotations

import sys

__all__ = ["run"]


def run(main=None, argv=None):
    """Calls ``main(argv)`` (default: ``__main__.main``) and exits with its return value."""
    if main is None:
        main = sys.modules["__main__"].main
    sys.exit(main(sys.argv if argv is None else argv))
