"""Programs: dspy.Module compositions over signatures. Plain inputs in, a dspy.Prediction out; no I/O."""
