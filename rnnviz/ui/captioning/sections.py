"""Sections of the image-captioning page (the scene builder is in ``scene``): watch the caption decoded, the two
joins side by side, hallucination from co-occurrence, and word saliency. Shipped captioners make the page open at
once; training and the p sweep run behind buttons with progress bars and are stored by their config."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

import numpy as np
import streamlit as st

from rnnviz.captioning import api as M
from rnnviz.captioning import shipped, world
from rnnviz.charlm.pretrained import MODELS_DIR
from rnnviz.figures import captioning as fig
from rnnviz.figures import describe
from rnnviz.ui.captioning.scene import PAGE, page_key
from rnnviz.ui.captioning.words import MAX_WORDS, WORD, WORD_LINK, word_by_word
from rnnviz.ui.kit.cache import NotComputed, lookup, remember, shared_value
from rnnviz.ui.kit.links import (
    LinkParam,
    format_choices,
    parse_choice,
    parse_choices,
    parse_float_in,
    parse_int_in,
)
from rnnviz.ui.kit.widgets import PLOTLY_CONFIG, for_the_room, literal, plot, table
from rnnviz.ui.kit.widgets import seed as sidebar_seed

OWN = "own"  # session key of the pair trained on this page
TRAINED = "captioning.trained"  # memo namespaces
SWEPT = "captioning.sweep"
SWEEP_PS = (0.25, 0.5, 0.75, 0.9, 1.0)
SWEEP_BASE = M.CaptionConfig(join="every", steps=250, n_train=3000)  # one model per p; about 15 s each
TRAIN_BASE = M.CaptionConfig()  # the pair trained on the page: these settings, with the chosen p and steps
TRAIN_STEPS = (100, 300, 700, 1500)
EXAMPLE_SCENES = 200  # water-without-boat scenes searched for one the model names a boat in
INFLUENCE_SCENES = 300
# The joins as the page names them: the engine's labels (M.JOINS) cite a textbook equation the class may not
# have; the page states the equations themselves.
JOIN_LABELS = {"every": "v at every step", "h0": "v only in the initial state h₀, c₀"}
METHODS = ("greedy", "beam search", "sampling")
SALIENCY_METHODS = ("gradient", "occlusion")
DEFAULTS = {page_key("beam"): 3, page_key("temp"): 1.0, page_key("ex_join"): "h0",
            page_key("sweep_ps"): [0.25, 0.5, 0.75, 1.0], page_key("train_p"): 0.9, page_key("train_steps"): 700}
LINK = (
    LinkParam("join", page_key("join"), parse_choice(list(M.JOINS)), example="h0"),
    LinkParam("decoding", page_key("method"), parse_choice(METHODS), example="beam search"),
    LinkParam("beam", page_key("beam"), parse_int_in(1, 10), example="5"),
    LinkParam("temperature", page_key("temp"), parse_float_in(0.1, 2.0), lambda v: f"{v:g}", example="0.7"),
    WORD_LINK,
    LinkParam("saliency_word", page_key("sal_word"), parse_int_in(1, MAX_WORDS), example="1"),
    LinkParam("saliency", page_key("sal_method"), parse_choice(SALIENCY_METHODS), example="occlusion"),
    LinkParam("example_join", page_key("ex_join"), parse_choice(list(M.JOINS)), example="every"),
    LinkParam("sweep_p", page_key("sweep_ps"), parse_choices(SWEEP_PS), format_choices, example="0.25,0.5,0.9"),
    LinkParam("train_p", page_key("train_p"), parse_choice(SWEEP_PS), example="0.5"),
    LinkParam("train_steps", page_key("train_steps"), parse_choice(TRAIN_STEPS), example="300"),
)


def set_defaults() -> None:
    for key, value in DEFAULTS.items():
        st.session_state.setdefault(key, value)


def plot_heat(figure, key: str) -> None:
    """A figure with a heat map, in plotly's own theme: Streamlit's theme would recolour the heat map."""
    st.plotly_chart(for_the_room(figure), width="stretch", config=PLOTLY_CONFIG, key=key, theme=None,
                    alt=describe(figure))


@dataclass(frozen=True, eq=False)
class Captioners:
    """The two joins the page uses, where they come from, and their recorded held-out figures."""

    models: dict  # join -> Captioner
    figures: dict  # join -> dict of held-out figures
    source: str  # "shipped" or "trained here"


@st.cache_resource(show_spinner="Loading the shipped captioners…")
def shipped_captioners() -> Captioners | None:
    """Both shipped captioners, loaded once per process (read-only, shared by every session); None if missing."""
    try:
        loaded = {join: shipped.load(join) for join in M.JOINS}
    except (OSError, M.CaptionerError):
        return None
    return Captioners({j: m for j, (m, _) in loaded.items()}, {j: f for j, (_, f) in loaded.items()}, "shipped")


def captioners() -> Captioners:
    """This session's own trained pair when it chose it, else the shipped pair; stops the page if neither."""
    own = st.session_state.get(page_key(OWN))
    if own is not None and st.session_state.get(page_key("use_own"), True):
        return own
    found = shipped_captioners()
    if found is None:
        st.error("The shipped captioners are missing from rnnviz/assets/models/; train a pair below "
                 "(**Train both joins here**).")
        train_section()
        st.stop()
    return found


