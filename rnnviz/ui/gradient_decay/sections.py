"""The Gradient decay page's five sections, shown one at a time: each draws its sliders beside its figure.

The package's ``page`` draws the section picker and calls ``draw(section)``. Every setting lives in session state
under a ``gradient_decay_…`` key with its default in ``DEFAULTS``; ``keep_settings`` carries them across
runs in which their section is not drawn (Streamlit forgets the state of a widget it did not draw), so a
teacher who goes from section 1 to 4 and back finds σ₁, K and the rest as they were.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import streamlit as st

from rnnviz.figures import gradients as figures
from rnnviz.figures.gradients import sci
from rnnviz.lessons import gradients
from rnnviz.ui.app.presenting import ROOM_SCALE, presenting
from rnnviz.ui.kit.instant import Stop, alert, instant_figure, instant_slider, metrics, note
from rnnviz.ui.kit.instant_chart import instant_chart
from rnnviz.ui.kit.keys import PageKeys
from rnnviz.ui.kit.links import LinkParam, parse_choice, parse_int_in
from rnnviz.ui.kit.widgets import plot, seed

PAGE = "gradient_decay"
page_key = PageKeys(PAGE)
SECTION = page_key("section")
SIGMA, STEPS, HIDDEN = page_key("sigma"), page_key("steps"), page_key("hidden")
MATRIX, INPUT_SCALE, INPUT_WEIGHT = page_key("matrix"), page_key("input_scale"), page_key("input_weight")
VECTOR, OVERLAY, LOG_BARS = page_key("vector"), page_key("overlay"), page_key("log_bars")
THRESHOLD, LR, FORGET_BIAS = page_key("threshold"), page_key("lr"), page_key("forget_bias")

SECTIONS = {  # the address's ?section= value → the picker's label
    "powers": "1. Powers of W_hh",
    "tanh": "2. Through tanh",
    "sum": "3. A sum over steps",
    "clipping": "4. Clipping",
    "lstm": "5. The LSTM's cell path",
}
HIDDEN_SIZES = (4, 8, 16, 32, 64, 128, 256)
MATRICES = {"symmetric": "symmetric, W_hh = QΛQᵀ", "gaussian": "general Gaussian (non-normal)"}
VECTORS = {"top": "top right singular vector", "random": "random unit vector"}
OVERLAYS = (0.8, 0.9, 0.95, 1.0, 1.1, 1.2)
THRESHOLDS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0)
THETA_LINK = LinkParam("theta", THRESHOLD, parse_choice(THRESHOLDS), example="0.25")
RATES = (0.1, 0.3, 0.5, 1.0, 2.0, 5.0)
STEP_STOPS = tuple(range(10, 301, 10))  # K = T: the K sliders' values
STEPS_LINK = LinkParam("K", STEPS, parse_int_in(STEP_STOPS[0], STEP_STOPS[-1]), example="120")
DEFAULTS = {
    SECTION: "powers", SIGMA: 1.05, STEPS: 150, HIDDEN: 64, MATRIX: "symmetric", INPUT_SCALE: 1.0,
    INPUT_WEIGHT: 1.0, VECTOR: "top", OVERLAY: [0.95, 1.0], LOG_BARS: True, THRESHOLD: 1.0, LR: 1.0,
    FORGET_BIAS: 5.0,  # ≈ ln T for T = 150 (chrono initialisation): ∏ f_t stays near 1 over the default K
}
FIGURE_HEIGHT = 410  # px: a section's text, figure and numbers fit one 1400 × 900 screen
SPLIT = (5, 9)  # the controls' column beside the figure's


def keep_settings() -> None:
    """Give every setting its default once, and keep the chosen ones across runs that do not draw them."""
    for key, default in DEFAULTS.items():
        st.session_state[key] = st.session_state.get(key, default)


# ---------------------------------------------------------------------------------------------------------
# Cached engine calls


# The σ₁ and b_f sliders' ranges, and from them every stop the instant charts hold a curve for (a slider that left
# its stops behind would show the nearest stop's curve beside another value).
SIGMA_RANGE = (0.5, 1.5, 0.01)  # min, max, step
FORGET_BIAS_RANGE = (-2.0, 6.0, 0.5)


def slider_stops(low: float, high: float, step: float) -> tuple[float, ...]:
    """Every value a slider from ``low`` to ``high`` in ``step``s can take, rounded as the slider shows it."""
    count = round((high - low) / step)
    return tuple(round(low + i * step, 10) for i in range(count + 1))


SIGMA_STOPS = slider_stops(*SIGMA_RANGE)  # 0.50 … 1.50, 101 stops


@st.cache_data(max_entries=16, show_spinner="Multiplying W_hh at every σ₁…")
def _power_stops(config: gradients.PowerConfig, overlay: tuple[float, ...], font_scale: float) -> dict:
    curves = gradients.power_curves(config, SIGMA_STOPS)
    return figures.power_stops(curves, list(overlay), SIGMA_STOPS[0], f".st-key-{SIGMA}", height=FIGURE_HEIGHT,
                               font_scale=font_scale)


def power_stops(config: gradients.PowerConfig, overlay: tuple[float, ...], font_scale: float) -> dict:
    """The powers section's chart for every stop of the σ₁ slider, shown at config's σ₁ until the browser reads the
    slider. Computed once per H, K, W_hh, v and seed: a σ₁ move is then a lookup, on the server as in the browser."""
    return {**_power_stops(replace(config, sigma=1.0), overlay, font_scale), "value": config.sigma}


FORGET_BIAS_STOPS = slider_stops(*FORGET_BIAS_RANGE)  # −2.0 … 6.0, 17 stops


@st.cache_data(max_entries=16, show_spinner="Running the LSTM at every b_f…")
def cell_path_stops(config: gradients.TanhRNNConfig, font_scale: float) -> tuple[dict, dict]:
    """Section 5's chart for every stop of the b_f slider (the tanh RNN's curve stays), and at each b_f the mean
    forget gate and the cell path's end, formatted (the caption's figures at the usual b_f)."""
    paths = [gradients.cell_path(gradients.CellPathConfig(config.hidden, config.steps, bias, config.input_scale,
                                                          config.input_size, config.seed))
             for bias in FORGET_BIAS_STOPS]
    data = figures.cell_path_stops(decay_curves(config), paths, FORGET_BIAS_STOPS[0], f".st-key-{FORGET_BIAS}",
                                   height=FIGURE_HEIGHT, font_scale=font_scale)
    return data, {path.forget_bias: (path.mean_forget, sci(float(path.cell_path[-1]))) for path in paths}


@st.cache_data(max_entries=32, show_spinner="Multiplying the Jacobians…")
def decay_curves(config: gradients.TanhRNNConfig) -> gradients.DecayCurves:
    return gradients.decay_curves(config)


@st.cache_data(max_entries=32, show_spinner=False)
def contributions(config: gradients.TanhRNNConfig) -> gradients.Contributions:
    return gradients.contributions(config)


@st.cache_data(max_entries=64, show_spinner="Training the small RNN…")
def clip_run(config: gradients.ClipConfig, threshold: float | None) -> gradients.ClipRun:
    return gradients.train_for_clipping(config, threshold)


# ---------------------------------------------------------------------------------------------------------
# Shared controls


def sigma_and_steps() -> tuple[float, int]:
    """The two settings every section but clipping is about: σ₁ and K = T."""
    sigma = st.slider("σ₁, the largest singular value of W_hh", *SIGMA_RANGE[:2], step=SIGMA_RANGE[2], key=SIGMA)
    steps = st.slider("K = T, the number of steps", 10, 300, step=10, key=STEPS)
    return float(sigma), int(steps)


def more_settings(inputs: bool, vector: bool = False, sigma: bool = False, steps: bool = False) -> None:
    """The settings a section is not about, in a popover whose label gives their values: H and the kind of W_hh;
    with ``inputs`` the RNN's input scales, with ``vector`` the start vector, with ``sigma`` σ₁, with ``steps`` K."""
    state = st.session_state
    label = "More: " + ", ".join(
        ([f"σ₁ = {state[SIGMA]:.2f}"] if sigma else []) + ([f"K = {state[STEPS]}"] if steps else [])
        + [f"H = {state[HIDDEN]}"] + (["Gaussian W_hh"] if state[MATRIX] == "gaussian" else [])
        + ([f"inputs ×{state[INPUT_SCALE]:g}"] if inputs else []))
    with st.popover(label, icon=":material/tune:"):
        if sigma:
            st.slider("σ₁, the largest singular value of W_hh", *SIGMA_RANGE[:2], step=SIGMA_RANGE[2], key=SIGMA)
        if steps:
            st.slider("K = T, the number of steps", 10, 300, step=10, key=STEPS)
        st.select_slider("H, the hidden size", HIDDEN_SIZES, key=HIDDEN)
        st.radio("W_hh", list(MATRICES), format_func=MATRICES.get, key=MATRIX,
                 help="A symmetric W_hh reaches σ₁ᵏ exactly along its top vector; for a general one σ₁ᵏ is only an "
                 "upper bound, and the measured curve falls below it.")
        if vector:
            st.radio("Start vector v", list(VECTORS), format_func=VECTORS.get, key=VECTOR)
        if inputs:
            st.slider("input scale (std of x_t), sections 2, 3, 5", 0.0, 3.0, step=0.1, key=INPUT_SCALE)
            st.slider("input weight scale (W_ih), sections 2, 3", 0.0, 3.0, step=0.1, key=INPUT_WEIGHT)


