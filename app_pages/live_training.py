"""Character model — live training: set up a run, watch it train in chunks, sample it, save and load it."""

from rnnviz.ui.live_training import page

page()
