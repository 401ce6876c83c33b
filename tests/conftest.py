"""Shared test settings: deterministic, small torch work on the two cores; one Chromium for every browser test.

The browser fixtures live here, not in tests/e2e, because Playwright's sync API runs one event loop per
process: tests/e2e and tests/load must share a single session-wide browser."""

import os

import pytest
import torch

from rnnviz.runtime import configure_cpu

configure_cpu()


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
