"""The live-training page in AppTest: Step, Start and Pause, bad inputs, uploads, a blow-up, the download."""

import html
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from rnnviz.charlm.checkpoint import checkpoint_bytes, load_checkpoint
from rnnviz.charlm.corpus import load_builtin
from rnnviz.charlm.pretrained import MODELS_DIR, shipped_models
from rnnviz.charlm.sample import exposure_bias, generate, next_char_distribution
from rnnviz.charlm.sample_request import run_sample
from rnnviz.charlm.train import TrainConfig, Trainer
from rnnviz.interpret.ngram import fit_ngrams
from rnnviz.ui.kit.models import LIVE_RUN_KEY, UPLOADED_KEY
from rnnviz.ui.live_training.sampling import PASSAGE_CHARS, PREFIX_CHARS
from tests.apptest_helpers import open_page, page_text
from tests.figure_helpers import numbers

PAGE = "app_pages/live_training.py"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(200)


def key(name: str) -> str:
    return f"live_training_{name}"


def metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def hello_page(**settings):
    """The page with the quick preset on the "hello" corpus, then any widget values given."""
    at = open_page(PAGE)
    at.selectbox(key=key("preset")).set_value("Quick demo (30 s)").run()
    at.selectbox(key=key("builtin")).set_value("hello").run()
    for name, value in settings.items():
        widget = next(w for w in at.main if getattr(w, "key", None) == key(name))
        widget.set_value(value)
    return at.run() if settings else at


def test_step_shows_the_counter_the_losses_and_a_sample():
    at = hello_page()
    assert not at.exception and at.session_state[key("corpus")].name == "hello"
    for _ in range(3):
        at.button(key=key("step")).click().run()
        assert not at.exception, [e.value for e in at.exception]
    run = at.session_state[LIVE_RUN_KEY]
    assert run.step >= 3 and metric(at, "Step") == f"{run.step:,}"
    assert metric(at, "Uniform guess") == f"{math.log(4):.3f}"
    recent = sum(r.loss for r in run.trainer.history[-10:]) / len(run.trainer.history[-10:])
    assert metric(at, "Train loss") == f"{recent:.3f}"
    assert any(c.key == key("loss_chart") for c in at.get("plotly_chart"))
    bar = at.get("progress")[0].proto
    assert bar.text.startswith(f"Step {run.step:,} of {run.settings.step_budget:,} · ")
    assert bar.value == int(100 * run.step / run.settings.step_budget)
    text = page_text(at)
    first, latest = run.samples[0], run.samples[-1]
    assert f"**Step 0** · val loss {first.val_loss:.3f} nats/char" in text
    assert f"**Step {latest.step:,}** · val loss {latest.val_loss:.3f} nats/char" in text
    assert latest.text in [c.value for c in at.code]


def test_start_trains_in_chunks_and_pause_stops_the_counter():
    at = hello_page(budget=100_000)
    at.button(key=key("start")).click().run()  # the training fragment takes one chunk per full rerun here
    at.run()
    run = at.session_state[LIVE_RUN_KEY]
    assert run.status == "running" and run.step > 0
    at.button(key=key("pause")).click().run()
    paused_at = run.step
    assert run.status == "paused" and "Paused at step" in page_text(at)
    at.run()
    assert run.step == paused_at and metric(at, "Step") == f"{paused_at:,}"


def test_bad_learning_rates_are_refused_and_the_run_is_kept():
    at = hello_page()
    at.button(key=key("step")).click().run()
    run = at.session_state[LIVE_RUN_KEY]
    history = list(run.trainer.history)
    for bad, words in ((0.0, "must be a positive number"), (-0.1, "must be a positive number"),
                       (1e6, "far too large")):
        at.number_input(key=key("lr")).set_value(bad).run()
        assert not at.exception
        assert any(words in e.value for e in at.error), [e.value for e in at.error]
        assert at.session_state[LIVE_RUN_KEY] is run and run.trainer.history == history
    assert at.button(key=key("step")).disabled is False, "Step goes on with the run's own settings"
    at.number_input(key=key("lr")).set_value(run.trainer.config.lr)
    at.select_slider(key=key("hidden")).set_value(64).run()
    assert any("differ from the run below (hidden: 256 → 64)" in i.value for i in at.info)


