"""Benchmarks that compare two things side by side in one run and print ratios; see ``python -m bench``."""

import rnnviz  # noqa: F401  (sets how OpenMP threads wait before any benchmark loads torch)
