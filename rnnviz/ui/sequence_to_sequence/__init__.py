"""The Sequence-to-sequence page: a fixed-context encoder–decoder against the same model with attention, on
reversal."""

from rnnviz.ui.kit.links import mirror_to_link, restore_from_link, share_link
from rnnviz.ui.kit.widgets import page_header
from rnnviz.ui.sequence_to_sequence.sections import (
    LINK,
    PAGE,
    accuracy_section,
    beam_section,
    bytes_section,
    choose_input,
    current_pair,
    decode_section,
    describe_pair,
    set_defaults,
    train_section,
)


def page() -> None:
    page_header(
        "sequence-to-sequence",
        "When input and output have lengths of their own (translation: the *many-to-many, unaligned* shape on Home), "
        "an **encoder** reads the whole input and a **decoder** writes the output. Joined by a **fixed context**, the "
        "decoder starts from the encoder's final state and reads nothing else: everything about the input must fit in "
        "one vector. Joined by **attention** (Bahdanau, Cho and Bengio 2015), at every output step the decoder weighs "
        "every encoder state and reads their mix. The task here is to write a string backwards; both models are the "
        "same LSTMs, from the same initial weights, trained on the same batches.",
        r"e_{ij} = v_a^\top \tanh(W_a s_{i-1} + U_a h_j), \quad \alpha_{ij} = \frac{\exp e_{ij}}{\sum_k \exp e_{ik}}, "
        r"\quad c_i = \sum_j \alpha_{ij} h_j, \quad s_i = \mathrm{LSTM}([E y_{i-1}; c_i], s_{i-1})",
    )
    restore_from_link(PAGE, LINK)
    set_defaults()
    share_link(LINK)
    pair = current_pair()
    describe_pair(pair)
    text = choose_input(pair)
    if text is not None:
        decode_section(pair, text)
    accuracy_section(pair)
    bytes_section(pair)
    if text is not None:
        beam_section(pair, text)
    train_section()
    mirror_to_link(LINK)
