"""Installs the planted violation named in CONFORMANCE_PLANT when Python
starts, so every process of a suite run (xdist workers included) and a
standalone repro script run against the same broken torch. Put this folder
on PYTHONPATH to use it; without CONFORMANCE_PLANT it does nothing."""

import os
import sys

_name = os.environ.get("CONFORMANCE_PLANT")
if _name:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import plants

    plants.install(_name)

_kernel = os.environ.get("CONFORMANCE_KERNEL")
if _kernel:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import plants

    _library = plants.override_kernel(_kernel)  # kept: dropping it unregisters the kernel
