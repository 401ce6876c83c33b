"""Read the plotly figures a page sent, as AppTest sees them."""

import base64
import json

import numpy as np


def figure(at, index: int = 0) -> dict:
    """The index-th plotly chart on the page, as the JSON spec the browser receives."""
    return json.loads(at.get("plotly_chart")[index].proto.spec)


def numbers(field) -> np.ndarray:
    """A plotly data array: a list, or NumPy's bytes in base64 (plotly ≥ 6 sends arrays that way)."""
    if isinstance(field, dict):
        return np.frombuffer(base64.b64decode(field["bdata"]), dtype=field["dtype"])
    return np.asarray(field)


def figure_texts(spec: dict) -> list[str]:
    """Every label the figure writes: its annotations' texts and its text traces' (a diagram's labels are one text
    trace per subplot, rnnviz.figures.canvas)."""
    labels = [a.get("text", "") for a in spec["layout"].get("annotations", [])]
    for trace in spec["data"]:
        if "text" in trace.get("mode", "").split("+") and isinstance(trace.get("text"), list):
            labels.extend(trace["text"])
    return labels
