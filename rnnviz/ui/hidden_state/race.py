"""The race section of the hidden-state page: the LSTM preset against the Transformer preset (and, when ticked,
the minGRU preset), trained in turn on one clock by a background thread (rnnviz.serving.race), with the val-loss
curves filling in live.

The RaceRunner, and with it every trained model, lives in ``st.session_state[RUNNER]``: switching pages or
pressing Pause keeps them; only "New race" lets them go. The thread never calls streamlit: a fragment polls
the runner every POLL_S seconds and draws what it recorded. While it trains, the race holds one of the
server's training slots (``rnnviz.ui.app.server``), as one live run does. A tab that stops
polling (closed, reloaded, another page) pauses its race after ``IDLE_PAUSE_S``, which frees the slot.
"""

from __future__ import annotations

import html
import os
import uuid

import streamlit as st

from rnnviz.charlm.corpus import BUILTIN_CORPORA, CorpusError
from rnnviz.charlm.presets import ALL_PRESETS, MINGRU_PRESET, SHAKESPEARE_3_MIN, TUNED_GPT
from rnnviz.charlm.speed import count_parameters
from rnnviz.figures import race as figures
from rnnviz.serving.race import Race, RaceRunner, RaceStatus, load_average
from rnnviz.ui.app.errors import fragment
from rnnviz.ui.app.server import race_registry, training_slots
from rnnviz.ui.kit.address import HeldInAddress
from rnnviz.ui.kit.baselines import line_losses
from rnnviz.ui.kit.corpora import CORPUS_LABELS, builtin_corpus, needs_download
from rnnviz.ui.kit.keys import PageKeys
from rnnviz.ui.kit.links import LinkParam, format_bool, parse_bool, parse_choice
from rnnviz.ui.kit.widgets import literal, plot, text_block

PAGE = "hidden_state_race"
page_key = PageKeys(PAGE)
RUNNER = page_key("runner")  # the session's RaceRunner
CORPUS = page_key("corpus")
SECONDS = page_key("seconds")
OWNER = page_key("owner")  # this session, as a holder of races, when no session id is known
NOTICE = page_key("notice")  # (kind, text) from a callback, shown once
LET_GO = page_key("let_go")  # tokens of races this session let go (New race): never taken up again
RACE_PARAM = "race"  # ?race=<token>: the address that finds this session's race again after a reload
# The racers: label on the page → preset name (ALL_PRESETS). Another kind joins with one line.
CONTENDERS = {"LSTM": SHAKESPEARE_3_MIN, "Transformer": TUNED_GPT}  # both tuned for 150 s on 2 cores
OPTIONAL = {"minGRU": MINGRU_PRESET}  # joins when its checkbox is ticked
WITH_OPTIONAL = page_key("with_mingru")
DURATIONS = (20, 60, 150)  # seconds of training each model gets
DEFAULT_SECONDS = 60
MARK_EVERY_S = 5.0  # val loss every 5 s of each model's training
SLICE_S = 2.5  # each model trains this long per turn
EVAL_CHARS = 20_000  # val characters scored per mark, so a mark costs well under a second
SAMPLE_CHARS = 160
POLL_S = 1.0  # the live panel redraws this often
IDLE_PAUSE_S = 30.0
NANOGPT = (1.906, "nanoGPT's own baby GPT: 1.906 after 2,000 steps (~90 s)")  # measured on Tiny Shakespeare


# The race's settings in the page's address (its run is found again by ?race=, a different thing).
LINK = (
    LinkParam("race_corpus", CORPUS, parse_choice([c for c in BUILTIN_CORPORA if c != "hello"]),
              example="python-stdlib"),
    LinkParam("race_seconds", SECONDS, parse_choice(DURATIONS), example="20"),
    LinkParam("race_mingru", WITH_OPTIONAL, parse_bool, format_bool, example="1"),
)


def corpus_choices() -> list[str]:
    """The built-in corpora a race can use now: offline ones, and Tiny Shakespeare once it is downloaded."""
    return [name for name in BUILTIN_CORPORA if name != "hello" and not needs_download(name)]


