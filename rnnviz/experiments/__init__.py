"""Memory experiments (no streamlit): each module runs one experiment from a frozen config.

- ``delay``: delayed copy, vanilla RNN against LSTM, fair (same data, steps and eval set; equal hidden size
  or equal parameter count) over several seeds and delays D.
- ``conditioning``: a style vector v fed at every step against only at h_0 (the captioning join), with
  <START>/<END>-framed lines.
- ``cost``: forward time and peak memory of an LSTM layer against single-head self-attention as T grows.
- ``tasks``: the synthetic tasks they share (delayed copy) and their training loop.

``rnnviz experiments delay --model rnn --delay 8 --length 96`` is the command-line twin.
"""
