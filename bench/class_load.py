"""A class opens the app at once: every page's first script run with 30 sessions asking at the same moment.

Light clients (tests/load/light_clients.py) speak Streamlit's websocket protocol, so they cost the server's
2 cores nothing: each sends one ``rerun_script`` for the page and waits for ``script_finished``. For each page,
on a fresh ``streamlit run app.py`` server of its own: one warm-up visit (the process's first imports and
shared figures), one more session alone, then N sessions at once. Script runs share one interpreter and take
turns, so every session of a page finishes at about the same moment: the class waits for the sum of their
first runs, and what a page costs per session is what this measures.

Targets (issue 16): Home within 1.5 s for 30 sessions and under 0.2 s alone; every other page within 3 s.

Usage: python -m bench.class_load [SESSIONS]
"""

from __future__ import annotations

import os
import sys

from bench.common import print_table
from rnnviz.ui.app.registry import PAGES
from tests.e2e.harness import streamlit_server
from tests.load.light_clients import class_opens_page, summary, visit

SESSIONS = 30
HOME_TARGET_S, HOME_ALONE_TARGET_S, PAGE_TARGET_S = 1.5, 0.2, 3.0


def run(sessions: int = SESSIONS) -> dict:
    load_before = os.getloadavg()[0]
    rows, pages = [], {}
    with streamlit_server() as url:
        for spec in PAGES:
            visit(url, spec.url_path)
            alone = visit(url, spec.url_path)
            result = summary(class_opens_page(url, spec.url_path, sessions))
            target = HOME_TARGET_S if spec.default else PAGE_TARGET_S
            met = result["max_s"] is not None and result["max_s"] <= target and not result["problems"]
            if spec.default:
                met = met and alone.seconds < HOME_ALONE_TARGET_S
            pages[spec.url_path] = {"alone_s": round(alone.seconds, 3), **result, "target_s": target, "met": met}
            rows.append([spec.title, f"{alone.seconds:.2f} s", f"{result['median_s']} s", f"{result['max_s']} s",
                         f"≤ {target:g} s" + (f" (alone < {HOME_ALONE_TARGET_S:g} s)" if spec.default else ""),
                         "yes" if met else "NO",
                         "; ".join(result["problems"] + result["exceptions"])[:60]])
    print_table(f"{sessions} sessions open each page at once (first run after one warm-up visit; 2 cores)",
                ["page", "one session", f"{sessions} at once: median", "max", "target", "met", "problems"], rows)
    load_after = os.getloadavg()[0]
    print(f"load average {load_before:.1f} before, {load_after:.1f} after")
    return {"sessions": sessions, "pages": pages, "load_before": round(load_before, 2),
            "load_after": round(load_after, 2)}


if __name__ == "__main__":
    run(int(sys.argv[1]) if len(sys.argv) > 1 else SESSIONS)
