"""Op constructors (the TF1 functions) and their gradients, one module per family.

Each family module registers its op definitions (shape/dtype inference) when imported;
``*_grad`` modules beside them register gradients.
"""
