"""Helpers for driving pages with streamlit's AppTest (no browser)."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")

# Pages run real torch work on two noisy cores; AppTest's 3 s default is too tight.
TIMEOUT = 60


def open_page(page_path: str, timeout: float = TIMEOUT, query: dict | None = None) -> AppTest:
    """Run the app, switch to the page at ``page_path`` (e.g. "app_pages/home.py") and render it."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    if query:
        at.query_params.update(query)
    at.run()
    at.switch_page(page_path)
    return at.run()


def page_text(at: AppTest) -> str:
    """All markdown, titles, captions, metrics and alerts on the page, joined for substring checks."""
    parts = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "info", "success", "warning", "error",
                 "latex", "text", "code"):
        parts.extend(str(getattr(el, "value", "")) for el in getattr(at, kind))
    parts.extend(f"{m.label} {m.value}" for m in at.metric)
    return "\n".join(parts)


def column_formats(dataframe) -> dict[str, str | None]:
    """The number format each column of an AppTest st.dataframe element is drawn with ("percent", "%.3f", …)."""
    import json

    config = json.loads(dataframe.proto.columns or "{}")
    return {name: column.get("type_config", {}).get("format") for name, column in config.items()}


def instant_chart(at: AppTest, key: str) -> dict:
    """The data an instant chart (rnnviz.ui.kit.instant_chart) with widget key ``key`` sent to the browser."""
    import json

    charts = [el for el in at.get("bidi_component") if el.proto.id.endswith(f"-{key}")]
    assert len(charts) == 1, [el.proto.id for el in at.get("bidi_component")]
    return json.loads(charts[0].proto.json)


def _numbers_at_value(data: dict) -> dict[str, str]:
    stop = min(range(len(data["stops"])), key=lambda i: abs(data["stops"][i] - data["value"]))
    return dict(data["chosen"][stop]["numbers"])


def instant_numbers(at: AppTest, key: str) -> dict[str, str]:
    """The numbers an instant chart shows under itself at the value the server set ({label: value}), as the browser
    picks them: the stop nearest the value."""
    return _numbers_at_value(instant_chart(at, key))


def shown_numbers(at: AppTest) -> dict[str, str]:
    """Every number the page shows with a label: its st.metric values and the numbers under its instant charts."""
    import json

    shown = {metric.label: metric.value for metric in at.metric}
    for chart in at.get("bidi_component"):
        shown.update(_numbers_at_value(json.loads(chart.proto.json)))
    return shown
