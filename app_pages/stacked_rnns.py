"""Stacked RNNs: the time × depth grid stepped in computation order, and parameters that grow with depth."""

from rnnviz.ui.stacked_rnns import page

page()
