"""prefcraft: DSPy programs that personalize an LLM to one user, and the machinery that compiles them.

This package is the core: settings, model backends, the structured-output adapter, loaders, metrics, MLflow glue and
the command line. Signatures, programs, optimizers and compiled programs are top-level packages of their own.
"""

__version__ = "0.1.0"
