"""Every page of the app, listed once; app.py builds the navigation from it and the tests discover pages here.

Plain data, no streamlit import. To add a page: write its package ``rnnviz/ui/<name>/`` with a ``page()`` (its
st.title is the ``title`` below), the script ``app_pages/<name>.py`` that calls it, and one ``PageSpec`` where it
belongs on the course path (or after it).

The scripts live in ``app_pages/``, not ``pages/``: with a ``pages/`` folder, Streamlit serves the first
deep link after a server start in its legacy mode, which skips app.py and its sidebar.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageSpec:
    """One page: where its script lives, how the navigation shows it, and its step on the course path."""

    path: str  # script path relative to the repository root
    title: str  # shown in the navigation and as the page's st.title
    url_path: str  # the page's address: http://host/<url_path>
    group: str  # navigation section
    icon: str = ":material/article:"
    default: bool = False  # the page served at "/"
    chapter: str = ""  # its section of the chapter on recurrent networks ("8.4"); "" when not on the course path
    summary: str = ""  # one line for Home's table of contents

    @property
    def address(self) -> str:
        """The path a browser opens: "" for the default page (Streamlit serves it only at "/")."""
        return "" if self.default else self.url_path

    @property
    def on_course(self) -> bool:
        return bool(self.chapter)


# In the chapter's order: the navigation's groups and Home's table of contents follow it, and every page on it
# links to the one before and the one after.
PAGES: tuple[PageSpec, ...] = (
    # --- Start ---
    PageSpec("app_pages/home.py", "Home: the five shapes", "home", "Start", ":material/home:", default=True,
             chapter="8.1", summary="Where the inputs go in and the outputs come out: the five shapes of a "
                                    "sequence problem."),
    # --- Recurrence ---
    PageSpec("app_pages/hand_built_rnn.py", "Hand-built RNN", "hand-built-rnn", "Recurrence", ":material/memory:",
             chapter="8.2–8.3", summary="A state that persists: step through a 3-unit RNN built by hand to compute "
                                        "\"this bit AND the previous one\"."),
    PageSpec("app_pages/unrolling_bptt.py", "Unrolling & BPTT", "unrolling-bptt", "Recurrence",
             ":material/account_tree:", chapter="8.4",
             summary="Unroll the recurrence and see the gradient as a sum over time steps."),
    PageSpec("app_pages/truncated_bptt.py", "Truncated BPTT", "truncated-bptt", "Recurrence",
             ":material/content_cut:", chapter="8.5",
             summary="Cut the backward pass into chunks, and see how far back the gradient still reaches."),
    # --- Character models ---
    PageSpec("app_pages/live_training.py", "Character model — live training", "char-model-training",
             "Character models", ":material/model_training:", chapter="8.6",
             summary="One character at a time: train a character model live and watch its samples turn into words."),
    PageSpec("app_pages/hidden_cell_explorer.py", "Hidden-cell explorer", "hidden-cell-explorer", "Character models",
             ":material/visibility:", chapter="8.7",
             summary="What the state holds: colour text by one hidden cell, and find the cells that track quotes, "
                     "brackets or indentation."),
    PageSpec("app_pages/captioning.py", "Image captioning", "image-captioning", "Character models",
             ":material/image:", chapter="8.8",
             summary="One image in, a sentence out: a CNN's vector conditions an LSTM that writes the caption."),
    # --- Depth, gradients and gates ---
    PageSpec("app_pages/stacked_rnns.py", "Stacked RNNs", "stacked-rnns", "Depth, gradients and gates",
             ":material/layers:", chapter="8.9", summary="Stack layers and watch the network fill its time × depth "
                                                         "grid."),
    PageSpec("app_pages/gradient_decay.py", "Gradient decay", "gradient-decay", "Depth, gradients and gates",
             ":material/trending_down:", chapter="8.10",
             summary="Why the gradient dies: its norm over the steps against σ₁ of W_hh and tanh′."),
    PageSpec("app_pages/lstm_gates.py", "LSTM gates", "lstm-gates", "Depth, gradients and gates", ":material/tune:",
             chapter="8.11", summary="Trace one number through the gates f_t, i_t, g_t, o_t and the cell c_t."),
    PageSpec("app_pages/hidden_state.py", "Hidden state: RNN, LSTM, minGRU, Transformer", "hidden-state",
             "Depth, gradients and gates", ":material/compare_arrows:", chapter="8.12",
             summary="What recurrence costs: the state an RNN, an LSTM, a minGRU and a Transformer carry, side by "
                     "side, and a race."),
    # --- Beyond ---
    PageSpec("app_pages/memory_experiments.py", "Memory experiments", "memory-experiments", "Beyond",
             ":material/science:", chapter="Beyond",
             summary="An RNN against an LSTM on delayed copy, a conditioning vector at every step or only at the "
                     "start, and what a long sequence costs."),
    PageSpec("app_pages/state_capacity.py", "What a state can hold", "state-capacity", "Beyond",
             ":material/grid_view:", chapter="Beyond",
             summary="Recall and parity across the LSTM, xLSTM, a selective SSM, linear attention and the "
                     "Transformer: what a fixed state holds, what only a recurrence tracks, and the memory drawn."),
    PageSpec("app_pages/sequence_to_sequence.py", "Sequence to sequence", "sequence-to-sequence", "Beyond",
             ":material/swap_horiz:", chapter="Beyond",
             summary="An encoder and a decoder: a fixed context fails as the input grows, attention holds, and its "
                     "alignment shows where it looks."),
    # --- For teachers (not a lesson) ---
    PageSpec("app_pages/server_status.py", "Server status", "server-status", "For teachers",
             ":material/monitor_heart:"),
)

COURSE: tuple[PageSpec, ...] = tuple(p for p in PAGES if p.on_course)

GROUPS: tuple[str, ...] = tuple(dict.fromkeys(p.group for p in PAGES))


def course_neighbours(spec: PageSpec) -> tuple[PageSpec | None, PageSpec | None]:
    """The pages before and after ``spec`` on the course path (None at either end, or off the path)."""
    if spec not in COURSE:
        return None, None
    at = COURSE.index(spec)
    return (COURSE[at - 1] if at > 0 else None), (COURSE[at + 1] if at + 1 < len(COURSE) else None)


def page_by_title(title: str) -> PageSpec | None:
    return next((p for p in PAGES if p.title == title), None)


def page_by_url(url_path: str) -> PageSpec | None:
    """The registered page with this url_path, or None."""
    return next((p for p in PAGES if p.url_path == url_path), None)
