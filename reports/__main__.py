"""`python -m reports merge A.json B.json ... -o matrix.html` puts builds side
by side; `python -m reports render report.json -o report.html` renders one
report's page again."""

from reports.cli import main

raise SystemExit(main())
