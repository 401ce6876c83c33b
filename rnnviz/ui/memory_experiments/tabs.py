"""The Memory experiments page's three tabs: delayed copy, conditioning on a vector, and what recurrence costs.

Each tab reads its widgets into a frozen config, runs the experiment only when asked (``experiments`` keeps the
results), and draws the measured figures.
"""

import streamlit as st

from rnnviz.experiments.conditioning import STYLE_LABELS, VARIANTS, ConditioningConfig, shakespeare_available
from rnnviz.experiments.cost import CostConfig
from rnnviz.experiments.delay import DEFAULT_RECIPE, SIZINGS, DelaySweep, DelaySweepConfig, parameter_breakdown
from rnnviz.figures.experiments import MODEL_NAMES, critical_path_figure
from rnnviz.ui.kit.widgets import literal, plot, seed, table
from rnnviz.ui.memory_experiments.experiments import (
    compute_conditioning,
    compute_cost_sweep,
    compute_delay_sweep,
    conditioning_figures,
    cost_figures,
    delay_figures,
    stored_conditioning,
    stored_cost_sweep,
    stored_delay_sweep,
)
from rnnviz.ui.memory_experiments.settings import (
    COND,
    COND_DEFAULTS,
    COND_HIDDEN,
    COND_KINDS,
    COND_QUICK,
    COND_STEPS,
    COND_STYLES,
    COST,
    COST_DEFAULTS,
    COST_LENGTHS,
    COST_MEMORY_CAPS,
    COST_QUICK,
    COST_REPEATS,
    COST_TIME_CAPS,
    COST_WIDTHS,
    DELAY,
    DELAY_BATCHES,
    DELAY_DEFAULTS,
    DELAY_HIDDEN,
    DELAY_QUICK,
    DELAY_RATES,
    DELAY_STEPS,
    FORGET_BIASES,
)


def _parse_delays(text: str) -> tuple[int, ...]:
    """"2, 8, 16" → (2, 8, 16); a ValueError in plain words otherwise."""
    parts = [p for p in text.replace(",", " ").split() if p]
    if not parts:
        raise ValueError("Type at least one delay D, for example 2, 8, 16.")
    try:
        values = sorted({int(p) for p in parts})
    except ValueError:
        raise ValueError(f"The delays must be whole numbers separated by commas (got “{literal(text[:40])}”)."
                         ) from None
    if len(values) > 8:
        raise ValueError("Choose at most 8 delays, so that the sweep stays short.")
    return tuple(values)


def _apply_preset(preset: dict) -> None:
    for key, value in preset.items():
        st.session_state[key] = value


