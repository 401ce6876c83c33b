"""Figures of the Gradient decay page: measured curves solid, theory lines dashed, log axes labelled."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from rnnviz.figures import FONT_SIZE, PALETTE, house_style
from rnnviz.lessons.gradients import CellPath, ClipRun, Contributions, DecayCurves, PowerCurve

# Colours of the overlaid σ₁ values, after the highlighted one (PALETTE["measured"]).
OVERLAY_COLOURS = ("#9ecae1", "#fdae6b", "#a1d99b", "#bcbddc", "#fc9272", "#d9d9d9", "#c6dbef")
TANH_COLOUR = PALETTE["measured"]
LINEAR_COLOUR = PALETTE["weight"]
LSTM_COLOUR = PALETTE["hidden"]

_SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def sci(value: float, digits: int = 3) -> str:
    """A number as a projector reads it: 1507.98 → "1.51·10³", 0.000456 → "4.56·10⁻⁴", 0.62 → "0.620"."""
    if value == 0 or not math.isfinite(value):
        return {math.inf: "∞", -math.inf: "−∞"}.get(value, "0" if value == 0 else "NaN")
    exponent = math.floor(math.log10(abs(value)))
    if -2 <= exponent <= 2:
        return f"{value:.{max(digits - 1 - exponent, 0)}f}"
    mantissa = value / 10**exponent
    if round(mantissa, digits - 1) >= 10:  # 9.996 rounds up to the next decade
        mantissa, exponent = mantissa / 10, exponent + 1
    return f"{mantissa:.{digits - 1}f}·10{str(exponent).translate(_SUPERSCRIPTS)}"


def _positive(values: np.ndarray) -> list[float | None]:
    """Values for a log axis: zeros, infinities and NaNs become gaps instead of breaking the axis."""
    return [float(v) if (math.isfinite(v) and v > 0) else None for v in values]


def _log_axis(fig: go.Figure, title: str, **where) -> None:
    fig.update_yaxes(type="log", title_text=title, exponentformat="power", **where)


def _log10s(values: np.ndarray) -> list[float | None]:
    """A curve for a log axis in the browser: log10 of each value to 3 decimals (0.001 of a decade, under a pixel on
    any axis the chart draws), and a gap where a log axis has none (zero, infinity, NaN)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log10(np.asarray(values, dtype=float))
    return [round(float(v), 3) if math.isfinite(v) else None for v in logs]


def power_stops(curves: list[PowerCurve], overlay: list[float], value: float, follow: str,
                height: int = 460, font_scale: float = 1.0) -> dict:
    """What the instant chart (rnnviz.ui.kit.instant_chart) draws of ‖W_hh^k v‖ against k: for each σ₁ stop of
    the slider that ``follow`` selects (``curves``, one per stop, from the engine), its measured curve, its theory
    σ₁^k (dashed), the note at its last point and the three numbers under the chart; and the ``overlay`` σ₁ values'
    curves, which stay as the slider moves. Every number is the engine's, formatted here as the page prints it."""
    by_sigma = {round(curve.sigma, 2): curve for curve in curves}
    fixed = []
    for colour, sigma in zip(OVERLAY_COLOURS, sorted(overlay), strict=False):
        curve = by_sigma[round(sigma, 2)]
        fixed += [
            {"stop": curve.sigma, "log_y": _log10s(curve.measured), "colour": colour, "width": 2.5,
             "legend": f"σ₁ = {curve.sigma:.2f}, measured"},
            {"stop": curve.sigma, "log_y": _log10s(curve.theory), "colour": None, "width": 1.5, "dash": True},
        ]
    colour = PALETTE["measured"]
    chosen = []
    for curve in curves:
        steps, measured, theory = int(curve.k[-1]), float(curve.measured[-1]), float(curve.theory[-1])
        label = f"σ₁ = {curve.sigma:.2f}"
        chosen.append({
            "series": [
                {"log_y": _log10s(curve.measured), "colour": colour, "width": 4, "legend": f"{label}, measured"},
                {"log_y": _log10s(curve.theory), "colour": None, "width": 2, "dash": True, "legend": "theory σ₁ᵏ"},
            ],
            "note": {"x": steps, "log_y": _log10s([measured])[0], "bold": sci(measured),
                     "rest": f" after {steps} steps", "colour": colour},
            "numbers": [[f"measured ‖W_hhᴷ v‖ after K = {steps}", sci(measured)],
                        [f"theory σ₁ᴷ = {curve.sigma:.2f}^{steps}", sci(theory)],
                        ["measured ÷ theory", f"{measured / theory:.3f}"]],
            "alt": (f"‖W_hhᵏ v‖ against k, the number of multiplications by W_hh, on a log scale, for {label}: "
                    f"measured {sci(measured)} after {steps} steps, theory σ₁ᵏ {sci(theory)}"
                    + "".join(f"; σ₁ = {o:.2f} overlaid" for o in sorted(overlay)) + "."),
        })
    return {
        "follow": follow, "value": value, "stops": [curve.sigma for curve in curves],
        "x": [int(k) for k in curves[0].k], "fixed": fixed, "chosen": chosen,
        "hline": {"log_y": 0.0, "label": "‖v‖ = 1", "colour": PALETTE["muted"]},
        "x_title": "k, the number of multiplications by W_hh", "y_title": "‖W_hhᵏ v‖ (log scale)",
        "height": height, "font_scale": font_scale,
    }


