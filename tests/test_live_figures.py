"""Figures of the live-training page: the reference lines, units, downsampling and escaped text."""

import math
import re

import numpy as np
import pytest

from rnnviz.charlm.sample import ExposureBias
from rnnviz.figures.live import (
    MAX_POINTS,
    context_html,
    exposure_bias_figure,
    grad_norm_figure,
    latex_matrix,
    loss_figure,
    next_char_figure,
)


def test_loss_figure_draws_ln_v_and_converts_to_bits():
    steps = list(range(1, 2001))
    losses = [4.0 - 2.0 * s / 2000 for s in steps]
    fig = loss_figure(steps, losses, [1000, 2000], [3.1, 2.2], 65)
    assert fig.layout.shapes[0].y0 == pytest.approx(math.log(65))
    train = fig.data[0]
    assert len(train.x) <= MAX_POINTS + 1 and train.x[-1] == 2000
    assert list(fig.data[1].y) == [3.1, 2.2]
    bits = loss_figure(steps, losses, [1000, 2000], [3.1, 2.2], 65, bits=True)
    assert bits.layout.shapes[0].y0 == pytest.approx(math.log2(65))
    np.testing.assert_allclose(bits.data[1].y, np.array([3.1, 2.2]) / math.log(2))
    assert "bits/char" in bits.layout.yaxis.title.text


def test_grad_norm_figure_keeps_spikes_and_draws_theta():
    norms = [1.0] * 1000
    norms[500] = 80.0
    fig = grad_norm_figure(list(range(1, 1001)), norms, clip=5.0)
    assert max(fig.data[0].y) == 80.0, "bucket maxima keep the spike"
    assert fig.layout.shapes[0].y0 == 5.0 and "θ = 5" in fig.layout.annotations[0].text
    assert not grad_norm_figure([1, 2], [1.0, 2.0], clip=None).layout.shapes


def test_next_char_figure_highlights_the_real_next_character():
    fig = next_char_figure(["e", "\n", "a"], [0.5, 0.3, 0.2], actual="\n")
    assert list(fig.data[0].x) == ["e", "⏎ newline", "a"]
    assert fig.data[0].marker.color[1] != fig.data[0].marker.color[0]


def test_exposure_bias_figure_plots_running_means():
    result = ExposureBias("ab", "cde", "cxx", np.array([1.0, 2.0, 3.0]), np.array([1.0, 4.0, 7.0]))
    fig = exposure_bias_figure(result)
    assert list(fig.data[0].y) == [1.0, 1.5, 2.0] and list(fig.data[1].y) == [1.0, 2.5, 4.0]


def test_context_html_escapes_user_text():
    text = "<script>alert(1)</script> & more"
    html = context_html(text, len(text) - 1)
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; mor" in html
    assert "&lt;" in context_html("a<b", 1), "the highlighted character is escaped too"


def _contrast(foreground: str, background: str) -> float:
    """WCAG 2's contrast ratio of two #rrggbb colours: (L1 + 0.05) / (L2 + 0.05) of their relative luminances."""

    def luminance(colour: str) -> float:
        channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        r, g, b = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    light, dark = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


# Streamlit 1.67's text and page colours, read in Chromium from stApp's computed style in each theme.
THEMES = {"light": ("#2f2d2b", "#ffffff"), "dark": ("#edebe8", "#171614")}


def _blend(foreground: str, background: str, opacity: float) -> str:
    """The colour a text of ``foreground`` at ``opacity`` shows on ``background``."""
    mixed = [round(opacity * int(foreground[i:i + 2], 16) + (1 - opacity) * int(background[i:i + 2], 16))
             for i in (1, 3, 5)]
    return "#" + "".join(f"{c:02x}" for c in mixed)


def test_context_html_text_meets_wcag_aa_contrast_in_both_themes():
    """The highlighted character and the faded text after it read at 4.5:1 or more (WCAG AA, normal text) on the
    light page and on the dark one: the highlight carries its own text colour, the rest fades the theme's own."""
    html = context_html("hello world", 4)
    highlight = re.search(r'background: (#[0-9a-f]{6}); color: (#[0-9a-f]{6})', html)
    following = re.search(r"<span style=\"opacity: ([0-9.]+);\"> world", html)
    assert highlight and following, html
    assert _contrast(highlight.group(2), highlight.group(1)) >= 4.5
    for text, page in THEMES.values():
        assert _contrast(_blend(text, page, float(following.group(1))), page) >= 4.5
    assert "color" not in html.split("</span>", 1)[1], "nothing after the highlight fixes a colour of its own"
    assert round(_contrast("#ffffff", "#f58518"), 1) == 2.5  # the white it had: the formula agrees with axe's figure
    assert round(_contrast("#000000", "#ffffff"), 1) == 21.0


def test_latex_matrix_highlights_a_column():
    tex = latex_matrix(np.array([[1.0, 2.0], [3.0, 4.0]]), highlight_column=1)
    assert tex == r"\begin{bmatrix}1.00 & \color{#f58518}{2.00} \\ 3.00 & \color{#f58518}{4.00}\end{bmatrix}"
    assert latex_matrix(np.array([0.0, 1.0]), digits=0) == r"\begin{bmatrix}0 \\ 1\end{bmatrix}"


def test_loss_figure_against_seconds_labels_the_axis_and_the_hover():
    fig = loss_figure([0.5, 1.0, 1.5], [4.0, 3.5, 3.0], [1.5], [3.2], 65, seconds=True)
    assert fig.layout.xaxis.title.text == "seconds of training"
    assert list(fig.data[0].x) == [0.5, 1.0, 1.5] and list(fig.data[1].x) == [1.5]
    assert fig.data[0].hovertemplate.startswith("%{x:.1f} s")


def test_n_gram_baselines_are_dotted_lines_at_their_losses_in_nats_and_in_bits():
    from rnnviz.figures.race import race_figure

    baselines = {3: 2.045, 5: 1.579}
    curves = ([1, 2], [4.0, 3.0], [2], [3.1], 65)
    for fig, scale in ((loss_figure(*curves, baselines=baselines), 1.0),
                       (loss_figure(*curves, bits=True, baselines=baselines), 1 / math.log(2)),
                       (race_figure({}, 10.0, 65, baselines=baselines), 1.0)):
        lines = {a.text: a.y for a in fig.layout.annotations if "-gram" in a.text}
        assert lines == {f"{n}-gram: {loss * scale:.2f}": pytest.approx(loss * scale) for n, loss in baselines.items()}
        dotted = [s for s in fig.layout.shapes if s.line.dash == "dot"]
        assert sorted(s.y0 for s in dotted) == pytest.approx(sorted(v * scale for v in baselines.values()))
    assert not [a for a in loss_figure([1], [4.0], [], [], 65).layout.annotations if "-gram" in a.text]