# ---------------------------------------------------------------------------------------------------------
# Decoding


def shown(ids) -> str:
    """A caption as the page shows it; an empty one says so."""
    return M.decode(ids) or literal("(nothing: <END> came first)")


def decode_section(caps: Captioners, image: np.ndarray) -> tuple[M.Captioner, list[int]]:
    """Caption the image step by step; returns the model and the caption's ids shown (for saliency)."""
    st.header("Watch the decoding")
    c1, c2, c3 = st.columns([1.3, 1.3, 1])
    join = c1.radio("Captioner", list(M.JOINS), format_func=JOIN_LABELS.get, key=page_key("join"))
    method = c2.radio("Decoding", METHODS, key=page_key("method"), horizontal=True)
    width = c3.slider("Beam width", 1, 10, key=page_key("beam"), disabled=method != "beam search")
    temperature = c3.slider("Temperature", 0.1, 2.0, step=0.1, key=page_key("temp"), disabled=method != "sampling")
    model = caps.models[join]
    x = M.pixels(image[None])
    tree = None
    # What the caption is computed from: the captioner, the image, the decoding and its setting.
    decoded = (caps.source, join, model.config, hashlib.sha1(image.tobytes()).hexdigest(), method)
    if method == "beam search":
        decoded += (width,)
        beams, tree = M.beam_search(model, x, width)
        ids = list(beams[0].ids)
        # A markdown table: it wraps a long caption only where the column ends (st.dataframe cut it, "…right on g";
        # st.table wraps every cell at 400 px).
        table = "\n".join(f"| {k + 1} | {shown(b.ids)} | {b.logprob:.3f} | "
                          f"{literal(M.END) if b.finished else 'the length limit'} |" for k, b in enumerate(beams))
        st.markdown(f"**Best of {len(beams)} beam(s):**")
        st.markdown(f"### {shown(beams[0].ids)}")
        st.markdown(f"| rank | caption | total log p | ended by |\n|---:|---|---:|---|\n{table}")
    else:
        if method == "greedy":
            ids = M.greedy(model, x)[0]
        else:
            seed = sidebar_seed()
            decoded += (temperature, seed)
            ids = M.sample(model, x, temperature, seed=seed)[0]
        st.markdown(f"**{method.capitalize()} caption:**")
        st.markdown(f"### {shown(ids)}")
    probs = M.step_distributions(model, x, ids)  # (T, V): row t − 1 is p(w_t | w_<t, v), w_0 = <START>
    words = [M.VOCAB[i] for i in ids]  # w_1 … w_T
    st.session_state[WORD] = min(st.session_state.get(WORD, 4), len(ids))  # inside this caption
    word_by_word(words, probs, tree, (PAGE, "topk", *decoded))
    return model, ids


# ---------------------------------------------------------------------------------------------------------
# The two joins


def _influence(source: str, models: dict) -> tuple[dict, np.ndarray]:
    """(KL per t for each join, captions counted per t) on held-out scenes."""
    held = world.heldout(INFLUENCE_SCENES, shipped.EVAL_SEED + 7)
    curves, counts = {}, None
    for join, model in models.items():
        curves[join], counts = M.image_influence(model, held)
    return curves, counts


def _object_accuracy(source: str, models: dict) -> dict[str, list[dict]]:
    """Per join, how often the k-th object of the true caption gets its shape and colour right (greedy captions
    of the held-out scenes the recorded figures use)."""
    held = world.heldout(shipped.EVAL_N, shipped.EVAL_SEED)
    truth = M.scene_list(held)
    return {join: M.object_accuracy([M.decode(ids) for ids in M.greedy(model, M.pixels(held.images))], truth)
            for join, model in models.items()}


# The engine's indices k (word t = k + 1) of an object's colour and shape words: the first object (every caption),
# the second (captions with two or more objects), the third (captions with three).
COLOUR_SHAPE_STEPS = {"first": (2, 3), "second": (9, 10), "third": (16, 17)}


