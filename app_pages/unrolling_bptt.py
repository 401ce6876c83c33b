"""Unrolling & BPTT: one shared W_hh over T steps, its gradient as a sum of per-step parts, measured."""

from rnnviz.ui.unrolling_bptt import page

page()
