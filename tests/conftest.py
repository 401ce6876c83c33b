"""Shared test settings: deterministic, small torch work on the two cores; one Chromium profile whose tabs, in one
renderer process, serve every browser test (a plain Chromium for the rare test that needs a context of its own,
and tabs with a renderer each for the tests that time the server under a class's eight browsers).

The browser fixtures live here, not in tests/e2e, because Playwright's sync API runs one event loop per
process: tests/e2e and tests/load must share one session-wide Playwright driver."""

import atexit
import functools
import http.server
import os
import pkgutil
import shutil
import tempfile
import threading
from pathlib import Path

import pytest
import torch

from rnnviz.core.runtime import configure_cpu, physical_cores

# Under pytest-xdist every worker (and every server it starts) gets its share of the cores: two workers on two
# cores with two spinning OpenMP threads each would spend much of the machine waiting for one another.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    os.environ.setdefault("RNNVIZ_THREADS", str(max(1, physical_cores() // _WORKERS)))
configure_cpu()

# Live runs are saved to disk as they train (rnnviz.serving.durable): the tests' runs, and those of the servers they
# start, go to a folder of this test process, never to the user's own state folder.
if not os.environ.get("RNNVIZ_RUN_DIR"):
    os.environ["RNNVIZ_RUN_DIR"] = tempfile.mkdtemp(prefix="rnnviz-test-runs-")
    atexit.register(shutil.rmtree, os.environ["RNNVIZ_RUN_DIR"], True)


# Every Ray that the tests start (in this process, or in a server they start) keeps its sockets on 127.0.0.1: set
# before anything imports Ray, which reads it once. tests/test_ray_backend.py checks that nothing listens elsewhere.
from rnnviz.serving.ray_backend import LOOPBACK_ONLY_ENV  # noqa: E402 (after the settings above)

for _name, _value in LOOPBACK_ONLY_ENV.items():
    os.environ.setdefault(_name, _value)


# Two patches of Streamlit's internals make the AppTest tests cheaper. Each was written for this Streamlit (the one
# requirements.txt pins); a later one that moved a target fails the run here, in words, instead of leaving a patch
# that nothing calls.
STREAMLIT_PATCHED = "1.67.0"


def _patch_streamlit(module, name: str, replacement, *, caller: str) -> None:
    """``module.name = replacement``, once it is clear that ``name`` is still there and that ``caller``, the
    Streamlit function that calls it ("package.module:Class.method"), still looks it up by that name when it runs."""
    import streamlit

    try:
        looks_up = name in pkgutil.resolve_name(caller).__code__.co_names
    except (ImportError, AttributeError):
        looks_up = False
    assert callable(getattr(module, name, None)) and looks_up, (
        f"tests/conftest.py patches {module.__name__}.{name}, which {caller} calls in Streamlit {STREAMLIT_PATCHED}; "
        f"in this Streamlit ({streamlit.__version__}) one of them is gone or no longer calls the other, so the patch "
        "would do nothing. Find where AppTest now does that work and patch it there, or remove the patch."
    )
    setattr(module, name, replacement)


def _scan_component_manifests_once() -> None:
    """Every AppTest scans all installed packages for Streamlit components (BidiComponentManager's discovery, in
    AppTest's first run), as a server does once at its start. The packages cannot change during a test run, so the
    tests scan once. Saves the scan's 60 ms per AppTest (Streamlit 1.67.0, this environment): the 82 AppTests of
    test_pages, test_handbuilt, test_link_notices, test_copied_link and test_every_link took 15.5-16.8 s with it and
    20.8-21.4 s without (alternated, one process)."""
    from streamlit.components.v2 import manifest_scanner

    _patch_streamlit(manifest_scanner, "scan_component_manifests",
                     functools.cache(manifest_scanner.scan_component_manifests),
                     caller="streamlit.components.v2.component_manager:BidiComponentManager.discover_and_register_components")


_scan_component_manifests_once()


