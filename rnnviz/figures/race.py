"""Figures of the race: val loss against seconds of training, one curve per contender, on one clock."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from rnnviz.charlm.race import Mark
from rnnviz.figures import FONT_SIZE, PALETTE, house_style

COLOURS = (PALETTE["hidden"], PALETTE["output"], PALETTE["highlight"], PALETTE["weight"], PALETTE["input"])


def contender_colour(index: int) -> str:
    return COLOURS[index % len(COLOURS)]


def race_figure(
    curves: Mapping[str, Sequence[Mark]],
    duration: float,
    vocab_size: int,
    reference: tuple[float, str] | None = None,
    height: int = 380,
) -> go.Figure:
    """Val loss (nats/char) of each contender against its own seconds of training, with the uniform guess ln V
    and, optionally, a reference level (value, label) such as nanoGPT's 1.906."""
    fig = go.Figure()
    uniform = math.log(vocab_size)
    top = uniform
    for index, (name, marks) in enumerate(curves.items()):
        x = [m.seconds for m in marks]
        y = [m.val_loss for m in marks]
        top = max([top, *y])
        colour = contender_colour(index)
        fig.add_trace(go.Scatter(
            x=x, y=y, mode="lines+markers", name=name, line=dict(color=colour, width=3),
            marker=dict(size=8), customdata=[m.step for m in marks],
            hovertemplate=f"{name}<br>%{{x:.1f}} s, step %{{customdata}}: val %{{y:.3f}} nats/char<extra></extra>",
        ))
        if marks:
            last = marks[-1]
            fig.add_annotation(x=last.seconds, y=last.val_loss, text=f"{last.val_loss:.3f}", showarrow=False,
                               xanchor="left", xshift=8, font=dict(size=FONT_SIZE - 1, color=colour))
    fig.add_hline(y=uniform, line=dict(color=PALETTE["theory"], dash="dash", width=2),
                  annotation_text=f"uniform guess: ln V = {uniform:.2f}", annotation_position="top right",
                  annotation_font=dict(size=FONT_SIZE - 2, color=PALETTE["theory"]))
    if reference is not None:
        value, label = reference
        fig.add_hline(y=value, line=dict(color=PALETTE["muted"], dash="dot", width=2), annotation_text=label,
                      annotation_position="bottom right", annotation_font=dict(size=FONT_SIZE - 3,
                                                                                color=PALETTE["theory"]))
    fig.update_xaxes(title_text="seconds of training (each model's own clock)", range=[0, duration * 1.08])
    fig.update_yaxes(title_text="val loss (nats/char)", range=[0, top * 1.08])
    house_style(fig, height=height)
    fig.update_layout(title=dict(text="Val loss against training time", x=0.01),
                      legend=dict(orientation="h", x=0.01, xanchor="left", y=0.02, yanchor="bottom",
                                  bgcolor="rgba(255,255,255,0.8)"))
    return fig
