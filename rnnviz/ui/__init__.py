"""The only streamlit-aware part of rnnviz: two shared layers, ``app`` (the server and the frame) and ``kit`` (what
every page may use), and one package or module per page, which imports only those two and the engine (README,
"Layout"; tests/test_ui_layout.py).

``app.registry`` is plain data and imports no streamlit, so tests can list the pages without a server.
"""