def _wait_for_script_runs_by_event() -> None:
    """AppTest waits for each script run by waking every millisecond to look at the run's events, and each wake
    takes the GIL from the script thread it waits for. The same wait, on the run's own SHUTDOWN event: it returns
    when the run ends, and fails as AppTest's does when the run outlasts ``timeout``. Saves about 8% of a script
    run that holds the GIL (Streamlit 1.67.0: 1.80-1.89 s against 1.93-2.06 s with the poll, alternated); on whole
    test files the saving is below this machine's noise."""
    from streamlit.runtime.scriptrunner.script_runner import ScriptRunnerEvent
    from streamlit.testing.v1 import local_script_runner

    def wait_for_the_run(runner, timeout: float = 3) -> None:
        ended = threading.Event()

        def on_event(sender, event, **kwargs) -> None:
            if event == ScriptRunnerEvent.SHUTDOWN:
                ended.set()

        runner.on_event.connect(on_event, weak=False)
        try:
            if runner.script_stopped() or ended.wait(timeout):
                return
        finally:
            runner.on_event.disconnect(on_event)
        runner.request_stop()
        runner.join()
        raise RuntimeError(f"AppTest script run timed out after {timeout}(s)")

    _patch_streamlit(local_script_runner, "require_widgets_deltas", wait_for_the_run,
                     caller="streamlit.testing.v1.local_script_runner:LocalScriptRunner.run")


_wait_for_script_runs_by_event()

SHAKESPEARE = Path(__file__).resolve().parents[2] / "shared" / "data" / "tinyshakespeare.txt"


@pytest.fixture(autouse=True)
def _seed_torch():
    torch.manual_seed(0)


@pytest.fixture(autouse=True)
def _free_training_slots():
    """Each test starts with the free training slots of a fresh server. The AppTest pages of one process share the
    server's slots (a cached resource), and a run that a test left training, or cooling a copy down after its
    Pause, holds its slot for the lease's 20 s once its AppTest is gone (seen: a slot still held after most tests of
    test_live_training_page.py). Two such runs would queue the next test's training or cool-down behind them, which
    would explain the one failure of the cool-down test in a loaded run of make check."""
    yield
    from rnnviz.ui.app.server import training_slots

    training_slots.clear()


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
def playwright_driver():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
def browser(playwright_driver, chromium_path):
    """A Chromium for tests that need a browser context of their own: a user who must not share the other
    tabs' cookies and storage (the stranger of test_live_reattach.py). Started only when a test asks for it."""
    from tests.e2e.harness import CHROMIUM_ARGS

    browser = playwright_driver.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
    yield browser
    browser.close()


def serve_on_loopback(body: bytes, content_type: str | None = None) -> http.server.ThreadingHTTPServer:
    """A loopback HTTP server (never the internet) that answers every GET with ``body``; call shutdown() after."""
    class Fixed(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            if content_type:
                self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fixed)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(scope="session")
def browser_tabs(playwright_driver, chromium_path, tmp_path_factory):
    """One Chromium profile for the session's tabs. A tab is a Streamlit session of its own, as a fresh context
    is, but tabs of one profile share the disk cache, and with it V8's code cache: Streamlit's and plotly's
    scripts are compiled once, not on every page a test opens (measured on the 13 pages: Chromium's CPU time
    80 s with a context per page, 54 s with tabs of one profile, and 36 s of wall time instead of 50).

    The tabs also share one renderer process (``--process-per-site``: every app server is on 127.0.0.1, one
    site whatever the port), which a tab on a blank loopback page keeps alive between tests. A new tab then
    finds V8's in-memory compilation cache and a started renderer: 1.9-2.1 s of CPU and 1.3 s of wall time to
    open a lesson page, against 3.1-3.6 s and 2.1-2.4 s in a process of its own (measured on this 2-core
    machine; the browser tests are CPU-bound, so this is the suite's time)."""
    from tests.e2e.harness import CHROMIUM_ARGS, DEFAULT_VIEWPORT

    context = playwright_driver.chromium.launch_persistent_context(
        tmp_path_factory.mktemp("chromium-profile"), executable_path=chromium_path,
        args=[*CHROMIUM_ARGS, "--process-per-site"], viewport=DEFAULT_VIEWPORT, accept_downloads=True)
    blank = serve_on_loopback(b"<!doctype html><title>keeps the renderer</title>", "text/html")
    keeper = context.new_page()
    keeper.goto(f"http://127.0.0.1:{blank.server_address[1]}/")
    yield context
    context.close()
    blank.shutdown()