def joins_section(caps: Captioners, image: np.ndarray | None) -> None:
    st.header("The join, side by side")
    cols = st.columns(2)
    if image is not None:
        x = M.pixels(image[None])
        for col, (join, model) in zip(cols, caps.models.items()):
            col.markdown(f"**{JOIN_LABELS[join]}** says:")
            col.markdown(f"#### {shown(M.greedy(model, x)[0])}")
    rows = []
    for join, f in caps.figures.items():
        rows.append({"join": JOIN_LABELS[join], "exact match": f["exact"], **{a: f[a] for a in M.ATTRIBUTES},
                     "CHAIRi": f["chair_i"], "CHAIRs": f["chair_s"], "says boat on water without one": f["boat"]})
    table(rows, percent=("exact match", *M.ATTRIBUTES, "says boat on water without one"),
          decimals={"CHAIRi": 3, "CHAIRs": 3})
    p = next(iter(caps.models.values())).config.p
    st.caption(f"Held-out figures ({caps.source} models, trained at p = {p:g}): greedy captions of "
               f"{shipped.EVAL_N:,} scenes where boats and water are independent, and of {shipped.COUNTER_N} scenes "
               "of water without a boat. Per attribute: the share of true objects named at their position with "
               "the right shape, colour, size; CHAIRi: hallucinated object words ÷ object words; CHAIRs: captions "
               "with a hallucinated object ÷ captions (Rohrbach et al. 2018).")
    key = (PAGE, "influence", caps.source, caps.models["every"].config, caps.models["h0"].config)
    curves, counts = shared_value(_influence, caps.source, caps.models, key=key)
    plot(fig.influence_figure(curves, counts), key=page_key("influence_fig"))
    means = {join: {k: float(np.mean(kl[list(ts)])) for k, ts in COLOUR_SHAPE_STEPS.items()}
             for join, kl in curves.items()}
    measured = "; ".join(f"{JOIN_LABELS[j]}: " + " / ".join(f"{v:.1f}" for v in m.values()) for j, m in means.items())
    key = (PAGE, "objects", caps.source, caps.models["every"].config, caps.models["h0"].config)
    objects = shared_value(_object_accuracy, caps.source, caps.models, key=key)
    rows = [{"join": JOIN_LABELS[join],
             **{f"object {a['object']}: {part}": a[part] for a in acc for part in ("shape", "colour")}}
            for join, acc in objects.items()]
    table(rows, percent=[name for name in rows[0] if name != "join"])
    h0, every = objects["h0"], objects["every"]
    st.markdown(
        "**Where the h₀-only model loses the image:** v enters once, at t = 0, as h₀ = tanh(W_h v + b_h) and "
        "c₀ = W_c v + b_c; every later step rewrites h_t and c_t from the words read so far, so what remains of v "
        "must survive a chain of forget gates. With v at every step, W_vh v is added afresh to each gate's input. "
        f"Measured on the held-out scenes (table above: greedy captions, the k-th object of the true caption "
        f"named at its place with the right shape): the h₀-only model gets the first object's shape right "
        f"{h0[0]['shape']:.0%} of the time, the second's {h0[1]['shape']:.0%}, the third's {h0[2]['shape']:.0%}; "
        f"v at every step {every[0]['shape']:.0%}, {every[1]['shape']:.0%}, {every[2]['shape']:.0%}. "
        "The KL plot tells a subtler story: teacher-forced on the true words, a shuffled v still changes the "
        "h₀-only model's next word about as much as the other's, up to the last word, so the image has not "
        "vanished from its state; it has blurred, and the blur shows most in the later objects' shapes.")
    st.caption(
        f"The plot: teacher-forced on the true captions of {INFLUENCE_SCENES} held-out scenes, "
        "KL(p(· | w_<t, v) ‖ p(· | w_<t, v′)) with v′ the v of another scene; 0 means the image no longer matters. "
        f"Mean KL (nats) at the colour and shape words of the first / second / third object: {measured}. "
        "It is 0 at the words the grammar fixes (“a”, “at”, “and”). A first version of the h₀-only join had "
        "c₀ = 0: tanh saturated (|h₀| ≈ 1 for every scene), almost no gradient reached W or the CNN, and its KL stayed "
        "0 at every t (the record is under “How the shipped captioners were trained” below).")
    models_section()


RECORD_HEADING = "## Image captioners"  # the captioners' section of MODELS.md, which runs to the next "## "


