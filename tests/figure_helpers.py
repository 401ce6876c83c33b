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


def annotation_texts(spec: dict) -> list[str]:
    return [a.get("text", "") for a in spec["layout"].get("annotations", [])]
