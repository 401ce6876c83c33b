"""Hand-built RNN: three ReLU units whose hand-set weights compute x_t AND x_{t−1}, stepped through time."""

from rnnviz.ui.hand_built_rnn import page

page()
