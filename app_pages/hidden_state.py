"""Hidden state in an RNN, an LSTM, a minGRU and a Transformer: what each carries into the next step, the
Transformer's attention, how far back each one remembers (memory probes) and the loss against the context read."""

from rnnviz.ui.hidden_state import page

page()
