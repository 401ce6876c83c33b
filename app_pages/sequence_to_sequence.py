"""Sequence to sequence: a fixed-context encoder–decoder against the same model with attention, on reversal."""

from rnnviz.ui.sequence_to_sequence import page

page()
