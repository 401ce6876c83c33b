"""Start the app on a free loopback port and drive Debian's Chromium with Playwright."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "tests" / "e2e" / "screenshots"

# Chromium flags for a closed network: without the background-networking ones it keeps dialling out.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]

DEFAULT_VIEWPORT = {"width": 1400, "height": 900}

APP_IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"


def find_chromium() -> str | None:
    """Path of a Chromium binary: $RNNVIZ_CHROMIUM, Debian's /usr/bin/chromium, or one on PATH."""
    candidates = [os.environ.get("RNNVIZ_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                  shutil.which("chromium-browser")]
    return next((c for c in candidates if c and Path(c).exists()), None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(base_url: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base_url}/_stcore/health", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"streamlit did not become healthy at {base_url} within {timeout:.0f} s")


@contextmanager
def streamlit_server(extra_args: tuple[str, ...] = (), env: dict | None = None):
    """Run ``streamlit run app.py`` headless on a free port; yields the base URL, stops it afterwards."""
    port = free_port()
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
           *extra_args]
    log = open(ROOT / "tests" / "e2e" / f".server-{port}.log", "w")
    env = {**os.environ, "MALLOC_ARENA_MAX": "2", **(env or {})}  # as `make run` starts it
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base_url)
        yield base_url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        Path(log.name).unlink(missing_ok=True)


# The app's own CSS (rnnviz.ui.app.style) lands after the first run looks idle: scroll shadows, captions' tone and
# the focus ring are checked only once it applies.
APP_CSS_APPLIED = """() => getComputedStyle(document.documentElement)
    .getPropertyValue('--rnnviz-css').trim() === 'applied'"""

# Streamlit loads plotly lazily: a chart's element exists a moment before plotly has drawn into it. An instant chart
# (rnnviz.ui.kit.instant_chart, a component in its own shadow root) has drawn once it names the stop it shows, and so
# has a control that answers in the browser (rnnviz.ui.kit.instant, in the page's own tree).
CHARTS_DRAWN = """() => [...document.querySelectorAll("[data-testid='stPlotlyChart']")]
    .every(chart => chart.querySelector('.main-svg') !== null)
  && [...document.querySelectorAll('.stBidiComponent')].every(component =>
    component.querySelector('.rnnviz-instant[data-shown]') !== null || [...component.querySelectorAll('*')]
    .some(host => host.shadowRoot && host.shadowRoot.querySelector('.instant-chart[data-shown]') !== null))"""


def slider_thumb(page, label: str):
    """The thumb of the slider whose label contains ``label`` (focus it and press keys, or read its aria values)."""
    return page.locator("[data-testid='stSlider']").filter(has_text=label).get_by_role("slider")


def wait_idle(page, timeout_ms: int = 60_000) -> None:
    """Wait until the script run that the last action triggered has finished and its charts are drawn."""
    page.wait_for_selector(APP_IDLE, timeout=timeout_ms)
    page.wait_for_function(CHARTS_DRAWN, timeout=timeout_ms)


# Resolves once nothing under the document has changed for ``quiet`` ms (checked every 50 ms).
DOM_QUIET = """quiet => new Promise(resolve => {
    let last = performance.now();
    const watch = new MutationObserver(() => { last = performance.now(); });
    watch.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
    const check = () => performance.now() - last >= quiet ? (watch.disconnect(), resolve(true)) : setTimeout(check, 50);
    setTimeout(check, 50);
})"""


# Streamlit draws each control (button, switch, box) as a grey placeholder until the browser has loaded the control's
# code, and React shows the loaded controls together in one later pass: 500 ms after the last placeholder, or once
# every component the page asked for (plotly's 4.7 MB bundle among them) has loaded. On the live page that pass came
# 0.7-3 s after the "notRunning" mark (measured on this machine): a Tab pressed before it skips the placeholders.
WIDGETS_DRAWN = "() => document.querySelector(\"[data-testid='stSkeleton']\") === null"


def wait_drawn(page, timeout_ms: int = 60_000) -> None:
    """``wait_idle``, then until no control is a placeholder any more: the page's Tab order is its final one."""
    wait_idle(page, timeout_ms)
    page.wait_for_function(WIDGETS_DRAWN, timeout=timeout_ms)


def wait_settled(page, quiet_ms: int = 300, timeout_ms: int = 60_000) -> None:
    """``wait_idle``, then until the page has stopped changing. Streamlit marks the run finished before a busy
    browser has drawn all of it: on a loaded machine the live page's Start row landed up to 3 s after the
    "notRunning" mark. A test that reads the page's order (Tab after Tab) waits for this; one that waits for the
    element it reads does not need to."""
    wait_idle(page, timeout_ms)
    page.evaluate(DOM_QUIET, quiet_ms)


def open_app_page(page, base_url: str, url_path: str, timeout_ms: int = 60_000) -> None:
    """Load a page by URL and wait until its script has run and its title is drawn."""
    page.goto(f"{base_url}/{url_path}", wait_until="domcontentloaded")
    page.wait_for_selector("h1", timeout=timeout_ms)
    wait_idle(page, timeout_ms)
    # The shared sidebar (drawn by app.py around every page) may land a moment after the page's title.
    page.locator("[data-testid='stSidebar']").get_by_text("Seed").wait_for(timeout=timeout_ms)
    page.wait_for_function(APP_CSS_APPLIED, timeout=timeout_ms)


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def screenshot_from(page, selector: str, starts_with: str, path: Path, margin_px: int = 15) -> None:
    """Scroll Streamlit's main block until the first ``selector`` element whose text starts with ``starts_with``
    is ``margin_px`` below the top, then screenshot the screen (the first screen a class sees of that section)."""
    page.evaluate("([selector, start, margin]) => { const m = document.querySelector('[data-testid=stMain]');"
                  " const h = [...m.querySelectorAll(selector)].find(e => e.textContent.startsWith(start));"
                  " m.scrollTop += h.getBoundingClientRect().top - margin; }", [selector, starts_with, margin_px])
    page.wait_for_timeout(800)
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path))


def screenshot_whole_page(page, name: str, width: int = 1400) -> Path:
    """Streamlit scrolls inside its main block, so grow the viewport to the content, then screenshot."""
    height = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
    page.set_viewport_size({"width": width, "height": min(height + 80, 12_000)})
    page.wait_for_timeout(1500)  # let plotly redraw at the new size
    wait_idle(page)
    return screenshot(page, name)
