"""A plain one-hot character model whose vocabulary is not in code-point order (its ids in order of first
appearance) imports into rnnviz, which renumbers the characters by code point: W_ih's input columns must move with
the ids, or the model reads every character as another one."""

import torch
import torch.nn.functional as F
from torch import nn

from rnnviz.charlm.foreign import import_state_dict

TEXT = "the cat sat on the mat.\nhe has a hat; she had a bat!\n"
FIRST_SEEN = "".join(dict.fromkeys(TEXT))  # "the ca…": ids in order of first appearance, not code point
H = 12


class OneHotGRU(nn.Module):
    """One-hot characters → GRU → Linear, as a user writes it."""

    def __init__(self, v: int):
        super().__init__()
        self.v = v
        self.gru = nn.GRU(v, H, batch_first=True)
        self.out = nn.Linear(H, v)

    def forward(self, x):  # x (N, T) in the user's ids
        out, _ = self.gru(F.one_hot(x, self.v).float())
        return self.out(out)  # (N, T, V)


def test_a_one_hot_model_with_its_vocabulary_in_first_seen_order_computes_the_same_after_renumbering():
    assert sorted(FIRST_SEEN) != list(FIRST_SEEN)
    torch.manual_seed(0)
    plain = OneHotGRU(len(FIRST_SEEN)).eval()
    imported = import_state_dict(plain.state_dict(), FIRST_SEEN)
    checkpoint = imported.checkpoint
    assert checkpoint.vocab.chars == "".join(sorted(FIRST_SEEN))
    assert any("not in code-point order" in line for line in imported.report)
    text = TEXT[:30]
    with torch.no_grad():
        want = plain(torch.tensor([[FIRST_SEEN.index(ch) for ch in text]]))[0]  # (T, V), the user's ids
        got, _, _ = checkpoint.model(checkpoint.vocab.encode(text)[None])  # (1, T, V), rnnviz's ids
    user_id = [FIRST_SEEN.index(ch) for ch in checkpoint.vocab.chars]  # rnnviz's id j → the user's id
    torch.testing.assert_close(got[0], want[:, user_id], atol=1e-5, rtol=0)
