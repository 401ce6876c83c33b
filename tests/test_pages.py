"""Every registered page renders in AppTest with no exception and shows its registered title."""

from pathlib import Path

import pytest

from rnnviz.ui.registry import PAGES
from tests.apptest_helpers import ROOT, open_page


@pytest.mark.parametrize("spec", PAGES, ids=[p.url_path for p in PAGES])
def test_page_renders_without_exception(spec):
    at = open_page(spec.path)
    assert not at.exception, [e.value for e in at.exception]
    assert [t.value for t in at.title] == [spec.title]


def test_registry_lists_each_page_file_once():
    paths = [p.path for p in PAGES]
    assert len(paths) == len(set(paths))
    assert len({p.url_path for p in PAGES}) == len(PAGES)
    assert sum(p.default for p in PAGES) == 1
    on_disk = {f"app_pages/{f.name}" for f in (ROOT / "app_pages").glob("*.py")}
    assert on_disk == set(paths), "every file in app_pages/ is registered, and every registered file exists"


def test_home_page_draws_the_five_shapes():
    at = open_page("app_pages/home.py")
    assert len(at.get("plotly_chart")) == 1
    text = "\n".join(m.value for m in at.markdown)
    for name in ("one-to-one", "one-to-many", "many-to-one", "many-to-many (unaligned)", "many-to-many (aligned)"):
        assert f"**{name}.**" in text
    assert Path(ROOT / "app.py").exists()