def shipped_record() -> str | None:
    """The captioners' section of the shipped rnnviz/assets/models/MODELS.md (package data, read from disk), without
    its heading; None if the file or the section is missing."""
    try:
        text = (MODELS_DIR / "MODELS.md").read_text(encoding="utf-8")
    except OSError:
        return None
    start = text.find(RECORD_HEADING + " ")
    if start < 0:
        return None
    body = text[text.index("\n", start) + 1:]
    end = body.find("\n## ")
    return (body if end < 0 else body[:end]).strip()


def models_section() -> None:
    """The shipped captioners' record on the page (their table, the commands that made them, why h₀ has c₀):
    a student can open it here, where a file name in the repository was a dead reference."""
    with st.expander("How the shipped captioners were trained: their table and commands",
                     icon=":material/description:"):
        record = shipped_record()
        if record is None:
            st.info("The record of the shipped captioners (rnnviz/assets/models/MODELS.md) is missing from this "
                    "installation.")
            return
        st.markdown(record)
        st.caption("The section “Image captioners” of rnnviz/assets/models/MODELS.md, shipped with the models.")


# ---------------------------------------------------------------------------------------------------------
# Saliency


def saliency_section(model: M.Captioner, image: np.ndarray, scene: world.Scene, ids: list[int]) -> None:
    st.header("Saliency: which pixels made it say that word")
    words = [M.VOCAB[i] for i in ids]
    default = next((k for k, w in enumerate(words) if w in M.OBJECT_WORDS), 0) + 1
    chosen = st.session_state.get(page_key("sal_word"))
    # None at first; past the end of a shorter caption or a link's word; or the label text Streamlit keeps for a
    # select box whose options changed under it: the caption's first object word then.
    if not isinstance(chosen, int) or not 1 <= chosen <= len(words):
        st.session_state[page_key("sal_word")] = default
    c1, c2 = st.columns([2, 1])
    t = c1.selectbox("Word of the caption", range(1, len(words) + 1),
                     format_func=lambda k: f"t = {k}: {words[k - 1]}", key=page_key("sal_word"))
    method = c2.radio("Method", SALIENCY_METHODS, key=page_key("sal_method"), horizontal=True)
    t = min(int(t), len(words))
    heat = M.saliency(model, M.pixels(image[None]), ids, t - 1, method)  # the engine counts ids from 0
    mask = world.from_scene(scene, int(st.session_state.get(page_key("rows"), 0))).object_masks()[0]
    share = M.object_share(heat, mask)
    plot_heat(fig.scene_figure(image, heat, f"saliency of “{words[t - 1]}” (t = {t})"), key=page_key("saliency_fig"))
    st.markdown(f"**{share:.0%}** of the saliency lies on object pixels, which cover {mask.mean():.0%} of the "
                f"image; **{1 - share:.0%}** lies on the background.")
    st.caption("Gradient: |∂ log p(w_t | w_<t, v) / ∂ pixel|, the largest of the three channels. Occlusion: how "
               "much log p(w_t) drops when an 8 × 8 patch around the pixel is painted grey (stride 4).")


# ---------------------------------------------------------------------------------------------------------
# Hallucination


def _boat_example(source: str, model: M.Captioner) -> dict | None:
    """The first water-without-boat scene the model names a boat in, with the saliency of that word."""
    counter = world.counterexamples(EXAMPLE_SCENES, shipped.COUNTER_SEED)
    texts = M.greedy(model, M.pixels(counter.images))
    for n, ids in enumerate(texts):
        words = [M.VOCAB[i] for i in ids]
        if "boat" in words:
            t = words.index("boat")
            image = counter.images[n]
            heat = M.saliency(model, M.pixels(image[None]), ids, t)
            mask = counter.subset([n]).object_masks()[0]
            position = words[t + 2] if t + 2 < len(words) else None  # "... boat at <position>"
            under = next((o for o in counter.scene(n).objects if o.position == position), None)
            return {"image": image, "caption": M.decode(ids), "truth": world.caption(counter.scene(n)),
                    "heat": heat, "t": t, "share": M.object_share(heat, mask), "area": float(mask.mean()),
                    "under": None if under is None else f"{under.colour} {under.shape}", "found": n + 1}
    return None


def _sweep_config() -> M.CaptionConfig:
    return replace(SWEEP_BASE, seed=sidebar_seed())


