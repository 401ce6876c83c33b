"""Gradient decay: powers of W_hh, the tanh′ factor, per-step shares, clipping and the LSTM cell path."""

import streamlit as st

from rnnviz.figures import gradients as figures
from rnnviz.figures.gradients import sci
from rnnviz.lessons import gradients
from rnnviz.ui.links import LinkParam, mirror_to_link, parse_float_in, parse_int_in, restore_from_link, share_link
from rnnviz.ui.widgets import page_header, plot, seed

PAGE = "gradient_decay"
LINK = (
    LinkParam("sigma", f"{PAGE}_sigma", parse_float_in(0.5, 1.5), lambda v: f"{v:.2f}"),
    LinkParam("K", f"{PAGE}_steps", parse_int_in(10, 300)),
)
HIDDEN_SIZES = (4, 8, 16, 32, 64, 128, 256)
MATRICES = {"symmetric": "symmetric, W_hh = QΛQᵀ", "gaussian": "general Gaussian (non-normal)"}
VECTORS = {"top": "top right singular vector", "random": "random unit vector"}


@st.cache_data(max_entries=128, show_spinner=False)
def power_curve(config: gradients.PowerConfig) -> gradients.PowerCurve:
    return gradients.power_curve(config)


@st.cache_data(max_entries=32, show_spinner="Multiplying the Jacobians…")
def decay_curves(config: gradients.TanhRNNConfig) -> gradients.DecayCurves:
    return gradients.decay_curves(config)


@st.cache_data(max_entries=32, show_spinner=False)
def contributions(config: gradients.TanhRNNConfig) -> gradients.Contributions:
    return gradients.contributions(config)


@st.cache_data(max_entries=64, show_spinner=False)
def cell_path(config: gradients.CellPathConfig) -> gradients.CellPath:
    return gradients.cell_path(config)


@st.cache_data(max_entries=64, show_spinner="Training the small RNN…")
def clip_run(config: gradients.ClipConfig, threshold: float | None) -> gradients.ClipRun:
    return gradients.train_for_clipping(config, threshold)


@st.fragment
def repeated_multiplication(hidden: int, sigma: float, steps: int, matrix: str) -> None:
    st.header("1. Repeated multiplication by W_hh")
    st.markdown(
        "Without a nonlinearity, the gradient that flows back k steps is multiplied by W_hh k times. "
        "Its size then follows σ₁ᵏ: above 1 it explodes, below 1 it vanishes."
    )
    vec_col, overlay_col = st.columns([1, 2])
    vector = vec_col.radio("Start vector v", list(VECTORS), format_func=VECTORS.get, key=f"{PAGE}_vector")
    overlay = overlay_col.multiselect("Overlay other σ₁ values", [0.8, 0.9, 0.95, 1.0, 1.1, 1.2],
                                      default=[0.95, 1.0], key=f"{PAGE}_overlay")
    curves = [power_curve(gradients.PowerConfig(hidden, s, steps, matrix, vector, seed()))
              for s in sorted({sigma, *overlay})]
    plot(figures.power_figure(curves, sigma), key=f"{PAGE}_power")
    chosen = next(c for c in curves if c.sigma == sigma)
    m1, m2, m3 = st.columns(3)
    m1.metric(f"measured ‖W_hhᴷ v‖ after K = {steps}", sci(chosen.measured[-1]))
    m2.metric(f"theory σ₁ᴷ = {sigma:.2f}^{steps}", sci(chosen.theory[-1]))
    m3.metric("measured ÷ theory", f"{chosen.measured[-1] / chosen.theory[-1]:.3f}")


@st.fragment
def through_the_nonlinearity(config: gradients.TanhRNNConfig) -> None:
    sigma, steps = config.sigma, config.steps
    st.header("2. Through the tanh nonlinearity")
    st.markdown(
        "A real tanh RNN with this W_hh runs forward on random inputs (their scale is set at the top). Each "
        "step's true Jacobian is diag(tanh′(a_t)) W_hh, and tanh′ = 1 − h_t² is at most 1, so it can only "
        "shrink the product further."
    )
    decay = decay_curves(config)
    fig_col, hist_col = st.columns([3, 2])
    with fig_col:
        plot(figures.decay_figure(decay, sigma), key=f"{PAGE}_decay")
    with hist_col:
        plot(figures.tanh_prime_figure(decay.tanh_prime), key=f"{PAGE}_tanh_prime")
    m1, m2, m3 = st.columns(3)
    m1.metric(f"‖∂h_T/∂h_k‖ at T − k = {steps}, tanh RNN", sci(decay.with_tanh[-1]))
    m2.metric(f"‖W_hh^{steps}‖ without tanh′", sci(decay.linear[-1]))
    m3.metric("mean tanh′", f"{decay.mean_tanh_prime:.3f}")
    st.markdown(figures.decay_sentence(decay, sigma))


