"""Figures of the race: val loss against seconds of training, one curve per contender, on one clock."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from rnnviz.figures import FONT_SIZE, PALETTE, house_style, ngram_lines
from rnnviz.serving.race import Mark

COLOURS = (PALETTE["hidden"], PALETTE["output"], PALETTE["highlight"], PALETTE["weight"], PALETTE["input"])


MARGIN_PX = 60  # house_style's top and bottom margins together
LABEL_GAP_PX = FONT_SIZE * 1.5  # end labels are moved apart until their centres are this far apart
LABEL_OFFSET_PX = 14  # an end label starts this far right of its curve's end
LABEL_ROOM = 1.25  # the x axis runs to this times the race's duration, leaving room for the end labels


def contender_colour(index: int) -> str:
    return COLOURS[index % len(COLOURS)]


def spread(values: Sequence[float], gap: float) -> list[float]:
    """Heights for labels of ``values`` (in their order), each as close to its value as it can be while every
    two are at least ``gap`` apart: labels that would overlap form a group, spaced by ``gap`` and centred on the
    mean of their values; groups that then overlap merge, until none do."""
    groups = [[i] for i in sorted(range(len(values)), key=lambda i: values[i])]  # bottom to top

    def heights(group: list[int]) -> list[float]:
        centre = sum(values[i] for i in group) / len(group)
        return [centre + (k - (len(group) - 1) / 2) * gap for k in range(len(group))]

    merged = True
    while merged:
        merged = False
        for j in range(len(groups) - 1):
            if heights(groups[j])[-1] + gap > heights(groups[j + 1])[0] + 1e-12:
                groups[j:j + 2] = [groups[j] + groups[j + 1]]
                merged = True
                break
    out = [0.0] * len(values)
    for group in groups:
        for i, y in zip(group, heights(group)):
            out[i] = y
    return out


def race_figure(
    curves: Mapping[str, Sequence[Mark]],
    duration: float,
    vocab_size: int,
    reference: tuple[float, str] | None = None,
    height: int = 380,
    baselines: Mapping[int, float] | None = None,
) -> go.Figure:
    """Val loss (nats/char) of each contender against its own seconds of training, with the uniform guess ln V
    and, optionally, a reference level (value, label) such as nanoGPT's 1.906. At each curve's end, its last
    val loss and the optimizer steps it took to get there (a busy machine leaves a model fewer steps), labels
    moved apart where the ends are close. ``baselines`` {n: val loss}: what an n-gram of the same training text
    reaches on the same val split, dotted."""
    fig = go.Figure()
    uniform = math.log(vocab_size)
    top = max([uniform, *(m.val_loss for marks in curves.values() for m in marks)])
    span = top * 1.08  # the y axis runs from 0 to span
    ends = []
    for index, (name, marks) in enumerate(curves.items()):
        colour = contender_colour(index)
        fig.add_trace(go.Scatter(
            x=[m.seconds for m in marks], y=[m.val_loss for m in marks], mode="lines+markers", name=name,
            line=dict(color=colour, width=3), marker=dict(size=8), customdata=[m.step for m in marks],
            hovertemplate=f"{name}<br>%{{x:.1f}} s, step %{{customdata:,}}: val %{{y:.3f}} nats/char<extra></extra>",
        ))
        if marks:
            ends.append((marks[-1], colour))
    plot_px = height - MARGIN_PX  # the plot area's height
    gap = LABEL_GAP_PX / plot_px * span  # the labels' least distance, in nats
    for (last, colour), y in zip(ends, spread([m.val_loss for m, _ in ends], gap)):
        # the label beside the curve's end, moved up or down just enough to clear the others, with a line to it
        fig.add_annotation(x=last.seconds, y=last.val_loss, text=f"{last.val_loss:.3f} · {last.step:,} steps",
                           showarrow=True, arrowhead=0, arrowwidth=1, arrowcolor=colour, axref="pixel",
                           ayref="pixel", ax=LABEL_OFFSET_PX, ay=-(y - last.val_loss) / span * plot_px,
                           xanchor="left", font=dict(size=FONT_SIZE - 1, color=colour))
    fig.add_hline(y=uniform, line=dict(color=PALETTE["theory"], dash="dash", width=2),
                  annotation_text=f"uniform guess: ln V = {uniform:.2f}", annotation_position="top right",
                  annotation_font=dict(size=FONT_SIZE - 2, color=PALETTE["theory"]))
    if reference is not None:
        value, label = reference
        fig.add_hline(y=value, line=dict(color=PALETTE["muted"], dash="dot", width=2), annotation_text=label,
                      annotation_position="bottom right", annotation_font=dict(size=FONT_SIZE - 3,
                                                                                color=PALETTE["theory"]))
    ngram_lines(fig, baselines or {})
    step = next((s for s in (1, 2, 5, 10, 20, 25, 50, 100, 200, 500) if s >= duration / 6), duration / 6)
    # room right of the last mark for the end labels ("1.625 · 2,254 steps"), ticks only where the race runs
    fig.update_xaxes(title_text="seconds of training (each model's own clock)", range=[0, duration * LABEL_ROOM],
                     tickmode="array", tickvals=[step * i for i in range(int(duration // step) + 1)])
    fig.update_yaxes(title_text="val loss (nats/char)", range=[0, top * 1.08])
    house_style(fig, height=height)
    fig.update_layout(title=dict(text="Val loss against training time", x=0.01),
                      legend=dict(orientation="h", x=0.01, xanchor="left", y=0.02, yanchor="bottom",
                                  bgcolor="rgba(255,255,255,0.8)"))
    return fig
