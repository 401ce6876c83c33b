"""Server-wide layer: page registry, navigation, warm-up, sessions and the server's shared objects."""