@st.fragment
def per_step_contributions(config: gradients.TanhRNNConfig) -> None:
    steps = config.steps
    st.header("3. A long-range signal buried under short-range ones")
    st.markdown(
        "The gradient of a loss at the last step T is a **sum** over steps, ∂L_T/∂W_hh = Σ_t δ_t h_{t−1}ᵀ. "
        "Each bar is one step's term; the far-back terms arrive through the long products above, so the "
        "sum is dominated by the last few steps."
    )
    st.latex(r"\frac{\partial L_T}{\partial W_{hh}} = \sum_{t=1}^{T} \frac{\partial L_T}{\partial h_T}"
             r"\Big(\prod_{i=t+1}^{T} \frac{\partial h_i}{\partial h_{i-1}}\Big)"
             r" \frac{\partial^+ h_t}{\partial W_{hh}}")
    log_bars = st.toggle("log scale", value=True, key=f"{PAGE}_log_bars")
    shares = contributions(config)
    plot(figures.contributions_figure(shares, log=log_bars), key=f"{PAGE}_contributions")
    if shares.is_zero:
        st.info("Every term is exactly 0 here: with no input (scale 0) every hidden state h_{t−1} stays 0, so "
                "each step's term δ_t h_{t−1}ᵀ is 0 and there is no gradient to share out. Raise the input "
                "scale at the top.", icon=":material/info:")
        return
    last = min(10, steps)
    m1, m2 = st.columns(2)
    m1.metric(f"share of the last {last} steps", f"{shares.share_of_last(last):.1%}")
    first = shares.share_of_first(steps // 2)
    m2.metric(f"share of the first {steps // 2} steps", f"{first:.1%}" if first >= 1e-3 else f"{sci(100 * first)} %")


@st.fragment
def gradient_clipping() -> None:
    st.header("4. Gradient clipping")
    st.markdown(
        "A small tanh RNN (H = 16) learns to recall its input from 5 steps back, by plain SGD at a "
        "deliberately high learning rate. Both runs start from the same weights and see the same batches; "
        "the right one rescales any gradient longer than θ to length θ, which keeps its direction."
    )
    st.latex(r"\text{if } \lVert g \rVert > \theta: \quad g \leftarrow \theta\, \frac{g}{\lVert g \rVert}")
    th_col, lr_col = st.columns(2)
    threshold = th_col.select_slider("threshold θ", [0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0], value=1.0,
                                     key=f"{PAGE}_threshold")
    lr = lr_col.select_slider("learning rate", [0.1, 0.3, 0.5, 1.0, 2.0, 5.0], value=1.0, key=f"{PAGE}_lr")
    config = gradients.ClipConfig(lr=lr, seed=seed())
    unclipped, clipped = clip_run(config, None), clip_run(config, threshold)
    plot(figures.clipping_figure(unclipped, clipped, threshold, config.steps), key=f"{PAGE}_clipping")
    for run, name in ((unclipped, "Without clipping"), (clipped, f"With clipping at θ = {threshold:g}")):
        if run.blew_up_at is not None:
            st.warning(f"{name}, the run blew up: at step {run.blew_up_at} the loss or the gradient became "
                       "infinite (inf or NaN), so training stopped there.", icon=":material/warning:")
        else:
            st.success(f"{name}, all {config.steps} steps stayed finite; the last loss is "
                       f"{run.losses[-1]:.3g}.", icon=":material/check_circle:")
    m1, m2 = st.columns(2)
    m1.metric("steps where clipping acted", f"{clipped.clipped_steps} of {len(clipped.grad_norms)}")
    m2.metric("cos(raw g, clipped g)", "—" if clipped.cosine is None else f"{clipped.cosine:.3f}",
              help="On the last step where clipping acted: 1.000 means the same direction.")


@st.fragment
def lstm_cell_path(config: gradients.TanhRNNConfig) -> None:
    steps = config.steps
    st.header("5. The LSTM's cell path")
    st.markdown(
        "In an LSTM, c_t = f_t ⊙ c_{t−1} + i_t ⊙ g_t, so along the cell path the gradient is multiplied by "
        "the forget gates only, with no W_hh and no tanh′. A real LSTM with the same H runs on the same "
        "inputs as the tanh RNN above; raise the forget-gate bias b_f and its curve flattens."
    )
    st.latex(r"\frac{\partial c_T}{\partial c_k}\Big|_{\text{cell path}} = \prod_{t=k+1}^{T}"
             r" \operatorname{diag}(f_t)")
    forget_bias = st.slider("forget-gate bias b_f at initialisation", -2.0, 4.0, 1.0, 0.5,
                            key=f"{PAGE}_forget_bias")
    rnn = decay_curves(config)
    lstm = cell_path(gradients.CellPathConfig(config.hidden, steps, forget_bias, config.input_scale,
                                              config.input_size, config.seed))
    plot(figures.decay_figure(rnn, config.sigma, cell=lstm), key=f"{PAGE}_cell_path")
    m1, m2, m3 = st.columns(3)
    m1.metric(f"‖∂c_T/∂c_k‖ at T − k = {steps}, LSTM", sci(lstm.cell_path[-1]))
    m2.metric(f"‖∂h_T/∂h_k‖ at T − k = {steps}, tanh RNN", sci(rnn.with_tanh[-1]))
    m3.metric("mean forget gate f_t", f"{lstm.mean_forget:.3f}")
    st.info("This does not *solve* vanishing: f_t = σ(·) is strictly below 1, so over a long enough span the "
            "product of forget gates still shrinks, only as slowly as the learned gates allow.",
            icon=":material/info:")


page_header(
    "gradient-decay",
    "Backpropagation through time multiplies one Jacobian per step. When the factors shrink vectors, the "
    "gradient from far back **vanishes**; when they stretch them, it **explodes**. Every solid curve below "
    "is measured from real matrices and a real RNN; dashed lines are theory.",
    r"\frac{\partial h_T}{\partial h_k} = \prod_{t=k+1}^{T} \operatorname{diag}\big(\tanh'(a_t)\big)\, W_{hh},"
    r"\qquad \lVert W_{hh}^{k}\, v \rVert \le \sigma_1^{k}\, \lVert v \rVert",
)

restore_from_link(PAGE, LINK)
st.session_state.setdefault(f"{PAGE}_sigma", 1.05)
st.session_state.setdefault(f"{PAGE}_steps", 150)
with st.container(border=True):
    left, middle, right, share = st.columns([4, 4, 3, 1], vertical_alignment="bottom")
    sigma = left.slider("σ₁, the largest singular value of W_hh", 0.5, 1.5, step=0.01, key=f"{PAGE}_sigma")
    steps = middle.slider("K = T, the number of steps", 10, 300, step=10, key=f"{PAGE}_steps")
    hidden = right.select_slider("H, the hidden size", HIDDEN_SIZES, value=64, key=f"{PAGE}_hidden")
    with share:
        share_link(LINK)
    matrix_col, in_col, w_col = st.columns([4, 4, 4])
    matrix = matrix_col.radio(
        "W_hh", list(MATRICES), format_func=MATRICES.get, key=f"{PAGE}_matrix",
        help="A symmetric W_hh reaches σ₁ᵏ exactly along its top vector; for a general one σ₁ᵏ is only an upper "
        "bound, and the measured curve falls below it.",
    )
    input_scale = in_col.slider("input scale (std of x_t), sections 2, 3, 5", 0.0, 3.0, 1.0, 0.1,
                                key=f"{PAGE}_input_scale")
    weight_scale = w_col.slider("input weight scale (W_ih), sections 2, 3", 0.0, 3.0, 1.0, 0.1,
                                key=f"{PAGE}_input_weight")
mirror_to_link(LINK)
lags = gradients.measured_lags(steps, hidden)
if len(lags) < steps + 1:
    slow = " They take a second or more the first time at this H." if hidden > 64 else ""
    st.caption(f"The Jacobian norms are measured exactly at {len(lags)} evenly spaced lags from 0 to {steps}, "
               f"not at every one, so that the sliders answer quickly.{slow}")

rnn_config = gradients.TanhRNNConfig(hidden, sigma, steps, input_scale, weight_scale, matrix=matrix, seed=seed())
repeated_multiplication(hidden, sigma, steps, matrix)
through_the_nonlinearity(rnn_config)
per_step_contributions(rnn_config)
gradient_clipping()
lstm_cell_path(rnn_config)