def cell_path_stops(rnn: DecayCurves, paths: list[CellPath], value: float, follow: str, height: int = 460,
                    font_scale: float = 1.0) -> dict:
    """What the instant chart (rnnviz.ui.kit.instant_chart) draws of section 5: the tanh RNN's ‖∂h_T/∂h_k‖, which
    stays, and for each forget-gate bias b_f of the slider that ``follow`` selects (``paths``, one per stop, from
    the engine) the LSTM's cell path ‖∂c_T/∂c_k‖ and the three numbers under the chart."""
    steps = int(rnn.lag[-1])
    tanh_label = f"‖∂h_T/∂h_k‖ at T − k = {steps}, tanh RNN"
    chosen = []
    for path in paths:
        legend = f"measured ‖∂c_T/∂c_k‖, LSTM cell path (b_f = {path.forget_bias:+.1f})"
        chosen.append({
            "series": [{"x": [int(k) for k in path.lag], "log_y": _log10s(path.cell_path), "colour": LSTM_COLOUR,
                        "width": 4, "legend": legend}],
            "numbers": [[f"‖∂c_T/∂c_k‖ at T − k = {steps}, LSTM", sci(float(path.cell_path[-1]))],
                        [tanh_label, sci(float(rnn.with_tanh[-1]))],
                        ["mean forget gate f_t", f"{path.mean_forget:.3f}"]],
            "alt": (f"Gradient norm against T − k, steps back from T, on a log scale: the LSTM's cell path at b_f = "
                    f"{path.forget_bias:+.1f} falls to {sci(float(path.cell_path[-1]))} after {steps} steps (mean "
                    f"forget gate {path.mean_forget:.3f}), the tanh RNN's ‖∂h_T/∂h_k‖ to "
                    f"{sci(float(rnn.with_tanh[-1]))}."),
        })
    tanh_rnn = {"x": [int(k) for k in rnn.lag], "log_y": _log10s(rnn.with_tanh), "colour": TANH_COLOUR, "width": 4,
                "legend": "measured ‖∂h_T/∂h_k‖, tanh RNN"}
    return {
        "follow": follow, "value": value, "stops": [path.forget_bias for path in paths], "x": [0, steps],
        "fixed": [tanh_rnn], "chosen": chosen, "hline": None,
        "x_title": "T − k, steps back from T", "y_title": "gradient norm (log scale)",
        "height": height, "font_scale": font_scale,
    }


def decay_figure(curves: DecayCurves, sigma: float, height: int = 460) -> go.Figure:
    """‖∂h_T/∂h_k‖ against T − k for the real tanh RNN, beside W_hh alone (tanh′ ≡ 1) and the theory σ₁^(T−k),
    dashed."""
    fig = go.Figure()
    _linear_traces(fig, curves, sigma)
    fig.add_trace(go.Scatter(
        x=curves.lag, y=_positive(curves.with_tanh), mode="lines", name="measured ‖∂h_T/∂h_k‖, tanh RNN",
        line=dict(color=TANH_COLOUR, width=4),
        hovertemplate="T − k = %{x}<br>‖∂h_T/∂h_k‖ = %{y:.3g}<extra>tanh RNN</extra>",
    ))
    fig.update_xaxes(title_text="T − k, steps back from T")
    _log_axis(fig, "gradient norm (log scale)")
    house_style(fig, height=height)
    fig.update_layout(legend=dict(orientation="h", y=-0.2, x=0, xanchor="left"), margin=dict(t=20))
    return fig


def _linear_traces(fig: go.Figure, curves: DecayCurves, sigma: float) -> None:
    """W_hh alone (solid), then the theory σ₁^(T−k) dashed on top, visible where the two coincide."""
    fig.add_trace(go.Scatter(
        x=curves.lag, y=_positive(curves.linear), mode="lines", name="measured ‖W_hh^(T−k)‖ (no tanh′)",
        line=dict(color=LINEAR_COLOUR, width=4),
        hovertemplate="T − k = %{x}<br>‖W_hh^(T−k)‖ = %{y:.3g}<extra>linear</extra>",
    ))
    fig.add_trace(go.Scatter(
        x=curves.lag, y=_positive(curves.theory), mode="lines", name=f"theory σ₁^(T−k), σ₁ = {sigma:.2f}",
        line=dict(color="#333333", dash="dash", width=2),
        hovertemplate="T − k = %{x}<br>σ₁^(T−k) = %{y:.3g}<extra>theory</extra>",
    ))


