"""The race in a real browser: on the hidden-state page a teacher starts the LSTM against the small GPT, both
val-loss curves and a sample of each appear, Stop ends it and keeps both models; a Transformer on the live page
trains a chunk with no state carried."""

import secrets
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import expect

from rnnviz.ui.kit.corpora import CORPUS_LABELS
from tests.e2e.harness import open_app_page, screenshot, wait_idle
from tests.e2e.test_live_training import click, no_exception, number, wait_for

FIRST_LOAD_MS = 120_000
RACE_TIMEOUT_S = 240  # two busy cores: each model's first 10 s of training, in turns, plus scoring


def race_traces(page) -> list[int]:
    """Points drawn per curve of the race figure (SVG markers of each scatter trace), in legend order; the dotted
    n-gram lines' legend entry (a trace with no points, drawn in every state of the race) left out."""
    return page.evaluate("""() => {
        const charts = [...document.querySelectorAll('.js-plotly-plot')];
        const race = charts.find(c => (c.querySelector('.gtitle')?.textContent || '').startsWith('Val loss against'));
        if (!race) return [];
        return [...race.querySelectorAll('.scatterlayer .trace')].map(t => t.querySelectorAll('.points path').length)
            .filter(n => n > 0);
    }""")


def test_a_teacher_races_the_lstm_against_the_gpt(page, base_url):
    open_app_page(page, base_url, "hidden-state", timeout_ms=FIRST_LOAD_MS)
    main = page.locator("[data-testid='stMain']")
    heading = main.get_by_text("The race: an LSTM against a small GPT, on one clock")
    heading.scroll_into_view_if_needed()
    expect(heading).to_be_visible()
    main.locator("[data-testid='stButtonGroup']").get_by_text("20 s", exact=True).click()
    wait_idle(page, timeout_ms=FIRST_LOAD_MS)
    click(page, "Start race")
    # both curves get a point and both models a sample, live, while the race goes on
    wait_for(lambda: main.get_by_text("Sample at 10 s").count() == 2, RACE_TIMEOUT_S,
             "a sample of each model at 10 s of training")
    wait_for(lambda: (t := race_traces(page)) and len(t) == 2 and min(t) >= 2, 30, "two points on each curve")
    assert no_exception(page)
    expect(main.get_by_text("Training so far: LSTM")).to_be_visible()
    heading.scroll_into_view_if_needed()
    page.evaluate("() => { const m = document.querySelector('[data-testid=stMain]');"
                  " const h = [...m.querySelectorAll('h3')].find(e => e.textContent.startsWith('The race'));"
                  " m.scrollTop += h.getBoundingClientRect().top - 60; }")
    page.wait_for_timeout(600)
    screenshot(page, "race-running")  # tests/e2e/screenshots; docs/screenshots/race.png shows a finished 60 s race
    click(page, "Stop")
    wait_for(lambda: main.get_by_text("the models are kept").count() > 0, 60, "the stop")
    wait_idle(page)
    assert no_exception(page)
    # the models stay: New race is offered, and the curves are still drawn
    expect(page.get_by_role("button", name="New race")).to_be_enabled()
    assert min(race_traces(page)) >= 2
    # each loss with the steps it took, under the figure and at each curve's end, the end labels apart
    expect(main.get_by_text("steps (", exact=False)).to_have_count(2)
    ends = page.evaluate("""() => {
        const race = [...document.querySelectorAll('.js-plotly-plot')]
            .find(c => (c.querySelector('.gtitle')?.textContent || '').startsWith('Val loss against'));
        const right = race.querySelector('.main-svg').getBoundingClientRect().right;
        return [...race.querySelectorAll('.annotation-text')].filter(a => a.textContent.includes('steps'))
            .map(a => { const r = a.getBoundingClientRect(); return [r.top, r.bottom, right - r.right]; });
    }""")
    assert len(ends) == 2 and all(room >= 0 for _, _, room in ends), f"an end label runs off the chart: {ends}"
    (top_a, bottom_a, _), (top_b, bottom_b, _) = sorted(ends)
    assert bottom_a <= top_b + 1, f"the end labels overlap: {ends}"


def test_a_transformer_trains_on_the_live_page(page, base_url):
    open_app_page(page, base_url, "char-model-training")
    page.locator("[data-testid='stSelectbox']").filter(has_text="Built-in corpus").click()
    page.get_by_role("option", name=CORPUS_LABELS["hello"]).click()
    wait_idle(page)
    page.locator("[data-testid='stRadio']").filter(has_text="Kind").get_by_text("Transformer", exact=True).click()
    wait_idle(page)
    main = page.locator("[data-testid='stMain']")
    expect(main.get_by_text("Attention heads h")).to_be_visible()
    expect(main.get_by_text("No state is carried from one chunk to the next")).to_be_visible()
    click(page, "Step")
    wait_for(lambda: (n := number(page, "Step")) is not None and n >= 1, 120, "one chunk of training")
    assert no_exception(page)


def test_a_stale_race_address_is_said_and_dropped_like_a_live_runs(page, base_url):
    """``?race=<token>`` that this server does not hold (a forged link, or a race from before a restart) is said
    in words once and dropped from the address, as the live page does with ``?run=``; the page stays usable."""
    open_app_page(page, base_url, f"hidden-state?race={secrets.token_urlsafe(32)}", timeout_ms=FIRST_LOAD_MS)
    main = page.locator("[data-testid='stMain']")
    notice = main.locator("[data-testid='stAlertContentWarning']").filter(has_text="does not hold (any more)")
    notice.wait_for(timeout=30_000)
    assert "race" not in parse_qs(urlparse(page.url).query)
    expect(page.get_by_role("button", name="Start race")).to_be_enabled()
    assert no_exception(page)
