"""The mechanics pages: hand-built RNN, unrolling, truncated BPTT, stacked RNNs, gradient decay."""
