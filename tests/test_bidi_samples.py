"""A model's sample that holds a bidirectional override (U+202E) is shown with it named, ‹U+202E›, so the text reads
in the order it was written, not back to front."""

from rnnviz.charlm.checkpoint import checkpoint_bytes
from rnnviz.charlm.corpus import Corpus
from rnnviz.charlm.sample import generate
from rnnviz.charlm.train import TrainConfig, Trainer
from tests.apptest_helpers import open_page

PAGE = "app_pages/live_training.py"
OVERRIDE = "\u202e"


def key(name: str) -> str:
    return f"live_training_{name}"


def test_a_sample_holding_a_bidi_override_shows_it_by_name():
    corpus = Corpus("mirror", f"hello world {OVERRIDE}dlrow olleh\n" * 12)
    trainer = Trainer(TrainConfig(hidden=8, embed_dim=4, batch=1, seq_len=4, lr=0.03, device="cpu"), corpus)
    trainer.run(3)
    prime, length = f"{OVERRIDE}dlrow", 20
    written = prime + generate(trainer.model, trainer.vocab, prime, length, temperature=0)
    at = open_page(PAGE)
    at.file_uploader(key=key("checkpoint")).set_value(("m.pt", checkpoint_bytes(trainer, "mirror"),
                                                       "application/octet-stream")).run()
    at.selectbox(key=key("model_source")).set_value("uploaded").run()
    at.text_input(key=key("prime")).set_value(prime).run()
    at.number_input(key=key("length")).set_value(length).run()
    at.radio(key=key("strategy")).set_value("greedy").run()
    assert not at.exception
    shown = [block.value for block in at.code]
    assert written.replace(OVERRIDE, "‹U+202E›") in shown
    assert not any(OVERRIDE in text for text in shown)


def test_coloured_text_holding_a_bidi_override_draws_it_by_name_in_its_place():
    import html
    import re

    import numpy as np

    from rnnviz.interpret.colortext import colored_text_html, scale_for

    text = f"ab{OVERRIDE}cd"
    drawn = colored_text_html(text, np.zeros(len(text)), scale_for("h", np.array([-1.0, 1.0])))
    glyphs = [html.unescape(g) for g in re.findall(r"<span[^>]*>([^<]*)</span>", drawn)]
    assert glyphs == ["a", "b", "‹U+202E›", "c", "d"] and OVERRIDE not in drawn
