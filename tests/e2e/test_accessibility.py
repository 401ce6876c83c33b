"""axe-core (4.11, bundled by the axe-playwright-python package, so that nothing is fetched) on every registered page
in Chromium, in the light theme and the dark one (the app follows the viewer's), against WCAG 2.1 A and AA: no
critical or serious violation comes from the app's own markup. The ones that come from Streamlit itself are named
below, each by the element it sits in, and listed in the README."""

import pytest
from axe_playwright_python.sync_playwright import Axe

from rnnviz.ui.app.registry import PAGES
from tests.e2e.harness import open_app_page

WCAG = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]},
        "resultTypes": ["violations"]}
# rule → the Streamlit element it is found in: its sidebar navigation puts <div>s between <ul> and <li>.
STREAMLIT_OWN = {"list": "[data-testid=stSidebarNav]", "listitem": "[data-testid=stSidebarNav]"}
INSIDE = "([target, selector]) => { const el = document.querySelector(target); return !!el && !!el.closest(selector); }"


@pytest.fixture(scope="module")
def axe():
    return Axe()


@pytest.fixture(params=["light", "dark"])
def theme(request, page):
    """The viewer's system theme, which Streamlit follows (the app pins none); the theme the page reports is checked
    so that a dark run cannot pass on a light page."""
    page.emulate_media(color_scheme=request.param)
    yield request.param
    page.emulate_media(color_scheme="light")


@pytest.mark.parametrize("spec", PAGES, ids=[p.url_path for p in PAGES])
def test_no_serious_accessibility_violation_comes_from_our_markup(page, base_url, axe, spec, theme):
    open_app_page(page, base_url, spec.address)
    background = page.evaluate("() => getComputedStyle(document.querySelector('[data-testid=stApp]')).backgroundColor")
    assert (background == "rgb(255, 255, 255)") == (theme == "light"), background
    violations = axe.run(page, options=WCAG).response["violations"]
    ours = []
    for violation in violations:
        if violation["impact"] not in ("serious", "critical"):
            continue
        for node in violation["nodes"]:
            target = node["target"][-1]
            streamlit_own = STREAMLIT_OWN.get(violation["id"])
            if streamlit_own and page.evaluate(INSIDE, [target, streamlit_own]):
                continue
            ours.append(f"{violation['id']} ({violation['impact']}): {node['html'][:120]} "
                        f"{(node.get('failureSummary') or '').splitlines()[-1][:160]}")
    assert not ours, "\n".join(ours)
