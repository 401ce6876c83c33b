"""Gradient decay: powers of W_hh, the tanh′ factor, per-step shares, clipping and the LSTM cell path, one
section at a time (the section is in the address, so a teacher can link straight to one)."""

from rnnviz.ui.gradient_decay import page

page()
