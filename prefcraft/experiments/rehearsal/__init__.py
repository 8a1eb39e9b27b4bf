"""The paper-scale rehearsal: an experiment file run end to end against an instant server on loopback, with generated
data, to check plumbing, cost, context sizes and failure handling before any GPU time is spent."""
