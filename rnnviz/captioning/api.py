"""The captioner's public names in one namespace, for pages, tests and notebooks: ``from rnnviz.captioning import api
as M``, then ``M.greedy``, ``M.saliency``, ``M.chair``. Each name lives in the module of its job."""

from rnnviz.captioning.checkpoint import FORMAT, CaptionerError, load_captioner, save_captioner
from rnnviz.captioning.decode import Beam, beam_search, greedy, sample, step_distributions, word_logprobs
from rnnviz.captioning.metrics import (
    ATTRIBUTES,
    Chair,
    attribute_accuracy,
    boat_rate,
    chair,
    evaluate,
    image_influence,
    object_accuracy,
    scene_list,
)
from rnnviz.captioning.model import (
    END,
    END_ID,
    INDEX,
    JOINS,
    MAX_LEN,
    MAX_WORDS,
    OBJECT_WORDS,
    PAD,
    PAD_ID,
    START,
    START_ID,
    VOCAB,
    CaptionConfig,
    Captioner,
    caption_tensor,
    decode,
    encode_caption,
    init_pair,
    pixels,
)
from rnnviz.captioning.saliency import object_share, saliency
from rnnviz.captioning.sweep import SweepPoint, sweep
from rnnviz.captioning.train import TrainingData, batch_order, train_models, train_one, train_pair
from rnnviz.pairs import History

__all__ = [
    "ATTRIBUTES", "END", "END_ID", "FORMAT", "INDEX", "JOINS", "MAX_LEN", "MAX_WORDS", "OBJECT_WORDS", "PAD", "PAD_ID",
    "START", "START_ID", "VOCAB", "Beam", "CaptionConfig", "Captioner", "CaptionerError", "Chair", "History",
    "SweepPoint", "TrainingData", "attribute_accuracy", "batch_order", "beam_search", "boat_rate", "caption_tensor",
    "chair", "decode", "encode_caption", "evaluate", "greedy", "image_influence", "init_pair", "load_captioner",
    "object_accuracy", "object_share", "pixels", "sample", "saliency", "save_captioner", "scene_list",
    "step_distributions", "sweep", "train_models", "train_one", "train_pair", "word_logprobs",
]
