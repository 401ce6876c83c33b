"""Figures of the Memory experiments page: delayed-copy curves and sweep, conditioning gaps and lengths,
and the cost of recurrence against attention."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from rnnviz.core.mingru import critical_path_scan
from rnnviz.experiments.conditioning import STYLE_LABELS, VARIANTS, ConditioningResult
from rnnviz.experiments.cost import CostSweep, fit_loglog
from rnnviz.experiments.delay import Band, DelaySweep
from rnnviz.figures import PALETTE, house_style

MODEL_COLOURS = {"rnn": PALETTE["highlight"], "lstm": PALETTE["output"], "gru": PALETTE["hidden"],
                 "attention": PALETTE["weight"], "mingru": PALETTE["input"]}
MODEL_NAMES = {"rnn": "vanilla RNN", "lstm": "LSTM", "gru": "GRU", "attention": "self-attention",
               "mingru": "minGRU parallel scan"}
VARIANT_COLOURS = {"every": PALETTE["hidden"], "h0": PALETTE["weight"]}


def _rgba(hex_colour: str, alpha: float) -> str:
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _band_traces(band: Band, name: str, colour: str, legend: bool, x_values=None) -> list[go.Scatter]:
    """The mean as a line and the min–max over seeds as a shaded band."""
    x = list(x_values if x_values is not None else band.x)
    return [
        go.Scatter(x=x + x[::-1], y=list(band.high) + list(band.low)[::-1], fill="toself", mode="lines",
                   line=dict(width=0), fillcolor=_rgba(colour, 0.2), hoverinfo="skip", showlegend=False,
                   legendgroup=name),
        go.Scatter(x=x, y=list(band.mean), mode="lines+markers", name=name, legendgroup=name, showlegend=legend,
                   line=dict(color=colour, width=3), marker=dict(size=7)),
    ]


def delay_curves_figure(sweep: DelaySweep) -> go.Figure:
    """One panel per delay D: held-out accuracy against training step, mean and min–max over seeds."""
    config = sweep.config
    delays = [d for d in config.delays if all(sweep.select(k, d) for k in config.kinds)]
    fig = make_subplots(rows=1, cols=max(1, len(delays)), shared_yaxes=True, horizontal_spacing=0.02,
                        subplot_titles=[f"D = {d}" for d in delays])
    chance = 1.0 / config.alphabet
    for col, delay in enumerate(delays, start=1):
        for kind in config.kinds:
            name = f"{MODEL_NAMES[kind]} (H = {config.hidden_for(kind)})"
            for trace in _band_traces(sweep.curve(kind, delay), name, MODEL_COLOURS[kind], legend=col == 1):
                fig.add_trace(trace, row=1, col=col)
        fig.add_hline(y=chance, line=dict(color=PALETTE["theory"], dash="dot"), row=1, col=col)
        fig.update_xaxes(title_text="step", row=1, col=col)
    fig.update_yaxes(title_text="held-out accuracy", range=[0, 1.02], row=1, col=1)
    fig.update_layout(title=f"Held-out accuracy during training (dotted: chance = 1/{config.alphabet})",
                      legend=dict(orientation="h", y=-0.25))
    return house_style(fig, height=380)


def delay_sweep_figure(sweep: DelaySweep) -> go.Figure:
    """Final held-out accuracy against the delay D, mean with min–max over seeds as error bars."""
    config = sweep.config
    fig = go.Figure()
    for kind in config.kinds:
        band = sweep.final(kind)
        fig.add_trace(go.Scatter(
            x=list(band.x), y=list(band.mean), mode="lines+markers", name=f"{MODEL_NAMES[kind]} "
            f"(H = {config.hidden_for(kind)})", line=dict(color=MODEL_COLOURS[kind], width=3), marker=dict(size=10),
            error_y=dict(type="data", symmetric=False, array=np.subtract(band.high, band.mean).tolist(),
                         arrayminus=np.subtract(band.mean, band.low).tolist(), thickness=2, width=6),
        ))
    fig.add_hline(y=1.0 / config.alphabet, line=dict(color=PALETTE["theory"], dash="dot"),
                  annotation_text=f"chance 1/{config.alphabet}", annotation_position="bottom right")
    fig.update_xaxes(title_text="delay D (log scale)", type="log", tickvals=list(config.delays))
    fig.update_yaxes(title_text="final held-out accuracy", range=[0, 1.05])
    fig.update_layout(title=f"After {config.steps} steps: accuracy against D (bars: min–max over {config.seeds} "
                            f"seed{'s' if config.seeds > 1 else ''})")
    return house_style(fig, height=420)


def position_gap_figure(result: ConditioningResult, min_lines: int = 32) -> go.Figure:
    """Per-position val loss with a wrong v minus with the right v, for both variants.

    Positions scored in fewer than ``min_lines`` val lines are left out: a handful of long lines is noise.
    """
    fig = go.Figure()
    for name, variant in result.variants.items():
        keep = [t for t, n in enumerate(variant.position_count) if n >= min_lines]
        fig.add_trace(go.Scatter(x=keep, y=[variant.position_gap[t] for t in keep], mode="lines",
                                 name=VARIANTS[name], line=dict(color=VARIANT_COLOURS[name], width=3)))
    fig.add_hline(y=0, line=dict(color=PALETTE["theory"], dash="dot"))
    fig.update_xaxes(title_text="position t in the line (0 predicts the first character)")
    fig.update_yaxes(title_text="loss(wrong v) − loss(right v), nats")
    fig.update_layout(title="How long v matters: the loss gap by position", legend=dict(orientation="h", y=-0.25))
    return house_style(fig, height=400)


def length_histogram_figure(result: ConditioningResult) -> go.Figure:
    """For each style, the length distribution of real val lines against each variant's generations."""
    styles = result.config.styles
    fig = make_subplots(rows=1, cols=len(styles), shared_yaxes=True, horizontal_spacing=0.03,
                        subplot_titles=[STYLE_LABELS[s] for s in styles])
    width = max(1, result.config.max_len // 16)
    edges = np.arange(0, result.config.max_len + width + 1, width)
    for col in range(1, len(styles) + 1):
        series = [("data (val lines)", result.data_lengths[col - 1], PALETTE["theory"], 5)]
        series += [(f"generated, {VARIANTS[n]}", v.sample_lengths[col - 1], VARIANT_COLOURS[n], 3)
                   for n, v in result.variants.items()]
        for name, lengths, colour, line_width in series:
            counts, _ = np.histogram(lengths, bins=edges)
            share = counts / max(1, len(lengths))
            fig.add_trace(go.Scatter(x=edges.tolist(), y=[*share.tolist(), share[-1]], mode="lines",
                                     line=dict(shape="hv", color=colour, width=line_width), name=name,
                                     legendgroup=name, showlegend=col == 1), row=1, col=col)
        fig.update_xaxes(title_text="characters before <END>", row=1, col=col)
    fig.update_yaxes(title_text="share of lines", row=1, col=1)
    fig.update_layout(title=f"Line lengths: data against generations (temperature 1, bins of {width})",
                      legend=dict(orientation="h", y=-0.3))
    return house_style(fig, height=400)


def _fit_line(sweep: CostSweep, name: str) -> tuple[list[int], list[float]] | None:
    points = sweep.fit_points()
    if len(points) < 2:
        return None
    lengths = [p.length for p in points]
    slope, intercept = fit_loglog(lengths, [getattr(p, name) for p in points])
    return lengths, [math.exp(intercept) * t**slope for t in lengths]


def _cost_figure(sweep: CostSweep, columns: dict[str, str], y_title: str, title: str, scale: float) -> go.Figure:
    """One line per measured column (a column some point lacks is left out), with its fitted line dashed."""
    fig = go.Figure()
    lengths = sweep.column("length")
    columns = {model: column for model, column in columns.items() if sweep.has(column)}
    for model, column in columns.items():
        slope = sweep.slope(column)
        label = MODEL_NAMES[model] + ("" if slope is None else f" (slope {slope:.2f})")
        fig.add_trace(go.Scatter(x=lengths, y=[v * scale for v in sweep.column(column)], mode="lines+markers",
                                 name=label, line=dict(color=MODEL_COLOURS[model], width=3), marker=dict(size=9)))
        fit = _fit_line(sweep, column)
        if fit is not None:
            fig.add_trace(go.Scatter(x=fit[0], y=[v * scale for v in fit[1]], mode="lines", showlegend=False,
                                     line=dict(color=MODEL_COLOURS[model], width=2, dash="dash"), hoverinfo="skip"))
    fig.update_xaxes(title_text="sequence length T (log)", type="log", tickvals=lengths)
    values = [v * scale for column in columns.values() for v in sweep.column(column) if v > 0]
    decades = math.log10(max(values) / min(values)) if values else 0.0
    # Over a wide range, one label per power of ten; over a narrow one plotly's 2-and-5 labels read better.
    fig.update_yaxes(title_text=y_title, type="log", dtick=1 if decades >= 2 else None)
    fig.update_layout(title=title, legend=dict(orientation="h", y=-0.25))
    return house_style(fig, height=420)


def cost_time_figure(sweep: CostSweep) -> go.Figure:
    """Training-step time against T on log-log axes, with the fitted lines dashed."""
    return _cost_figure(sweep, {"lstm": "lstm_seconds", "mingru": "mingru_seconds", "attention": "attention_seconds"},
                        "time per training step (ms, log)",
                        "Training-step time, forward + backward (dashed: fitted line)", 1e3)


def cost_memory_figure(sweep: CostSweep) -> go.Figure:
    """Peak allocated memory of one training step against T on log-log axes."""
    return _cost_figure(sweep, {"lstm": "lstm_peak_bytes", "mingru": "mingru_peak_bytes",
                                "attention": "attention_peak_bytes"},
                        "peak memory (MiB, log)", "Peak memory during one training step", 2.0**-20)


def state_memory_figure(sweep: CostSweep) -> go.Figure:
    """What each model carries to read token T+1: the LSTM's (h, c) and the minGRU's h against attention's
    key/value cache."""
    lengths = sweep.column("length")
    series = [("LSTM state h_T, c_T", "lstm_state_bytes", "lstm"), ("minGRU state h_T", "mingru_state_bytes", "mingru"),
              ("attention key/value cache", "kv_cache_bytes", "attention")]
    fig = go.Figure()
    for name, column, model in series:
        if sweep.has(column):
            fig.add_trace(go.Scatter(x=lengths, y=[b / 1024 for b in sweep.column(column)], mode="lines+markers",
                                     name=name, line=dict(color=MODEL_COLOURS[model], width=3)))
    fig.update_xaxes(title_text="sequence length T (log)", type="log", tickvals=lengths)
    fig.update_yaxes(title_text="KiB (log)", type="log", dtick=1)
    fig.update_layout(title="Memory carried forward: state against cache",
                      legend=dict(orientation="h", y=-0.25))
    return house_style(fig, height=400)


def critical_path_figure(lengths: list[int]) -> go.Figure:
    """Sequential steps from the first token to the last against T: T for the LSTM, ⌈log₂ T⌉ for a parallel
    scan, 1 for attention (counted, not timed)."""
    series = [("LSTM: T steps", "lstm", list(lengths)),
              ("minGRU scan: ⌈log₂ T⌉ steps", "mingru", [critical_path_scan(t) for t in lengths]),
              ("attention: 1 step", "attention", [1] * len(lengths))]
    fig = go.Figure()
    for name, model, steps in series:
        fig.add_trace(go.Scatter(x=list(lengths), y=steps, mode="lines+markers", name=name,
                                 line=dict(color=MODEL_COLOURS[model], width=3), marker=dict(size=9)))
    fig.update_xaxes(title_text="sequence length T (log)", type="log", tickvals=list(lengths))
    fig.update_yaxes(title_text="sequential steps (log)", type="log", dtick=1)
    fig.update_layout(title="Critical path: sequential steps, token 1 → T",
                      legend=dict(orientation="h", y=-0.25))
    return house_style(fig, height=400)
