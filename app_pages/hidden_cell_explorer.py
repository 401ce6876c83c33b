"""Hidden-cell explorer: colour text by one cell, find interpretable cells, search patterns, intervene."""

from rnnviz.ui.hidden_cell_explorer import page

page()
