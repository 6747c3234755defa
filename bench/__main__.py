"""``python -m bench``: runs every workload and prints the report (see bench/run.py)."""
import sys

from bench.run import main

sys.exit(main())