def delay_tab() -> None:
    st.markdown(
        "For input `[3, 8, 2, 5, 1]` and $D = 2$ the targets from the third position on are `[3, 8, 2]`; positions "
        "before $D$ are not scored. Both models read the same batches, train for the same steps on the same "
        "characters, and are scored on the same held-out sequences."
    )
    quick = st.toggle(
        "A first look (too short to compare)", key=DELAY("quick"),
        on_change=lambda: _apply_preset(DELAY_QUICK if st.session_state[DELAY("quick")] else DELAY_DEFAULTS),
        help="Alphabet 4, L = 24, D ∈ {2, 8}, 40 steps: a few seconds to see both models start. Switch it off "
             "for the default, the budget at which the two models part.",
    )
    if quick:
        st.caption("A first look: 40 steps show how fast each model starts, not which one can hold a delay. "
                   "Neither has had the time to learn a long one, so do not read a winner from it.")
    c1, c2, c3 = st.columns([1, 1, 2])
    alphabet = c1.number_input("Alphabet size", 2, 64, key=DELAY("alphabet"))
    length = c2.number_input("Sequence length L", 4, 256, key=DELAY("length"))
    delays_text = c3.text_input("Delays D (comma-separated, 0 < D < L)", key=DELAY("delays"), max_chars=60)
    c1, c2, c3 = st.columns([2, 1, 1])
    sizing = c1.radio("Fair by", list(SIZINGS), format_func=SIZINGS.get, horizontal=True, key=DELAY("sizing"))
    hidden = c2.select_slider("LSTM hidden size H", DELAY_HIDDEN, key=DELAY("hidden"))
    seeds = c3.slider("Seeds", 1, 8, key=DELAY("seeds"))
    with st.expander("Training budget (the same for both models)"):
        c1, c2, c3, c4 = st.columns(4)
        steps = c1.select_slider("Steps", DELAY_STEPS, key=DELAY("steps"))
        batch = c2.select_slider("Batch N", DELAY_BATCHES, key=DELAY("batch"))
        lr = c3.select_slider("Learning rate (Adam)", DELAY_RATES, key=DELAY("lr"))
        forget_bias = c4.selectbox(
            "LSTM forget bias b_f at init", FORGET_BIASES, key=DELAY("forget"),
            format_func=lambda b: "torch's default (uniform)" if b is None else f"{b:g}",
            help="A positive $b_f$ starts $f_t$ near 1, so the cell path $c_t = f_t \\odot c_{t-1} + \\dots$ "
                 "carries values and gradients across many steps from the start (Gers et al. 2000; Jozefowicz et "
                 "al. 2015). Try torch's default at D = 32 to see the LSTM lose the delay too.",
        )
    try:
        config = DelaySweepConfig(
            alphabet=int(alphabet), length=int(length), delays=_parse_delays(delays_text), hidden=hidden,
            sizing=sizing, steps=steps, batch=batch, lr=lr, forget_bias=forget_bias, seeds=seeds,
            base_seed=seed(),
        )
    except ValueError as err:
        st.error(str(err))
        return
    if seeds < 3:
        st.warning("With fewer than 3 seeds there is little spread to see; use 3 or more for a comparison.")

    rows = []
    for kind in config.kinds:
        counts = parameter_breakdown(kind, config.alphabet, config.embed_dim, config.hidden_for(kind))
        rows.append({"model": MODEL_NAMES[kind], "H": config.hidden_for(kind), **counts})
    table(rows, counts=[name for name in rows[0] if name not in ("model", "H")])
    st.caption(
        f"Parameters counted from the real models. Each run: {config.steps} steps × {config.batch} sequences × "
        f"L = {config.length} = {config.characters_per_run:,} training characters; {len(config.runs())} runs "
        f"in all ({len(config.delays)} delays × {config.seeds} seeds × 2 models)."
    )

    sweep = stored_delay_sweep(config)
    if st.button("Run the sweep", key=DELAY("run"), type="primary", disabled=sweep is not None):
        sweep = compute_delay_sweep(config)
    if sweep is None:
        st.info(f"Press **Run the sweep** to train all {len(config.runs())} models, one after the other on one "
                "core. The bar counts the runs done and, once a run of each model has finished, estimates the time "
                f"left from the latest runs it has timed. The default's {len(DEFAULT_RECIPE.runs())} runs took 1½ to "
                "2½ minutes on this project's 2-core machine beside other work, and nearly 4 when it was very busy.")
        return

    c1, c2, c3 = st.columns(3)
    c1.metric("Measured training time", f"{sweep.seconds:.1f} s",
              help=f"Sum of the runs' wall times; their CPU time was {sweep.cpu_seconds:.1f} s. A CPU time far "
                   "below the wall time means other work was sharing the machine.")
    c2.metric("Runs", len(sweep.runs))
    c3.metric("Chance accuracy", f"{1 / config.alphabet:.3f}")
    sweep_fig, curves_fig = delay_figures(config)
    plot(sweep_fig, key=DELAY("sweep_fig"))
    if quick:  # how each model starts, and no winner: neither has had the steps to learn a long delay
        st.markdown(_first_look_text(sweep))
        st.info("A first look is too short to compare the two models. Switch it off and run the default to see "
                "the LSTM keep a delay that the vanilla RNN loses.")
    else:
        st.markdown("Measured (mean final accuracy over seeds):\n"
                    + "\n".join(_verdict_line(sweep, delay) for delay in config.delays))
        _headline(sweep)
    st.caption(
        "Accuracy is measured on a fixed held-out set of fresh sequences (its own seed, never trained on), at "
        "every evaluation step. A model at chance has learned nothing about the symbol D steps back; one above "
        "chance has learned part of it. This is what these small models learned within this budget on this "
        "synthetic task, not a general claim about either architecture: the curves below show whether each "
        "model was still improving when the budget ran out. The training-batch loss in the table below is only "
        "what the optimiser saw."
    )
    plot(curves_fig, key=DELAY("curves_fig"))
    with st.expander("Every run, and the command that repeats it"):
        table([
            {"model": MODEL_NAMES[r.kind], "D": r.delay, "seed": r.seed, "H": r.hidden, "parameters": r.parameters,
             "final held-out accuracy": r.final_accuracy, "last training-batch loss": r.train_loss[-1],
             "seconds": r.seconds} for r in sweep.runs
        ], counts=("parameters",), decimals={"final held-out accuracy": 4, "last training-batch loss": 4,
                                             "seconds": 2})
        last = sweep.runs[-1]
        st.caption("The same settings from the command line print the same held-out accuracies:")
        st.code(config.cli_command(last.kind, last.delay, last.seed), language="bash")


