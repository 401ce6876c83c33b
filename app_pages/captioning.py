"""Image captioning: a small CNN reads a generated scene, its vector v conditions an LSTM that writes the caption,
with v at every step (the LSTM reads [x_t; v]) or only in the initial state h₀, c₀; beam search, word saliency and
hallucination from co-occurrence."""

from rnnviz.ui.captioning import page

page()