def current_runner() -> RaceRunner | None:
    return st.session_state.get(RUNNER)


RACE_ADDRESS = HeldInAddress(
    param=RACE_PARAM, registry=race_registry, owner_key=OWNER, notice_key=NOTICE, let_go_key=LET_GO,
    owner_prefix="race-",
    gone_text=lambda: ("This address names a race this server does not hold (any more): its tab was closed long "
                       "ago, or the server restarted. Start a new one."))


def take_up_race_from_address() -> None:
    """A session opened on ``?race=<token>`` (a reload, a new tab) takes up that race with its models."""
    runner = current_runner()
    found = RACE_ADDRESS.take_up(runner.token if runner is not None else None)
    if found is not None:
        st.session_state[RUNNER] = found


def marks_for(seconds: float) -> tuple[float, ...]:
    count = max(1, int(seconds // MARK_EVERY_S))
    marks = [MARK_EVERY_S * (i + 1) for i in range(count)]
    return tuple(sorted({*marks, float(seconds)}))


def new_runner(corpus_name: str, seconds: float, optional: bool = False) -> RaceRunner:
    """A fresh race of the CONTENDERS (and the OPTIONAL ones when ``optional``) on a built-in corpus, not started."""
    corpus = builtin_corpus(corpus_name)
    chosen = {**CONTENDERS, **(OPTIONAL if optional else {})}
    configs = {label: ALL_PRESETS[preset].config for label, preset in chosen.items()}
    race = Race.from_configs(corpus, configs, marks=marks_for(seconds), slice_s=SLICE_S, eval_chars=EVAL_CHARS,
                             sample_chars=SAMPLE_CHARS)
    # its own owner: a race let go by "New race" gives back its own slot, never the new race's
    return RaceRunner(race, training_slots(), f"race-{uuid.uuid4().hex}", idle_pause_s=IDLE_PAUSE_S)


# --- callbacks (run before the rerun, never while the page draws) --------------------------------------------


def _on_start() -> None:
    runner = current_runner()
    if runner is None or runner.status in (RaceStatus.FINISHED, RaceStatus.STOPPED) and not _trained(runner):
        try:
            runner = new_runner(st.session_state.get(CORPUS) or "english-docs",
                                st.session_state.get(SECONDS) or DEFAULT_SECONDS,
                                bool(st.session_state.get(WITH_OPTIONAL)))
        except (CorpusError, OSError, ValueError) as err:
            RACE_ADDRESS.notice("error", f"The race could not start: {literal(str(err))}")
            return
        RACE_ADDRESS.register(runner)
        st.session_state[RUNNER] = runner
    runner.start()


def _on_pause() -> None:
    runner = current_runner()
    if runner is not None:
        runner.pause()


def _on_stop() -> None:
    runner = current_runner()
    if runner is not None:
        runner.stop()


def _on_new() -> None:
    """Let the old race go (its thread ends at its next step) and build a new one from the widgets."""
    old = current_runner()
    if old is not None:
        old.stop()
        RACE_ADDRESS.let_go(old.token)
    st.session_state.pop(RUNNER, None)
    _on_start()


def _trained(runner: RaceRunner) -> bool:
    return any(t.step > 0 for t in runner.race.trainers.values())


# --- the section ---------------------------------------------------------------------------------------------


def race_section() -> None:
    st.subheader("The race: an LSTM against a small GPT, on one clock")
    take_up_race_from_address()
    runner = current_runner()
    active = runner is not None and runner.is_active
    choices = corpus_choices()
    if st.session_state.get(CORPUS) not in choices:  # none yet, or a link's Tiny Shakespeare not downloaded here
        if CORPUS in st.session_state and not st.session_state.get(page_key("corpus_said")):
            st.session_state[page_key("corpus_said")] = True
            st.warning(f"The link's race corpus, {literal(st.session_state[CORPUS])}, is not on this server yet "
                       "(the live page downloads it), so the race uses english-docs.", icon=":material/link_off:")
        st.session_state[CORPUS] = "english-docs" if "english-docs" in choices else choices[0]
    _intro((runner.race.corpus_name if runner is not None else None) or st.session_state[CORPUS])
    if st.session_state.get(SECONDS) not in DURATIONS:  # first visit, or a segmented control clicked off
        st.session_state[SECONDS] = DEFAULT_SECONDS
    cols = st.columns([3, 2, 2], vertical_alignment="bottom")
    cols[0].selectbox("Corpus", choices, format_func=CORPUS_LABELS.get, key=CORPUS, disabled=active,
                      help="Tiny Shakespeare appears here once the live page has downloaded it.")
    cols[1].segmented_control("Seconds of training each", DURATIONS, key=SECONDS, disabled=active,
                              format_func=lambda s: f"{s} s",
                      help="The race takes this times the number of models, plus scoring.")
    cols[2].checkbox("Add a minGRU", key=WITH_OPTIONAL, disabled=active,
                     help="A third contender: the minGRU preset. Takes effect at the next Start or New race.")
    _controls(runner)
    RACE_ADDRESS.show_notice()
    runner = current_runner()
    RACE_ADDRESS.keep(runner.token if runner is not None else None)
    if runner is None:
        st.caption("Press **Start race**: the curves fill in as the models train.")
        return
    if runner.is_active:
        _live_panel()
    else:
        _still_panel()


def contender_parameters(corpus_name: str) -> dict[str, int]:
    """Parameters of each contender (the optional ones too) on ``corpus_name``'s vocabulary, counted from the
    model its preset builds (``count_parameters``)."""
    vocab_size = builtin_corpus(corpus_name).vocab.size
    return {label: count_parameters(ALL_PRESETS[preset].config, vocab_size)
            for label, preset in {**CONTENDERS, **OPTIONAL}.items()}


def _intro(corpus_name: str) -> None:
    lstm, gpt = (ALL_PRESETS[p].config for p in CONTENDERS.values())
    mingru = ALL_PRESETS[OPTIONAL["minGRU"]].config
    sizes = contender_parameters(corpus_name)
    vocab_size = builtin_corpus(corpus_name).vocab.size
    st.markdown(
        f"They train on the same text, taking turns of {SLICE_S:g} s, so that whatever else the server does slows "
        f"all alike. Each has its own clock, which counts only its own optimizer steps; scoring pauses it. The "
        f"**LSTM** is the live page's 3-minute Shakespeare preset ({lstm.layers} × {lstm.hidden}, B = {lstm.batch}, "
        f"T = {lstm.seq_len}, state carried between chunks); the **Transformer** is a {gpt.layers}-block GPT "
        f"(C = {gpt.hidden}, {gpt.n_head} heads, context {gpt.block_size}, B = {gpt.batch}, no state carried), the "
        f"Transformer preset tuned by measurement to learn most in 150 s on 2 cores. On {literal(corpus_name)} "
        f"(V = {vocab_size} characters) the LSTM has "
        f"**{sizes['LSTM']:,} parameters** to the GPT's **{sizes['Transformer']:,}**. Tick the box to add the "
        f"**minGRU** preset ({mingru.layers} × {mingru.hidden}, B = {mingru.batch}, T = {mingru.seq_len}, "
        f"{sizes['minGRU']:,} parameters, trained by a parallel scan, state carried between chunks). Every "
        f"{MARK_EVERY_S:g} s of its training, each is scored on the first {EVAL_CHARS:,} held-out characters "
        r"(the last 10% of the text): val loss $= -\frac{1}{n}\sum_t \log p(x_{t+1} \mid x_{\le t})$, in nats/char."
    )


def load_note(loads: list[float], cores: int) -> str | None:
    """A sentence on the machine's load while the race ran, when it went above the core count; else None."""
    if not loads or max(loads) <= cores:
        return None
    return (f"The machine was busy: its load average reached {max(loads):.1f} on {cores} cores while the race ran, "
            "so other work took time from the models. A busy turn leaves a model fewer optimizer steps in its "
            "seconds: read each loss beside its step count.")


def _controls(runner: RaceRunner | None) -> None:
    cols = st.columns(4)
    active = runner is not None and runner.is_active
    over = runner is not None and runner.status in (RaceStatus.FINISHED, RaceStatus.STOPPED)
    paused = runner is not None and runner.status == RaceStatus.PAUSED
    cols[0].button("Continue" if paused else "Start race", key=page_key("start"), icon=":material/play_arrow:",
                   on_click=_on_start, disabled=active or (over and _trained(runner)), type="primary",
                   width="stretch")
    cols[1].button("Pause", key=page_key("pause"), icon=":material/pause:", on_click=_on_pause, disabled=not active,
                   width="stretch")
    cols[2].button("Stop", key=page_key("stop"), icon=":material/stop:", on_click=_on_stop,
                   disabled=runner is None or over, width="stretch", help="Ends the race; the models are kept.")
    cols[3].button("New race", key=page_key("new"), icon=":material/restart_alt:", on_click=_on_new,
                   disabled=runner is None or active, width="stretch",
                   help="Lets these models go and races fresh ones with the settings above.")


@fragment(run_every=POLL_S)
def _live_panel() -> None:
    """Redraws by itself while the race runs; the thread trains meanwhile."""
    runner = current_runner()
    if runner is None:
        st.rerun()
    runner.poll()
    _draw(runner)
    if not runner.is_active:
        st.rerun()  # finished, paused by itself, or stopped on an error: the controls change too


@fragment
def _still_panel() -> None:
    _draw(current_runner())


def _draw(runner: RaceRunner) -> None:
    race = runner.race
    icon = {RaceStatus.WAITING: ":material/hourglass_top:", RaceStatus.FINISHED: ":material/flag:",
            RaceStatus.PAUSED: ":material/pause:", RaceStatus.STOPPED: ":material/stop:"}.get(runner.status,
                                                                                            ":material/sprint:")
    if runner.error:
        st.error(literal(runner.message), icon=":material/error:")
    else:
        st.info(runner.message, icon=icon)
    clocks = ", ".join(f"{name} {race.trainers[name].seconds:.0f} s" for name in race.trainers)
    st.progress(race.fraction, text=f"Training so far: {clocks} of {race.duration:g} s each "
                                    f"({literal(race.corpus_name or '')})")
    vocab = next(iter(race.trainers.values())).vocab.size
    reference = NANOGPT if race.corpus_name == "tiny-shakespeare" else None
    curves = {name: list(marks) for name, marks in race.curves.items()}  # the thread appends meanwhile
    corpus = next(iter(race.trainers.values())).corpus
    plot(figures.race_figure(curves, race.duration, vocab, reference, baselines=line_losses(corpus)),
         key=page_key("curves"))
    loads = [m.load for marks in curves.values() for m in marks if m.load is not None]
    if runner.is_active and (now := load_average()) is not None:
        loads.append(now)
    note = load_note(loads, os.cpu_count() or 1)
    if note:
        st.warning(note, icon=":material/speed:")
    cols = st.columns(len(race.trainers))
    for index, (col, (name, trainer)) in enumerate(zip(cols, race.trainers.items())):
        with col:
            colour = figures.contender_colour(index)
            latest = race.latest(name)
            loss = (f"val {latest.val_loss:.3f} after {latest.step:,} steps ({latest.seconds:.0f} s)"
                    if latest else f"{trainer.step:,} steps, not scored yet")
            # colour from the figure's palette (a constant), name escaped: no user text reaches the HTML
            st.html(f"<span style='color:{colour};font-size:1.3em'>■</span> <b>{html.escape(name)}</b>: "
                    f"{trainer.num_parameters:,} parameters, {loss}, {trainer.chars_per_second:,.0f} chars/s")
            samples = race.samples[name]
            if name in race.halted:
                st.warning(f"Left the race: {literal(race.halted[name])}", icon=":material/warning:")
            if samples:
                st.caption(f"Sample at {samples[-1].mark:g} s (step {samples[-1].step:,}, τ = "
                           f"{race.temperature:g}, same seed every time):")
                text_block(samples[-1].text)
            else:
                st.caption(f"Its first sample comes at {race.marks[0]:g} s of training.")
