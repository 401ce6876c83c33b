"""The app's own CSS for every page (drawn by app.py on every run)."""

from __future__ import annotations

# A keyboard's focus is seen on every button and link: Streamlit's own ring is a faint red glow, lost on its red
# primary buttons (issue 32). A dark outline with a white gap reads on red, white and grey alike.
FOCUS_CSS = """<style>
button:focus-visible, a:focus-visible, summary:focus-visible {
  outline: 2px solid #1a1a1a !important; outline-offset: 2px; box-shadow: 0 0 0 4px #ffffff !important;
}
</style>"""
