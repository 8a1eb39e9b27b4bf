"""Metrics: per-example functions `(example, prediction, trace=None)` for dspy.Evaluate and the optimizers, and the
aggregates (bootstrap confidence intervals, per-user accuracy) that reports are made of."""
