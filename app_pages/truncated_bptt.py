"""Truncated BPTT: the state crosses chunk boundaries, the gradient does not; a live sweep of K on delayed copy."""

from rnnviz.ui.truncated_bptt import page

page()
