"""Execution: executor (one subgraph), resources (variables), and later master/worker."""
