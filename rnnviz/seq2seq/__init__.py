"""Sequence to sequence: string reversal by an encoder–decoder LSTM, with a fixed context or with attention."""
