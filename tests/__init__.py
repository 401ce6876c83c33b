"""The test suite. Importing rnnviz first sets how OpenMP threads wait, before any test module loads torch."""

import rnnviz  # noqa: F401
