"""The LSTM gates page: one cell value through f, i, g, o; one full step drawn with its numbers; gate saturation."""

from rnnviz.ui.kit.widgets import page_header
from rnnviz.ui.lstm_gates.sections import gate_saturation, one_full_step, one_number_through_the_gates


def page() -> None:
    page_header(
        "lstm-gates",
        "An LSTM keeps a **cell state** c_t beside its hidden state. Three gates between 0 and 1 decide, unit by "
        "unit, how much of the old cell to keep (f_t), how much of a candidate g_t to write (i_t) and how much "
        "of the cell to expose as h_t (o_t).",
        r"c_t = f_t \odot c_{t-1} + i_t \odot g_t, \qquad h_t = o_t \odot \tanh(c_t)",
    )

    one_number_through_the_gates()
    one_full_step()
    gate_saturation()
