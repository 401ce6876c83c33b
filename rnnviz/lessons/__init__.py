"""The math behind the mechanics and gradient pages, one module per page: hand-built AND network, unrolling
and BPTT, truncated BPTT, stacked RNNs, gradient decay, LSTM gates, and the five problem shapes."""
