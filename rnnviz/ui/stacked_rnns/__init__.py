"""The Stacked RNNs page: the time × depth grid stepped in computation order, and parameters that grow with depth."""

import pandas as pd
import streamlit as st

from rnnviz.core.recurrent import GATE_BLOCKS
from rnnviz.figures.stacked import cell_sentence, grid_figure, parameters_figure
from rnnviz.lessons.stacked import (
    MAX_LAYERS,
    MAX_WIDTH,
    MAX_WORDS,
    ORDERS,
    DepthRow,
    StackConfig,
    StackRun,
    computation_order,
    depth_table,
    layer_parameters,
    parse_words,
    run_stack,
)
from rnnviz.ui.app.errors import fragment
from rnnviz.ui.kit.cache import shared_figure
from rnnviz.ui.kit.instant import Stop, instant_figure, instant_stepper, text
from rnnviz.ui.kit.links import (
    LinkParam,
    mirror_to_link,
    parse_choice,
    parse_int_in,
    parse_text,
    restore_from_link,
    share_link,
)
from rnnviz.ui.kit.widgets import page_header, plot, seed

CELLS = ("rnn", "lstm", "gru")
COUNT = st.column_config.NumberColumn(format="localized")  # 1,234: a parameter count with its thousands
EMBED_DIM = 3  # E: each word is a 3-number vector, as in the lecture's example
WORDS_CHARS = 80
STEP = "stacked_step"
STEP_LINK = LinkParam("cell_step", STEP, parse_int_in(1, MAX_LAYERS * MAX_WORDS), example="7")
LINK = (
    LinkParam("words", "stacked_words", parse_text(WORDS_CHARS), example="a dog ran home"),
    LinkParam("cell", "stacked_kind", parse_choice(CELLS), example="gru"),
    LinkParam("layers", "stacked_layers", parse_int_in(1, MAX_LAYERS), example="3"),
    LinkParam("order", "stacked_order", parse_choice(ORDERS), example="step by step"),
    *(LinkParam(f"d{i}", f"stacked_d{i}", parse_int_in(1, MAX_WIDTH), example=str((i + 3) % MAX_WIDTH + 1))
      for i in range(1, MAX_LAYERS + 1)),
    STEP_LINK,
)


@st.cache_data(show_spinner=False, max_entries=256)
def stack_run(config: StackConfig) -> StackRun:
    return run_stack(config)


@st.cache_data(show_spinner=False, max_entries=64)
def stack_depth_table(kind: str, input_size: int, hidden: int) -> list[DepthRow]:
    return depth_table(kind, input_size, hidden)


def cell_stops(run: StackRun, cells: list[tuple[int, int]]) -> list[Stop]:
    """Cell i + 1 of the computation order: what it reads and writes."""
    return [Stop(done, (text(cell_sentence(run, *cells[done - 1])),)) for done in range(1, len(cells) + 1)]


def grids(run: StackRun, cells: list[tuple[int, int]]) -> list:
    """The grid with the first 1, 2, … cells computed."""
    return [grid_figure(run, cells, done) for done in range(1, len(cells) + 1)]


# The stepper answers in the browser: every cell's grid and sentence are sent with the page, and a step shows them in
# the frame of the click (kit.instant). The controls above rerun the page and hand this fragment the config.
@fragment
def grid(config: StackConfig, order: str) -> None:
    with st.container(horizontal=True, horizontal_alignment="right"):
        share_link(LINK)  # in here: the cell it names moves in here
    run = stack_run(config)  # cached: the page's parameter count below reads the same run
    cells = computation_order(config.layers, len(config.words), order)
    instant_stepper(STEP, cell_stops(run, cells), link=STEP_LINK, caption=f"cell **{{step}}** of {len(cells)}",
                    out_of_range="Cell {asked} is past the end of this grid, so the page shows cell {step}.")
    mirror_to_link(LINK)
    instant_figure(STEP, "grid", lambda: grids(run, cells), cache=(config, order))


