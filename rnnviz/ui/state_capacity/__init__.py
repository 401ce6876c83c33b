"""The page "What a state can hold": associative recall and state tracking across the LSTM, GRU, minGRU, xLSTM's
sLSTM and mLSTM, a selective SSM, linear attention and the Transformer, from shipped sweeps, with each kind's memory
drawn token by token."""

from rnnviz.ui.kit.links import mirror_to_link, restore_from_link, share_link
from rnnviz.ui.kit.widgets import page_header
from rnnviz.ui.state_capacity.data import first_query
from rnnviz.ui.state_capacity.sections import memory_section, parity_section, recall_section
from rnnviz.ui.state_capacity.settings import LINK, set_defaults


def page() -> None:
    page_header(
        "state-capacity",
        "A recurrent model squeezes its whole history into one state of fixed size. What does that cost, and what "
        "does it buy? **Recall** asks a model to remember key–value pairs until they are asked for: a fixed state "
        "runs out of room where a Transformer's cache does not. **Parity** asks it to track one bit through a long "
        "string: a nonlinear recurrence keeps it at any length, where a linear recurrence and attention of fixed "
        "depth do not. Beside the LSTM and the Transformer: xLSTM's sLSTM and mLSTM (Beck et al. 2024), a selective "
        "state-space layer in the manner of Mamba (Gu and Dao 2023) and linear attention, an RNN whose state is a "
        "matrix (Katharopoulos et al. 2020).",
        r"C_t = f_t\,C_{t-1} + i_t\,v_t k_t^{\top} \qquad h_t = C_t\,q_t \qquad "
        r"s_t = e^{\Delta_t A} \odot s_{t-1} + \Delta_t\,B_t\,u_t \qquad y_t = x_1 \oplus \dots \oplus x_t",
    )
    restore_from_link("capacity", LINK)
    set_defaults(first_query)
    share_link(LINK)
    recall_section()
    memory_section()
    parity_section()
    mirror_to_link(LINK)
