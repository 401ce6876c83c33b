"""Shared test settings: deterministic, small torch work on the two cores; one Chromium for every browser test.

The browser fixtures live here, not in tests/e2e, because Playwright's sync API runs one event loop per
process: tests/e2e and tests/load must share a single session-wide browser."""

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest
import torch

from rnnviz.core.runtime import configure_cpu

configure_cpu()

SHAKESPEARE = Path(__file__).resolve().parents[2] / "shared" / "data" / "tinyshakespeare.txt"


@pytest.fixture(autouse=True)
def _seed_torch():
    torch.manual_seed(0)


@pytest.fixture(scope="session")
def chromium_path():
    from tests.e2e.harness import find_chromium

    path = find_chromium()
    if path is None:
        message = "No Chromium found: install Debian's chromium (make test does this as root)."
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def browser(chromium_path):
    from playwright.sync_api import sync_playwright

    from tests.e2e.harness import CHROMIUM_ARGS

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def shakespeare_url(tmp_path):
    """Tiny Shakespeare served from a loopback HTTP server (a copy of ../shared/data), never the internet."""
    if not SHAKESPEARE.exists():
        pytest.skip("../shared/data/tinyshakespeare.txt is not here")
    folder = tmp_path / "served"
    folder.mkdir()
    shutil.copy(SHAKESPEARE, folder / "input.txt")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/input.txt"
    server.shutdown()
