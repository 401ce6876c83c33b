"""Benchmarks that compare two things side by side in one run and print ratios; see ``python -m bench``."""

import rnnviz  # noqa: F401  (sets OMP_WAIT_POLICY before any benchmark loads torch)