def decay_sentence(curves: DecayCurves, sigma: float) -> str:
    """One sentence reading the decay figure's end points, in plain words."""
    steps = int(curves.lag[-1])
    linear, real = float(curves.linear[-1]), float(curves.with_tanh[-1])
    verb = "grows" if linear > 1 else "shrinks"
    sentence = (
        f"Over T − k = {steps} steps, W_hh alone {verb} the gradient to {sci(linear)}, while the real tanh "
        f"RNN's Jacobian product reaches {sci(real)}: every step also multiplies by tanh′ values whose mean "
        f"is {curves.mean_tanh_prime:.2f}."
    )
    if sigma > 1 and real < 1:
        sentence += f" So even σ₁ = {sigma:.2f}, above 1, decays once tanh′ < 1."
    return sentence


TANH_PRIME_BIN = 0.025


def tanh_prime_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(bin edges, counts) of tanh′ values over [0, 1] in bins of TANH_PRIME_BIN, the last one closed (tanh′ = 1
    where h_t = 0)."""
    edges = np.arange(round(1 / TANH_PRIME_BIN) + 1) * TANH_PRIME_BIN
    counts, _ = np.histogram(values, bins=edges)
    return edges, counts


def tanh_prime_figure(values: np.ndarray, height: int = 360) -> go.Figure:
    """Histogram of every tanh′(a_t) met on the forward run, with its mean marked. Binned here: the page sends 40
    counts, not the H × K values (150 kB at H = 64, K = 150) for the browser to bin on every move."""
    mean = float(values.mean())
    edges, counts = tanh_prime_counts(values)
    fig = go.Figure(go.Bar(
        x=(edges[:-1] + edges[1:]) / 2, y=counts, width=TANH_PRIME_BIN * 0.95, marker_color=PALETTE["measured"],
        customdata=[f"[{a:.3f}, {b:.3f}{']' if b >= 1 else ')'}" for a, b in zip(edges[:-1], edges[1:])],
        hovertemplate="tanh′ in %{customdata}<br>%{y} values<extra></extra>",
    ))
    fig.add_vline(x=mean, line=dict(color=PALETTE["highlight"], width=3),
                  annotation_text=f"mean tanh′ = {mean:.2f}", annotation_position="top left",
                  annotation_font=dict(color=PALETTE["highlight"]))
    fig.update_xaxes(title_text="tanh′(a_t) = 1 − h_t²", range=[0, 1.02])
    fig.update_yaxes(title_text="count (units × steps)")
    house_style(fig, height=height)
    fig.update_layout(showlegend=False, margin=dict(t=30))
    return fig


def contributions_figure(result: Contributions, log: bool = True, height: int = 380) -> go.Figure:
    """The contribution of each step t to ∂L_T/∂W_hh, as bars over t."""
    fig = go.Figure(go.Bar(
        x=result.t, y=_positive(result.norms) if log else result.norms, marker_color=PALETTE["measured"],
        hovertemplate="t = %{x}<br>‖contribution‖ = %{y:.3g}<extra></extra>",
    ))
    fig.update_xaxes(title_text="step t (the loss is at the last step T)")
    if log:
        _log_axis(fig, "‖∂L_T/∂W_hh from step t‖ (log scale)")
    else:
        fig.update_yaxes(title_text="‖∂L_T/∂W_hh from step t‖")
    house_style(fig, height=height)
    fig.update_layout(showlegend=False, bargap=0.1)
    return fig


def _spans_decades(values: np.ndarray, decades: float = 2.0) -> bool:
    """Whether the finite positive values span more than ``decades`` powers of ten (then a log axis helps)."""
    finite = values[np.isfinite(values) & (values > 0)]
    return finite.size > 0 and (np.isinf(values).any() or finite.max() / finite.min() > 10**decades)


def _clip_panel(run: ClipRun, col: int, threshold: float, total_steps: int) -> tuple[list, dict]:
    """The traces of one run (gradient norm above, loss below) and its two y axes' settings."""
    top, bottom = (1, 3) if col == 1 else (2, 4)  # subplot numbers: row 1 is ‖g‖, row 2 the loss
    steps = np.arange(1, len(run.grad_norms) + 1)
    colour = PALETTE["measured"] if run.threshold is not None else PALETTE["input"]
    first = col == 1
    traces = [
        go.Scatter(x=steps, y=_positive(run.grad_norms), mode="lines+markers", name="‖g‖ before clipping",
                   line=dict(color=colour, width=3), marker=dict(size=5), showlegend=first, legendgroup="norm",
                   xaxis=_ref(top, "x"), yaxis=_ref(top, "y"),
                   hovertemplate="step %{x}<br>‖g‖ = %{y:.3g}<extra></extra>"),
        go.Scatter(x=[0, total_steps + 1], y=[threshold, threshold], mode="lines", legendgroup="theta",
                   name=f"threshold θ = {threshold:g} (applied on the right only)", showlegend=first,
                   line=dict(color=PALETTE["theory"], dash="dash", width=2), hoverinfo="skip",
                   xaxis=_ref(top, "x"), yaxis=_ref(top, "y")),
        go.Scatter(x=steps, y=_positive(run.losses), mode="lines", name="loss", showlegend=first,
                   line=dict(color=PALETTE["output"], width=3), legendgroup="loss",
                   xaxis=_ref(bottom, "x"), yaxis=_ref(bottom, "y"),
                   hovertemplate="step %{x}<br>loss = %{y:.3g}<extra></extra>"),
    ]
    if run.blew_up_at is not None:
        finite = [v for v in run.grad_norms if math.isfinite(v)]
        # Below the marker, on the side with more room: the marker sits at the top of the panel, under its
        # title, and near a panel's right edge a label to the right would run into the other panel.
        side = "right" if run.blew_up_at <= total_steps / 2 else "left"
        traces.append(go.Scatter(
            x=[run.blew_up_at], y=[max(finite) if finite else 1.0], mode="markers+text", cliponaxis=False,
            text=[f"inf/NaN at step {run.blew_up_at}"], textposition=f"bottom {side}",
            marker=dict(symbol="x", size=16, color=PALETTE["input"]), textfont=dict(color=PALETTE["input"]),
            showlegend=False, hoverinfo="skip", xaxis=_ref(top, "x"), yaxis=_ref(top, "y"),
        ))
    log_loss = _spans_decades(run.losses)
    axes = {
        _layout_key(bottom, "y"): dict(type="log" if log_loss else "linear", exponentformat="power",
                                       title=dict(text="loss (log scale)" if log_loss else "loss")),
    }
    return traces, axes


