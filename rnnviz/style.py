"""The colours and CSS that the engine's HTML (coloured text, prediction strips) and the figures share.

Plain strings: the engine's HTML is built from these and numbers only, never from user text.
"""

# One colour per role, shared by every page so that a class learns them once
# (inputs red, hidden states green, outputs blue, as in the lecture's diagrams).
PALETTE = {
    "input": "#e45756",
    "hidden": "#54a24b",
    "output": "#4c78a8",
    "weight": "#b279a2",
    "measured": "#1f77b4",
    "theory": "#7f7f7f",
    "highlight": "#f58518",
    "muted": "#c7c7c7",
    "baseline": "#9d755d",  # an n-gram's level on a loss curve: not one of the models
}

# Our HTML is drawn on the viewer's light or dark page, so text that is not on a colour of ours takes the theme's
# own text colour: de-emphasised text is that colour at 75% (5.8:1 on the light page, 9:1 on the dark one, where a
# fixed grey that read on white fell to 3:1), and rules are a grey that shows on both.
FADED = "opacity: 0.75"
RULE = "rgba(128, 128, 128, 0.45)"
# Text on a light colour of ours (a highlight, a heat cell) is near-black in either theme.
ON_LIGHT = "#1a1a1a"