def _first_look_text(sweep: DelaySweep) -> str:
    """Where each model stands after the first look's few steps, per D, beside chance; it names no leader."""
    config = sweep.config
    lines = [f"How each model starts: held-out accuracy after {config.steps} steps, mean over {config.seeds} "
             f"seed{'s' if config.seeds > 1 else ''} (lowest–highest seed), against chance 1/{config.alphabet} = "
             f"{config.chance:.2f}:"]
    for delay in config.delays:
        verdict = sweep.verdict(delay)
        lines.append(f"- D = {delay}: " + ", ".join(
            f"{MODEL_NAMES[k]} {verdict.means[k]:.2f} ({verdict.lows[k]:.2f}–{verdict.highs[k]:.2f})"
            for k in config.kinds))
    return "\n".join(lines)


def _verdict_line(sweep: DelaySweep, delay: int) -> str:
    """One bullet: the means, who is ahead on every seed, and who stayed at chance on every seed."""
    verdict = sweep.verdict(delay)
    text = ", ".join(f"{MODEL_NAMES[k]} {m:.2f}" for k, m in verdict.means.items())
    if verdict.leader is None:
        line = f"- D = {delay}: {text} — no clear leader: the seeds overlap"
    else:
        other = " and ".join(f"the {MODEL_NAMES[k]}'s best {verdict.highs[k]:.2f}"
                             for k in verdict.means if k != verdict.leader)
        line = (f"- D = {delay}: {text} — **{MODEL_NAMES[verdict.leader]} ahead on every seed** (its worst seed "
                f"{verdict.lows[verdict.leader]:.2f} against {other})")
    if verdict.at_chance:
        names = " and the ".join(MODEL_NAMES[k] for k in verdict.at_chance)
        verb = "stays" if len(verdict.at_chance) == 1 else "stay"
        line += f"; the {names} {verb} at chance (1/{sweep.config.alphabet}) on every seed"
    return line


def _headline(sweep: DelaySweep) -> None:
    """The lesson in one sentence when the run shows it, and why not when it does not."""
    config = sweep.config
    kept = [v for v in (sweep.verdict(d) for d in config.delays) if v.decisive and v.leader == "lstm"]
    if kept:
        v = kept[-1]
        st.success(
            f"At D = {v.delay} the LSTM keeps part of the delay that the vanilla RNN loses: on every seed the LSTM "
            f"reads at least {v.lows['lstm']:.2f} on held-out sequences, while the RNN stays at chance "
            f"({v.chance:.3f}; its best seed {v.highs['rnn']:.2f}). This is the lecture's point: the cell path "
            r"$c_t = f_t \odot c_{t-1} + i_t \odot g_t$ carries the error back across the $D$ steps, while the "
            "RNN's, multiplied by $W_{hh}$ and tanh′ at every step, fades on the way (see Gradient decay)."
        )
    elif "lstm" in config.kinds and "rnn" in config.kinds:
        st.info(
            "With these settings no delay separates the two models: the LSTM is not ahead of a vanilla RNN at "
            "chance on every seed. Either the delays are short enough for the RNN, or the budget is too short for "
            "the LSTM. The default settings (D = "
            + ", ".join(str(d) for d in DEFAULT_RECIPE.delays)
            + f", {DEFAULT_RECIPE.steps} steps of batch {DEFAULT_RECIPE.batch}, LSTM H = {DEFAULT_RECIPE.hidden}) "
            "show it on a 2-core machine."
        )


