"""Execution: the executor (one subgraph) and its fusion planning, the master, the worker,
the rendezvous and the task's service. Variables live in dtf.state."""
