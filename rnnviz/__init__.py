"""rnnviz: an interactive lab for recurrent neural networks. The engine never imports streamlit."""

import os

# How libgomp's idle worker threads wait for the next parallel region. Its default spins about 3 ms (300,000
# spins) and starves whatever else wants the core; OMP_WAIT_POLICY=PASSIVE sleeps at once and pays a wake-up on
# each of the LSTM's per-step matmuls. A bounded spin of 1,000 (about 10 µs) keeps the quiet-machine speed and
# most of the passive one's manners. A 1×256 LSTM (float32, B 32, T 64) on 2 cores, chars/s per training
# (python -m bench omp_wait, 2026-12-01, load 1.3 → 2.5):
#                                 quiet    beside a busy process    two trainings at once (each)
#   default (3 ms spin)            66k            21k                        27k
#   PASSIVE                        43k            35k                        36k
#   GOMP_SPINCOUNT=1000            68k            29k                        28k
#   1 thread (1,000 spins)         39k            42k                        39k
# Where trainings share a server's cores, each therefore gets its share of the threads (runtime.share_cores).
# It must be set before torch loads, which is why every entry point imports rnnviz before torch; a user's own
# OMP_WAIT_POLICY or GOMP_SPINCOUNT wins.
if "OMP_WAIT_POLICY" not in os.environ:
    os.environ.setdefault("GOMP_SPINCOUNT", "1000")

__version__ = "0.1.0"

# The Python API (rnnviz.api: load, trace, attention, models), loaded on first use, so that `import rnnviz` stays
# light (the CLI imports it before anything else, and it must not load torch).
_API = ("load", "trace", "attention", "models", "Model", "Trace", "HTML")


def __getattr__(name: str):
    if name in _API:
        from rnnviz import api

        return getattr(api, name)
    raise AttributeError(f"module 'rnnviz' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
