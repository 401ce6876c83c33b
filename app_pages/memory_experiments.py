"""Memory experiments: delayed copy (RNN against LSTM), conditioning on a vector, and what recurrence costs."""

from rnnviz.ui.memory_experiments import page

page()
