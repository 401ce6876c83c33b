"""The app's CSS follows the viewer's theme: the scroll shadows' covers take the page's own background (a white cover
on the dark page would be a white patch at each end of an equation), and the focus ring reads on that page."""

import re

from rnnviz.ui.app.style import DARK, LIGHT, page_css


def covers(css: str) -> list[str]:
    return re.findall(r"linear-gradient\(to (?:right|left), (rgb\([^)]*\)) 30%", css)


def test_each_theme_gets_covers_in_its_own_background_and_a_ring_that_differs_from_it():
    light, dark = page_css("light"), page_css("dark")
    assert covers(light) == [f"rgb({LIGHT.background})"] * 2
    assert covers(dark) == [f"rgb({DARK.background})"] * 2
    assert "prefers-color-scheme" not in light + dark  # the theme Streamlit reports wins over the system's
    assert f"outline: 2px solid {DARK.ring}" in dark and f"outline: 2px solid {LIGHT.ring}" in light
    assert "stSliderThumbValue" in dark and "stSliderThumbValue" not in light


def test_before_the_browser_says_the_system_preference_picks():
    css = page_css(None)
    light_part, dark_part = css.split("@media (prefers-color-scheme: dark)")
    assert covers(light_part) == [f"rgb({LIGHT.background})"] * 2
    assert covers(dark_part) == [f"rgb({DARK.background})"] * 2


def test_captions_keep_the_themes_own_colour_faded_rather_than_a_fixed_grey():
    for theme in ("light", "dark", None):
        caption = re.search(r'\[data-testid="stCaptionContainer"\] \{([^}]*)\}', page_css(theme)).group(1)
        assert "opacity: 0.8" in caption and "color" not in caption
