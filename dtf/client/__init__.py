"""Client side: Session, feeds and fetches, run options."""


def __getattr__(name):
    # ``dtf.client.timeline`` as TF's tensorflow.python.client.timeline, without importing
    # it (and json) with every ``import dtf``.
    if name == "timeline":
        import importlib

        return importlib.import_module("dtf.client.timeline")
    raise AttributeError(f"module 'dtf.client' has no attribute {name!r}")
