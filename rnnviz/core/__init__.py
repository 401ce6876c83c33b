"""What every model is made of: cells as pure step functions, recurrent layers with a fast and a trace path,
the character model around them and its shape (``config``), each kind's equations, a NumPy reference, and the
CPU/GPU runtime settings."""
