"""Every page of the app, listed once; app.py builds the navigation from it and the tests discover pages here.

Plain data, no streamlit import. To add a page: write ``app_pages/<name>.py`` (its st.title must be the
``title`` below) and add one ``PageSpec`` to the block of its group.

The scripts live in ``app_pages/``, not ``pages/``: with a ``pages/`` folder, Streamlit serves the first
deep link after a server start in its legacy mode, which skips app.py and its sidebar.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageSpec:
    """One page: where its script lives and how the navigation shows it."""

    path: str  # script path relative to the repository root
    title: str  # shown in the navigation and as the page's st.title
    url_path: str  # the page's address: http://host/<url_path>
    group: str  # navigation section
    icon: str = ":material/article:"
    default: bool = False  # the page served at "/"

    @property
    def address(self) -> str:
        """The path a browser opens: "" for the default page (Streamlit serves it only at "/")."""
        return "" if self.default else self.url_path


PAGES: tuple[PageSpec, ...] = (
    # --- Start ---
    PageSpec("app_pages/home.py", "Home: the five shapes", "home", "Start", ":material/home:", default=True),
    # --- Mechanics of recurrence ---
    PageSpec("app_pages/hand_built_rnn.py", "Hand-built RNN", "hand-built-rnn", "Mechanics of recurrence",
             ":material/memory:"),
    PageSpec("app_pages/unrolling_bptt.py", "Unrolling & BPTT", "unrolling-bptt", "Mechanics of recurrence",
             ":material/account_tree:"),
    PageSpec("app_pages/truncated_bptt.py", "Truncated BPTT", "truncated-bptt", "Mechanics of recurrence",
             ":material/content_cut:"),
    PageSpec("app_pages/stacked_rnns.py", "Stacked RNNs", "stacked-rnns", "Mechanics of recurrence",
             ":material/layers:"),
    # --- Gradients and gates ---
    PageSpec("app_pages/gradient_decay.py", "Gradient decay", "gradient-decay", "Gradients and gates",
             ":material/trending_down:"),
    PageSpec("app_pages/lstm_gates.py", "LSTM gates", "lstm-gates", "Gradients and gates", ":material/tune:"),
    PageSpec("app_pages/hidden_state.py", "Hidden state: RNN, LSTM, minGRU, Transformer", "hidden-state",
             "Gradients and gates", ":material/compare_arrows:"),
    # --- Character models ---
    PageSpec("app_pages/live_training.py", "Character model — live training", "char-model-training",
             "Character models", ":material/model_training:"),
    PageSpec("app_pages/hidden_cell_explorer.py", "Hidden-cell explorer", "hidden-cell-explorer", "Character models",
             ":material/visibility:"),
    PageSpec("app_pages/captioning.py", "Image captioning", "image-captioning", "Character models", ":material/image:"),
    # --- Experiments ---
    PageSpec("app_pages/memory_experiments.py", "Memory experiments", "memory-experiments", "Experiments",
             ":material/science:"),
    # --- For teachers ---
    PageSpec("app_pages/server_status.py", "Server status", "server-status", "For teachers",
             ":material/monitor_heart:"),
)

GROUPS: tuple[str, ...] = tuple(dict.fromkeys(p.group for p in PAGES))


def page_by_url(url_path: str) -> PageSpec | None:
    """The registered page with this url_path, or None."""
    return next((p for p in PAGES if p.url_path == url_path), None)
