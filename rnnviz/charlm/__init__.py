"""Character models end to end: corpora and batching, the chunked trainer and its presets, the speed estimate,
sampling, checkpoints, the live runs and training slots behind the live page, the shipped models, and the command
line (``cli``)."""
