"""Server status: what this server process holds right now, and the limits that keep a class within it."""

from rnnviz.ui.server_status import page

page()