def page() -> None:
    page_header(
        "stacked-rnns",
        "A stacked RNN feeds the hidden states of one layer in as the inputs of the next. Cell $(\\ell, t)$ "
        "reads two arrows: its own layer's state from the step before, $h_{t-1}^{(\\ell)}$, and the layer "
        "below at the same step, $h_t^{(\\ell-1)}$. Step through the grid below in an order that respects "
        "both arrows; each layer adds its own weights, so the parameter count grows linearly with depth.",
        r"h_t^{(\ell)} = \operatorname{cell}\big(W_x^{(\ell)} h_t^{(\ell-1)} + W_h^{(\ell)} h_{t-1}^{(\ell)}\big), "
        r"\quad h_t^{(0)} = x_t, \qquad P = \sum_{\ell} G\, d_\ell\, (d_{\ell-1} + d_\ell + 2)",
    )
    restore_from_link("stacked", LINK)
    for key, default in (("stacked_words", "the cat sat"), ("stacked_kind", "lstm"), ("stacked_layers", 2),
                         ("stacked_order", ORDERS[0]), *((f"stacked_d{i}", 3) for i in range(1, MAX_LAYERS + 1))):
        st.session_state.setdefault(key, default)

    col_words, col_kind, col_layers, col_order = st.columns([2, 1.4, 1.2, 1.6])
    words_text = col_words.text_input("Words, one per step", key="stacked_words", max_chars=WORDS_CHARS)
    kind = col_kind.segmented_control("Cell", CELLS, format_func=str.upper, key="stacked_kind", required=True)
    layers = col_layers.slider("Layers", 1, MAX_LAYERS, key="stacked_layers")
    order = col_order.radio("Computation order", ORDERS, key="stacked_order")
    size_cols = st.columns([2.4, *[1] * MAX_LAYERS, 1.5], vertical_alignment="bottom")
    size_cols[0].markdown(f"**Hidden sizes** $d_\\ell$ (input width $E = {EMBED_DIM}$)")
    sizes = tuple(
        size_cols[i + 1].number_input(f"$d_{i + 1}$", 1, MAX_WIDTH, key=f"stacked_d{i + 1}") for i in range(layers)
    )
    mirror_to_link(LINK)

    try:
        config = StackConfig(kind=kind, sizes=sizes, words=parse_words(words_text), embed_dim=EMBED_DIM, seed=seed())
    except ValueError as err:
        st.error(str(err))
        st.stop()

    grid(config, order)
    run = stack_run(config)

    st.subheader("Parameters grow linearly with depth")
    left, right = st.columns(2, gap="large")
    with left:
        per_layer = layer_parameters(kind, EMBED_DIM, sizes)
        st.dataframe(pd.DataFrame([
            {"layer": row.layer, "W_x (weight_ih)": f"{row.w_x[0]} × {row.w_x[1]}",
             "W_h (weight_hh)": f"{row.w_h[0]} × {row.w_h[1]}", "biases": row.biases, "parameters": row.count}
            for row in per_layer
        ]), hide_index=True, column_config={"parameters": COUNT})
        st.metric("This model: sum(p.numel())", f"{run.parameters:,}",
                  help="Counted on the real torch module(s) that produced the grid above.")
    with right:
        rows = stack_depth_table(kind, EMBED_DIM, sizes[0])
        plot(shared_figure(parameters_figure, rows, kind, sizes[0], EMBED_DIM, key=(kind, sizes[0], EMBED_DIM)))
        step_size = rows[1].formula - rows[0].formula
        st.caption(f"Each extra layer of width {sizes[0]} adds the same {step_size:,} parameters: "
                   f"$G\\,d\\,(2d + 2)$ with $G$ = {GATE_BLOCKS[kind]} gate blocks.")
        st.dataframe(pd.DataFrame([{"layers L": row.layers, "formula": row.formula, "sum(p.numel())": row.model}
                                   for row in rows]), hide_index=True,
                     column_config={"formula": COUNT, "sum(p.numel())": COUNT})
