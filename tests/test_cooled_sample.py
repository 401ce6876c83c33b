"""The sample a live run shows once a copy of it has cooled down is the cooled copy's: what ``generate`` writes with
the cooled model, drawn as the scheduled samples are (same prime, length, temperature and seed), not the run's."""

from rnnviz.charlm.corpus import Corpus
from rnnviz.charlm.sample import generate
from rnnviz.charlm.train import TrainConfig
from rnnviz.serving.live import LiveRun, LiveSettings
from rnnviz.serving.slots import TrainingSlots

TEXT = ("the quick brown fox jumps over the lazy dog. " * 40) + ("a bird in the hand is worth two in the bush. " * 40)
NOISY = TrainConfig(hidden=24, embed_dim=8, batch=8, seq_len=16, lr=3e-2, clip=1.0)  # one step moves it visibly


def test_the_cooled_copys_sample_is_what_the_cooled_model_writes():
    run = LiveRun.create(NOISY, Corpus("t", TEXT), LiveSettings(step_budget=100, sample_every=50, cool_down=True))
    slots = TrainingSlots(1)
    run.step_once(slots, "me", 0.0)  # one step, then stopped: a copy is due to cool
    for _ in range(50):
        if not run.cools_down:
            break
        run.cool(slots, "me", 0.0)
    cooled = run.cooled_copy()
    assert cooled is not None and cooled.step > run.step
    settings, prime, vocab = run.settings, run.sample_prime, run.trainer.vocab

    def writes(model) -> str:
        return prime + generate(model, vocab, prime, settings.sample_length, settings.temperature,
                                seed=NOISY.seed)

    assert cooled.sample.text == writes(cooled.model)
    assert cooled.sample.text != writes(run.trainer.model), "the run's own weights write the same: nothing is shown"
