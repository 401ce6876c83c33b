"""rnnviz: an interactive lab for recurrent neural networks. The engine never imports streamlit."""

import os

# libgomp's idle worker threads spin by default. When training sessions, or other jobs, share the cores,
# the spinning threads starve the ones doing work: small LSTMs ran 5–20× slower under load on 2 cores.
# Passive waiting costs nothing measurable on a quiet machine. It must be set before torch loads, which
# is why every entry point imports rnnviz before torch.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"