def rnn_config() -> gradients.TanhRNNConfig:
    """The tanh RNN of sections 2, 3 and 5, from the settings as they are now."""
    state = st.session_state
    return gradients.TanhRNNConfig(int(state[HIDDEN]), float(state[SIGMA]), int(state[STEPS]),
                                   float(state[INPUT_SCALE]), float(state[INPUT_WEIGHT]),
                                   matrix=str(state[MATRIX]), seed=seed())


def lag_note(config: gradients.TanhRNNConfig) -> None:
    """Says when the Jacobian norms are measured at some lags only (long K, so that the sliders answer)."""
    lags = gradients.measured_lags(config.steps, config.hidden)
    if len(lags) < config.steps + 1:
        slow = " (a second or more the first time at this H)" if config.hidden > 64 else ""
        st.caption(f"Jacobian norms measured exactly at {len(lags)} evenly spaced lags from 0 to "
                   f"{config.steps}{slow}.")


# ---------------------------------------------------------------------------------------------------------
# The sections: a paragraph that names the section, then its controls beside its figure, then its numbers.


def repeated_multiplication() -> None:
    st.markdown("**1. Repeated multiplication by W_hh.** Without a nonlinearity, the gradient that flows back k "
                "steps is multiplied by W_hh k times. Its size then follows σ₁ᵏ: above 1 it explodes, below 1 it "
                "vanishes.")
    controls, figure = st.columns(SPLIT, gap="medium")
    with controls:
        st.latex(r"\lVert W_{hh}^{k}\, v \rVert \le \sigma_1^{k}\, \lVert v \rVert")
        sigma, steps = sigma_and_steps()
        overlay = st.multiselect("Overlay other σ₁ values", OVERLAYS, key=OVERLAY)
        more_settings(inputs=False, vector=True)
    state = st.session_state
    config = gradients.PowerConfig(int(state[HIDDEN]), sigma, steps, str(state[MATRIX]), str(state[VECTOR]), seed())
    with figure:
        # Every σ₁ stop's curve at once, so that the chart answers the σ₁ slider in the browser (kit.instant_chart).
        instant_chart(power_stops(config, tuple(sorted(overlay)), ROOM_SCALE if presenting() else 1.0),
                      key=page_key("power"))


