"""Load tests drive several browser sessions against a server of their own (the browser is in tests/conftest.py)."""

import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if "/load/" in str(item.fspath):
            item.add_marker(pytest.mark.load)