@pytest.fixture(scope="session")
def class_tabs(playwright_driver, chromium_path, tmp_path_factory):
    """Tabs of one Chromium profile, each in a renderer process of its own, as a class's browsers are: for the
    tests that time the server while eight sessions use it (one renderer for all eight would queue their pages
    on one thread: the Ray class test took 88 s instead of 58-69)."""
    from tests.e2e.harness import CHROMIUM_ARGS, DEFAULT_VIEWPORT

    context = playwright_driver.chromium.launch_persistent_context(
        tmp_path_factory.mktemp("chromium-class-profile"), executable_path=chromium_path, args=CHROMIUM_ARGS,
        viewport=DEFAULT_VIEWPORT, accept_downloads=True)
    yield context
    context.close()


@pytest.fixture
def page(browser_tabs):
    """A new tab (a Streamlit session of its own) at the default size; it and any tab the test opened from it
    are closed afterwards."""
    open_before = set(browser_tabs.pages)
    page = browser_tabs.new_page()
    yield page
    for tab in browser_tabs.pages:
        if tab not in open_before:
            tab.close()


@pytest.fixture
def shakespeare_url(tmp_path):
    """Tiny Shakespeare served from a loopback HTTP server (a copy of ../shared/data), never the internet."""
    if not SHAKESPEARE.exists():
        pytest.skip("../shared/data/tinyshakespeare.txt is not here")
    folder = tmp_path / "served"
    folder.mkdir()
    shutil.copy(SHAKESPEARE, folder / "input.txt")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/input.txt"
    server.shutdown()


@pytest.fixture
def shakespeare_offered(tmp_path, monkeypatch, shakespeare_url):
    """The app fetches Tiny Shakespeare from the loopback server into an empty cache of this test; returns the
    cache folder."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("RNNVIZ_CACHE", str(cache))
    monkeypatch.setenv("RNNVIZ_TINY_SHAKESPEARE_URL", shakespeare_url)
    return cache


# A module's tests run on one xdist worker, in their order, as they do without xdist: module-scoped fixtures
# (a server with its own settings, an AppTest page that later tests read on from) are made once, and a test
# never misses the one before it. Beyond that, the Ray modules share one worker, and with it the session's
# local cluster (two clusters on two cores would starve each other). (xdist's own loadgroup cannot do this with
# pytest 9, whose node ids no longer take its group suffix.)
RAY_FILES = ("test_ray_backend.py", "test_ray_cluster.py", "test_backend_contract.py")
GROUPS = dict.fromkeys((*RAY_FILES, "test_load_ray.py"), "ray")


def pytest_collection_modifyitems(items):
    for item in items:
        if item.path.name in RAY_FILES or item.path.name == "test_load_ray.py":
            item.add_marker(pytest.mark.ray)


def _starts_servers(nodeid: str) -> bool:
    """A test of tests/e2e or tests/load (a browser and an app server) or of the Ray group."""
    path = nodeid.split("::", 1)[0]
    return path.startswith(("tests/e2e/", "tests/load/")) or path.rsplit("/", 1)[-1] in GROUPS


# Such a test costs about 11 times the CPU of an engine or AppTest test (2026-12-06: ~4.4 CPU-s against ~0.4).
SERVER_TEST_WEIGHT = 11


def pytest_xdist_make_scheduler(config, log):
    """Under ``--dist loadgroup``: each module's tests on one worker, and the modules of a group (``GROUPS``)
    on the same one, the units going out longest first by their estimated cost (``SERVER_TEST_WEIGHT``), so that
    the small ones even out the end. xdist's own order, by the number of tests, sent a one-test module of a minute
    (the soak test) last, and one worker ran it alone for 67 s at the end of a run; in order of cost, the two ended
    within 2 s of each other (a fresh-clone run, 2026-12-06)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return GROUPS.get(module.rsplit("/", 1)[-1], module)

        def schedule(self) -> None:
            if self.collection is None and self.collection_is_completed:
                self._order_work_by_cost()
            super().schedule()

        def _order_work_by_cost(self) -> None:
            """The work queue in the order units go out; schedule() then fills in the same keys, and an
            OrderedDict keeps a key where it first came."""
            collection = list(next(iter(self.registered_collections.values())))
            units: dict[str, list[str]] = {}
            for nodeid in collection:
                units.setdefault(self._split_scope(nodeid), []).append(nodeid)

            def cost(unit: list[str]) -> int:
                return len(unit) + (SERVER_TEST_WEIGHT - 1) * sum(map(_starts_servers, unit))

            for scope, nodeids in sorted(units.items(), key=lambda item: cost(item[1]), reverse=True):
                self.workqueue[scope] = dict.fromkeys(nodeids, False)

    return GroupScheduling(config, log)
