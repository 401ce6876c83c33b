"""What the Hand-built RNN page shows at each time step, for the stepper that answers in the browser (kit.instant):
the step's numbers and equations under the stepper, and the timeline table with that step's row tinted."""

from __future__ import annotations

from rnnviz.figures.handbuilt import fmt, fmt_vector, products_latex, readout_latex, state_latex, timeline_figure
from rnnviz.lessons.handbuilt import HandConfig, HandRun
from rnnviz.ui.kit.instant import Stop, alert, columns, latex, metrics

METRIC_WIDTHS = (0.6, 2, 2, 1)  # t or x_t, then h_{t−1}, h_t, y_t: two decimals keep the vectors on one line

Scores = dict[int, tuple[tuple[float, ...], tuple[bool, ...]]]


def concealed_at(t: int, quiz: bool, scores: Scores) -> frozenset[int]:
    """The quiz hides only the step in front of the user; earlier steps are already behind them."""
    return frozenset({t}) if quiz and t >= 1 and t not in scores else frozenset()


def step_stop(config: HandConfig, run: HandRun, t: int, quiz: bool, scores: Scores) -> Stop:
    """Time step t (0: nothing read yet): its numbers, its products, a_t and h_t, the readout, the quiz's score."""
    if t == 0:
        return Stop(0, (
            metrics([("$t$", "0"), ("$h_0$", fmt_vector(config.h0))], METRIC_WIDTHS),
            alert("info", "No bit has been read yet. $h_0 = (0, 0, 1)$: no current bit, no previous bit, and the "
                  "constant 1. Press **Step** to read $x_1$."),
        ))
    step = run.steps[t - 1]
    hidden = t in concealed_at(t, quiz, scores)
    blocks = [
        metrics([(f"$x_{{{t}}}$", str(step.x_t)), (f"$h_{{{t - 1}}}$", fmt_vector(step.h_prev, 2)),
                 (f"$h_{{{t}}}$", "?" if hidden else fmt_vector(step.h_t, 2)),
                 (f"$y_{{{t}}}$", "?" if hidden else fmt(step.y_t, 2))], METRIC_WIDTHS),
        columns(*([latex(product)] for product in products_latex(step, config.weights))),
    ]
    if not hidden:
        blocks += [latex(state_latex(step, config.nonlinearity)), latex(readout_latex(step, config.weights))]
        if t in scores:
            guess, right_units = scores[t]
            blocks.append(alert("success" if all(right_units) else "warning",
                                f"Your guess for $h_{{{t}}}$ was {fmt_vector(guess)}: {sum(right_units)} of 3 right."))
    return Stop(t, tuple(blocks))


def step_stops(config: HandConfig, run: HandRun, quiz: bool, scores: Scores) -> list[Stop]:
    return [step_stop(config, run, t, quiz, scores) for t in range(len(config.bits) + 1)]


def timelines(run: HandRun, quiz: bool, scores: Scores) -> list:
    """The timeline table at every step."""
    return [timeline_figure(run, t, concealed_at(t, quiz, scores)) for t in range(len(run.steps) + 1)]