def through_the_nonlinearity() -> None:
    st.markdown("**2. Through the tanh nonlinearity.** A real tanh RNN with this W_hh runs on random inputs. Each "
                "step's true Jacobian is diag(tanh′(a_t)) W_hh, and tanh′ = 1 − h_t² is at most 1, so it can only "
                "shrink the product further.")
    controls, figure = st.columns(SPLIT, gap="medium")
    with controls:
        st.latex(r"\frac{\partial h_T}{\partial h_k} = \prod_{t=k+1}^{T} \operatorname{diag}"
                 r"\big(\tanh'(a_t)\big)\, W_{hh}")
        sigma_and_steps()
        more_settings(inputs=True)
        config = rnn_config()
        decay = decay_curves(config)
        plot(figures.tanh_prime_figure(decay.tanh_prime, height=200), key=page_key("tanh_prime"))
    with figure:
        plot(figures.decay_figure(decay, config.sigma, height=FIGURE_HEIGHT), key=page_key("decay"))
        st.markdown(figures.decay_sentence(decay, config.sigma))
        lag_note(config)


def contribution_stops(config: gradients.TanhRNNConfig) -> list[Stop]:
    """What section 3 says under its K slider at every K: the last and first steps' shares of the sum."""
    stops = []
    for steps in STEP_STOPS:
        shares = contributions(replace(config, steps=steps))
        blocks = ()
        if not shares.is_zero:  # with no input every term is 0 at every K: the page says so once, above
            last, first = min(10, steps), steps // 2
            share = shares.share_of_first(first)
            # one above the other: a share in powers of ten needs the column's whole width
            blocks = (metrics([(f"share of the last {last} steps", f"{shares.share_of_last(last):.1%}")]),
                      metrics([(f"share of the first {first} steps",
                                f"{share:.1%}" if share >= 1e-3 else f"{sci(100 * share)} %")]))
        stops.append(Stop(steps, blocks, label=str(steps)))
    return stops


