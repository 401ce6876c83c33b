"""The Image captioning page: the scene builder and the sections that read the captioners."""
