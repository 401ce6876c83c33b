"""The app's own CSS for every page (drawn by app.py on every run), in the viewer's light or dark theme."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tones:
    """What the app's CSS needs to know of a Streamlit theme (its background, read in Chromium from stApp)."""

    background: str  # the page, as "r, g, b": the covers of the scroll shadows take it
    shadow: str  # the scroll shadow's darkest point, "r, g, b, alpha", visible on that background
    ring: str  # the focus outline, seen against the background and the red primary buttons
    # A slider's value above its thumb, where Streamlit's own accent red is too dark for the page (None: keep it).
    slider_value: str | None = None


LIGHT = Tones(background="255, 255, 255", shadow="0, 0, 0, .45", ring="#1a1a1a")
# Streamlit's dark accent (#cf4250) reads at 3.9:1 on its dark page, under AA for the 14 px value a slider shows
# over its thumb; a lighter red of the same hue reads at 7:1 (the primary buttons keep the accent, where white text
# on a lighter red would fail instead).
DARK = Tones(background="23, 22, 20", shadow="255, 255, 255, .4", ring="#f5f5f5", slider_value="#f27c86")


def focus_css(tones: Tones) -> str:
    """A keyboard's focus is seen on every button and link: Streamlit's own ring is a faint red glow, lost on its
    red primary buttons (issue 32). An outline in the text's tone with a gap in the page's reads on red, on the page
    and on grey alike."""
    return f"""
button:focus-visible, a:focus-visible, summary:focus-visible {{
  outline: 2px solid {tones.ring} !important; outline-offset: 2px;
  box-shadow: 0 0 0 4px rgb({tones.background}) !important;
}}"""


def scroll_css(tones: Tones) -> str:
    """On a phone a wide equation, a row of section buttons or tabs, a table or a line of code scrolls sideways
    inside its own box (the page itself never does): a soft shadow on the side that has more says so. These are the
    "scrolling shadows" of CSS backgrounds: covers in the page's colour scroll with the content and hide a fixed
    shadow at the ends it has reached, so the covers must be the page's colour in either theme."""
    page, clear = f"rgb({tones.background})", f"rgba({tones.background}, 0)"
    shadow, faded = f"rgba({tones.shadow})", f"rgba({tones.shadow.rsplit(',', 1)[0]}, 0)"
    return f"""
.katex-display, [data-testid="stButtonGroup"] > div, [data-testid="stTabs"] [role="tablist"],
[data-testid="stMarkdownContainer"] table, [data-testid="stHtml"] > div {{
  background:
    linear-gradient(to right, {page} 30%, {clear}) left center / 32px 100% no-repeat local,
    linear-gradient(to left, {page} 30%, {clear}) right center / 32px 100% no-repeat local,
    radial-gradient(farthest-side at 0 50%, {shadow}, {faded}) left center / 16px 100% no-repeat scroll,
    radial-gradient(farthest-side at 100% 50%, {shadow}, {faded}) right center / 16px 100% no-repeat scroll;
}}"""