def conditioning_tab() -> None:
    st.markdown(
        "A small character model learns lines of two or three styles. The style's vector $v$ (a learned "
        "embedding, standing in for a CNN's image vector in captioning) enters either **at every step**, "
        "joined to $x_t$, or **only in $h_0$**. Each line is framed as `<START>` … `<END>`, so generation starts "
        "from `<START>` and stops when the model emits `<END>`."
    )
    st.toggle("Quick settings (a short run: H = 32, 30 steps)", key=COND("quick"),
              on_change=lambda: _apply_preset(COND_QUICK if st.session_state[COND("quick")] else COND_DEFAULTS))
    options = [s for s in COND_STYLES if s != "tiny-shakespeare" or shakespeare_available()]
    chosen = st.session_state.setdefault(COND("styles"), options)
    if any(s not in options for s in chosen):  # a link's Shakespeare on a server that has not downloaded it
        st.session_state[COND("styles")] = [s for s in chosen if s in options]
    c1, c2, c3, c4 = st.columns([2, 1, 1, 1])
    styles = c1.multiselect("Styles", options, format_func=STYLE_LABELS.get, key=COND("styles"))
    kind = c2.selectbox("Cell", COND_KINDS, format_func=MODEL_NAMES.get, key=COND("kind"))
    hidden = c3.select_slider("Hidden size H", COND_HIDDEN, key=COND("hidden"))
    steps = c4.select_slider("Steps per variant", COND_STEPS, key=COND("steps"))
    if "tiny-shakespeare" not in options:
        st.caption("Shakespeare joins the styles once Tiny Shakespeare has been downloaded on the training page; "
                   "this page never downloads.")
    quick = st.session_state[COND("quick")]
    try:
        config = ConditioningConfig(
            styles=tuple(styles), kind=kind, hidden=hidden, steps=steps, seed=seed(),
            samples=16 if quick else 64, val_lines=64 if quick else 256, max_chars=60_000 if quick else 300_000,
        )
    except ValueError as err:
        st.error(str(err))
        return

    result = stored_conditioning(config)
    if st.button("Train both variants", key=COND("run"), type="primary", disabled=result is not None):
        try:
            result = compute_conditioning(config)
        except ValueError as err:
            st.error(str(err))
            return
    if result is None:
        st.info(f"Press **Train both variants**: both models see the same batches, {config.steps} steps each.")
        return

    cols = st.columns(len(result.variants) + 1)
    for col, (name, variant) in zip(cols, result.variants.items()):
        col.metric(f"Time, {VARIANTS[name]}", f"{variant.seconds:.1f} s",
                   help=f"{variant.parameters:,} parameters; training and evaluation")
    cols[-1].metric("Measured wall time", f"{result.seconds:.1f} s")
    st.caption("Parameters: " + ", ".join(f"{VARIANTS[n]} {v.parameters:,}" for n, v in result.variants.items())
               + f". Both variants: {config.steps} steps of {config.batch // len(config.styles)} lines per style.")
    rows = []
    for name, variant in result.variants.items():
        for s, style in enumerate(config.styles):
            rows.append({
                "variant": VARIANTS[name], "style": STYLE_LABELS[style],
                "val loss, right v": variant.right_loss[s],
                "val loss, wrong v": variant.wrong_loss[s],
                "samples in the right style": variant.classified[s],
                "samples that emit <END>": variant.ended[s],
            })
    table(rows, decimals={"val loss, right v": 3, "val loss, wrong v": 3},
          percent=("samples in the right style", "samples that emit <END>"))
    ceiling = ", ".join(f"{STYLE_LABELS[s]} {a:.0%}" for s, a in zip(config.styles, result.classifier_ceiling))
    st.caption(
        "Val loss in nats per character on held-out lines (the last 10% of each text), under the line's own "
        "style vector and under the others. “Samples in the right style” is the share of "
        f"{config.samples} generated lines (temperature 1) that a character-bigram naive-Bayes classifier, fit "
        "on the training lines, assigns to the requested style; on real held-out lines it scores "
        f"{ceiling}. These are small models trained for seconds: compare the two variants with each other, "
        "not with a real captioning system."
    )
    gap_fig, lengths_fig = conditioning_figures(config)
    plot(gap_fig, key=COND("gap_fig"))
    st.caption(
        "Each point averages, over held-out lines, the loss at position t with a wrong v minus with the right v. "
        "With v only in h₀ the text read so far soon says more about the style than v does, so the gap should "
        "fall toward zero; with v at every step a wrong v keeps pulling the prediction away. Late positions "
        "average fewer lines, so the curve gets noisier to the right; positions with fewer than 32 lines are "
        "left out."
    )
    st.markdown(f"**Samples** (temperature {config.temperature}, stopped at `<END>` or after {config.max_len} "
                "characters)")
    for s, style in enumerate(config.styles):
        cols = st.columns(len(result.variants))
        for col, (name, variant) in zip(cols, result.variants.items()):
            col.markdown(f"{STYLE_LABELS[style]}, {VARIANTS[name]}")
            col.code("\n".join(variant.shown[s]) or "(empty lines)", language=None)
    plot(lengths_fig, key=COND("lengths_fig"))


