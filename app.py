"""rnnviz entrypoint: page config, navigation over the registered pages, and the shared sidebar."""

import sys

# pandas first, before any page: Streamlit loads it lazily in whichever session draws the first table, and
# plotly looks it up in sys.modules without importing it, so when a class opens the app at once another
# session's chart could meet it half-imported. Importing it here makes every session wait until it is whole.
import pandas  # noqa: F401
import streamlit as st

from rnnviz.core.runtime import configure_cpu
from rnnviz.ui.app.errors import error_boundary
from rnnviz.ui.app.heap import limit_malloc_arenas
from rnnviz.ui.app.lone_surrogates import install_repair, say_repaired_text
from rnnviz.ui.app.navigation import build_navigation, course_footer, render_sidebar
from rnnviz.ui.app.presenting import presenting_switch
from rnnviz.ui.app.reaping import reap_expired_sessions, start_session_sweeper
from rnnviz.ui.app.style import page_css
from rnnviz.ui.app.warmup import warm_up_once

st.set_page_config(page_title="rnnviz", page_icon=":material/cycle:", layout="wide")
configure_cpu()
# The server's own thread answers health checks and carries every tab's messages; it asks for the GIL
# between training threads, and gets it within 1 ms instead of Python's default 5 ms.
sys.setswitchinterval(0.001)
limit_malloc_arenas()  # a closed tab's memory comes back to the system over a day of sessions (cheap; kept by glibc)
warm_up_once()
reap_expired_sessions()
start_session_sweeper()  # once per process: closed tabs are freed even when nobody runs a script any more
install_repair()  # once per process: a text with half a character no longer cuts its tab off
say_repaired_text()  # text this tab sent with half a character: said once, in a toast
page = build_navigation()
render_sidebar(page.url_path)
st.html(page_css(st.context.theme.type))
presenting_switch()  # before the page: a link's ?present=1 takes effect on its first screen
with error_boundary(f"the page “{page.title}”"):  # a failure is said in words; its traceback goes to the log
    page.run()
course_footer(page.title)  # after the page: a page that stops early (st.stop) ends without it
