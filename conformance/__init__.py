"""torch-conformance: PyTorch's aliasing and autograd promises, checked on the
installed torch. `python -m conformance --help` for the runner."""

__version__ = "0.1.0"
