"""What every page may use: widgets, links, the stepper, caches, corpora and model sources."""
