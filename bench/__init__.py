"""Benchmarks that compare two things side by side in one run and print ratios; see ``python -m bench``."""
