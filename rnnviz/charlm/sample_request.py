"""Sampling inputs from a page, checked in plain words, and the sample they ask for.

Bad inputs never reach the model: characters outside the vocabulary, a length under 1 or a width or k
under 1 are errors, and so is a top-p outside (0, 1]; a length over MAX_SAMPLE_LENGTH, a top-k or beam width
over V, and temperature 0 (which is greedy decoding) are corrected with a note, and top-p 1 is off. A prime
longer than a Transformer's context is kept as typed, with a note on where the window starts.
"""

from __future__ import annotations

from dataclasses import dataclass

from rnnviz.charlm.corpus import UnknownCharactersError, Vocab
from rnnviz.charlm.sample import Beam, beam_search, generate
from rnnviz.core.charmodel import CharModel
from rnnviz.core.transformer import CharTransformer
from rnnviz.limits import MAX_BEAM_LENGTH, MAX_SAMPLE_LENGTH  # noqa: F401 (pages read them here)

STRATEGIES = ("greedy", "temperature", "beam")
MIN_TEMPERATURE = 0.1


@dataclass(frozen=True)
class SampleRequest:
    """A checked sampling request; hashable, so it can key a memo."""

    prime: str
    length: int
    strategy: str  # "greedy", "temperature" or "beam"
    temperature: float = 1.0  # strategy "temperature": p = softmax(z / τ)
    top_k: int | None = None  # strategy "temperature": keep the k most likely characters; None for all
    top_p: float | None = None  # strategy "temperature", after top-k: keep the nucleus of mass p; None for all
    beam_width: int = 5  # strategy "beam"
    seed: int = 0


@dataclass(frozen=True)
class SampleResult:
    text: str  # the continuation (the prime is not repeated); the best beam's for beam search
    beams: tuple[Beam, ...] = ()  # beam search only, best first


def check_sample_request(
    vocab: Vocab,
    prime: str,
    length: int | None,
    strategy: str,
    temperature: float | None = 1.0,
    top_k: int | None = None,
    beam_width: int | None = 5,
    seed: int = 0,
    context: int | None = None,
    top_p: float | None = None,
) -> tuple[SampleRequest | None, list[str], list[str]]:
    """(request or None, errors, notes): errors stop the sampling, notes say what was corrected.

    ``context`` is a Transformer's block size (None for a recurrent model, which reads any length).
    """
    errors, notes = [], []
    if strategy not in STRATEGIES:
        errors.append(f"Unknown sampling strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}.")
    try:
        vocab.encode(prime or "")
    except UnknownCharactersError as err:
        errors.append(f"The prime text cannot be fed to this model: {err}")
    if context is not None and len(prime or "") > context:
        notes.append(f"The prime is {len(prime):,} characters, more than this Transformer's context of {context}: it "
                     f"reads only the last {context}, from character {len(prime) - context + 1} on, and the window "
                     "slides on as it writes.")
    limit = MAX_BEAM_LENGTH if strategy == "beam" else MAX_SAMPLE_LENGTH
    if length is None or length < 1:
        errors.append(f"The length must be at least 1 character, not {length}.")
    elif length > limit:
        notes.append(f"A length of {length:,} is more than this page samples at once; it was capped at {limit:,} "
                     "characters.")
        length = limit
    if strategy == "temperature":
        if temperature is None or temperature <= 0:
            notes.append("Temperature 0 divides the logits by zero: its limit is greedy decoding (always the most "
                         "likely character), which is shown instead.")
            strategy, temperature = "greedy", 1.0
        elif temperature < MIN_TEMPERATURE:
            notes.append(f"Temperature {temperature:g} was raised to {MIN_TEMPERATURE:g}; lower is greedy in effect.")
            temperature = MIN_TEMPERATURE
        if top_k is not None:
            if top_k < 1:
                errors.append(f"Top-k must keep at least 1 character, not {top_k}.")
            elif top_k > vocab.size:
                notes.append(f"Top-k {top_k} is more than the {vocab.size} characters of the vocabulary; all "
                             f"{vocab.size} are kept.")
                top_k = None
        if top_p is not None:
            if not 0 < top_p <= 1:
                errors.append(f"Top-p must be more than 0 and at most 1 (1 keeps every character), not {top_p:g}.")
            elif top_p == 1:
                top_p = None
    if strategy == "beam":
        if beam_width is None or beam_width < 1:
            errors.append(f"The beam width must be at least 1, not {beam_width}.")
        elif beam_width > vocab.size:
            notes.append(f"A beam width of {beam_width} is more than the {vocab.size} characters of the vocabulary; "
                         f"{vocab.size} beams are kept.")
            beam_width = vocab.size
    if errors:
        return None, errors, notes
    request = SampleRequest(prime or "", int(length), strategy, float(temperature or 1.0), top_k,
                            None if top_p is None else float(top_p), int(beam_width or 1), seed)
    return request, errors, notes


def run_sample(model: CharModel | CharTransformer, vocab: Vocab, request: SampleRequest) -> SampleResult:
    """Draw the sample a checked request asks for."""
    if request.strategy == "beam":
        beams = beam_search(model, vocab, request.prime, request.length, request.beam_width)
        return SampleResult(beams[0].text, tuple(beams))
    temperature = 0.0 if request.strategy == "greedy" else request.temperature
    top_k, top_p = (request.top_k, request.top_p) if request.strategy == "temperature" else (None, None)
    text = generate(model, vocab, request.prime, request.length, temperature, top_k, seed=request.seed, top_p=top_p)
    return SampleResult(text)