def test_a_bad_upload_is_refused_and_the_previous_corpus_kept():
    at = hello_page()
    at.radio(key=key("source")).set_value("Upload a .txt file").run()
    for content, words in ((PNG, "binary"), (b"x" * 500, "single distinct character"),
                           ("hello world. ".encode("utf-16") * 20, "UTF-16"), (b"", "at least 100")):
        at.file_uploader(key=key("upload")).set_value(("bad.txt", content, "text/plain")).run()
        assert not at.exception
        assert any(words in e.value for e in at.error), (words, [e.value for e in at.error])
        assert at.session_state[key("corpus")].name == "hello"
        assert "keeps the previous corpus, **hello**" in page_text(at)
    good = ("The quick brown fox jumps over the lazy dog. " * 5).encode()
    at.file_uploader(key=key("upload")).set_value(("fox.txt", good, "text/plain")).run()
    assert not at.error and at.session_state[key("corpus")].name == "fox.txt"
    assert "Next run trains on **fox.txt**: 225 characters" in page_text(at)


def test_a_saved_checkpoint_uploads_and_samples():
    trainer = Trainer(TrainConfig(hidden=16, embed_dim=8, batch=1, seq_len=4, lr=0.03, device="cpu"),
                      load_builtin("hello"))
    trainer.run(40)
    at = open_page(PAGE)
    at.file_uploader(key=key("checkpoint")).set_value(("m.pt", b"not a checkpoint", "application/octet-stream"))
    at.run()
    assert any("not loaded: This is not a PyTorch checkpoint" in e.value for e in at.error)
    data = checkpoint_bytes(trainer, "hello")
    at.file_uploader(key=key("checkpoint")).set_value(("m.pt", data, "application/octet-stream")).run()
    assert not at.exception
    assert "a 1 × 16 LSTM trained on hello for 40 steps (V = 4)" in page_text(at)
    assert at.session_state[UPLOADED_KEY].step == 40
    # The greedy sample of the weights that were uploaded: the engine's, from the trained model itself.
    prime, length = "hel", 30
    expected = prime + generate(trainer.model, trainer.vocab, prime, length, temperature=0)
    # Sample a shipped model first, so that choosing the upload below really changes the model.
    shipped = f"pretrained:{Path(min(m.file for m in shipped_models())).stem}"
    at.selectbox(key=key("model_source")).set_value(shipped).run()
    at.text_input(key=key("prime")).set_value(prime).run()
    at.number_input(key=key("length")).set_value(length).run()
    at.radio(key=key("strategy")).set_value("greedy").run()
    assert not at.exception
    assert at.selectbox(key=key("model_source")).value == shipped
    assert main_sample(at) != expected  # another model writes another text: the check below can tell
    at.selectbox(key=key("model_source")).set_value("uploaded").run()
    assert not at.exception and at.selectbox(key=key("model_source")).value == "uploaded"
    assert main_sample(at) == expected


def main_sample(at) -> str:
    """The sample the sampling section shows under its Model box: the first code block after that box."""
    elements = list(at.main)  # document order
    box = next(i for i, e in enumerate(elements) if getattr(e, "key", None) == key("model_source"))
    return next(e.value for e in elements[box:] if e.type == "code")


def latest_hello_sample(at) -> str:
    """The latest sample of a run on "hello" as the page draws it: the text of the box split where the sample leaves
    the training text (its first characters, without the marker drawn at the split)."""
    drawn = next(h.value for h in at.html if 'title="leaves the training text"' in h.value
                 or "past it: never seen in training" in h.value)
    box = drawn[:drawn.index("</div>")]
    box = re.sub(r'<span[^>]*title="leaves the training text"[^>]*>▏</span>', "", box)
    return html.unescape(re.sub(r"<[^>]+>", "", box))


def test_bad_sampling_inputs_are_explained():
    at = open_page(PAGE)
    at.text_input(key=key("prime")).set_value("héllo ☃").run()
    assert any("not in the model's vocabulary" in e.value and "'☃'" in e.value for e in at.error)
    at.text_input(key=key("prime")).set_value("def ").run()
    at.number_input(key=key("length")).set_value(0).run()
    assert any("at least 1 character" in e.value for e in at.error)
    at.number_input(key=key("length")).set_value(10**6).run()
    assert any("capped at 2,000" in w.value for w in at.warning) and not at.exception


