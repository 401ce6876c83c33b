"""The Hidden state page: the four readers side by side, the memory probe, and the race."""
