"""Fixtures for real-browser tests: one app server per test session (the browser is in tests/conftest.py)."""

import pytest

from tests.e2e.harness import streamlit_server


def pytest_collection_modifyitems(items):
    for item in items:
        if "/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def base_url():
    with streamlit_server() as url:
        yield url
