"""Image captioning: the scene world (world), the CNN + LSTM captioner and its two joins (model), training (train),
decoding (decode), saliency, metrics with CHAIR, the co-occurrence sweep, checkpoints and the shipped pair, a CLI;
``api`` gathers their public names."""
