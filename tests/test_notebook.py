"""docs/explore-a-model.ipynb: committed without outputs, and it runs top to bottom in a kernel of this venv (nbclient,
the "python3" kernelspec that ipykernel installs under sys.prefix), its views holding what they show."""

import base64
import html
import inspect
import json.decoder
import re
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient

from rnnviz.interpret.colortext import visible_char

NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "explore-a-model.ipynb"
SPAN = re.compile(r'<span style="[^"]*" title="[^"]*">([^<]*)</span>')


def test_the_committed_notebook_has_no_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code and all(cell.outputs == [] and cell.execution_count is None for cell in code)
    assert nb.metadata.kernelspec.name == "python3"


def _cell(nb, fragment: str):
    """The one code cell whose source holds ``fragment``."""
    (cell,) = [cell for cell in nb.cells if cell.cell_type == "code" and fragment in cell.source]
    return cell


def _data(cell, mime: str):
    found = [out["data"][mime] for out in cell.outputs if mime in out.get("data", {})]
    assert found, f"no {mime} output from {cell.source!r}: {[out.output_type for out in cell.outputs]}"
    return found[-1]


def _picture(cell) -> str:
    """The picture stored beside a figure's plotly JSON, in the same output: an SVG's text, or "" where kaleido drew a
    PNG instead (only checked to be one)."""
    (bundle,) = [out["data"] for out in cell.outputs if "application/vnd.plotly.v1+json" in out.get("data", {})]
    if "image/png" in bundle:
        assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG")
        return ""
    return bundle["image/svg+xml"]


def _array(value) -> np.ndarray:
    """A plotly JSON array: a list, or plotly's typed array {"dtype", "bdata" (base64)}."""
    if isinstance(value, dict):
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
    return np.asarray(value)


@pytest.mark.slow
def test_the_notebook_runs_and_shows_its_views(monkeypatch):
    monkeypatch.setenv("PLOTLY_RENDERER", "plotly_mimetype")  # the kernel's figures as plotly JSON, whatever the host
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import sys\nprint(sys.executable)"))  # which Python the kernel is
    NotebookClient(nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(NOTEBOOK.parent)}}
                   ).execute()

    errors = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs
              if out.output_type == "error"]
    assert not errors, "\n".join(f"{e.ename}: {e.evalue}" for e in errors)
    assert Path(nb.cells[-1].outputs[0]["text"].strip()).resolve() == Path(sys.executable).resolve()

    text = inspect.getsource(json.decoder)[:3000]  # the notebook's text, in this same Python
    assert "json/decoder.py in the training corpus: False" in _cell(nb, "python_stdlib_text").outputs[0]["text"]

    # The coloured text: one span per character of text[:1500], in order, under the legend.
    coloured = _data(_cell(nb, "t.colour("), "text/html")
    assert "hover a character for its exact value" in coloured
    assert [html.unescape(glyph) for glyph in SPAN.findall(coloured)] == [visible_char(c) for c in text[:1500]]
    assert 'title="position 0: ' in coloured and 'title="position 1499: ' in coloured

    # The prediction strip: a column per character of 1200…1499, each with its tooltip, and the two legends.
    strip = _data(_cell(nb, "t.prediction_strip("), "text/html")
    assert "coloured by surprisal" in strip and "top guesses" in strip
    assert len(re.findall(r'<div title="position (\d+): ', strip)) == 300
    assert re.findall(r'<div title="position (\d+): ', strip)[0] == "1200"

    # Gate saturation: three stacked bars over every (layer, gate) of the 1-layer LSTM, each row's shares adding to 1.
    gates = _data(_cell(nb, "t.gates()"), "application/vnd.plotly.v1+json")
    bars = gates["data"]
    assert [bar["type"] for bar in bars] == ["bar"] * 3
    assert bars[0]["y"] == [f"layer 1 · {gate}" for gate in "ifgo"]
    np.testing.assert_allclose(sum(_array(bar["x"]) for bar in bars), np.ones(4), atol=1e-9)
    # Beside the JSON, a picture for a viewer without plotly (this venv has no kaleido: the SVG sketch): per gate, its
    # three bars as long as its three shares.
    picture = _picture(_cell(nb, "t.gates()"))
    if picture:
        widths = [float(w) for w in re.findall(r"<rect class='bar' x='[^']*' y='[^']*' width='([^']*)'", picture)]
        drawn = np.array(widths).reshape(3, 4)  # trace by trace, gate by gate, as the JSON lists them
        np.testing.assert_allclose(drawn / drawn.sum(axis=0), np.stack([_array(bar["x"]) for bar in bars]), atol=0.01)

    # The path: one point per character of the window, and the chosen one ringed.
    path = _data(_cell(nb, "t.path("), "application/vnd.plotly.v1+json")
    points = next(trace for trace in path["data"] if trace.get("name") == "characters")
    assert len(_array(points["x"])) == len(_array(points["y"])) == 1500
    assert _array(points["customdata"]).tolist() == list(range(1500))
    assert any(trace.get("name", "").startswith("position 700") for trace in path["data"])
    picture = _picture(_cell(nb, "t.path("))
    if picture:  # a point drawn for each of the figure's markers
        points = sum(len(_array(trace["x"])) for trace in path["data"] if "markers" in trace.get("mode", ""))
        assert picture.count("<circle class='point'") == points
