"""The character model itself: corpora and batching, the chunked trainer and its presets, the speed estimate,
sampling, checkpoints, foreign models, and the shipped models. What a class's server runs around it lives in
``rnnviz.serving``; the commands in ``rnnviz.cli``."""
