"""Invariant reports: one JSON file per run, a self-contained HTML page, and
a page that puts several builds' reports side by side.

`reports.pytest_plugin` writes both files at the end of every
`python -m conformance` run; `python -m reports merge A.json B.json -o
matrix.html` builds the CI matrix. The package reads `conformance`; nothing in
`conformance` imports it.
"""

FORMAT = "torch-conformance-report"
# Bumped whenever a key is renamed or removed, so that a merge of old and new
# files fails loudly instead of showing empty cells.
SCHEMA_VERSION = 3  # 2: crashed, hung and internal-error statuses; "unfinished"; 3: not applicable
