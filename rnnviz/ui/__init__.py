"""The only streamlit-aware part of rnnviz: navigation, shared sidebar, widgets and session helpers.

``registry`` is plain data and imports no streamlit, so tests can list the pages without a server.
"""
