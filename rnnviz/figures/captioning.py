"""Plotly figures of the captioning page: the scene with a saliency heat map, the top-k of p(w_t | w_<t, v), the
beam tree, the image's influence against word t, and the co-occurrence sweep. Word t counts from 1: w_0 is <START>."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from rnnviz.figures import MODEBAR_ROOM

JOIN_COLOURS = {"every": "#1f77b4", "h0": "#d62728"}
JOIN_NAMES = {"every": "v at every step", "h0": "v only in h₀, c₀"}
FONT = dict(size=16)
CHOSEN, OTHER = "#2ca02c", "#9ecae1"  # the word the caption holds (top-k bar, beam paths), and the others
LABEL_ROOM = 48  # px right of the top-k bars for an outside label as wide as "1.00" at FONT's size
HEAT = [[0.0, "#ffffff"], [0.15, "#fee0d2"], [0.4, "#fc9272"], [0.7, "#de2d26"], [1.0, "#67000d"]]  # white → dark red


def scene_figure(image: np.ndarray, heat: np.ndarray | None = None, title: str = "", height: int = 420) -> go.Figure:
    """The 48×48 image, and beside it a saliency heat map over the same pixels when ``heat`` is given.

    Both panels get the same axes (pixel centres 0 … 47, y downwards) and each y axis is scale-anchored to its own
    x axis, constrained to its domain: two equal domains then draw two squares of one size, pixel over pixel.
    (Anchoring every y axis to the first x axis left the heat map's width free: 22% wider than the image.)"""
    if heat is None:
        fig = go.Figure(go.Image(z=image, hoverinfo="skip"))
        fig.update_yaxes(scaleanchor="x")
    else:
        fig = make_subplots(1, 2, subplot_titles=("the image", "saliency (darker red: more; same pixels)"),
                            horizontal_spacing=0.04)
        fig.add_trace(go.Image(z=image, hoverinfo="skip"), 1, 1)
        top = float(np.quantile(heat, 0.99)) or float(heat.max()) or 1.0  # one hot pixel must not wash out the rest
        fig.add_trace(go.Heatmap(z=np.minimum(heat / top, 1.0), colorscale=HEAT, zmin=0, zmax=1,
                                 showscale=False, hovertemplate="x %{x}, y %{y}: %{z:.2f}<extra></extra>"), 1, 2)
        rows, cols = image.shape[:2]
        for col, x in ((1, "x"), (2, "x2")):
            fig.update_xaxes(range=[-0.5, cols - 0.5], constrain="domain", row=1, col=col)
            fig.update_yaxes(range=[rows - 0.5, -0.5], scaleanchor=x, scaleratio=1, constrain="domain",
                             constraintoward="top", row=1, col=col)  # squares stay under their titles
        # A frame round the heat map: its empty pixels are white, like the paper, and its edge would not show.
        fig.add_shape(type="rect", xref="x2", yref="y2", x0=-0.5, x1=cols - 0.5, y0=-0.5, y1=rows - 0.5,
                      line=dict(color="#b0b0b0", width=1))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    top_margin = 50 if title or heat is not None else MODEBAR_ROOM
    fig.update_layout(title=title or None, height=height, plot_bgcolor="white", paper_bgcolor="white",
                      margin=dict(l=5, r=5, t=top_margin, b=5), font=FONT)
    return fig


def topk_figure(words: list[str], probs: list[float], chosen: str, t: int) -> go.Figure:
    """Horizontal bars of the k most probable words at step t, p(w_t | w_<t, v): the distribution the caption's
    word t (``chosen``, highlighted) was drawn from; w_0 is <START>.

    The axis ends at 1 and each label sits outside its bar, unclipped, in a right margin kept for it: a bar of
    p = 1 then still shows its "1.00" at any chart width."""
    fig = go.Figure(go.Bar(x=probs[::-1], y=words[::-1], orientation="h",
                           marker_color=[CHOSEN if w == chosen else OTHER for w in words][::-1],
                           text=[f"{p:.2f}" for p in probs[::-1]], textposition="outside", cliponaxis=False,
                           hovertemplate="%{y}: %{x:.3f}<extra></extra>"))
    fig.update_layout(title=dict(text=f"p(w<sub>t</sub> | w<sub>&lt;t</sub>, v) at t = {t}", font=FONT),
                      xaxis=dict(range=[0, 1], title="probability"),
                      height=330, margin=dict(l=10, r=LABEL_ROOM, t=50, b=40), font=FONT)
    return fig


def beam_tree_figure(tree, vocab: tuple[str, ...], step_label: str = "word t", step_symbol: str = "t") -> go.Figure:
    """The beam tree: one column per word t (tree[t − 1]: w_0 is <START>), the surviving candidates ranked by total
    log-prob; the paths to the returned beams drawn green and labelled (above and below in turn), pruned branches
    grey (hover)."""
    fig = go.Figure()
    for k, nodes in enumerate(tree):  # word t = k + 1
        for rank, node in enumerate(nodes):
            if k > 0 and node.parent >= 0:
                fig.add_trace(go.Scatter(x=[k, k + 1], y=[node.parent, rank], mode="lines", hoverinfo="skip",
                                         line=dict(color=CHOSEN if node.kept else "#c7c7c7",
                                                   width=3 if node.kept else 1), showlegend=False))
    for kept in (False, True):
        pts = [(k + 1, rank, node) for k, nodes in enumerate(tree) for rank, node in enumerate(nodes)
               if node.kept == kept]
        if not pts:
            continue
        fig.add_trace(go.Scatter(
            x=[t for t, _, _ in pts], y=[r for _, r, _ in pts], mode="markers+text" if kept else "markers",
            text=[vocab[n.word] for _, _, n in pts] if kept else None,
            textposition=["top center" if t % 2 else "bottom center" for t, _, _ in pts],
            marker=dict(color=CHOSEN if kept else "#9a9a9a", size=9 if kept else 7),
            textfont=dict(size=13, color="#1a6e1a"), showlegend=False, hoverinfo="text",
            hovertext=[f"{step_symbol} = {t}: {vocab[n.word]}<br>total log p = {n.logprob:.3f}" for t, _, n in pts]))
    width = max((len(n) for n in tree), default=1)
    fig.update_layout(title=dict(text="Beam tree (green: returned; grey: pruned)", font=FONT),
                      xaxis=dict(title=step_label, dtick=2, tick0=1), yaxis=dict(title="rank", autorange="reversed",
                                                                             range=[width - 0.4, -0.6], dtick=1),
                      height=200 + 55 * width, margin=dict(l=10, r=10, t=50, b=40), font=FONT)
    return fig


def influence_figure(curves: dict[str, np.ndarray], counts: np.ndarray, min_count: int = 20) -> go.Figure:
    """KL(p(·|w_<t, v) ‖ p(·|w_<t, v′)) against word t, one line per join (words with few captions left out).
    ``curves[join][k]`` and ``counts[k]`` are the engine's, at the distribution of word t = k + 1 (w_0 is <START>)."""
    fig = go.Figure()
    steps = np.flatnonzero(counts >= min_count)
    for join, kl in curves.items():
        fig.add_trace(go.Scatter(x=steps + 1, y=kl[steps], mode="lines+markers", name=JOIN_NAMES[join],
                                 line=dict(color=JOIN_COLOURS[join], width=3)))
    fig.update_layout(title="How much the image still changes word t",
                      xaxis=dict(title="word t of the caption (w<sub>1</sub> is the first word)", dtick=2, tick0=1),
                      yaxis=dict(title="KL(true v ‖ shuffled v), nats"), height=380,
                      legend=dict(orientation="h", y=-0.25), margin=dict(l=10, r=10, t=50, b=10), font=FONT)
    return fig


def sweep_figure(points) -> go.Figure:
    """CHAIRi, CHAIRs on the held-out set and the boat rate on water without a boat, against p."""
    ps = [pt.p for pt in points]
    fig = go.Figure()
    for name, values, colour in (("CHAIRi (held-out)", [pt.chair_i for pt in points], "#1f77b4"),
                                 ("CHAIRs (held-out)", [pt.chair_s for pt in points], "#ff7f0e"),
                                 ("says “boat” on water without a boat", [pt.boat_on_empty_water for pt in points],
                                  "#d62728")):
        fig.add_trace(go.Scatter(x=ps, y=values, name=name, mode="lines+markers", line=dict(color=colour, width=3)))
    fig.update_layout(title="Hallucination against the co-occurrence p = P(boat | water) in training",
                      xaxis=dict(title="p", tickvals=ps), yaxis=dict(title="rate", range=[0, 1.02]), height=400,
                      legend=dict(orientation="h", y=-0.25), margin=dict(l=10, r=10, t=50, b=10), font=FONT)
    return fig


def loss_figure(history) -> go.Figure:
    """Training loss per step of each model trained."""
    fig = go.Figure()
    for join, loss in history.loss.items():
        fig.add_trace(go.Scatter(x=history.steps, y=loss, name=JOIN_NAMES.get(join, join), mode="lines",
                                 line=dict(color=JOIN_COLOURS.get(join))))
    fig.update_layout(title="Training loss (cross-entropy per word)", xaxis_title="step", yaxis_title="nats",
                      height=300, margin=dict(l=10, r=10, t=50, b=10), font=FONT)
    return fig