def contribution_figures(config: gradients.TanhRNNConfig, log: bool) -> list:
    return [figures.contributions_figure(contributions(replace(config, steps=steps)), log=log, height=FIGURE_HEIGHT)
            for steps in STEP_STOPS]


def per_step_contributions() -> None:
    st.markdown("**3. A long-range signal buried under short-range ones.** The gradient of a loss at the last step "
                "T is a **sum** over steps. Each bar is one step's term; the far-back terms arrive through the long "
                "products of section 2, so the last few steps dominate the sum.")
    controls, figure = st.columns(SPLIT, gap="medium")
    with controls:
        st.latex(r"\frac{\partial L_T}{\partial W_{hh}} = \sum_{t=1}^{T} \delta_t\, h_{t-1}^{\top}, \quad "
                 r"\delta_t = \frac{\partial L_T}{\partial a_t}")
        # Every K's terms, so that the K slider answers in the browser (kit.instant); the rest compute them anew.
        config = replace(rnn_config(), steps=STEP_STOPS[0])
        instant_slider("K = T, the number of steps", STEPS, contribution_stops(config), link=STEPS_LINK)
        log_bars = st.toggle("log scale", key=LOG_BARS)
        more_settings(inputs=True, sigma=True)
        if contributions(config).is_zero:  # no input (or no input weight): zero at every K alike
            st.info(r"Every term is exactly 0 here: with no input (scale 0) every hidden state $h_{t-1}$ stays 0, "
                    r"so each step's term $\delta_t h_{t-1}^\top$ is 0. Raise the input scale.",
                    icon=":material/info:")
    with figure:
        instant_figure(STEPS, "contributions", lambda: contribution_figures(config, log_bars),
                       cache=(config, log_bars, "contributions"))


def clip_stops(config: gradients.ClipConfig) -> list[Stop]:
    """What section 4 says under its θ slider at every θ: how each run ended, and what clipping did."""
    unclipped = clip_run(config, None)
    stops = []
    for threshold in THRESHOLDS:
        clipped = clip_run(config, threshold)
        blocks = []
        for run, name in ((unclipped, "Without clipping"), (clipped, f"With clipping at θ = {threshold:g}")):
            if run.blew_up_at is not None:
                blocks.append(alert("warning", f"{name}, the run blew up at step {run.blew_up_at} (inf or NaN)."))
            else:
                blocks.append(alert("success", f"{name}, all {config.steps} steps stayed finite (last loss "
                                               f"{run.losses[-1]:.3g})."))
        blocks.append(metrics([("steps clipped", f"{clipped.clipped_steps} of {len(clipped.grad_norms)}"),
                               ("cos(raw g, clipped g)", "—" if clipped.cosine is None else f"{clipped.cosine:.3f}")]))
        blocks.append(note("cos at the last clip: 1.000 is the same direction."))
        stops.append(Stop(threshold, tuple(blocks), label=f"{threshold:g}"))
    return stops


