"""A backend built on another and changing nothing: aot_eager's compiled
function, returned unchanged under another name, as most users' backends
start (`--compile tests.compile_wrappers:passthrough=aot_eager`). It says
nothing about its base itself, so that the command line or a list declares it.
"""

from __future__ import annotations

from torch._dynamo.backends.debugging import aot_eager


def passthrough(gm, example_inputs):
    return aot_eager(gm, example_inputs)
