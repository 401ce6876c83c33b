"""The hidden state's path over a passage on its first two principal axes: one point per character, coloured by a
feature track, a chosen position ringed and its nearest states (in the full space) marked."""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from rnnviz.figures import PALETTE, house_style
from rnnviz.interpret.colortext import visible_char
from rnnviz.interpret.trajectory import Projection, context

HEIGHT = 540
POINT_PX = 6


def _share(share: float) -> str:
    """A variance share as a percentage: whole numbers from 10 %, one decimal below."""
    percent = 100.0 * float(share)
    return f"{percent:.0f}%" if percent >= 9.95 else f"{percent:.1f}%"


def _value(value: float) -> str:
    return f"{value:.4g}" if np.isfinite(value) else "–"


def _hover(text: str, track: np.ndarray, track_label: str, offset: int = 0) -> list[str]:
    """One escaped hover text per character: position, character, track value and the text around it."""
    label = html.escape(track_label, quote=False)
    return [f"position {offset + t}: <b>{html.escape(visible_char(c), quote=False)}</b><br>"
            f"{label} = {_value(track[t])}<br>{html.escape(context(text, t), quote=False)}"
            for t, c in enumerate(text)]


def _check_position(position: int, length: int, what: str) -> int:
    if not 0 <= int(position) < length:
        raise ValueError(f"{what} must be a position 0 … {length - 1} of the text, got {position}")
    return int(position)


def trajectory_figure(
    projection: Projection,
    text: str,
    track: Sequence[float] | np.ndarray,
    track_label: str,
    highlight: int | None = None,
    neighbours: Sequence[int] = (),
    offset: int = 0,
) -> go.Figure:
    """The states' coordinates on PC 1 and PC 2, one marker per character of ``text`` coloured by ``track``, joined
    in reading order by a faint line. ``customdata`` of the characters' trace holds each point's position, so a
    click selects it. ``highlight`` is ringed, and ``neighbours`` (e.g. from ``nearest``) are marked; both are indices
    into ``text``. ``offset``, where ``text`` starts in a longer passage, is added to every position shown (the
    hover, the legend, ``customdata``)."""
    coords = np.asarray(projection.coords)
    if coords.ndim != 2 or coords.shape[1] < 2:
        raise ValueError(f"the projection needs 2 components to draw a plane, got coordinates of shape {coords.shape}")
    length = coords.shape[0]
    values = np.asarray(track, dtype=np.float64).reshape(-1)
    if len(text) != length or values.size != length:
        raise ValueError(f"text, track and projection must have one entry per character: got {len(text)} characters, "
                         f"{values.size} track values and {length} states")
    positions = offset + np.arange(length)
    x, y = coords[:, 0], coords[:, 1]
    hover = _hover(text, values, track_label, offset)
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=x, y=y, mode="lines", name="path", line=dict(color=PALETTE["muted"], width=1), opacity=0.6,
        hoverinfo="skip", showlegend=False,
    ))
    fig.add_trace(go.Scatter(
        x=x, y=y, mode="markers", name="characters", customdata=positions, text=hover, showlegend=False,
        marker=dict(size=POINT_PX, color=values, colorscale="Viridis", showscale=True,
                    colorbar=dict(title=dict(text=html.escape(track_label, quote=False)), thickness=14)),
        hovertemplate="%{text}<extra></extra>",
    ))
    near = [_check_position(p, length, "a neighbour") for p in neighbours]
    if near:
        fig.add_trace(go.Scatter(
            x=x[near], y=y[near], mode="markers", name=f"nearest {len(near)} in all units",
            customdata=offset + np.array(near), text=[hover[p] for p in near],
            marker=dict(symbol="diamond-open", size=13, color=PALETTE["input"], line=dict(width=2.5)),
            hovertemplate="nearest state<br>%{text}<extra></extra>",
        ))
    if highlight is not None:
        chosen = _check_position(highlight, length, "highlight")
        fig.add_trace(go.Scatter(
            x=[x[chosen]], y=[y[chosen]], mode="markers",
            name=f"position {offset + chosen} ({html.escape(visible_char(text[chosen]), quote=False)})",
            customdata=[offset + chosen], text=[hover[chosen]],
            marker=dict(symbol="circle-open", size=20, color=PALETTE["highlight"], line=dict(width=3.5)),
            hovertemplate="chosen<br>%{text}<extra></extra>",
        ))
    fig.update_xaxes(title_text=f"PC 1 ({_share(projection.explained[0])} of variance)", zeroline=False)
    fig.update_yaxes(title_text=f"PC 2 ({_share(projection.explained[1])} of variance)", zeroline=False)
    house_style(fig, height=HEIGHT)
    fig.update_layout(legend=dict(orientation="h", y=-0.2, yanchor="top", x=0, xanchor="left"),  # below: phones
                      hovermode="closest", showlegend=bool(near) or highlight is not None)
    return fig
