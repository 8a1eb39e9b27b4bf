"""Optimizers: compile drivers that take (program, data, metric, settings) and return a compiled program."""
