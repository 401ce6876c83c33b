"""The app's own CSS for every page (drawn by app.py on every run)."""

from __future__ import annotations

# A keyboard's focus is seen on every button and link: Streamlit's own ring is a faint red glow, lost on its red
# primary buttons (issue 32). A dark outline with a white gap reads on red, white and grey alike.
FOCUS_CSS = """<style>
button:focus-visible, a:focus-visible, summary:focus-visible {
  outline: 2px solid #1a1a1a !important; outline-offset: 2px; box-shadow: 0 0 0 4px #ffffff !important;
}
</style>"""

# On a phone a wide equation, a row of section buttons or tabs, a table or a line of code scrolls sideways inside
# its own box (the page itself never does): a soft shadow on the side that has more says so, and display equations
# are drawn smaller there. The shadows are the "scrolling shadows" of CSS backgrounds: covers that scroll with the
# content hide a fixed shadow at the ends it has reached.
SCROLL_CSS = """<style>
[data-testid="stMarkdownContainer"] table { display: block; max-width: 100%; overflow-x: auto; }
.katex-display, [data-testid="stButtonGroup"] > div, [data-testid="stTabs"] [role="tablist"],
[data-testid="stMarkdownContainer"] table, [data-testid="stHtml"] > div {
  background:
    linear-gradient(to right, #ffffff 30%, rgba(255, 255, 255, 0)) left center / 32px 100% no-repeat local,
    linear-gradient(to left, #ffffff 30%, rgba(255, 255, 255, 0)) right center / 32px 100% no-repeat local,
    radial-gradient(farthest-side at 0 50%, rgba(0, 0, 0, .45), rgba(0, 0, 0, 0)) left center / 16px 100%
      no-repeat scroll,
    radial-gradient(farthest-side at 100% 50%, rgba(0, 0, 0, .45), rgba(0, 0, 0, 0)) right center / 16px 100%
      no-repeat scroll;
}
/* KaTeX's last glyph overhangs its box by a pixel or two, which made every display equation a scrolling region
   (axe-core: scrollable-region-focusable) even where it fits; the padding holds the overhang. */
.katex-display > .katex { padding: 0 4px; }
@media (max-width: 640px) {
  .katex-display > .katex { font-size: 0.9em; }
}
</style>"""

# The app puts teaching text in st.caption: Streamlit draws it at 60% opacity, #828180 on white (3.88:1), under
# WCAG AA's 4.5:1 for text of its size (so are the shortcut keys Streamlit writes on buttons). #666666 reads at 5.7:1
# on white and 5.5:1 on the code chips' #fafafa.
CAPTION_CSS = """<style>
[data-testid="stCaptionContainer"] { color: #666666; opacity: 1; }
[data-testid="stCaptionContainer"] code { color: #666666; }
/* The key a button's shortcut names (a stepper's "End"), in the same faded grey on the white buttons. */
[data-testid="stBaseButton-secondary"] kbd { color: #666666; opacity: 1; }
</style>"""
