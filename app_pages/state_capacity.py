"""What a state can hold: associative recall and parity across eight kinds, and each kind's memory drawn."""

from rnnviz.ui.state_capacity import page

page()
