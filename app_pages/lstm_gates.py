"""LSTM gates: one cell value through f, i, g, o; one full step drawn with its numbers; gate saturation."""

from rnnviz.ui.lstm_gates import page

page()
