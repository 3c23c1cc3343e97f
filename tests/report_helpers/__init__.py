"""pytest plugins the report tests load into a suite run with `-p`."""