def _slope_text(slope: float | None) -> str:
    return "—" if slope is None else f"{slope:.2f}"


def cost_tab() -> None:
    st.markdown(
        "An LSTM layer runs $T$ steps one after another, each an $O(d^2)$ product with $h_{t-1}$, and carries a "
        "state $(h_t, c_t)$ of fixed size. A **minGRU** layer keeps a fixed-size $h_t$ too, but its gates read "
        "only $x_t$: $z_t = \\sigma(W_z x_t)$, $\\tilde h_t = g(W_h x_t)$, "
        "$h_t = (1 - z_t) \\odot h_{t-1} + z_t \\odot \\tilde h_t$, so every product runs for all $t$ at once "
        "and what is left is a scan. Self-attention compares every token with every other: $O(T^2 d)$ work "
        "and a $T \\times T$ matrix in memory, but the last token reaches the first in one step."
    )
    st.toggle("Quick settings (T up to 512, one timing per size)", key=COST("quick"),
              on_change=lambda: _apply_preset(COST_QUICK if st.session_state[COST("quick")] else COST_DEFAULTS))
    c1, c2, c3, c4, c5 = st.columns(5)
    width = c1.select_slider("Width d", COST_WIDTHS, key=COST("width"))
    max_length = c2.select_slider("Largest T", COST_LENGTHS, key=COST("max"))
    repeats = c3.select_slider("Timings per size", COST_REPEATS, key=COST("repeats"))
    time_cap = c4.select_slider("Time cap (s)", COST_TIME_CAPS, key=COST("time_cap"))
    memory_cap = c5.select_slider("Memory cap (GiB)", COST_MEMORY_CAPS, key=COST("memory_cap"))
    config = CostConfig(width=width, max_length=max_length, repeats=repeats, time_cap_s=time_cap,
                        memory_cap_bytes=int(memory_cap * 2**30), seed=seed())

    sweep = stored_cost_sweep(config)
    if st.button("Measure", key=COST("run"), type="primary", disabled=sweep is not None):
        sweep = compute_cost_sweep(config)
    if sweep is None:
        st.info(f"Press **Measure** to time a training step of each layer for T = {config.min_length} … "
                f"{config.max_length}.")
        return
    if sweep.stopped:
        st.warning(sweep.stopped)
    if len(sweep.points) < 2:
        st.error("Fewer than two sizes fit under the caps, so there is nothing to fit; raise a cap.")
        return

    fit = sweep.fit_points()
    if len(fit) < 3 or config.repeats == 1:
        st.warning(f"The slopes below rest on {len(fit)} sizes timed {config.repeats} time(s) each: rough on a "
                   "busy machine. The default settings (T up to 8192, 3 timings) give a steadier fit.")
    c1, c2, c3, c4, c5 = st.columns(5)
    c1.metric("LSTM time slope", _slope_text(sweep.slope("lstm_seconds")))
    c2.metric("minGRU scan time slope", _slope_text(sweep.slope("mingru_seconds")))
    c3.metric("Attention time slope", _slope_text(sweep.slope("attention_seconds")))
    c4.metric("Attention memory slope", _slope_text(sweep.slope("attention_peak_bytes")))
    c5.metric("Measured wall time", f"{sweep.seconds:.1f} s", help=f"{sweep.threads} torch thread(s)")
    time_fig, memory_fig, state_fig = cost_figures(config)
    col_time, col_memory = st.columns(2)
    with col_time:
        plot(time_fig, key=COST("time_fig"))
    with col_memory:
        plot(memory_fig, key=COST("memory_fig"))
    last = sweep.points[-1]
    if last.mingru_seconds is not None:
        st.markdown(
            f"At $T = {last.length}$ one training step took **{last.lstm_seconds * 1e3:.1f} ms** for the LSTM, "
            f"**{last.mingru_seconds * 1e3:.1f} ms** for the minGRU's scan and **{last.attention_seconds * 1e3:.1f} "
            f"ms** for attention. The LSTM and the minGRU both grow linearly in $T$; the difference is in how the "
            f"work is shaped: the LSTM's ${last.length}$ products with $h_{{t-1}}$ wait for each other, while the "
            "minGRU's are one large product over all $t$, and its remaining recurrence is element-wise."
        )
    st.caption(
        f"Batch 1, width d = {config.width}, float32, {sweep.threads} torch thread(s), one training step: forward, "
        "then backward of the sum of the outputs, with fresh parameter gradients. Median of "
        f"{config.repeats} timing(s) per size with the three layers taking turns. Slopes are least-squares fits "
        f"of log y on log T over T = {fit[0].length} … {fit[-1].length} (smaller sizes are dominated by fixed "
        "overheads); linear growth has slope 1 and quadratic growth slope 2. The minGRU runs its scan in log "
        "space (torch.logcumsumexp, as in Heinsen 2023) and its backward as the adjoint recurrence, written out. "
        "Peak memory is what torch's CPU allocator held during "
        "one step, recorded by torch.profiler (profile_memory); buffers a library allocates outside torch, such "
        "as oneDNN's scratch space, are not counted. Attention here builds the T×T matrix; fused kernels such "
        "as FlashAttention avoid storing it, but not the T² work."
    )
    col_state, col_path = st.columns(2)
    with col_state:
        plot(state_fig, key=COST("state_fig"))
    with col_path:
        plot(critical_path_figure([p.length for p in sweep.points]), key=COST("path_fig"))
    table([
        {"T": p.length, "LSTM: sequential steps first → last token": p.path_lstm,
         "minGRU scan: steps first → last token": p.path_scan,
         "attention: steps first → last token": p.path_attention,
         "LSTM state h_T, c_T (KiB)": p.lstm_state_bytes / 1024,
         "minGRU state h_T (KiB)": None if p.mingru_state_bytes is None else p.mingru_state_bytes / 1024,
         "attention K, V cache (KiB)": p.kv_cache_bytes / 1024}
        for p in sweep.points
    ], decimals={"LSTM state h_T, c_T (KiB)": 1, "minGRU state h_T (KiB)": 1, "attention K, V cache (KiB)": 1})
    st.caption("State sizes are the nbytes of the tensors each layer returned: the LSTM's (h_T, c_T), the minGRU's "
               "h_T, and attention's keys and values, which a decoder must keep to read one more token. Steps are "
               "counted, not timed: a parallel scan combines neighbours pairwise in ⌈log₂ T⌉ rounds (on a GPU; "
               "torch's CPU kernel walks the T additions in a loop, but none of them is a matrix product).")
    st.markdown(
        "**What “hidden state” means**\n\n"
        "| model | what carries the past | size after T tokens | path from token 1 to token T |\n"
        "|---|---|---|---|\n"
        "| vanilla RNN | $h_t$ | $d$ numbers | $T$ steps through $W_{hh}$ |\n"
        "| LSTM | $h_t$ and the cell $c_t$ | $2d$ numbers | $T$ steps, along $c_t$ scaled by $f_t$ |\n"
        "| minGRU | $h_t$, its gates computed from $x_t$ alone | $d$ numbers | $T$ steps along $h_t$ scaled by "
        "$1 - z_t$, computed in $\\lceil \\log_2 T \\rceil$ parallel rounds |\n"
        "| Transformer | a contextual vector per token per layer (and its keys, values) | $T \\cdot d$ per layer "
        "(K, V: $2 T d$) | 1 attention step per layer |\n\n"
        "The RNN squeezes the whole past into a fixed-size bottleneck; attention keeps every token and pays "
        "for it in memory and in $T^2$ work. The minGRU keeps the bottleneck and the linear cost, and gives up "
        "something else to train in parallel: its gates cannot see $h_{t-1}$, so what it writes and forgets "
        "depends on the current character only, never on what it already holds."
    )
