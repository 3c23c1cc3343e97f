"""Invariant reports: one JSON file per run, a self-contained HTML page, and
a page that puts several builds' reports side by side.

`reports.pytest_plugin` writes both files at the end of every
`python -m conformance` run; `python -m reports merge A.json B.json -o
matrix.html` builds the CI matrix. The package reads the report's data model,
`conformance.results`, and no other part of the suite; nothing in
`conformance` imports it.
"""

from conformance.results import FORMAT, SCHEMA_VERSION

__all__ = ["FORMAT", "SCHEMA_VERSION"]
