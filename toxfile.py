"""tox's in-tree plugin: tells the `installed` environment where the torch of
the interpreter running tox lives, so that it is used, never reinstalled."""

from __future__ import annotations

import os
import sysconfig

# Read by tox.ini as {env:CONFORMANCE_HOST_SITE}: the site-packages folders of
# the interpreter tox runs in (this module is imported into tox's process).
_paths = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
os.environ.setdefault("CONFORMANCE_HOST_SITE", " ".join(_paths))