def test_the_top_p_control_travels_into_the_sample():
    """Top-p sits beside top-k, starts off (1), and the sample shown is the engine's with that nucleus; a bad
    value is explained instead of sampled."""
    shipped = min(shipped_models(), key=lambda m: m.file)
    at = open_page(PAGE)
    at.selectbox(key=key("model_source")).set_value(f"pretrained:{Path(shipped.file).stem}").run()
    at.text_input(key=key("prime")).set_value("def ").run()
    at.number_input(key=key("length")).set_value(60).run()
    at.slider(key=key("temperature")).set_value(1.5).run()
    control = at.number_input(key=key("top_p"))
    assert control.label == "Top-p (1 keeps all)" and control.value == 1.0
    assert "add up to p" in control.help and "1 = off" in control.help
    assert at.number_input(key=key("top_k")).label == "Top-k (0 keeps all)"
    checkpoint = load_checkpoint(MODELS_DIR / shipped.file)
    request = at.session_state[key("last_request")]
    assert request.top_p is None
    hot = "def " + generate(checkpoint.model, checkpoint.vocab, "def ", 60, 1.5, seed=request.seed)
    assert main_sample(at) == hot
    control.set_value(0.5).run()
    assert not at.exception and not at.error
    request = at.session_state[key("last_request")]
    assert request.top_p == 0.5
    nucleus = "def " + generate(checkpoint.model, checkpoint.vocab, "def ", 60, 1.5, seed=request.seed, top_p=0.5)
    assert main_sample(at) == nucleus != hot
    at.number_input(key=key("top_p")).set_value(0.0).run()
    assert any("Top-p must be more than 0 and at most 1" in e.value for e in at.error) and not at.exception


def test_sgd_at_learning_rate_50_without_clipping_rolls_back_and_explains():
    at = hello_page(optimizer="sgd", lr=50.0, clip_on=False)
    for _ in range(5):
        at.button(key=key("step")).click().run()
        if at.session_state[LIVE_RUN_KEY].status == "halted":
            break
    run = at.session_state[LIVE_RUN_KEY]
    assert run.status == "halted" and not at.exception
    halt = run.trainer.halt
    message = next(e.value for e in at.error if "stopped by itself" in e.value)
    assert f"weights from step {halt.restored_step}" in message and "put back" in message
    assert any("Gradient decay" in str(link.proto.label) for link in at.get("page_link"))
    at.number_input(key=key("lr")).set_value(0.01).run()
    at.button(key=key("retune")).click().run()
    assert run.status == "paused" and run.trainer.config.lr == 0.01


def test_a_click_in_the_same_moment_as_a_new_corpus_trains_on_the_corpus_the_box_shows(tmp_path, monkeypatch):
    # A new choice in the box and a click on Step reach the server in one script run when the click comes before
    # the page has run on the choice (a quick hand, or a busy server): Step's callback runs before the page draws
    # the box. It used to find no corpus ("Choose a corpus first.") or the one before, while the box showed the
    # new one.
    monkeypatch.setenv("RNNVIZ_CACHE", str(tmp_path / "empty"))  # the preset's Tiny Shakespeare is not here
    at = open_page(PAGE)
    at.selectbox(key=key("preset")).set_value("Tiny vanilla RNN").run()
    assert at.session_state[key("builtin")] == "tiny-shakespeare" and key("corpus") not in at.session_state
    at.selectbox(key=key("builtin")).set_value("hello")
    at.button(key=key("step")).click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    run = at.session_state[LIVE_RUN_KEY]
    assert run.corpus_name == "hello" and run.step > 0

    at.button(key=key("reset")).click().run()
    at.selectbox(key=key("builtin")).set_value("english-docs")  # "hello" is the active corpus now
    at.button(key=key("step")).click().run()
    run = at.session_state[LIVE_RUN_KEY]
    assert run.corpus_name == "english-docs" and run.trainer.vocab.size > 4


def test_tiny_shakespeare_downloads_on_first_use(shakespeare_offered):
    at = open_page(PAGE)
    at.selectbox(key=key("preset")).set_value("Quick demo (30 s)").run()
    at.select_slider(key=key("hidden")).set_value(16).run()
    assert "downloaded the first time it is used" in page_text(at)
    at.button(key=key("step")).click().run()
    assert not at.exception and not at.error
    run = at.session_state[LIVE_RUN_KEY]
    assert run.corpus_name == "tiny-shakespeare" and run.trainer.vocab.size == 65 and run.step > 0
    assert (shakespeare_offered / "tinyshakespeare.txt").stat().st_size == 1_115_394