def clip_figures(config: gradients.ClipConfig) -> list:
    unclipped = clip_run(config, None)
    return [figures.clipping_figure(unclipped, clip_run(config, threshold), threshold, config.steps,
                                    height=FIGURE_HEIGHT + 70) for threshold in THRESHOLDS]


def gradient_clipping() -> None:
    st.markdown("**4. Gradient clipping.** A small tanh RNN (H = 16) learns to recall its input from 5 steps back "
                "by SGD at a deliberately high learning rate, twice from the same weights on the same batches. The "
                "right run rescales any gradient longer than θ to length θ, which keeps its direction.")
    controls, figure = st.columns(SPLIT, gap="medium")
    with controls:
        st.latex(r"\lVert g \rVert > \theta: \; g \leftarrow \theta\, \frac{g}{\lVert g \rVert}")
        # Both runs at every θ, so that the θ slider answers in the browser (kit.instant); the rate retrains them.
        lr = st.select_slider("learning rate", RATES, key=LR)
        config = gradients.ClipConfig(lr=lr, seed=seed())
        instant_slider("threshold θ", THRESHOLD, clip_stops(config), link=THETA_LINK)
    with figure:
        instant_figure(THRESHOLD, "clipping", lambda: clip_figures(config), cache=(config, "clipping"))


COMMON_FORGET_BIAS = 1.0  # the usual initialisation (Jozefowicz et al. 2015), shown beside the chosen one


def lstm_cell_path() -> None:
    st.markdown(r"**5. The LSTM's cell path.** In an LSTM, $c_t = f_t \odot c_{t-1} + i_t \odot g_t$, so along the "
                r"cell path the gradient is multiplied by the forget gates only: no $W_{hh}$, no $\tanh'$. A real LSTM "
                "with the same H runs on the same inputs as the tanh RNN; raise the forget-gate bias $b_f$ and its "
                "curve flattens.")
    controls, figure = st.columns(SPLIT, gap="medium")
    with controls:
        st.latex(r"\frac{\partial c_T}{\partial c_k}\Big|_{\text{cell path}} = \prod_{t=k+1}^{T}"
                 r" \operatorname{diag}(f_t)")
        forget_bias = st.slider("forget-gate bias b_f at initialisation", *FORGET_BIAS_RANGE[:2],
                                step=FORGET_BIAS_RANGE[2], key=FORGET_BIAS,
                                help="b_f ≈ ln T keeps f_t near 1 for T steps (chrono initialisation, Tallec & "
                                "Ollivier 2018).")
        more_settings(inputs=True, sigma=True, steps=True)
    config = rnn_config()
    with figure:
        # Every b_f stop's cell path at once, so that the chart answers the b_f slider in the browser.
        data, at_bias = cell_path_stops(config, ROOM_SCALE if presenting() else 1.0)
        instant_chart({**data, "value": float(forget_bias)}, key=page_key("cell_path"))
    common_mean, common_end = at_bias[COMMON_FORGET_BIAS]
    with controls:
        st.caption(f"At the usual $b_f = {COMMON_FORGET_BIAS:g}$, $f_t$ averages {common_mean:.2f} and "
                   f"$\\prod f_t$ still falls to {common_end} over {config.steps} steps: the cell path "
                   "carries a gradient only as far as the forget gates stay near 1. Not a cure: $f_t = \\sigma(\\cdot) "
                   "< 1$, so over a long enough span the product still shrinks, only as slowly as the gates allow.")


DRAW: dict[str, Callable[[], None]] = {
    "powers": repeated_multiplication,
    "tanh": through_the_nonlinearity,
    "sum": per_step_contributions,
    "clipping": gradient_clipping,
    "lstm": lstm_cell_path,
}


def draw(section: str) -> None:
    """Draw one section (by its ``SECTIONS`` key)."""
    DRAW[section]()
