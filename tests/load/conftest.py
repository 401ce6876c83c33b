"""Load tests drive several browser sessions against a server of their own; they share the e2e browser."""

import pytest

from tests.e2e.conftest import browser, chromium_path  # noqa: F401  (fixtures, shared with tests/e2e)


def pytest_collection_modifyitems(items):
    for item in items:
        if "/load/" in str(item.fspath):
            item.add_marker(pytest.mark.load)
