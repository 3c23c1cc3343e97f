"""Hypothesis strategies for the suite: dtypes, shapes, values, layouts, devices,
tensors and op chains.

The package knows torch's vocabulary and asserts nothing. Only `devices` and
`tensors` import torch; the rest is NumPy and Hypothesis, so the oracle's own
tests can use it without torch installed.
"""
