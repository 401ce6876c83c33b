"""Static checks of the project's safety settings: safe torch.load, upload limits, no injected JavaScript."""

import re
import tomllib

from tests.apptest_helpers import ROOT

SOURCES = [p for p in ROOT.rglob("*.py") if ".venv" not in p.parts and "tests" not in p.relative_to(ROOT).parts]


def _call_text(text: str, open_paren_end: int) -> str:
    """The argument text of a call, from just after its "(" to the matching ")"."""
    depth = 1
    for i in range(open_paren_end, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return text[open_paren_end:i]
    return text[open_paren_end:]


def test_every_torch_load_uses_weights_only():
    offenders = []
    for path in SOURCES:
        text = path.read_text()
        for match in re.finditer(r"torch\.load\(", text):
            call = _call_text(text, match.end())
            if "weights_only=True" not in call:
                offenders.append(f"{path.relative_to(ROOT)}:{text[: match.start()].count(chr(10)) + 1}")
    assert not offenders, f"torch.load without weights_only=True at {offenders}"


def test_no_javascript_injection_switches():
    """Streamlit runs JavaScript in three places only, all constant and with no user text: rnnviz.ui.app.browser's
    script, and the two components of the kit (rnnviz/ui/kit/instant_chart.js and instant.js, files of the package),
    which put the data they are given into the page as text and attributes only, never as markup or code (instant.js
    draws equations with KaTeX, whose default leaves out every command that could write markup or a link)."""
    from rnnviz.ui.app import browser
    from rnnviz.ui.kit import instant, instant_chart

    components = {"instant_chart.py": instant_chart, "instant.py": instant}
    for path in SOURCES:
        text = path.read_text()
        assert "components.html" not in text, path
        if not (path.name in components and path.parent.name == "kit"):
            assert "components.v2" not in text, path
        if path.name == "browser.py" and path.parent.name == "app":
            assert text.count("unsafe_allow_javascript") == 1
            assert "st.html(SCRIPT, unsafe_allow_javascript=True)" in text
        else:
            assert "unsafe_allow_javascript" not in text, path
    sinks = ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "Function(", "srcdoc", "trust:")
    for name, module in components.items():
        component = (ROOT / "rnnviz" / "ui" / "kit" / name.replace(".py", ".js")).read_text()
        assert module._JS == component
        for sink in sinks:
            assert sink not in component, (name, sink)
    # A downloaded lesson (kit.lesson) runs instant.js from disk with its own small script, which draws the same way.
    lesson = (ROOT / "rnnviz" / "ui" / "kit" / "lesson.js").read_text()
    assert [sink for sink in sinks if sink in lesson] == []
    script = browser.SCRIPT
    # Built only from the module's literals: the title and the icon's path are all that is put into it.
    assert browser.SVG_TITLE in script and browser.ICON_PATH in script and "__" not in script
    assert re.fullmatch(r"[A-Za-z ]+", browser.SVG_TITLE) and re.fullmatch(r"[MmHhVvCcLlZz0-9 -]+", browser.ICON_PATH)


def test_streamlit_config_is_classroom_safe():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] <= 20
    assert config["server"].get("enableXsrfProtection", True) is True
    assert config["runner"]["magicEnabled"] is False
    assert config["client"]["toolbarMode"] == "viewer"
    assert config["client"]["showErrorDetails"] == "none"  # no traceback (the server's paths) in a browser
    assert config["browser"]["gatherUsageStats"] is False


def test_streamlit_config_keeps_the_server_thread_free_for_a_class():
    """A full gc.collect after every script and fragment run held /_stcore/health past 1 s under load
    (tests/load); the source watcher re-scans every loaded module after runs, for no use in a class."""
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["postScriptGC"] is False
    assert config["server"]["fileWatcherType"] == "none"


def test_every_fragment_runs_inside_the_error_boundary():
    """Pages and ui packages declare fragments with rnnviz.ui.app.errors.fragment, never st.fragment itself, whose
    failure would show its traceback."""
    errors = ROOT / "rnnviz" / "ui" / "app" / "errors.py"
    plain = [f"{p.relative_to(ROOT)}" for p in SOURCES if p != errors and re.search(r"\bst\.fragment\b", p.read_text())]
    assert plain == []
    assert sum(p.read_text().count("@fragment") for p in SOURCES) >= 22


def test_engine_never_imports_streamlit():
    pattern = re.compile(r"^\s*(import streamlit|from streamlit)", re.MULTILINE)
    engine = [p for p in (ROOT / "rnnviz").rglob("*.py") if "ui" not in p.relative_to(ROOT / "rnnviz").parts]
    assert engine
    assert [str(p) for p in engine if pattern.search(p.read_text())] == []


def _environ_after_importing_rnnviz(**env: str) -> tuple[str, str]:
    import os
    import subprocess
    import sys

    code = "import rnnviz, os; print(os.environ.get('OMP_WAIT_POLICY', '-'), os.environ.get('GOMP_SPINCOUNT', '-'))"
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env={**base, **env})
    policy, spins = out.stdout.split()
    return policy, spins


def test_openmp_threads_spin_briefly_once_rnnviz_is_imported_and_a_users_setting_wins():
    assert _environ_after_importing_rnnviz() == ("-", "1000")  # libgomp: about 10 µs of spinning, then sleep
    assert _environ_after_importing_rnnviz(OMP_WAIT_POLICY="PASSIVE") == ("PASSIVE", "-")
    assert _environ_after_importing_rnnviz(GOMP_SPINCOUNT="0") == ("-", "0")


def test_only_the_corpus_module_fetches_urls_and_only_its_fixed_one():
    """The server never fetches a user-supplied address: no module but rnnviz/charlm/corpus.py can open a URL, and
    corpus.py opens only TINY_SHAKESPEARE_URL (or the operator's $RNNVIZ_TINY_SHAKESPEARE_URL mirror)."""
    fetching = re.compile(r"^\s*(?:import|from)\s+(?:urllib\.request|http\.client|requests|httpx|aiohttp|urllib3|"
                          r"socket|pycurl|ftplib|smtplib|webbrowser|huggingface_hub)\b|urlopen\(|torch\.hub|_from_url\(",
                          re.MULTILINE)
    # The one other opening: ray_backend.py checks with a TCP connect that the operator's Ray address
    # (RNNVIZ_RAY_ADDRESS or .streamlit/rnnviz.toml, never a user's input) answers before ray.init retries for minutes.
    ray_backend = ROOT / "rnnviz" / "serving" / "ray_backend.py"
    outside = [f"{p.relative_to(ROOT)}: {m.group()}" for p in SOURCES if p != ROOT / "rnnviz" / "charlm" / "corpus.py"
               for m in fetching.finditer(p.read_text())
               if not (p == ray_backend and m.group().strip() == "import socket")]
    assert outside == []
    assert ray_backend.read_text().count("socket.") == 1 and "socket.create_connection((host" in ray_backend.read_text()
    corpus = (ROOT / "rnnviz" / "charlm" / "corpus.py").read_text()
    assert corpus.count("urlopen(") == 1 and "urllib.request.urlopen(url, timeout=timeout)" in corpus
    assert re.findall(r"url = (.+)", corpus) == [
        'url or os.environ.get("RNNVIZ_TINY_SHAKESPEARE_URL") or TINY_SHAKESPEARE_URL'
    ]
    pages_and_ui = [p for p in SOURCES if "app_pages" in p.parts or "ui" in p.parts]
    assert not [p for p in pages_and_ui if re.search(r"\burl=", p.read_text())], "no page passes a URL to the engine"
