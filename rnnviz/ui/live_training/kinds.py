"""What the live-training page says about each kind beside its Kind menu: labels, heads, and a line on how each
trains and what it carries from one chunk to the next (its update is at the top of the page)."""

KIND_LABELS = {"rnn": "RNN", "lstm": "LSTM", "gru": "GRU", "mingru": "minGRU", "slstm": "sLSTM", "mlstm": "mLSTM",
               "selective": "Selective SSM", "linear_attention": "Linear attention", "transformer": "Transformer"}
HEAD_OPTIONS = (1, 2, 4, 8)  # Transformer, sLSTM, mLSTM, linear attention: heads h; the width must divide by h
MINGRU_NOTE = (r"minGRU: $z_t = \sigma(W_z x_t)$ and $\tilde h_t = g(W_h x_t)$ read $x_t$ only, never $h_{t-1}$, "
               "so the whole chunk is computed by a parallel scan; its $h_t$ is carried from one chunk to the next "
               "like an RNN's.")
HEADS_HELP = {"slstm": "Each head is d = H / h wide; R mixes the memory only within a head (block-diagonal).",
              "mlstm": "Each head keeps its own d × d matrix memory C_t, d = H / h; H must divide by h.",
              "linear_attention": "Each head keeps its own d × d memory S_t, d = H / h; H must divide by h.",
              "transformer": "Each head is d = C / h wide; C must divide by h."}
# What each of the kinds whose state is more than a vector does, under the Kind menu (its update is at the top).
STATE_NOTES = {
    "slstm": r"sLSTM: exponential gates kept in range by the stabiliser $m_t$, a normaliser $n_t$, and $R\,h_{t-1}$ "
             "mixed within each head only; every step reads the one before, so a chunk is stepped through t.",
    "mlstm": r"mLSTM: each head writes $v_t k_t^\top$ into its own $d \times d$ memory $C_t$ and reads it with "
             r"$q_t$; its gates never read $h_{t-1}$, so a chunk trains in its parallel form.",
    "selective": r"Selective SSM: $\Delta_t$, $B_t$ and $C_t$ are read from the input, so what the state $s_t$ keeps "
                 "is chosen character by character; a chunk trains by a scan over t.",
    "linear_attention": r"Linear attention: each head adds $v_t\, \phi(k_t)^\top$ to its own $d \times d$ memory "
                        r"$S_t$ and reads it with $\phi(q_t)$; it never forgets.",
}
# What each of them carries into the next chunk (rnnviz.core.state_stack.CARRIED_WORDS, in the notes' symbols).
CARRIED = {"slstm": r"$h_t$, $c_t$, $n_t$ and $m_t$",
           "mlstm": r"matrix memory $C_t$, $n_t$, $m_t$ and its convolution's last inputs",
           "selective": r"state $s_t$ and its convolution's last inputs",
           "linear_attention": r"matrix memory $S_t$, $z_t$ and its convolution's last inputs"}
NO_CARRY = ("No state is carried from one chunk to the next: a Transformer has no recurrent state (no $h_t$ passed "
            "from step to step), so every window of T characters starts from nothing, and its memory is the keys and "
            "values of the context it attends over.")


def state_note(kind: str, reset_state: bool) -> str:
    """What a kind whose state is more than a vector does, and whether its state crosses from chunk to chunk."""
    if reset_state:
        return (f"{STATE_NOTES[kind]} Every chunk starts from a zero state (its preset's choice): carried from chunk "
                "to chunk, a memory that never forgets reads an average over the whole text so far.")
    return f"{STATE_NOTES[kind]} Its {CARRIED[kind]} are carried from one chunk to the next."
