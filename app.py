"""rnnviz entrypoint: page config, navigation over the registered pages, and the shared sidebar."""

import streamlit as st

from rnnviz.runtime import configure_cpu
from rnnviz.ui.navigation import build_navigation, render_sidebar

st.set_page_config(page_title="rnnviz", page_icon=":material/cycle:", layout="wide")
configure_cpu()
page = build_navigation()
render_sidebar()
page.run()
