"""bench.browser_latency while two live runs train on the same server: the class case, where the lesson pages must
stay responsive while students train (issue 33's third target, ≤ 200 ms median).

Two sessions start the live page's default preset and keep their live pages open (a live run trains while its page
asks for its chunks), so their drawing shares the two cores here: an upper bound on the class case, where the
students' tabs draw on their own machines. Usage: python -m bench browser_latency_class
"""

from __future__ import annotations

from bench.browser_latency import CONTROLS, measure

LIVE_RUNS = 2


def run() -> dict:
    return measure(CONTROLS, training=LIVE_RUNS)
