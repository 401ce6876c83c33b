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
    """Every number the page shows with a label: its st.metric values, the numbers under its instant charts, and those
    under its controls that answer in the browser."""
    import json

    shown = {metric.label: metric.value for metric in at.metric}
    for component in at.get("bidi_component"):
        data = json.loads(component.proto.json)
        if "views" in data:  # a control that answers in the browser: the numbers under it at the server's stop
            shown.update({label: value for block in data["views"][data["index"]] for label, value in
                          block.get("metrics", [])})
        else:
            shown.update(_numbers_at_value(data))
    return shown


def instant_control(at: AppTest, key: str) -> dict:
    """The data a control that answers in the browser (rnnviz.ui.kit.instant) with session key ``key`` sent to it:
    every stop's blocks, the stop the server is at ("index"), the control's caption or label."""
    import json

    views = [el for el in at.get("bidi_component") if el.proto.id.endswith(f"-{key}_instant")]
    assert len(views) == 1, [el.proto.id for el in at.get("bidi_component")]
    return json.loads(views[0].proto.json)


def _block_texts(block: dict) -> list[str]:
    if "metrics" in block:
        return [f"{label} {value}" for label, value in block["metrics"]]
    if "columns" in block:
        return [text for part in block["columns"] for inner in part for text in _block_texts(inner)]
    return [str(block.get("latex", block.get("text", block.get("caption", ""))))]


def instant_shown(at: AppTest, key: str) -> tuple[dict[str, str], str]:
    """What the control ``key`` (or blocks that follow one: kit.instant.figure_key) shows at the server's stop, as the
    browser draws it: its numbers ({label: value}) and all its text (the stepper's caption, equations, sentences,
    alerts), joined."""
    data = instant_control(at, key)
    blocks = data["views"][data["index"]]
    numbers = {label: value for block in blocks for label, value in block.get("metrics", [])}
    caption = data["control"].get("caption", "")
    if caption:
        caption = caption.replace("{step}", data["labels"][data["index"]])
    return numbers, "\n".join([caption, *(text for block in blocks for text in _block_texts(block))])


def move_instant(at: AppTest, key: str, value) -> AppTest:
    """Move the control ``key`` to the stop ``value`` as the browser reports a move: the value lands in the session's
    state, and the page runs."""
    at.session_state[key] = value
    return at.run()
