"""The hand-built AND network's displays: one step's arithmetic in LaTeX, and the timeline table."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import plotly.graph_objects as go

from rnnviz.figures import FONT_SIZE, MODEBAR_ROOM, PALETTE, house_style
from rnnviz.lessons.handbuilt import THRESHOLD, HandRun, HandStep, HandWeights, TruthRow

PHI_LATEX = {"relu": r"\operatorname{ReLU}", "tanh": r"\tanh"}
HIGHLIGHT_ROW = "#fde3c8"  # a light tint of PALETTE["highlight"], dark text stays readable on it
HIDDEN_TEXT = "?"


def fmt(value: float, digits: int = 3) -> str:
    """Integers print bare (1, 0, −1); anything else with ``digits`` decimals. Minus is a real minus sign."""
    rounded = round(value)
    text = str(int(rounded)) if abs(value - rounded) < 1e-9 else f"{value:.{digits}f}"
    return text.replace("-", "−") if text != "-0" else "0"


def fmt_vector(values: Iterable[float], digits: int = 3) -> str:
    """(1, 0, 1) as plain text."""
    return "(" + ", ".join(fmt(v, digits) for v in values) + ")"


def _latex_number(value: float) -> str:
    return fmt(value).replace("−", "-")


def latex_column(values: Sequence[float]) -> str:
    return r"\begin{bmatrix}" + r" \\ ".join(_latex_number(v) for v in values) + r"\end{bmatrix}"


def latex_matrix(rows: Sequence[Sequence[float]]) -> str:
    body = r" \\ ".join(" & ".join(_latex_number(v) for v in row) for row in rows)
    return r"\begin{bmatrix}" + body + r"\end{bmatrix}"


def latex_row(values: Sequence[float]) -> str:
    return r"\begin{bmatrix}" + " & ".join(_latex_number(v) for v in values) + r"\end{bmatrix}"


def products_latex(step: HandStep, weights: HandWeights) -> tuple[str, str]:
    """W_xh·x_t and W_hh·h_{t−1}, each written out as matrix × vector = vector."""
    input_product = (
        rf"W_{{xh}}\,x_{{{step.t}}} = {latex_column(weights.w_xh)}\,{step.x_t} = {latex_column(step.xh)}"
    )
    recurrent_product = (
        rf"W_{{hh}}\,h_{{{step.t - 1}}} = {latex_matrix(weights.w_hh)}{latex_column(step.h_prev)}"
        rf" = {latex_column(step.hh)}"
    )
    return input_product, recurrent_product


def state_latex(step: HandStep, nonlinearity: str) -> str:
    """a_t as the sum of the two products, then h_t = φ(a_t)."""
    phi = PHI_LATEX[nonlinearity]
    return (
        rf"a_{{{step.t}}} = {latex_column(step.xh)} + {latex_column(step.hh)} = {latex_column(step.a_t)},"
        rf"\qquad h_{{{step.t}}} = {phi}(a_{{{step.t}}}) = {latex_column(step.h_t)}"
    )


def readout_latex(step: HandStep, weights: HandWeights) -> str:
    """y_t = ReLU(W_hy h_t), with the product written out."""
    return (
        rf"y_{{{step.t}}} = \operatorname{{ReLU}}(W_{{hy}}\,h_{{{step.t}}})"
        rf" = \operatorname{{ReLU}}\left({latex_row(weights.w_hy)}{latex_column(step.h_t)}\right)"
        rf" = \operatorname{{ReLU}}({_latex_number(step.y_pre)}) = {_latex_number(step.y_t)}"
    )


def timeline_figure(run: HandRun, current: int, concealed: frozenset[int] = frozenset()) -> go.Figure:
    """One row per time step: x_t, x_{t−1} AND x_t, h_t, y_t and the check; the row of step ``current`` is tinted.

    Rows after ``current`` are not computed yet and stay blank. Steps in ``concealed`` (quiz mode, not yet
    guessed) show "?" for h_t and y_t.
    """
    header = ["t", "x<sub>t</sub>", "x<sub>t−1</sub> AND x<sub>t</sub>", "h<sub>t</sub>", "y<sub>t</sub>", "check"]
    columns: list[list[str]] = [[] for _ in header]
    fills = []
    for step in run.steps:
        computed = step.t <= current
        cells = [str(step.t), str(step.x_t), str(step.expected)]
        if not computed:
            cells += ["", "", ""]
        elif step.t in concealed:
            cells += [HIDDEN_TEXT, HIDDEN_TEXT, ""]
        else:
            cells += [fmt_vector(step.h_t), fmt(step.y_t), "✓" if step.correct else "✗ wrong"]
        for col, text in zip(columns, cells):
            col.append(text)
        fills.append(HIGHLIGHT_ROW if step.t == current else "white")
    check_colours = [
        PALETTE["hidden"] if text == "✓" else PALETTE["input"] if text.startswith("✗") else "#333"
        for text in columns[-1]
    ]
    font_colours = [["#333"] * len(run.steps)] * (len(header) - 1) + [check_colours]
    fig = go.Figure(
        go.Table(
            columnwidth=[0.45, 0.55, 1.3, 2.2, 0.8, 0.9],
            header=dict(values=[f"<b>{h}</b>" for h in header], fill_color="#f0f2f6", align="center",
                        font=dict(size=FONT_SIZE), height=34),
            cells=dict(values=columns, fill_color=[fills] * len(header), align="center",
                       font=dict(size=FONT_SIZE, color=font_colours), height=30),
        )
    )
    # Room for the header on three lines (x_{t−1} AND x_t wraps in a narrow column): on two, the last row was cut.
    house_style(fig, height=64 + 30 * len(run.steps) + 20 + MODEBAR_ROOM)
    fig.update_layout(margin=dict(l=0, r=0, t=MODEBAR_ROOM, b=0))
    return fig


def truth_table_markdown(rows: Sequence[TruthRow]) -> str:
    """The four lines of the AND truth table with the range of y_t the network gave on each."""
    lines = ["| $x_{t-1}$ | $x_t$ | AND | $y_t$ seen | check |", "|:-:|:-:|:-:|:-:|:-:|"]
    for row in rows:
        seen = fmt(row.y_min) if abs(row.y_max - row.y_min) < 1e-9 else f"{fmt(row.y_min)} … {fmt(row.y_max)}"
        check = "✓" if row.correct else f"✗ wrong {row.wrong} of {row.total}"
        lines.append(f"| {row.x_prev} | {row.x_t} | {row.expected} | {seen} | {check} |")
    return "\n".join(lines)


def truth_verdict(rows: Sequence[TruthRow]) -> tuple[bool, str]:
    """(all right?, one plain sentence naming the inputs on which the network fails)."""
    tried = sum(row.total for row in rows)
    failing = [row for row in rows if not row.correct]
    if not failing:
        exact = all(row.y_min == row.y_max == row.expected for row in rows)
        how = "exactly, with clean 0s and 1s" if exact else f"once $y_t$ is read as 1 when $y_t$ ≥ {THRESHOLD:g}"
        return True, f"These weights compute $x_t$ AND $x_{{t-1}}$ at all {tried:,} positions tried, {how}."
    where = "; ".join(
        f"$x_{{t-1}} = {row.x_prev}, x_t = {row.x_t}$ (should give {row.expected}; wrong {row.wrong:,} of "
        f"{row.total:,} times)"
        for row in failing
    )
    return False, f"These weights no longer compute AND. They fail on {where}."