def test_offline_download_explains_and_keeps_the_previous_corpus(tmp_path, monkeypatch):
    monkeypatch.setenv("RNNVIZ_CACHE", str(tmp_path / "empty"))
    monkeypatch.setenv("RNNVIZ_TINY_SHAKESPEARE_URL", "http://127.0.0.1:9/input.txt")  # nothing listens there
    at = hello_page()
    at.selectbox(key=key("builtin")).set_value("tiny-shakespeare").run()
    at.button(key=key("start")).click().run()
    assert not at.exception
    assert any("Could not download Tiny Shakespeare" in e.value for e in at.error)
    assert at.session_state.get(LIVE_RUN_KEY) is None
    assert at.selectbox(key=key("builtin")).value == "hello"


def test_reset_asks_first_once_the_model_trained_a_minute():
    at = hello_page()
    at.button(key=key("step")).click().run()
    run = at.session_state[LIVE_RUN_KEY]
    run.trainer.seconds = 61.0  # as if it had trained for a minute
    at.button(key=key("reset")).click().run()
    assert at.session_state[LIVE_RUN_KEY] is run
    assert any("trained for 1.0 minutes" in w.value for w in at.warning)
    at.button(key=key("confirm_reset_no")).click().run()
    assert at.session_state[LIVE_RUN_KEY] is run and not at.warning
    at.button(key=key("reset")).click().run()
    at.button(key=key("confirm_reset_yes")).click().run()
    assert at.session_state.get(LIVE_RUN_KEY) is None and not at.exception
    at.button(key=key("step")).click().run()
    assert at.session_state[LIVE_RUN_KEY] is not run and at.session_state[LIVE_RUN_KEY].step > 0


def test_while_it_trains_the_samples_say_their_step_and_resample_on_request():
    at = hello_page(budget=100_000)
    at.button(key=key("start")).click().run()  # one chunk per full rerun in AppTest
    run = at.session_state[LIVE_RUN_KEY]
    assert run.is_active and at.selectbox(key=key("model_source")).value == "live"
    drawn_at = at.session_state[key("pinned")].step
    at.run()
    assert run.step > drawn_at
    assert f"Drawn from the weights of step {drawn_at:,}. The run trains on" in page_text(at)
    at.button(key=key("resample")).click().run()
    resampled_at = at.session_state[key("pinned")].step
    assert resampled_at > drawn_at and not at.exception
    assert f"Drawn from the weights of step {resampled_at:,}. The run trains on" in page_text(at)


def test_after_pause_the_samples_read_the_current_weights_without_a_click():
    at = hello_page(budget=100_000)
    at.button(key=key("step")).click().run()  # the sample section pins the live model at this step
    at.button(key=key("start")).click().run()
    at.run()
    at.button(key=key("pause")).click().run()
    run = at.session_state[LIVE_RUN_KEY]
    assert run.status == "paused" and not at.exception
    request = at.session_state[key("last_request")]
    expected = run_sample(run.trainer.model, run.trainer.vocab, request).text  # from the weights as they are now
    assert request.prime + expected in [c.value for c in at.code]
    position = at.slider(key=key("position")).value
    table = next_char_distribution(run.trainer.model, run.trainer.vocab, request.prime + expected, k=4)
    bars = next(c for c in at.get("plotly_chart") if c.key == key("next_chars"))
    drawn = json.loads(bars.proto.spec)["data"][0]
    assert list(numbers(drawn["y"])) == pytest.approx(list(table.probs[position - 1]), abs=1e-6)
    text = page_text(at)
    assert f"Drawn from the weights of step {run.step:,}, the run's latest." in text
    assert "Sample the latest weights" not in text


