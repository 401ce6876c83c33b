"""The update of every model kind in the lecture's symbols, as LaTeX: one table that every page reads.

``KIND_EQUATIONS`` holds each kind's update (``\\\\`` breaks a line); ``kind_equation`` adds the readout and
the loss, ``labelled_update`` puts the kind's name in front. A page passes either to ``st.latex``.
"""

from __future__ import annotations

from rnnviz.core.config import kind_label

KIND_EQUATIONS = {
    "rnn": r"h_t = \tanh(W_{xh}\, x_t + W_{hh}\, h_{t-1} + b_h)",
    "lstm": r"[i_t, f_t, o_t] = \sigma(W_{x\cdot}\, x_t + W_{h\cdot}\, h_{t-1} + b_\cdot), \quad "
            r"g_t = \tanh(W_{xg}\, x_t + W_{hg}\, h_{t-1} + b_g) \\ "
            r"c_t = f_t \odot c_{t-1} + i_t \odot g_t, \quad h_t = o_t \odot \tanh(c_t)",
    "gru": r"z_t = \sigma(W_{xz}\, x_t + W_{hz}\, h_{t-1} + b_z), \quad "
           r"r_t = \sigma(W_{xr}\, x_t + W_{hr}\, h_{t-1} + b_r) \\ "
           r"n_t = \tanh(W_{xn}\, x_t + b_{xn} + r_t \odot (W_{hn}\, h_{t-1} + b_{hn})), \quad "
           r"h_t = (1 - z_t) \odot n_t + z_t \odot h_{t-1}",
    "mingru": r"z_t = \sigma(W_z\, x_t + b_z), \quad \tilde h_t = g(W_h\, x_t + b_h), \quad "
              r"h_t = (1 - z_t) \odot h_{t-1} + z_t \odot \tilde h_t",
    "slstm": r"[\tilde\imath_t, \tilde f_t, \tilde z_t, \tilde o_t] = W x_t + R\, h_{t-1} + b, \quad "
             r"m_t = \max(\log \sigma(\tilde f_t) + m_{t-1},\ \tilde\imath_t) \\ "
             r"c_t = f'_t \odot c_{t-1} + i'_t \odot \tanh(\tilde z_t), \quad n_t = f'_t \odot n_{t-1} + i'_t, \quad "
             r"h_t = \sigma(\tilde o_t) \odot c_t / n_t",
    "mlstm": r"C_t = f_t\, C_{t-1} + i_t\, v_t k_t^\top, \quad n_t = f_t\, n_{t-1} + i_t\, k_t \\ "
             r"h_t = o_t \odot \frac{C_t\, q_t}{\max(|n_t^\top q_t|,\ 1)}",
    "selective": r"\Delta_t = \mathrm{softplus}(W_\Delta \tilde x_t + b_\Delta), \quad "
                 r"s_t = e^{\Delta_t A} \odot s_{t-1} + \Delta_t\, u_t B_t^\top \\ "
                 r"h_t = (s_t\, C_t + D \odot u_t) \odot \mathrm{SiLU}(W_z x_t + b_z)",
    "linear_attention": r"S_t = S_{t-1} + v_t\, \phi(k_t)^\top, \quad z_t = z_{t-1} + \phi(k_t) \\ "
                        r"h_t = \frac{S_t\, \phi(q_t)}{z_t^\top \phi(q_t)}",
    "transformer": r"\mathrm{Attn}(X) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d}} + M\right)V, \qquad "
                   r"M_{ts} = 0 \text{ for } s \le t, \ -\infty \text{ for } s > t",
}
READOUT = {"transformer": r"p_t = \mathrm{softmax}(W_{hy}\, x_t^{(L)} + b_y)",
           "recurrent": r"p_t = \mathrm{softmax}(W_{hy}\, h_t + b_y)"}
SHORT_UPDATES = ("rnn", "lstm")  # the readout and loss fit on the update's last line
LOSS = r"\mathcal{L} = -\frac{1}{T}\sum_t \ln p_t[x_{t+1}]"


def kind_equation(kind: str) -> str:
    """The LaTeX of a kind's update, its readout and the loss: on the update's last line where it is short (RNN,
    LSTM: the live page's first screen stays as tall as it was), else below it. An unknown kind shows the RNN's."""
    update = KIND_EQUATIONS.get(kind, KIND_EQUATIONS["rnn"])
    readout = READOUT["transformer" if kind == "transformer" else "recurrent"] + r", \quad " + LOSS
    joint = r", \quad " if kind in SHORT_UPDATES else r" \\ "
    return r"\begin{gathered}" + update + joint + readout + r"\end{gathered}"


def labelled_update(kind: str) -> str:
    """The LaTeX of a kind's update after its name ("LSTM:"), its lines centred under each other."""
    return r"\begin{gathered}\text{" + kind_label(kind) + r":}\quad " + KIND_EQUATIONS[kind] + r"\end{gathered}"
