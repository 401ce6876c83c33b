"""The five ways a sequence problem can be shaped, as data for the Home page's figure."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProblemShape:
    """One input/output pattern over time; steps are 0-based positions along the unrolled network."""

    name: str
    steps: int  # hidden states drawn, left to right
    input_steps: tuple[int, ...]  # steps that receive an input x_t
    output_steps: tuple[int, ...]  # steps that emit an output y_t
    example: str  # one sentence: a real task of this shape
    page_urls: tuple[str, ...] = ()  # url_paths of the app pages that use this shape


SHAPES: tuple[ProblemShape, ...] = (
    ProblemShape(
        "one-to-one", 1, (0,), (0,),
        "No recurrence at all: a fixed-size input gives a fixed-size output, as in classifying one image.",
    ),
    ProblemShape(
        "one-to-many", 4, (0,), (0, 1, 2, 3),
        "One input unrolls into a sequence, as in image captioning: an image vector in, a sentence out.",
        ("unrolling-bptt", "image-captioning", "memory-experiments"),
    ),
    ProblemShape(
        "many-to-one", 4, (0, 1, 2, 3), (3,),
        "A whole sequence is read before one answer, as in sentiment classification of a review.",
        ("unrolling-bptt", "truncated-bptt"),
    ),
    ProblemShape(
        "many-to-many (unaligned)", 6, (0, 1, 2), (3, 4, 5),
        "An encoder reads the whole input before a decoder writes, as in machine translation.",
        ("sequence-to-sequence",),
    ),
    ProblemShape(
        "many-to-many (aligned)", 4, (0, 1, 2, 3), (0, 1, 2, 3),
        "One output per input step, as in a character model predicting the next character at every step.",
        ("hand-built-rnn", "unrolling-bptt", "char-model-training", "hidden-cell-explorer"),
    ),
)
