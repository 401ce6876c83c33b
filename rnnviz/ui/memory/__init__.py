"""The Memory experiments page: the experiments and their tabs."""
