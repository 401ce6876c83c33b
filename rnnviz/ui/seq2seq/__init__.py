"""The Sequence-to-sequence page: an encoder–decoder whose fixed context fails as inputs grow, beside the same
model with attention and its alignment."""