def _ref(n: int, letter: str) -> str:
    """How a trace names subplot n's axis: x, x2, x3…"""
    return letter if n == 1 else f"{letter}{n}"


def _layout_key(n: int, letter: str) -> str:
    """How the layout names subplot n's axis: xaxis, xaxis2…"""
    return f"{letter}axis" if n == 1 else f"{letter}axis{n}"


def clipping_figure(unclipped: ClipRun, clipped: ClipRun, threshold: float, steps: int, height: int = 580
                     ) -> go.Figure:
    """Gradient norm and loss per SGD step, without clipping (left) and with clipping at θ (right).

    The gradient-norm row shares one log axis, so the two runs compare at a glance; each loss panel takes
    a log axis only when its values span orders of magnitude. The 2 × 2 grid is laid out by hand, which plotly
    builds faster than make_subplots.
    """
    norms = np.concatenate([unclipped.grad_norms, clipped.grad_norms, [threshold]])
    finite = norms[np.isfinite(norms) & (norms > 0)]
    norm_range = [math.log10(finite.min()) - 0.3, math.log10(finite.max()) + 0.6]
    columns, rows = ((0.0, 0.45), (0.55, 1.0)), ((0.55, 1.0), (0.0, 0.45))
    layout, traces = {}, []
    for n in range(1, 5):
        (x0, x1), (y0, y1) = columns[(n - 1) % 2], rows[(n - 1) // 2]
        layout[_layout_key(n, "x")] = dict(domain=[x0, x1], anchor=_ref(n, "y"), range=[0, steps + 1],
                                           matches=None if n == 1 else "x",
                                           title=dict(text="SGD step") if n > 2 else None)
        layout[_layout_key(n, "y")] = dict(domain=[y0, y1], anchor=_ref(n, "x"))
    for n in (1, 2):
        layout[_layout_key(n, "y")].update(type="log", range=norm_range, exponentformat="power",
                                           title=dict(text="‖g‖ (log scale)"))
    for col, run in ((1, unclipped), (2, clipped)):
        panel, axes = _clip_panel(run, col, threshold, steps)
        traces += panel
        for key, settings in axes.items():
            layout[key].update(settings)
    titles = [dict(text=text, x=(x0 + x1) / 2, y=1.0, xref="paper", yref="paper", yanchor="bottom",
                   showarrow=False, font=dict(size=FONT_SIZE))
              for text, (x0, x1) in zip(("without clipping", f"with clipping at θ = {threshold:g}"), columns)]
    fig = go.Figure(data=traces, layout=dict(annotations=titles, **layout))
    house_style(fig, height=height)
    fig.update_layout(legend=dict(orientation="h", y=-0.14, x=0, xanchor="left", yanchor="top"))
    return fig
