"""Opening a trained model's cells: traces and the cell finder (``finder``), feature tracks of a text
(``textfeatures``), and text coloured by one cell as escaped HTML (``colortext``)."""
