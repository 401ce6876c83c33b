"""What every page may use: widgets, links, the instant controls, caches, corpora and model sources."""
