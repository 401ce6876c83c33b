"""rnnviz: an interactive lab for recurrent neural networks. The engine never imports streamlit."""

__version__ = "0.1.0"
