"""Shared test settings: deterministic, small torch work on the two cores."""

import pytest
import torch

torch.set_num_threads(2)


@pytest.fixture(autouse=True)
def _seed_torch():
    torch.manual_seed(0)