def test_a_step_by_hand_samples_the_new_weights_and_its_exposure_figure_is_the_engines():
    at = hello_page()
    drawn = []
    for _ in range(2):
        at.button(key=key("step")).click().run()
        run = at.session_state[LIVE_RUN_KEY]
        assert f"Drawn from the weights of step {run.step:,}, the run's latest." in page_text(at)
        passage = run.trainer.vocab.decode(run.trainer.val_ids[:PASSAGE_CHARS + 1])
        result = exposure_bias(run.trainer.model, run.trainer.vocab, passage,
                               min(PREFIX_CHARS, max(1, len(passage) // 3)))
        chart = next(c for c in at.get("plotly_chart") if c.key == key("exposure"))
        traces = json.loads(chart.proto.spec)["data"]
        for trace, losses in zip(traces, (result.teacher_forced, result.free_running), strict=True):  # running means
            assert list(numbers(trace["y"])) == pytest.approx(list(losses.cumsum() / range(1, len(losses) + 1)),
                                                              abs=1e-6)
        drawn.append(list(numbers(traces[0]["y"])))
    assert drawn[0] != drawn[1]  # the figure of the second step's weights, not the first one kept


def test_the_loss_curve_reads_against_seconds_of_training_when_asked():
    at = hello_page()
    for _ in range(2):
        at.button(key=key("step")).click().run()
    run = at.session_state[LIVE_RUN_KEY]

    def loss_chart() -> dict:
        chart = next(c for c in at.get("plotly_chart") if c.key == key("loss_chart"))
        return json.loads(chart.proto.spec)

    assert loss_chart()["layout"]["xaxis"]["title"]["text"] == "step"
    at.toggle(key=key("seconds_axis")).set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    spec = loss_chart()
    assert spec["layout"]["xaxis"]["title"]["text"] == "seconds of training"
    train, val = spec["data"][0], spec["data"][1]
    # Its own clock: each point sits at a record's seconds (a long history is drawn in buckets, each at its last
    # record), in order, ending at the last record.
    clock = [r.seconds for r in run.trainer.history]
    drawn = list(numbers(train["x"]))
    assert drawn == sorted(drawn) and drawn[-1] == pytest.approx(clock[-1])
    assert len(drawn) >= min(len(clock), 150)
    assert np.isclose(np.asarray(drawn)[:, None], np.asarray(clock)[None, :]).any(axis=1).all()
    assert list(numbers(val["x"])) == pytest.approx([e.seconds for e in run.trainer.evals])


def test_the_loss_curve_shows_what_3_and_5_gram_models_of_the_same_text_reach_on_its_val_split():
    at = hello_page()
    at.button(key=key("step")).click().run()
    corpus = at.session_state[LIVE_RUN_KEY].trainer.corpus
    train, val = corpus.split()
    models = fit_ngrams(train, corpus.vocab.size, 5)
    chart = next(c for c in at.get("plotly_chart") if c.key == key("loss_chart"))
    spec = json.loads(chart.proto.spec)
    lines = {a["text"]: a["y"] for a in spec["layout"]["annotations"] if "-gram" in a["text"]}
    for n in (3, 5):
        loss = models.loss(val, n)
        assert lines[f"{n}-gram: {loss:.2f}"] == pytest.approx(loss)
    assert "n-gram (same text)" in [trace.get("name") for trace in spec["data"]]


def test_the_default_preset_starts_narrow_and_says_when_it_widens_and_a_smaller_width_drops_the_growth():
    """Issue 37: the live page's default is the anytime preset, a 1 × 256 LSTM that widens to 1 × 448."""
    from rnnviz.charlm.presets import ALL_PRESETS, ANYTIME_STEPS, DEFAULT_PRESET

    preset = ALL_PRESETS[DEFAULT_PRESET].config
    at = open_page(PAGE)
    assert at.selectbox(key=key("preset")).value == DEFAULT_PRESET and preset.grows
    assert at.number_input(key=key("budget")).value == ANYTIME_STEPS
    at.selectbox(key=key("builtin")).set_value("hello").run()
    at.button(key=key("step")).click().run()
    assert not at.exception, [e.value for e in at.exception]
    run = at.session_state[LIVE_RUN_KEY]
    assert run.trainer.config.grows and run.trainer.width == preset.grow_from
    assert f"widens to {preset.hidden} at step {preset.grow_at:,}" in page_text(at)
    at.button(key=key("reset")).click().run()
    at.select_slider(key=key("hidden")).set_value(128).run()  # narrower than where it would start: no growth
    at.button(key=key("step")).click().run()
    assert not at.exception, [e.value for e in at.exception]
    run = at.session_state[LIVE_RUN_KEY]
    assert not run.trainer.config.grows and run.trainer.width == 128 and "widens" not in page_text(at)


def test_the_default_preset_cools_a_copy_on_pause_and_the_page_samples_the_copy_while_the_run_stays():
    """Issue 37: the anytime default trains at a steady rate; when it stops, a copy cools down (its learning rate
    falling to 0) under a bar, and the page then shows and samples the copy, beside the run's own val loss."""
    at = open_page(PAGE)
    assert at.toggle(key=key("cool_down")).value  # on for the default preset
    at.selectbox(key=key("builtin")).set_value("hello").run()
    at.select_slider(key=key("hidden")).set_value(16).run()
    at.button(key=key("step")).click().run()
    assert not at.exception, [e.value for e in at.exception]
    run = at.session_state[LIVE_RUN_KEY]
    stepped = run.step
    weights = {k: v.clone() for k, v in run.trainer.model.state_dict().items()}
    assert run.settings.cool_down and (run.cools_down or run.cooled_copy() is not None)  # a tiny run cools at once
    for _ in range(40):  # the cooling fragment takes one chunk per rerun here
        if run.cooled_copy() is not None:
            break
        assert any(p.proto.text.startswith("Cooling a copy down: step") for p in at.get("progress")) \
            or run.cool_down_progress() is None
        at.run()
        assert not at.exception, [e.value for e in at.exception]
    cooled = run.cooled_copy()
    assert cooled is not None and cooled.from_step == stepped and run.step == stepped
    assert all(torch.equal(v, weights[k]) for k, v in run.trainer.model.state_dict().items())
    at.run()  # the page as it stands once cooled
    text = page_text(at)
    assert (f"**Cooled copy: val loss {cooled.val_loss:.3f}** against {cooled.run_val_loss:.3f} for the run's own "
            f"weights at step {stepped:,}") in text
    assert f"The copy trained {cooled.steps:,} steps more" in text
    assert f"Cooled copy of **step {stepped:,}** (+{cooled.steps:,} cool-down steps)" in text
    # one val loss a class reads: the tile is the engine's figure for the cooled copy, its delta the copy's against
    # the run's own weights at the step the progress bar shows, as the box says
    tile = next(m for m in at.metric if m.label == "Val loss, cooled copy")
    assert tile.value == f"{cooled.val_loss:.3f}"
    assert tile.proto.delta == f"{cooled.val_loss - cooled.run_val_loss:+.3f} vs step {stepped:,}"
    assert at.get("progress")[0].proto.text.startswith(f"Step {stepped:,} of ")
    assert not any(m.label.startswith("Val loss at step") or m.label == "Val loss" for m in at.metric)
    # the latest sample beside the curve is what the cooled weights write, drawn as the scheduled samples are
    settings, prime = run.settings, run.sample_prime
    cooled_writes = prime + generate(cooled.model, run.trainer.vocab, prime, settings.sample_length,
                                     settings.temperature, seed=run.trainer.config.seed)
    run_writes = prime + generate(run.trainer.model, run.trainer.vocab, prime, settings.sample_length,
                                  settings.temperature, seed=run.trainer.config.seed)
    shown = latest_hello_sample(at)
    assert len(shown) >= 40 and cooled_writes.startswith(shown), (shown, cooled_writes)
    # the page shows the first characters of the sample; the whole of it is what the cooled weights write, and the
    # run's own weights write something else (over a short cool-down the two can share their first characters)
    assert cooled.sample.text == cooled_writes
    assert run_writes != cooled_writes, "the run's own weights write the same: the check tells nothing"
    # the sampling section reads the cooled copy: its label, its caption, and the sample its weights write
    source = at.selectbox(key=key("model_source"))
    assert source.value == "live" and f"cooled over {cooled.steps} more" in source.format_func(source.value)
    assert f"Drawn from the copy cooled down over {cooled.steps:,} steps after step {stepped:,}" in text
    request = at.session_state[key("last_request")]
    assert request.prime + run_sample(cooled.model, run.trainer.vocab, request).text == main_sample(at)
    assert request.prime + run_sample(run.trainer.model, run.trainer.vocab, request).text != main_sample(at)
    assert any(b.label == "Download the cooled copy" for b in at.get("download_button"))
    # Start trains the run from its own weights, and the page reads the run again
    at.button(key=key("start")).click().run()
    assert run.is_active and run.cooled_copy() is None and run.step > stepped
    assert run.trainer.history[stepped].lr == pytest.approx(run.trainer.config.lr_at(stepped))
    at.button(key=key("pause")).click().run()
    for _ in range(40):  # and the next stop cools a new copy, of the run as it is now
        if run.cooled_copy() is not None:
            break
        at.run()
    assert run.cooled_copy().from_step == run.step > stepped


def test_a_preset_without_a_cool_down_has_the_toggle_off_and_pause_samples_the_run():
    at = hello_page()
    assert not at.toggle(key=key("cool_down")).value
    at.button(key=key("step")).click().run()
    run = at.session_state[LIVE_RUN_KEY]
    assert not run.cools_down and "Cooled copy" not in page_text(at)
