"""``python -m dtf``: the ``dtf`` command."""
from dtf.cli.app import main

main()