# A markdown table scrolls in its own box. KaTeX's last glyph overhangs its box by a pixel or two, which made every
# display equation a scrolling region (axe-core: scrollable-region-focusable) even where it fits; the padding holds
# the overhang. Display equations are drawn smaller on a phone.
LAYOUT_CSS = """
[data-testid="stMarkdownContainer"] table { display: block; max-width: 100%; overflow-x: auto; }
.katex-display > .katex { padding: 0 4px; }
@media (max-width: 640px) {
  .katex-display > .katex { font-size: 0.9em; }
}
/* A switch's or a check box's label wraps at spaces instead of ending in "…" where its column is narrow (on a 768
   px tablet: "Clip the gradient norm"); a button keeps its one line, and the pages give their buttons the room. */
[data-testid="stMain"] label [data-testid="stMarkdownContainer"] {
  white-space: normal; text-overflow: clip; overflow: visible;
}
[data-testid="stMain"] label [data-testid="stMarkdownContainer"] p {
  white-space: normal; overflow-wrap: normal; word-break: normal;
}
/* A tablet or a phone has no keys to name: a button's shortcut hint ("End", "→") gives its room to the label,
   which it cut to "S…" on a 768 px tablet's stepper. */
@media (max-width: 1024px) {
  [data-testid^="stBaseButton"] kbd { display: none; }
}
/* A page's name in the navigation wraps onto a second line instead of ending in "…" ("Hidden state: RNN, LSTM,
   minG…" at 1400 px): the sidebar is as narrow as Streamlit makes it, and the name is the page's title. */
[data-testid="stSidebarNavLink"] { height: auto; }
[data-testid="stSidebarNavLink"] span[label] { flex: 1 1 auto; min-width: 0; height: auto; }
[data-testid="stSidebarNavLink"] span[label], [data-testid="stSidebarNavLink"] span[label] * {
  white-space: normal; text-overflow: clip; overflow: visible;
}"""

# The app puts teaching text in st.caption: Streamlit draws it at 60% opacity, 3.9:1 on white, under WCAG AA's
# 4.5:1 for text of its size (so are the shortcut keys Streamlit writes on buttons). At 80% of the theme's own text
# colour it reads at 6.4:1 on white and 9:1 on the dark theme's background, with no colour of ours to go wrong in
# either theme.
CAPTION_CSS = """
[data-testid="stCaptionContainer"] { opacity: 0.8; }
/* The key a button's shortcut names (a stepper's "End"), in the same faded tone. */
[data-testid="stBaseButton-secondary"] kbd { color: inherit; opacity: 0.8; }"""


# A move of a control that asks the server shows at once that the page is working (app.browser marks the run the
# move started): a bar runs along the top, and what the run will redraw fades from the run's start (Streamlit's own
# fade begins 0.5 s into a run, so a 0.3 s run showed nothing at all). A run shorter than 60 ms shows nothing.
WORKING_CSS = """
html[data-rnnviz-working] [data-testid="stMain"] [data-stale="true"] {
  opacity: 0.45; transition: opacity 0.15s ease-in 0.06s;
}
html[data-rnnviz-working] body::after {
  content: ""; position: fixed; top: 0; left: 0; right: 0; height: 3px; z-index: 1000100; pointer-events: none;
  background: linear-gradient(90deg, transparent, rgb(255, 75, 75), transparent) no-repeat;
  background-size: 35% 100%; animation: rnnviz-working 0.9s linear 0.06s infinite both;
}
@keyframes rnnviz-working { from { background-position: -40% 0; } to { background-position: 140% 0; } }
@media (prefers-reduced-motion: reduce) {
  html[data-rnnviz-working] body::after { animation: none; background-size: 100% 100%; }
}"""


# Streamlit draws a style-only st.html a moment after the script run has ended (its element's code loads lazily), so
# a page can look idle before our CSS applies: the browser tests wait for this property on the root.
APPLIED_MARK = "\n:root { --rnnviz-css: applied; }"


def page_css(theme: str | None) -> str:
    """Every page's CSS for the viewer's theme: Streamlit's st.context.theme.type ("light" or "dark"), or None
    before the browser has said, when the system's preference picks (Streamlit's default follows it too)."""
    def themed(tones: Tones) -> str:
        slider = (f'\n[data-testid="stSliderThumbValue"] {{ color: {tones.slider_value}; }}'
                  if tones.slider_value else "")
        return focus_css(tones) + scroll_css(tones) + slider

    if theme == "dark":
        coloured = themed(DARK)
    elif theme == "light":
        coloured = themed(LIGHT)
    else:
        coloured = themed(LIGHT) + "\n@media (prefers-color-scheme: dark) {" + themed(DARK) + "\n}"
    return "<style>" + APPLIED_MARK + coloured + LAYOUT_CSS + CAPTION_CSS + WORKING_CSS + "\n</style>"
