"""The test suite. Importing rnnviz first sets OMP_WAIT_POLICY before any test module loads torch."""

import rnnviz  # noqa: F401