def hallucination_section(caps: Captioners) -> None:
    st.header("Hallucination from co-occurrence")
    st.markdown("In training, a scene on water holds a boat with probability **p** (elsewhere 1 in 4). The more "
                "often water comes with a boat, the more “water” alone predicts “boat”, and a captioner names a "
                "boat that is not there: the lecture's beach that raises the probability of a surfboard.")
    join = st.radio("Example from", list(M.JOINS), format_func=JOIN_LABELS.get, key=page_key("ex_join"),
                    horizontal=True)
    model = caps.models[join]
    example = shared_value(_boat_example, caps.source, model, key=(PAGE, "example", caps.source, model.config))
    if example is None:
        st.info(f"This captioner named no boat in {EXAMPLE_SCENES} scenes of water without a boat.")
    else:
        plot_heat(fig.scene_figure(example["image"], example["heat"], "water without a boat: saliency of “boat”"),
                  key=page_key("example_fig"))
        share, area = example["share"], example["area"]
        per_pixel = (share / max(area, 1e-9)) / max((1 - share) / max(1 - area, 1e-9), 1e-9)  # object ÷ water
        if example["under"] is None:
            why = "No object lies where it puts the boat: the word came from the water alone."
        elif per_pixel > 1:
            why = (f"Pixel for pixel the objects weigh {per_pixel:.0f}× more than the water: the model saw an object "
                   f"where it says boat (a {example['under']}), and the water made it a boat, the shape that comes "
                   "with water in training.")
        else:
            why = "Pixel for pixel the water weighs more than the objects: the word came from the water."
        st.markdown(f"The captioner says: **{example['caption']}**  \nThe scene is: {example['truth']}  \n"
                    f"**{1 - share:.0%}** of the saliency of “boat” lies on the background (the water, "
                    f"{1 - area:.0%} of the pixels), **{share:.0%}** on the objects ({area:.0%} of the pixels). {why}")
    st.subheader("Sweep of p")
    config = _sweep_config()
    ps = tuple(sorted(st.multiselect("Values of p (3 to 5)", SWEEP_PS, key=page_key("sweep_ps"))))
    if not 3 <= len(ps) <= 5:
        st.warning("Pick 3 to 5 values of p.", icon=":material/tune:")
        return
    key = (ps, config)
    try:
        result = lookup(SWEPT, key)
    except NotComputed:
        result = None
    if result is None:
        st.caption(f"One captioner (v at every step) per p: {config.steps} steps on {config.n_train:,} scenes each, "
                   "same seed, so the same initial weights and batch order.")
        if not st.button(f"Run the sweep ({len(ps)} models, about {15 * len(ps)} s)", key=page_key("sweep_run"),
                         type="primary"):
            return
        bar = st.progress(0.0, text="Generating scenes…")

        def report(done: int, total: int, text: str) -> None:
            if done % 10 == 0 or done == total:
                bar.progress(done / total, text=text)

        result = remember(SWEPT, key, lambda: M.sweep(ps, config, on_progress=report)[0])
        bar.empty()
    plot(fig.sweep_figure(result), key=page_key("sweep_fig"))
    table([{"p": pt.p, "CHAIRi": pt.chair_i, "CHAIRs": pt.chair_s, "exact match": pt.exact,
            "says boat on water without one": pt.boat_on_empty_water} for pt in result],
          percent=("exact match", "says boat on water without one"), decimals={"CHAIRi": 3, "CHAIRs": 3})


# ---------------------------------------------------------------------------------------------------------
# Training


def train_section() -> None:
    with st.expander("Train both joins here (about a minute on two cores)", icon=":material/model_training:"):
        c1, c2 = st.columns(2)
        p = c1.select_slider("Co-occurrence p = P(boat | water)", SWEEP_PS, key=page_key("train_p"))
        steps = c2.select_slider("Steps", TRAIN_STEPS, key=page_key("train_steps"))
        config = replace(TRAIN_BASE, p=p, steps=steps, seed=sidebar_seed())
        if st.button("Train both joins", key=page_key("train"), type="primary"):
            bar = st.progress(0.0, text="Generating scenes…")

            def report(step: int, total: int, loss: dict) -> None:
                if step % 10 == 0 or step == total:
                    bar.progress(step / total, text=f"Step {step} of {total}: loss " + ", ".join(
                        f"{JOIN_LABELS[k]} {v:.3f}" for k, v in loss.items()))

            def compute():
                models, history = M.train_pair(config, report)
                bar.progress(1.0, text="Measuring on the held-out scenes…")
                return Captioners(models, {j: shipped.measure(m) for j, m in models.items()}, "trained here")

            st.session_state[page_key(OWN)] = remember(TRAINED, config, compute)
            st.session_state[page_key("use_own")] = True
            st.rerun()  # the sections above now read the pair trained here
        own = st.session_state.get(page_key(OWN))
        if own is not None:
            c = next(iter(own.models.values())).config
            st.toggle(f"Use the pair trained here (p = {c.p:g}, {c.steps} steps) instead of the shipped one",
                      key=page_key("use_own"))
