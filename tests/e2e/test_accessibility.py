"""axe-core (4.11, bundled by the axe-playwright-python package, so that nothing is fetched) on every registered page
in Chromium, in the light theme and the dark one (the app follows the viewer's), against WCAG 2.1 A and AA: no
critical or serious violation comes from the app's own markup. The ones that come from Streamlit itself are named
below, each by the element it sits in, and listed in the README."""

import pytest
from axe_playwright_python.sync_playwright import Axe

from rnnviz.ui.app.registry import PAGES
from tests.e2e.harness import open_app_page, wait_settled

WCAG = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]},
        "resultTypes": ["violations"]}
# rule → the Streamlit element it is found in: its sidebar navigation puts <div>s between <ul> and <li>.
STREAMLIT_OWN = {"list": "[data-testid=stSidebarNav]", "listitem": "[data-testid=stSidebarNav]"}
INSIDE = "([target, selector]) => { const el = document.querySelector(target); return !!el && !!el.closest(selector); }"


@pytest.fixture(scope="module")
def axe():
    return Axe()


@pytest.fixture(scope="module")
def theme_tabs(browser_tabs, base_url):
    """One tab per theme for the whole module, made on first use: the first page is opened by its address, the
    others through the sidebar's links (a rerun in the same tab: about 1.1 s of CPU where a new tab's page load
    costs 2.7 s, for the same markup). Each tab's system theme, which Streamlit follows (the app pins none), is set
    before its first page, so that the app's first run already sees it."""
    tabs = {}

    def tab_for(theme: str):
        if theme not in tabs:
            tab = browser_tabs.new_page()
            tab.emulate_media(color_scheme=theme)
            tabs[theme] = tab
        return tabs[theme]

    yield tab_for
    for tab in tabs.values():
        tab.close()


def show_page(tab, base_url: str, spec) -> None:
    """The page ``spec`` in ``tab``: by its address the first time, then by the sidebar's link to it."""
    if not tab.url.startswith(base_url):
        open_app_page(tab, base_url, spec.address)
    else:
        href = f"{base_url}/{spec.address}"
        tab.locator("[data-testid='stSidebarNav'] a").and_(tab.locator(f"a[href='{href}']")).click()
        tab.get_by_role("heading", name=spec.title, level=1).wait_for(timeout=60_000)
    wait_settled(tab)  # the run over, its charts drawn, and nothing left of the page before


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("spec", PAGES, ids=[p.url_path for p in PAGES])
def test_no_serious_accessibility_violation_comes_from_our_markup(theme_tabs, base_url, axe, spec, theme):
    """The theme the page reports is checked, so that a dark run cannot pass on a light page."""
    page = theme_tabs(theme)
    show_page(page, base_url, spec)
    assert page.locator("[data-testid='stException']").count() == 0
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
