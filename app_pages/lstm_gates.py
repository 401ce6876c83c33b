"""LSTM gates (being written)."""

from rnnviz.ui.widgets import page_header

page_header("lstm-gates", "The LSTM's gates, number by number.")
