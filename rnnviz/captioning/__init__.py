"""Image captioning: a scene world (world.py), a CNN + LSTM captioner with two joins (model.py), and a CLI."""
