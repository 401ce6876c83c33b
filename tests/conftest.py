"""Shared test settings: deterministic, small torch work on the two cores."""

import pytest
import torch

from rnnviz.runtime import configure_cpu

configure_cpu()


@pytest.fixture(autouse=True)
def _seed_torch():
    torch.manual_seed(0)
