"""The server's warm-up (rnnviz.ui.app.warmup) freezes what the first sessions would otherwise load later."""

import subprocess
import sys

from tests.apptest_helpers import ROOT

FIRST_OPTIMIZER = """
import gc, torch
from rnnviz.ui.app.warmup import warm_up_once
warm_up_once()
before = len(gc.get_objects())  # after gc.freeze() only what is not frozen
torch.optim.Adam([torch.nn.Parameter(torch.zeros(3))])
print(gc.get_freeze_count(), len(gc.get_objects()) - before)
"""


def test_the_first_optimizer_after_the_warm_up_leaves_nothing_for_the_collector_to_walk():
    """torch imports torch._dynamo when the first optimizer is made (the live page's "hello" walkthrough, a first
    Start): 117,000 objects that every full collection would walk, with the GIL held, unless the warm-up froze
    them. In a process of its own, since the warm-up happens once per process."""
    run = subprocess.run([sys.executable, "-c", FIRST_OPTIMIZER], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    frozen, added = map(int, run.stdout.split())
    assert frozen > 300_000 and added < 1_000, (frozen, added)
