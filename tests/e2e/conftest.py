"""Fixtures for real-browser tests: one app server and one Chromium per test session."""

import os

import pytest

from tests.e2e.harness import CHROMIUM_ARGS, find_chromium, streamlit_server


def pytest_collection_modifyitems(items):
    for item in items:
        if "/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def chromium_path():
    path = find_chromium()
    if path is None:
        message = "No Chromium found: install Debian's chromium (make test does this as root)."
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def base_url():
    with streamlit_server() as url:
        yield url


@pytest.fixture(scope="session")
def browser(chromium_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    yield page
    context.close()
